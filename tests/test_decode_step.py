"""scripts/decode_step.py: the part timer's exclusive times add up to the root's, nothing counted outside
the root (a fake clock makes it exact); each lever off alone is measured at one shape."""
import itertools

import pytest

from conftest import load_script

pytestmark = pytest.mark.measure  # its own tier: CI runs it; `-m 'not measure'` skips it

decode_step = load_script("decode_step")
PartTimer = decode_step.PartTimer


@pytest.fixture
def clock(monkeypatch):
    ticks = itertools.count()  # each read of the clock advances it by 1 s
    monkeypatch.setattr(decode_step.time, "perf_counter", lambda: float(next(ticks)))


def test_part_timer_counts_each_second_once_in_the_innermost_part(clock):
    t = PartTimer("loop")
    t.enter("linear")  # outside the root: not counted
    t.exit()
    t.enter("loop")     # clock 2
    t.enter("attention")  # 3
    t.enter("cache")  # 4
    t.exit()  # 5: cache 1
    t.exit()  # 6: attention 3 - 1 = 2
    t.enter("attention")  # 7
    t.exit()  # 8: attention +1
    t.exit()  # 9: loop 7 - (3 + 1) = 3
    assert t.total == {"cache": 1.0, "attention": 3.0, "loop": 3.0}
    assert sum(t.total.values()) == 9 - 2  # the root's inclusive time, split without overlap
    assert t.stack == []


def test_wrap_times_a_call_and_returns_its_value(clock):
    t = PartTimer("f")
    assert t.wrap("f", lambda x: 2 * x)(21) == 42
    assert t.total == {"f": 1.0}


def test_lever_ablation_measures_each_lever_off_alone():
    from minipods.twins.tiny import tiny_policy

    model, tok = tiny_policy(seed=0)
    r = decode_step.lever_ablation(model, tok, ["[user]\n1+1?\n[assistant]\n", "2+3?"], n=4, max_new_tokens=6,
                                      rounds=1)
    assert set(r) == set(decode_step.LEVERS)  # each lever off alone, measured in the same run
    assert all(v["decode_step_s"] > 0 and v["tokens_per_s"] > 0 for v in r.values())
