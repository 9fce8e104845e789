.PHONY: setup test quick small notebooks exercises release kit colab-check gpu-check
setup:
	bash scripts/setup.sh
test:
	python -m pytest -q
# the quick edit-test loop: every test that needs no real model
quick:
	python -m pytest -q -m "not slow"
small:
	python -m minipods.train --small
# regenerate notebooks/*.ipynb from their .py sources and run them in full mode (outputs committed);
# one notebook: `make notebooks NB=03`
notebooks:
	python scripts/run_notebooks.py $(NB)
# every exercise check on its solution and on its untouched stub
exercises:
	python notebooks/exercises.py --self-test
# the student edition (notebooks without solutions/ or printed predict answers): `make release OUT=folder`
OUT ?= student_edition
release:
	python notebooks/exercises.py --release $(OUT)
# the class kit: slides for docs/teaching.md's 90-minute plan, a one-page handout, a rubric: `make kit OUT=folder`
kit: OUT = class_kit
kit:
	python scripts/class_kit.py $(OUT)
# Colab's install (requirements-colab.txt) in a fresh virtual environment with another torch: installs, minutes
colab-check:
	bash scripts/check_colab_install.sh
# the GPU check (on a GPU; GPU_CHECK_SLOWDOWN=4 on a T4)
gpu-check:
	bash scripts/gpu_check.sh
