"""Helpers of the teaching notebooks: their figures and secondary analyses, so that a student's path
through a notebook is short cells that say what they compute. Each helper is documented and used by one
notebook (sections below); the minipods package holds everything a notebook teaches.

A notebook imports this module from its own folder (`import lessons`: Jupyter starts a notebook's kernel
there; scripts/run_notebooks.py and the notebook tests put notebooks/ on PYTHONPATH).
"""

from __future__ import annotations

# ---------------------------------------------------------------- 01 rollouts

# ---------------------------------------------------------------- 02 rewards

# ---------------------------------------------------------------- 03 max-variance

# ---------------------------------------------------------------- 04 the GRPO update

# ---------------------------------------------------------------- 05 PODS vs GRPO
