"""`python -m minipods.bench`: see minipods.measure.bench."""
from minipods.measure.bench import main

if __name__ == "__main__":
    raise SystemExit(main())
