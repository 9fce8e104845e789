"""`python -m minipods.plan`: see minipods.measure.plan."""
from minipods.measure.plan import main

if __name__ == "__main__":
    raise SystemExit(main())
