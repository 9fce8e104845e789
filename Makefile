.PHONY: setup test small notebooks
setup:
	bash scripts/setup.sh
test:
	python -m pytest -q
small:
	python -m minipods.train --small
# regenerate notebooks/*.ipynb from their .py sources and run them in full mode (outputs committed);
# one notebook: `make notebooks NB=03`
notebooks:
	python scripts/run_notebooks.py $(NB)
