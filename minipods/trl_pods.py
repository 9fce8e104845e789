"""`python -m minipods.trl_pods`: see minipods.scale.trl_pods."""
from minipods.scale.trl_pods import main

if __name__ == "__main__":
    raise SystemExit(main())
