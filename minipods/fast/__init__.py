"""The fast engine: the same rollouts and the same update as the plain core, with less work."""
