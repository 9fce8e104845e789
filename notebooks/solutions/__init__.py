"""Worked answers to the exercises of notebooks/exercises.py, one module per notebook (sNN.py): read after trying."""
