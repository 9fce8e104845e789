"""Models built in code: architecture twins of hub models, and the tiny test model."""
