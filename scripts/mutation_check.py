"""Can the quick tests fail? Break one rule of the core at a time and count the tests that go red.

    python scripts/mutation_check.py          # four mutations, each followed by `pytest -q -m "not slow"`

Each mutation is a one-line edit of the core (the file is restored afterwards, also on Ctrl-C):
max-variance keeps the top m; advantages standardised over all n instead of the kept m; the "grpo" loss
as a token mean; the population std in the advantages. A mutation no test catches prints "0 failed":
the suite cannot see that mistake. About as long as the quick tier, four times over.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTATIONS = {  # name -> (file, the line as it is, the mistake)
    "max_variance keeps the top m": ("minipods/downsample.py", "keep = np.concatenate((order[:k], order[n - m + k:]))",
                                     "keep = order[n - m:]"),
    "advantages over all n": ("minipods/train.py", "        adv = group_advantages(rewards[kept], kept_batch.group)\n",
                              "        adv = group_advantages(rewards, ro.group)[kept]\n"),
    "grpo loss as a token mean": ("minipods/grpo.py",
                                  "return (summed.sum(1) / mask.sum(1).clamp(min=1)).sum() / num_rows",
                                  "return summed.sum() / num_tokens"),
    "population std": ("minipods/grpo.py", "adv[sel] = (r - r.mean()) / (r.std() + eps)",
                       "adv[sel] = (r - r.mean()) / (r.std(unbiased=False) + eps)"),
}


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if argv:
        print(f"scripts/mutation_check.py: error: takes no arguments, got {argv[0]!r}", file=sys.stderr)
        return 2
    missed = 0
    for name, (rel, line, mistake) in MUTATIONS.items():
        path = ROOT / rel
        src = path.read_text()
        if src.count(line) != 1:
            print(f"{name}: the line to mutate is not in {rel} once; update MUTATIONS", file=sys.stderr)
            return 2
        path.write_text(src.replace(line, mistake))
        try:
            out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "not slow"], cwd=ROOT,
                                 capture_output=True, text=True).stdout
        finally:
            path.write_text(src)
        failed = sorted(set(re.findall(r"FAILED (\S+)", out)))
        missed += not failed
        print(f"{name}: {len(failed)} failed" + "".join(f"\n    {f}" for f in failed[:5])
              + (f"\n    ... {len(failed) - 5} more" if len(failed) > 5 else ""), flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
