"""Re-exports minipods.stats (the statistics live in the core, which evaluate and analysis/ both use)."""

from minipods.stats import (T975, mcnemar_p, mean_interval, newcombe_paired, paired_difference,  # noqa: F401
                            ratio_interval, sign_flip_p, t975, wilson_interval)
