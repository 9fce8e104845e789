"""`python -m minipods.plots`: see minipods.analysis.plots."""
from minipods.analysis.plots import main

if __name__ == "__main__":
    raise SystemExit(main())
