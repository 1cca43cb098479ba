"""EM-TDAMP's ``sparsity_mode="paper"`` (Module B selects the groups, one budget over the
network, the paper's reset completed by a shrinking cap), the extrinsic ``ν_s`` safeguard
and the per-layer slab variances in the records."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from bflnet.learners.emtdamp.damp_mlp import DampSettings, gaussian_output, run_damp
from bflnet.learners.emtdamp.learner import EMTDAMP
from bflnet.learners.emtdamp.server_em import budget_cap, group_log_odds, paper_sparsity

F64 = torch.float64


def sparse_linear_problem(seed: int = 0):
    """``y = x W + noise``: 6 inputs of which only the first 3 carry signal, 3 outputs."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((400, 6))
    w = np.zeros((6, 3))
    w[:3] = rng.choice([-1.5, 1.5], size=(3, 3))
    return x, x @ w + 0.3 * rng.standard_normal((400, 3))


@pytest.mark.parametrize("clip", ["posterior", "extrinsic"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_module_b_switches_off_the_inputs_without_signal(seed, clip):
    """ρ₀ = 0.5: after one client pass Module B's posterior activity is near 1 for the
    informative inputs and far below ρ₀ for the others; the paper rule with the cap then
    keeps exactly the 3 informative groups (budget round(0.5 · 6) = 3)."""
    x, y = sparse_linear_problem(seed)
    learner = EMTDAMP([6, 3], {0: (x, y)}, sparsity_mode="paper", initial_activity=0.5,
                      target_density=0.5, budget_rounds=3, sweeps=3, batch_size=100,
                      variance_clip=clip)
    state = learner.init(np.random.default_rng(seed + 10))
    first = learner.local_update(0, state, None, np.random.default_rng(seed + 20))
    activity = first.payload["l1.w_activity"]
    assert bool((activity[:3] > 0.99).all()), activity
    assert bool((activity[3:] < 0.05).all()), activity
    for merge in range(1, 5):
        update = first if merge == 1 else learner.local_update(
            0, state, None, np.random.default_rng(seed + 20 + merge))
        state = learner.merge(state, [update])
    final = state["l1.w_activity"]
    assert torch.nonzero(final > 0).flatten().tolist() == [0, 1, 2]
    assert learner.evaluate(state)["active_groups"] == learner.budget == 3


def test_module_b_is_skipped_when_rho0_is_one():
    """With ρ₀ = 1 (the per-layer mode's default) every activity stays exactly 1."""
    x, y = sparse_linear_problem()
    learner = EMTDAMP([6, 3], {0: (x, y)}, sweeps=3, batch_size=100)
    state = learner.init(np.random.default_rng(0))
    update = learner.local_update(0, state, None, np.random.default_rng(1))
    assert bool((update.payload["l1.w_activity"] == 1).all())


def test_budget_cap_shrinks_geometrically_to_the_target():
    caps = [budget_cap(141, 28, merge, 1, 50) for merge in range(0, 60)]
    assert caps[0] == 141  # before sparsify_from
    assert all(a >= b for a, b in itertools.pairwise(caps[1:]))
    assert caps[50] == caps[59] == 28
    assert caps[25] == round(141 * (28 / 141) ** 0.5)
    assert budget_cap(10, 10, 5, 1, 3) == 10


@pytest.mark.parametrize("seed", range(40))
def test_paper_sparsity_meets_the_cap_exactly_and_keeps_a_group_per_layer(seed):
    """Random activities (some saturated, some dead) and log-odds: the survivors are exactly
    ``cap`` when more were alive, at least one per layer with one alive, the kept ones are
    the most probable, and the literal reset fires iff S > target."""
    gen = torch.Generator().manual_seed(seed)
    sizes = [13, 64, 64]
    logits = [torch.randn(n, generator=gen, dtype=F64) * 30 for n in sizes]
    activities = [torch.sigmoid(z) for z in logits]
    odds = [torch.randn(n, generator=gen, dtype=F64) for n in sizes]
    activities[seed % 3][: seed % 5] = 0.0  # pruned before: log-odds −inf
    odds[seed % 3][: seed % 5] = -math.inf
    activities[(seed + 1) % 3][: seed % 4] = 0.0  # underflowed this round: finite log-odds
    target = 3 + seed % 20
    cap = target + seed % 30
    reset = paper_sparsity(activities, odds, target=target, cap=cap, threshold=0.99,
                           initial_activity=0.9)
    before = torch.cat(activities)
    after = torch.cat(reset.activities)
    confident = int((before > 0.99).sum())
    assert reset.fired == (confident > target)
    alive_before = int(((before >= 0.99) if reset.fired else (before > 0)).sum())
    alive = int((after > 0).sum())
    best = [int(torch.argmax(o)) for o in odds]
    revived = sum(1 for layer, (a, i) in enumerate(zip(activities, best, strict=True))
                  if not bool(((a >= 0.99) if reset.fired else (a > 0))[i]))
    assert alive == min(cap, max(target, alive_before + revived))
    assert target <= alive <= cap
    for layer_odds, layer_after in zip(odds, reset.activities, strict=True):
        if bool(torch.isfinite(layer_odds).any()):
            assert bool((layer_after > 0).any())
    assert bool((after[after > 0] <= 1).all())
    assert not bool((after[torch.cat(odds) == -math.inf] > 0).any())  # pruned stay pruned


def test_paper_reset_as_written_when_more_groups_are_confident_than_the_target():
    activities = [torch.tensor([1.0, 0.995, 0.5, 0.2], dtype=F64)]
    odds = [torch.tensor([3.0, 2.0, 1.0, 0.0], dtype=F64)]
    reset = paper_sparsity(activities, odds, target=1, cap=4, threshold=0.99,
                           initial_activity=0.7)
    assert reset.fired and reset.confident_count == 2
    assert reset.activities[0].tolist() == [0.7, 0.7, 0.0, 0.0]


def test_group_log_odds_is_the_unsaturated_posterior_log_odds():
    """One element: the posterior log-odds of a spike-and-slab prior times a Gaussian
    message, by direct integration of the two evidences."""
    prior_rho, mu0, v0 = 0.3, 0.2, 0.5
    tau, h = 4.0, 3.0  # message exp(−τw²/2 + hw)
    v1 = 1 / (1 / v0 + tau)
    m1 = v1 * (mu0 / v0 + h)
    odds = group_log_odds(torch.tensor([prior_rho], dtype=F64), torch.tensor([[mu0]], dtype=F64),
                          torch.tensor([[v0]], dtype=F64), torch.tensor([[m1]], dtype=F64),
                          torch.tensor([[v1]], dtype=F64))
    grid = np.linspace(-12, 12, 200001)
    slab = np.exp(-(grid - mu0) ** 2 / (2 * v0)) / math.sqrt(2 * math.pi * v0)
    evidence = np.trapezoid(slab * np.exp(-tau * grid ** 2 / 2 + h * grid), grid)
    expected = math.log(prior_rho / (1 - prior_rho)) + math.log(evidence)  # spike: msg(0)=1
    assert float(odds[0]) == pytest.approx(expected, rel=1e-9, abs=1e-9)
    dead = group_log_odds(torch.tensor([0.0], dtype=F64), torch.tensor([[mu0]], dtype=F64),
                          torch.tensor([[v0]], dtype=F64), torch.tensor([[m1]], dtype=F64),
                          torch.tensor([[v1]], dtype=F64))
    assert float(dead[0]) == -math.inf


@pytest.mark.parametrize("prior_var", [1e-1, 1e-6])
def test_extrinsic_clip_gives_the_exact_gaussian_output_nu_s(prior_var):
    """Gaussian output node: ν_s = 1/(ν_p + v) exactly with the extrinsic safeguard; the
    posterior cap replaces it by 0.01/ν_p once ν_p < v/99, a floor that grows as the prior
    shrinks (the compounding under PasP)."""
    from bflnet.learners.emtdamp.damp_mlp import gaussian_layer_prior

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 50, generator=gen, dtype=F64)
    y = torch.randn(1, 50, generator=gen, dtype=F64)
    noise = 0.5
    prior = gaussian_layer_prior(torch.zeros(1, 5, dtype=F64),
                                 torch.full((1, 5), prior_var, dtype=F64))
    states = {}
    for clip in ("posterior", "extrinsic"):
        states[clip], _ = run_damp(x, [prior], gaussian_output(y, noise), sweeps=1,
                                   settings=DampSettings(variance_clip=clip))
    p_var = states["extrinsic"].p_var[0]
    assert torch.allclose(states["extrinsic"].s_var[0], 1 / (p_var + noise), rtol=1e-12)
    expected_posterior = torch.where(p_var < noise / 99, 0.01 / p_var, 1 / (p_var + noise))
    assert torch.allclose(states["posterior"].s_var[0], expected_posterior, rtol=1e-9)
    if prior_var == 1e-6:  # the cap binds: the likelihood looks ≈ 0.01·v/ν_p times sharper
        ratio = states["posterior"].s_var[0] / states["extrinsic"].s_var[0]
        assert float(ratio.min()) > 100


def test_extrinsic_clip_drops_messages_wider_than_their_forward_message():
    from bflnet.learners.emtdamp.damp_mlp import _scores

    z_mean = torch.tensor([1.0, 2.0], dtype=F64)
    z_var = torch.tensor([0.5, 3.0], dtype=F64)  # the second is wider than ν_p = 2
    p_hat = torch.zeros(2, dtype=F64)
    p_var = torch.full((2,), 2.0, dtype=F64)
    clips: dict[str, int] = {}
    s_hat, s_var = _scores(clips, 1, z_mean, z_var, p_hat, p_var,
                           DampSettings(variance_clip="extrinsic"))
    assert s_hat.tolist() == [0.5, 0.0]
    assert s_var.tolist() == [pytest.approx((1 - 0.25) / 2), 0.0]
    assert clips["layer1/z_to_p_ratio"] == 1


def test_bad_modes_are_one_line_errors():
    x, y = sparse_linear_problem()
    with pytest.raises(ValueError, match="initial_activity: must be < 1"):
        EMTDAMP([6, 3], {0: (x, y)}, sparsity_mode="paper")
    with pytest.raises(ValueError, match="variance_clip"):
        DampSettings(variance_clip="both")
