"""PODS beyond one process: PODS down-sampling inside TRL's GRPOTrainer (accelerate, vLLM, many GPUs)."""
