"""`python -m minipods.plots`: see minipods.analysis.plots."""
import sys

from minipods.analysis.plots import main

if __name__ == "__main__":
    sys.exit(main())
