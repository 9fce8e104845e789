"""`python -m minipods.compare`: see minipods.analysis.compare."""
import sys

from minipods.analysis.compare import main

if __name__ == "__main__":
    sys.exit(main())
