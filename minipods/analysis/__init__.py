"""Run analysis: read run folders, compute the statistics of a comparison, draw its figures, run it."""
