.PHONY: setup test small
setup:
	bash scripts/setup.sh
test:
	python -m pytest -q
small:
	python -m minipods.train --small
