"""The notebooks' exercises (notebooks/exercises.py): every check passes its worked solution, fails its untouched
stub without raising, and rejects a planted plausible mistake with the hint aimed at it; the self-test line."""

import contextlib
import importlib.util
import io
import math
import re
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

NB = Path(__file__).resolve().parent.parent / "notebooks"
_spec = importlib.util.spec_from_file_location("exercises", NB / "exercises.py")  # as a notebook imports it
sys.modules["exercises"] = E = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(E)

SOLUTIONS = E._solutions()


def run_check(ex_id, answer):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert E.check(ex_id, answer) is None  # a check cell shows its verdict line, not a stray True/False
    return {"✓": True}.get(out.getvalue()[:1], False), out.getvalue()


# ---------------------------------------------------------------- planted mistakes, one or more per implement-exercise
def positions_counting_pads(mask):
    return torch.arange(mask.shape[1]).expand_as(mask)


def positions_off_by_one(mask):
    return mask.cumsum(-1)


def mask_without_eos(ids, eos):
    is_eos = torch.isin(ids, torch.tensor(eos))
    return ((is_eos.int().cumsum(1)) == 0).long()


def extract_last_number(text):
    from minipods.rewards import normalize_number
    found = re.findall(E.NUMBER_RE, text)
    return normalize_number(found[-1]) if found else None


def extract_unnormalised(text):
    from minipods.rewards import extract_answer
    out = extract_answer(text)
    return None if out is None else out + ".00"


def fmt_counting_present(text):
    return 0.025 * sum(t in text for t in E.FORMAT_TAGS)


def top_m(rewards, m):
    return np.argsort(-np.asarray(rewards), kind="stable")[:m].tolist()


def fixed_half(rewards, m):
    order = np.argsort(rewards, kind="stable")
    return np.concatenate([order[:m // 2], order[len(rewards) - m + m // 2:]]).tolist()


def advantages_over_all_n(rewards, n, kept):
    r = np.asarray(rewards, float)
    out = []
    for k in kept:
        g = r[k // n * n:k // n * n + n]
        out.append((r[k] - g.mean()) / (g.std(ddof=1) + 1e-4) if np.ptp(g) > 0 else 0.0)
    return np.array(out)


def advantages_population_std(rewards, n, kept):
    r = np.asarray(rewards, float)
    out = []
    for k in kept:
        g = r[[j for j in kept if j // n == k // n]]
        out.append((r[k] - g.mean()) / (g.std() + 1e-4) if np.ptp(g) > 0 else 0.0)
    return np.array(out)


def token_mean_always(per_token, mask, loss_type):
    return (per_token * mask).sum() / mask.sum()


def padding_counted(per_token, mask, loss_type):
    return (per_token * mask).mean() if loss_type == "dapo" else ((per_token * mask).sum(1) / mask.shape[1]).mean()


def pooled_interval(per_seed):
    a = [x for g, _ in per_seed.values() for x in g]
    b = [x for _, p in per_seed.values() for x in p]
    d = sum(b) / len(b) - sum(a) / len(a)
    se = math.sqrt((sum(a) / len(a)) * (1 - sum(a) / len(a)) / len(a) + (sum(b) / len(b)) * (1 - sum(b) / len(b)) / len(b))
    return d, d - 1.96 * se, d + 1.96 * se


def z_interval(per_seed):
    d = [sum(p) / len(p) - sum(g) / len(g) for g, p in per_seed.values()]
    m, sd = float(np.mean(d)), float(np.std(d, ddof=1))
    return m, m - 1.96 * sd / math.sqrt(len(d)), m + 1.96 * sd / math.sqrt(len(d))


def n_max_without_fixed(cm, m, prompts, gain):
    if cm.rollout.b <= 0:
        return math.inf
    t = cm.fixed + cm.rollout(prompts * m) + cm.update(prompts * m)
    return (gain * (t - cm.fixed) - cm.update(prompts * m) - cm.rollout.a) / (cm.rollout.b * prompts)


def n_max_without_prompts(cm, m, prompts, gain):
    if cm.rollout.b <= 0:
        return math.inf
    t = cm.fixed + cm.rollout(prompts * m) + cm.update(prompts * m)
    return (gain * t - cm.fixed - cm.update(prompts * m) - cm.rollout.a) / cm.rollout.b


def sign_flip_one_sided(diffs):
    return E._one_sided(diffs)


def sign_flip_strict(diffs):
    import itertools
    obs = abs(sum(diffs))
    pats = list(itertools.product((1, -1), repeat=len(diffs)))
    return sum(abs(sum(s * d for s, d in zip(p, diffs))) > obs + 1e-12 for p in pats) / len(pats)


def reach_without_tolerance(curve, target, n):
    return next((s for s, a in curve if a >= target), None)


def averaged_as_steps(curve, budget):
    pts = [(0.0, curve[0][1])] + curve + [(max(budget, curve[-1][0]), curve[-1][1])]
    return sum((min(t1, budget) - t0) * y0 for (t0, y0), (t1, _) in zip(pts, pts[1:]) if t0 < budget) / budget


def averaged_plain_mean(curve, budget):
    return sum(a for _, a in curve) / len(curve)


def reach_last(curve, target, n):
    hits = [s for s, a in curve if a >= target - math.sqrt(target * (1 - target) / n) - 1e-12]
    return hits[-1] if hits else None


PLANTED = [  # (exercise, wrong answer, a word the hint must contain)
    ("01.1", positions_counting_pads, "pads too"), ("01.1", positions_off_by_one, "off by one"),
    ("01.2", mask_without_eos, "EOS itself"),
    ("02.1", extract_last_number, "block"), ("02.1", extract_unnormalised, "normalise"),
    ("02.2", fmt_counting_present, "exactly once"),
    ("03.2", top_m, "top m"), ("03.2", fixed_half, "fixed k"),
    ("03.3", advantages_over_all_n, "all n"), ("03.3", advantages_population_std, "population std"),
    ("04.3", token_mean_always, "token mean"), ("04.3", padding_counted, "padding"),
    ("05.1", pooled_interval, "pooled"), ("05.1", z_interval, "Student's t"),
    ("05.3", n_max_without_fixed, "fixed cost"), ("05.3", n_max_without_prompts, "b_r x P"),
    ("06.2", sign_flip_one_sided, "one-sided"), ("06.2", sign_flip_strict, "ties count"),
    ("06.4", reach_without_tolerance, "standard error"), ("06.4", reach_last, "first evaluation"),
    ("06.5", averaged_as_steps, "trapezoids"), ("06.5", averaged_plain_mean, "how far apart"),
    # predictions and observations: the likely wrong number gets its own explanation
    ("01.4", 419, "section 5"), ("01.4", 210, "half a byte"), ("02.4", 1.732, "population std"), ("02.5", 10, "not below"),
    ("03.1", 5, "max-reward"), ("03.5", 0.656, "group of 4"), ("04.1", [(1.3, 1.0), (0.7, 1.0)], "min keeps it"),
    ("04.2", 0.4, "Inverted"), ("04.4", 6e-10, "SGD"), ("05.2", 0.553, "Inverted"), ("05.2", 1.347, "n = 64"), ("05.2", 1.693, "112"), ("06.1", 0.03125, "Two-sided"),
    ("06.3", 1.6, "at FRAC = 1:"), ("06.3", 2.0, "0.98 and 0.99"), ("01.3", 0.538, "T = 0.9"), ("02.3", 0.075, "only the deleted tag"),
]


def test_every_exercise_is_registered_with_its_solution_and_why():
    assert len(E.EXERCISES) >= 18
    for nb in ("01", "02", "03", "04", "05", "06"):
        kinds = [ex.kind for ex in E.EXERCISES.values() if ex.notebook == nb]
        assert len(kinds) >= 3, nb
    counts = {k: sum(ex.kind == k for ex in E.EXERCISES.values()) for k in E.KINDS}
    assert min(counts.values()) >= 5, counts  # each kind well represented
    for ex in E.EXERCISES.values():
        why = E.solution_module(ex.notebook).WHY
        assert ex.id in SOLUTIONS and len(why.get(ex.id, "")) > 40, ex.id


@pytest.mark.parametrize("ex_id", list(E.EXERCISES))
def test_solution_passes_and_stub_is_unanswered(ex_id):
    ok, line = run_check(ex_id, SOLUTIONS[ex_id])
    assert ok is True and line.startswith(f"✓ {ex_id} ") and line.count("\n") == 1, line
    ok, line = run_check(ex_id, E.stub_answer(E.EXERCISES[ex_id]))  # the stub as given: no exception
    assert ok is False and line.startswith(f"· {ex_id} not answered yet"), line


def test_every_implement_exercise_has_a_planted_mistake():
    planted = {ex_id for ex_id, answer, _ in PLANTED if callable(answer)}
    assert planted == {ex.id for ex in E.EXERCISES.values() if ex.kind == "implement"}


@pytest.mark.parametrize("ex_id,answer,word", PLANTED, ids=[f"{e}-{getattr(a, '__name__', a)}" for e, a, _ in PLANTED])
def test_planted_mistake_fails_with_its_hint(ex_id, answer, word):
    ok, line = run_check(ex_id, answer)
    assert ok is False and line.startswith(f"✗ {ex_id} ") and word in line, line


def test_a_graders_seed_draws_other_inputs(monkeypatch):
    """MINIPODS_EXERCISE_SEED (read at import as GRADING_SEED) gives inputs students have not seen: solutions
    still pass, planted mistakes still fail."""
    monkeypatch.setattr(E, "GRADING_SEED", 7)
    for ex_id, ex in E.EXERCISES.items():
        if ex.kind == "implement":
            assert run_check(ex_id, SOLUTIONS[ex_id])[0] is True, ex_id
    for ex_id, answer, _ in PLANTED:
        assert run_check(ex_id, answer)[0] is False, ex_id


def test_checks_never_raise_on_broken_answers():
    def boom(*args):
        raise ZeroDivisionError("oops")
    for ex_id, ex in E.EXERCISES.items():
        ok, line = run_check(ex_id, boom if ex.kind == "implement" else "a word")
        assert ok is False and line.startswith("✗"), line
    from minipods.downsample import max_variance
    ok, line = run_check("03.2", max_variance)
    assert not ok and "package's own function" in line


def test_cells_compile_and_run_as_written():
    """Each exercise's cells as a notebook gets them: valid Python, and with the stub untouched they run to the
    end (the check prints 'not answered yet')."""
    for ex in E.EXERCISES.values():
        text = E.cells(ex)
        code = [c.split("\n", 1)[1] for c in text.split("# %%")[1:] if not c.startswith(" [markdown]")]
        assert code[0].startswith("from exercises import check") and code[-1].rstrip().endswith(f'check("{ex.id}", {ex.name})')
        ns = {}
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            for c in code:
                exec(compile(c, ex.id, "exec"), ns)  # noqa: S102
        assert out.getvalue().rstrip().splitlines()[-1].startswith(f"· {ex.id} not answered yet")


# a section's end: the next numbered heading ("## 4. ...", "### 2b. ..."), another "## " heading, or the takeaways
SECTION_END = re.compile(r"(?m)^# (?:#{2,3} \d+[a-z]?\. |## |\*\*Takeaways\.\*\*)")


def test_notebooks_hold_their_exercises():
    """Each notebook's source holds its exercises' cells as exercises.py prints them (so an edited exercise cannot
    go stale in the notebook), one check("NN.k", ...) each, at the end of the section the exercise names: after
    that section's heading, with no code cell of the notebook's own between it and the section's end."""
    sources = {p.name[:2]: p.read_text() for p in NB.glob("[0-9][0-9]_*.py")}
    blocks = {ex.id: E.cells(ex) for ex in E.EXERCISES.values()}
    for ex in E.EXERCISES.values():
        src = sources[ex.notebook]
        assert src.count(f'check("{ex.id}"') == 1, f"{ex.id}: not once in notebook {ex.notebook}"
        assert blocks[ex.id] in src, f"{ex.id}: notebook {ex.notebook} holds other cells than `exercises.py --cells {ex.notebook}` prints"
        start = src.index(blocks[ex.id])
        heads = re.findall(r"(?m)^# #{2,3} (\d+[a-z]?)\. ", src[:start])
        assert heads and heads[-1] == ex.section.split(".")[0], f"{ex.id} sits in section {heads[-1:]}, not {ex.section!r}"
        end = SECTION_END.search(src, start)
        rest = src[start:end.start() if end else len(src)]
        for other in blocks.values():
            rest = rest.replace(other, "")
        assert "# %%\n" not in rest, f"{ex.id}: the notebook's own code follows it inside section {ex.section!r}"


def test_self_test_line():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = E.main(["--self-test"])
    n = len(E.EXERCISES)
    assert out.getvalue() == f"{n} exercises: {n} pass on solutions, {n} fail on stubs\n" and rc == 0


# ---------------------------------------------------------------- checks that hold (issue 59, part 3)
def test_a_hanging_answer_times_out_and_the_next_check_still_runs(monkeypatch):
    stop = threading.Event()

    def hangs(mask):
        while not stop.is_set():
            time.sleep(0.01)
    monkeypatch.setattr(E, "CHECK_TIMEOUT_S", 0.5)
    try:
        ok, line = run_check("01.1", hangs)
    finally:
        stop.set()
    assert ok is False and line.startswith("✗ 01.1 timed out"), line
    assert run_check("01.1", SOLUTIONS["01.1"])[0] is True


def _scramble(x) -> bool:
    """Overwrite a mutable argument in place (what a cheating answer might do); True if it could."""
    if isinstance(x, torch.Tensor) and x.numel():
        x.copy_(torch.ones_like(x) if x.dtype == torch.bool else torch.full_like(x, 1))
        return True
    if isinstance(x, np.ndarray) and x.size and x.flags.writeable:
        x[...] = 1
        return True
    if isinstance(x, list) and x:
        x[:] = [x[0]] * len(x) if len(x) > 1 and not isinstance(x[0], (list, np.ndarray)) else []
        return True
    return False


@pytest.mark.parametrize("ex_id", [ex.id for ex in E.EXERCISES.values() if ex.kind == "implement"])
def test_an_answer_that_mutates_its_input_cannot_fool_the_check(ex_id):
    """The check computes its expected values before the student runs and passes copies: a right answer that
    scrambles its input afterwards still passes, and one that scrambles it first and answers for the scrambled
    input fails (were `want` computed afterwards on the live object, it would pass)."""
    sol, mutated = SOLUTIONS[ex_id], []

    def right_then_scramble(*args):
        out = sol(*args)
        mutated.extend(_scramble(a) for a in args)
        return out

    def scramble_then_answer(*args):
        done = [_scramble(a) for a in args]
        return sol(*args) if any(done) else None
    assert run_check(ex_id, right_then_scramble)[0] is True, ex_id
    if any(mutated):
        assert run_check(ex_id, scramble_then_answer)[0] is False, ex_id


def mask_first_eos_id_only(ids, eos):
    return SOLUTIONS["01.2"](ids, list(eos)[:1])


def mask_resumes_after_eos(ids, eos):
    is_eos = torch.isin(ids, torch.tensor(eos)).int()
    return ((is_eos.cumsum(1) - is_eos == 0) | (is_eos == 0)).long()


def advantages_nan_on_equal(rewards, n, kept):
    r = np.asarray(rewards, float)
    with np.errstate(all="ignore"):
        return np.array([(r[k] - r[[j for j in kept if j // n == k // n]].mean()) / r[[j for j in kept if j // n == k // n]].std(ddof=1)
                         for k in kept])


def n_max_ignoring_free_rollouts(cm, m, prompts, gain):
    t_grpo = cm.fixed + cm.rollout(prompts * m) + cm.update(prompts * m)
    return (gain * t_grpo - cm.fixed - cm.update(prompts * m) - cm.rollout.a) / ((cm.rollout.b or 1e-12) * prompts)


def averaged_past_budget(curve, budget):
    return SOLUTIONS["06.5"](curve, max(budget, curve[-1][0]))


BROKEN = [  # (exercise, the rule of E.RULES it breaks, a version breaking it)
    ("01.1", "pads get no position", positions_counting_pads), ("01.1", "the first real token is position 0", positions_off_by_one),
    ("01.2", "the first EOS is kept", mask_without_eos), ("01.2", "every token after the first EOS is 0", mask_resumes_after_eos),
    ("01.2", "any id in eos_ids ends the row", mask_first_eos_id_only),
    ("02.1", "an <answer> block wins over other numbers", extract_last_number), ("02.1", "numbers are normalised", extract_unnormalised),
    ("02.2", "a tag earns only when it occurs exactly once", fmt_counting_present),
    ("03.2", "not the top m", top_m), ("03.2", "every k = 0..m is scanned", fixed_half),
    ("03.3", "normalise over the kept rows only", advantages_over_all_n), ("03.3", "sample std (divisor m - 1)", advantages_population_std),
    ("03.3", "equal kept rewards give 0, never NaN", advantages_nan_on_equal),
    ("04.3", "grpo: each completion's token mean, then the mean", token_mean_always), ("04.3", "padding is not counted", padding_counted),
    ("05.1", "one difference per seed, not pooled", pooled_interval), ("05.1", "Student's t with k - 1 df", z_interval),
    ("05.3", "the fixed cost belongs to both steps", n_max_without_fixed), ("05.3", "P x n rollouts a step", n_max_without_prompts),
    ("05.3", "a free rollout line: every n pays (inf)", n_max_ignoring_free_rollouts),
    ("06.2", "two-sided", sign_flip_one_sided), ("06.2", "ties count (>=)", sign_flip_strict),
    ("06.4", "within one standard error counts", reach_without_tolerance), ("06.4", "the first evaluation that reaches it", reach_last),
    ("06.5", "trapezoids between evaluations", averaged_as_steps), ("06.5", "weighted by time, not a plain mean", averaged_plain_mean),
    ("06.5", "stop at the budget", averaged_past_budget),
]


def test_every_rule_of_every_implement_check_is_written_down_and_broken_once():
    implement = {ex.id for ex in E.EXERCISES.values() if ex.kind == "implement"}
    assert set(E.RULES) == implement
    assert {(e, r) for e, r, _ in BROKEN} == {(e, r) for e, rules in E.RULES.items() for r in rules}


@pytest.mark.parametrize("ex_id,rule,answer", BROKEN, ids=[f"{e}-{r}" for e, r, _ in BROKEN])
def test_a_version_breaking_a_rule_is_rejected(ex_id, rule, answer):
    ok, line = run_check(ex_id, answer)
    assert ok is False and line.startswith(f"✗ {ex_id} "), (rule, line)


def test_a_predict_answer_equally_right_under_the_maths_is_accepted():
    ok, line = run_check("03.1", 2)  # 2 or 3 right answers of 5: the same variance, 0.24; the package keeps 3
    assert ok is True and "same variance" in line and "tie-break" in line, line
    assert run_check("03.1", 4)[0] is False and run_check("03.1", 3)[0] is True


def test_05_1_hint_on_equal_differences_says_what_it_saw():
    """Per-seed differences all equal: their t-interval has width 0. The fallback hint says that and the width it
    got, and does not blame pooling, which the check did not see."""
    st = {s: ([0.0, 1.0], [0.5, 1.5]) for s in range(3)}  # every seed's difference is +0.5
    hint = E._interval_hint(st, [0.5] * 3, 0.5, 0.25, 0.75)
    assert "all equal" in hint and "0.500 wide" in hint and "counts every question" not in hint
    assert "all equal" not in E._interval_hint(st, [0.4, 0.5, 0.6], 0.5, 0.25, 0.75)
