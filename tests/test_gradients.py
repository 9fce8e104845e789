"""minipods.analysis.gradients: subset gradients through grpo_loss, their Gram-matrix cosines, silent groups."""

import itertools
import math

import numpy as np
import pytest
import torch

from minipods.analysis import gradients as G
from minipods.data import build_prompt
from minipods.downsample import RULES, max_variance
from minipods.rollouts import generate_rollouts
from minipods.twins.tiny import tiny_policy

N = 6


@pytest.fixture(scope="module")
def setup():
    model, tok = tiny_policy(seed=0)
    with torch.no_grad():  # LoRA B starts at zero; a non-zero start lets gradients reach A too
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.02, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    prompts = [build_prompt(tok, q) for q in ["1+1?", "What is two plus three?", "3*3?"]]
    ro = generate_rollouts(model, tok, prompts, N, max_new_tokens=10, temperature=1.0)
    # prompt 0: mixed binary; prompt 1: mixed graded; prompt 2: all equal (a silent pool)
    rewards = torch.tensor([1, 0, 0, 1, 0, 0, 0.1, 1.1, 0.0, 0.025, 1.0, 0.05, 1, 1, 1, 1, 1, 1], dtype=torch.float32)
    pool = G.gradient_pool(model, ro, rewards)
    return model, ro, rewards, pool


def test_gram_route_equals_direct_gradient_through_grpo_loss(setup):
    model, ro, rewards, pool = setup
    for g, idx in [(0, range(N)), (0, [0, 1, 3]), (1, [1, 2, 4, 5]), (1, range(N))]:
        rows = [g * N + i for i in idx]
        direct = G.subset_gradient(model, ro, rewards, rows).double()  # (D,)
        U = G.rollout_gradients(model, ro, range(g * N, (g + 1) * N)).double()  # (N, D)
        c = torch.as_tensor(G.coefficients(pool.rewards[g], pool.tokens[g], list(idx)))
        via_gram = U.T @ c
        assert direct.norm() > 0
        assert float((direct - via_gram).norm() / direct.norm()) < 1e-5  # float32 rounding only (~1e-6)
        assert G.gram_norm(pool.gram[g], c.numpy()) == pytest.approx(float(direct.norm()), rel=1e-4)


def test_cosines_are_one_for_the_pool_itself(setup):
    _, _, _, pool = setup
    for g in (0, 1):
        full = G.coefficients(pool.rewards[g], pool.tokens[g], range(N))
        assert G.gram_cosine(pool.gram[g], full, full) == pytest.approx(1.0, abs=1e-9)
    res = G.compare_rules(pool, [2, 3, N], draws=30, seed=0)
    assert res["silent_pool"].tolist() == [False, False, True]
    assert res["full_norm"][2] == 0 and res["full_norm"][0] > 0
    for m, by_rule in res["m"].items():
        for rule, r in by_rule.items():
            assert math.isnan(r["cos"][2])  # a silent pool has no direction to keep
    for rule in RULES:  # m = n keeps the whole pool: cosine 1, norm equal to the full pool's
        r = res["m"][N][rule]
        assert r["cos"][:2] == pytest.approx([1.0, 1.0], abs=1e-9)
        assert r["norm_ratio_mean"] == pytest.approx(1.0, abs=1e-9)
    draws = res["m"][2]["random"]["cos_draws"]
    assert draws.shape == (3, 30) and np.nanstd(draws[0]) > 0  # draws differ from one another


def _cos(u, v):
    return float(u @ v / (u.norm() * v.norm())) if u.norm() > 0 else 0.0


@pytest.mark.parametrize("m", [2, 3])
def test_cosines_and_norms_equal_the_direct_gradients(setup, m):
    """compare_rules' cosine and norm of each deterministic rule's subset, against the two gradients
    computed directly through grpo_loss (subset_gradient) and compared in float64."""
    model, ro, rewards, pool = setup
    res = G.compare_rules(pool, [m], rules=("max_variance", "max_reward"), draws=1)["m"][m]
    for g in (0, 1):
        full = G.subset_gradient(model, ro, rewards, range(g * N, (g + 1) * N)).double()
        for rule in ("max_variance", "max_reward"):
            kept = G.rule_subsets(pool.rewards[g], m, rule)[0]
            direct = G.subset_gradient(model, ro, rewards, [g * N + i for i in kept]).double()
            assert res[rule]["cos"][g] == pytest.approx(_cos(direct, full), abs=1e-5), (rule, g)
            assert res[rule]["norm"][g] == pytest.approx(float(direct.norm()), rel=1e-4), (rule, g)
    # the values differ between rules and prompts: a constant answer would not pass
    got = [res[r]["cos"][g] for r in ("max_variance", "max_reward") for g in (0, 1)]
    assert len({round(c, 3) for c in got}) >= 3
    # random: each draw's cosine, the draws replayed from the same seeded generator
    draws = G.compare_rules(pool, [m], rules=("random",), draws=2, seed=4)["m"][m]["random"]["cos_draws"]
    rng = np.random.default_rng([4, m])
    for g in (0, 1):
        full = G.subset_gradient(model, ro, rewards, range(g * N, (g + 1) * N)).double()
        for j, kept in enumerate(G.rule_subsets(pool.rewards[g], m, "random", 2, rng)):
            direct = G.subset_gradient(model, ro, rewards, [g * N + i for i in kept]).double()
            assert draws[g, j] == pytest.approx(_cos(direct, full), abs=1e-5), (g, j)


def test_silent_subsets_keep_nothing(setup):
    _, _, _, pool = setup
    # max_reward with m=2 on prompt 0 keeps the two 1s: equal rewards, zero gradient, cosine 0
    res = G.compare_rules(pool, [2], rules=("max_reward", "max_variance"), draws=1)
    assert res["m"][2]["max_reward"]["cos"][0] == 0.0 and res["m"][2]["max_reward"]["norm"][0] == 0.0
    assert res["m"][2]["max_reward"]["silent_frac"] == pytest.approx(0.5)  # prompt 0 silent, prompt 1 not
    assert res["m"][2]["max_variance"]["silent_frac"] == 0.0
    assert res["m"][2]["max_variance"]["norm"][0] > 0


def test_random_draws_are_seeded(setup):
    _, _, _, pool = setup
    a = G.compare_rules(pool, [3], rules=("random",), draws=20, seed=5)["m"][3]["random"]["cos_draws"]
    b = G.compare_rules(pool, [3], rules=("random",), draws=20, seed=5)["m"][3]["random"]["cos_draws"]
    c = G.compare_rules(pool, [3], rules=("random",), draws=20, seed=6)["m"][3]["random"]["cos_draws"]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a[:2], c[:2])


def test_gram_cosine_on_known_vectors():
    U = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    K = U @ U.T
    a, b = np.array([1.0, 0, 0]), np.array([0, 0, 1.0])  # (1,0) vs (1,1): cos 45 degrees
    assert G.gram_cosine(K, a, b) == pytest.approx(1 / math.sqrt(2))
    assert G.gram_cosine(K, -a, b) == pytest.approx(-1 / math.sqrt(2))
    assert G.gram_norm(K, b) == pytest.approx(math.sqrt(2))
    assert G.gram_cosine(K, np.zeros(3), b) == 0.0
    assert math.isnan(G.gram_cosine(K, a, np.zeros(3)))


def test_coefficients_are_kept_advantages_over_kept_tokens():
    c = G.coefficients([1.0, 0.0, 0.0, 1.0], [2, 3, 5, 10], [0, 1])
    # advantages of (1, 0) standardised: (+-0.5) / (std 0.7071 + 1e-4); kept tokens 2 + 3 = 5
    a = 0.5 / (math.sqrt(0.5) + 1e-4)
    assert c == pytest.approx([a / 5, -a / 5, 0.0, 0.0], rel=1e-6)


# ---------------------------------------------------------------- silent groups
def test_predicted_silent_fraction_exact_values():
    assert G.predicted_silent_fraction([0.5], 1) == 1.0
    assert G.predicted_silent_fraction([0.5], 2) == pytest.approx(0.5)
    assert G.predicted_silent_fraction([0.5], 4) == pytest.approx(2 / 16)
    assert G.predicted_silent_fraction([0.0, 1.0], 7) == 1.0
    assert G.predicted_silent_fraction([0.1, 0.5], 3) == pytest.approx((0.001 + 0.729 + 0.25) / 2)
    with pytest.raises(ValueError):
        G.predicted_silent_fraction([1.5], 2)


def _brute_silent(row, n):
    combos = list(itertools.combinations(row, n))
    return sum(len(set(c)) == 1 for c in combos) / len(combos)


def test_observed_silent_fraction_exact_and_brute_force():
    assert G.observed_silent_fraction([[0, 0, 1, 1]], 2) == pytest.approx(2 / 6)
    assert G.observed_silent_fraction([[0, 0, 1, 1]], 1) == 1.0
    assert G.observed_silent_fraction([[0, 0, 1, 1], [1, 1, 1, 1]], 4) == pytest.approx(0.5)
    rng = np.random.default_rng(0)
    r = rng.choice([0.0, 0.025, 1.0, 1.1], size=(5, 8), p=[0.5, 0.2, 0.2, 0.1])
    for n in range(1, 9):
        want = np.mean([_brute_silent(row.tolist(), n) for row in r])
        assert G.observed_silent_fraction(r, n) == pytest.approx(want)
    with pytest.raises(ValueError):
        G.observed_silent_fraction(r, 9)


def test_silent_curve_matches_prediction_on_a_large_pool_and_pods_rescues():
    rng = np.random.default_rng(1)
    p = rng.uniform(0, 0.4, 200)
    correct = (rng.random((200, 64)) < p[:, None]).astype(float)
    cur = G.silent_curve(correct, [2, 4, 8, 16])
    assert cur["observed"] == sorted(cur["observed"], reverse=True)  # more rollouts, fewer silent groups
    assert cur["observed"] == pytest.approx(cur["predicted"], abs=0.05)
    # PODS n=16 -> m=4 is silent exactly when its pool of 16 is: max-variance keeps unequal rewards if any exist
    pods_silent = np.mean([np.ptp(row[max_variance(row, 4)]) == 0 for row in correct[:, :16]])
    assert pods_silent == pytest.approx(np.mean([np.ptp(row) == 0 for row in correct[:, :16]]))
    assert pods_silent < np.mean([np.ptp(row) == 0 for row in correct[:, :4]])  # GRPO n = m = 4
    with pytest.raises(ValueError):
        G.silent_curve([[0.5, 1.0]], [1])
