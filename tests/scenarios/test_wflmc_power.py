"""WFLMC's power allocations under a privacy budget: the bound is the authors' formula, the
convex programme's solution meets every constraint, matches the closed form of a case
small enough to solve by hand, and beats the equal allocation in its objective."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bflnet.radio.aircomp import AirCompSpec, plan_round, tx_power_from_snr_db
from bflnet.scenarios.ota.wflmc_power import LangevinBound, equal_scales, optimise_scales

BOUND = LangevinBound(eta=2e-3, mu=100.0, smooth=180.0, dim=3, initial_w2=2.0)


def test_the_bound_is_the_authors_formula():
    rng = np.random.default_rng(0)
    S, burn_in, K = 12, 5, 8
    k_a = rng.integers(1, K + 1, S).astype(float)
    a, clip, eta = rng.uniform(0.5, 1.0, S), 0.3, BOUND.eta
    coef, bias = 1.0 / k_a ** 2, 4 * (clip / K) ** 2 * (K - k_a) ** 2
    got = BOUND.per_round(a, noise_coef=coef, bias=bias, burn_in=burn_in)
    g, L, d = BOUND.gamma, BOUND.smooth, BOUND.dim
    want = []
    for s2 in range(burn_in + 1, S + 1):  # Main_SNR.m's Ana_set, in the payloads' units
        total = ((0.5 + 0.5 * g) ** (2 * s2)) * BOUND.initial_w2
        for i in range(1, s2 + 1):
            term = (eta ** 4 * L ** 3 * d / 3 + eta ** 3 * L ** 2 * d + bias[i - 1]
                    + max(0.0, coef[i - 1] / a[i - 1] - 2 * eta))
            total += (0.5 + 0.5 * g) ** (2 * (s2 - i)) * (2 + 2 * g) / (1 - g) * term
        want.append(total)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_two_rounds_one_kept_match_the_closed_form():
    # min c_1/a_1 + c_2/a_2 subject to a_1 + a_2 ≤ B: a_i ∝ sqrt(c_i), with c_i the kept
    # round's weight of round i (q and 1, times the common factor)
    budget = 10.0
    caps = np.full(2, 1.0 / (2 * BOUND.eta))      # the Langevin level, far above
    a = optimise_scales(BOUND, noise_coef=np.ones(2), bias=np.zeros(2), caps=caps,
                        charged=np.ones((2, 1), dtype=bool), rho_unit=1.0, budget=budget,
                        burn_in=1)
    q = ((1 + BOUND.gamma) / 2) ** 2
    want = budget * np.array([math.sqrt(q), 1.0]) / (math.sqrt(q) + 1.0)
    np.testing.assert_allclose(a, want, rtol=2e-3)


def test_equal_allocation_spreads_the_budget_over_the_busiest_device():
    charged = np.array([[1, 1], [1, 0], [1, 1], [0, 1]], dtype=bool)  # device 0: 3 rounds
    caps = np.array([1.0, 1.0, 0.1, 1.0])
    np.testing.assert_allclose(equal_scales(caps, charged, rho_unit=2.0, budget=3.0),
                               [0.5, 0.5, 0.1, 0.5])


@pytest.mark.parametrize("snr_db", [10.0, 30.0])
def test_the_optimum_meets_every_constraint_and_beats_equal(snr_db):
    rng = np.random.default_rng(3)
    K, S, burn_in, dim, clip = 10, 40, 20, 3, 0.05
    spec = AirCompSpec(tx_power=tx_power_from_snr_db(snr_db))
    amps = 0.1 * np.sqrt(rng.standard_exponential((S, K)))
    plans = [plan_round(h, spec, dim=dim, clip=clip, target_var=2 * BOUND.eta) for h in amps]
    caps = np.array([p.scale for p in plans])
    k_a = np.array([p.k_active for p in plans], dtype=float)
    active = np.array([p.active for p in plans])
    assert (k_a < K).any()  # truncation acts: devices pay for different rounds
    coef, bias = 1.0 / k_a ** 2, 4 * (clip / K) ** 2 * (K - k_a) ** 2
    rho_unit = 2 * clip ** 2
    budget = 0.3 * rho_unit * caps.sum()           # binding: well below the caps' cost
    kw = {"noise_coef": coef, "bias": bias, "burn_in": burn_in}
    opt = optimise_scales(BOUND, caps=caps, charged=active, rho_unit=rho_unit,
                          budget=budget, **kw)
    equal = equal_scales(caps, active, rho_unit=rho_unit, budget=budget)
    assert (opt > 0).all() and (opt <= caps).all()
    spent = active.T.astype(float) @ (rho_unit * opt)
    assert spent.max() <= budget * (1 + 1e-12)
    assert spent.max() == pytest.approx(budget, rel=1e-6)   # the budget binds: all spent
    assert BOUND.worst(opt, **kw) < 0.95 * BOUND.worst(equal, **kw)
    # rounds long before the kept ones get less than the kept ones
    assert np.median(opt[:5] / caps[:5]) < np.median(opt[burn_in:] / caps[burn_in:])
