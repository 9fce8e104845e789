"""The seed-level reading of the documented studies, from the per-seed accuracies docs/results.md prints.

    python scripts/seed_level_tables.py

The studies' run folders (per-question files, every evaluation) were not kept on this machine, so this
re-derives what the per-seed table allows: each arm's step-0 and final accuracy per seed (a percentage of
128 questions, turned back into its count) read into a study of minipods.analysis.summary, and every
"arm minus arm" and "first vs final" as a mean over seeds with its t-interval and sign-flip p. Time to
target under the plateau target needs every evaluation of every arm and is not re-derivable here; the
three per-seed speed-ups the docs print (old target) get their t-interval on log ratios.
"""
from minipods.stats import ratio_interval
from minipods.analysis.summary import LEARNING, Point, difference, format_difference

STUDIES = {  # name -> (focus arm, step-0 % per seed (one model, every arm), arm -> final % per seed)
    "compare --preset small --seeds 0,1,2,3,4 (32 steps)": ("pods_max_variance", [13.3, 20.3, 20.3, 19.5, 15.6], {
        "grpo": [41.4, 49.2, 9.4, 57.0, 45.3], "grpo_same_n": [52.3, 4.7, 40.6, 66.4, 45.3],
        "pods_max_variance": [29.7, 37.5, 30.5, 57.8, 53.9], "pods_random": [3.1, 39.1, 39.8, 34.4, 29.7]}),
    "compare --small --seeds 0,1,2 (the earlier 16-step preset)": ("pods_max_variance", [13.3, 20.3, 20.3], {
        "grpo": [31.2, 39.1, 7.8], "grpo_same_n": [17.2, 35.2, 39.1], "pods_max_variance": [34.4, 27.3, 47.7]}),
}
OLD_TARGET_S = {"grpo": [320, 313, 405], "pods_max_variance": [364, 354, 336]}  # seeds 0, 3, 4 (both reached)


def study_from_table(step0: list[float], final: dict[str, list[float]], n: int = 128) -> dict:
    """seed -> arm -> [first, final] Points from percentages of n questions."""
    frac = (lambda pct: round(pct * n / 100) / n)
    return {s: {a: [Point(0.0, 0, frac(step0[s]), n), Point(0.0, 1, frac(v[s]), n)] for a, v in final.items()}
            for s in range(len(step0))}


for name, (focus, step0, final) in STUDIES.items():
    study = study_from_table(step0, final)
    print(f"== {name}")
    for a in final:
        if a != focus:
            print(f"{focus} minus {a}: {format_difference(difference(study, a, focus))}")
    for a in final:
        print(f"{a}, first vs final: {format_difference(difference(study, a, a, LEARNING))}")
sp = ratio_interval([g / p for g, p in zip(OLD_TARGET_S["grpo"], OLD_TARGET_S["pods_max_variance"])])
print(f"five-seed study, old target (99% of grpo's best evaluation), 3 seeds where both reached: "
      f"{sp['ratio']:.2f}x [{sp['lo']:.2f}, {sp['hi']:.2f}]")
