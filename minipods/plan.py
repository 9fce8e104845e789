"""`python -m minipods.plan`: see minipods.measure.plan."""
import sys

from minipods.measure.plan import main

if __name__ == "__main__":
    sys.exit(main())
