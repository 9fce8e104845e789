"""`python -m minipods.bench`: see minipods.measure.bench."""
import sys

from minipods.measure.bench import main

if __name__ == "__main__":
    sys.exit(main())
