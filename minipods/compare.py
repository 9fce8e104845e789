"""`python -m minipods.compare`: see minipods.analysis.compare."""
from minipods.analysis.compare import main

if __name__ == "__main__":
    raise SystemExit(main())
