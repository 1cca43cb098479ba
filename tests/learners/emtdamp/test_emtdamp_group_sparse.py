"""Module B (eqs. 25-26) against brute-force enumeration of a small group.

The reference enumerates the group's two states (all active / all zero) and integrates
every weight numerically (scipy.integrate.quad at epsrel 1e-12) against the prior slab and
Module A's message; it never uses a closed form. Tolerance: rtol 1e-8, atol 1e-12.
"""

import math

import numpy as np
import pytest
import torch
from scipy import integrate

from bflnet.learners.emtdamp.group_sparse import (
    bernoulli_gaussian_moments,
    dense_group_posterior,
    dense_group_prior,
    element_log_evidence_ratio,
    group_sparse_messages,
)

QUAD = {"epsabs": 1e-15, "epsrel": 1e-12, "limit": 200}

# One group of 4 weights: prior slab, and Module A's messages N(q̂, ν_q) in precision form;
# the last element's message is flat (τ = h = 0, as at the start of Algorithm 1).
RHO = 0.3
SLAB_MEAN = np.array([0.5, -1.0, 0.0, 0.2])
SLAB_VAR = np.array([1.0, 0.5, 2.0, 0.8])
MSG_MEAN = np.array([1.2, -0.4, 0.9, 0.0])
MSG_PRECISION = np.array([4.0, 0.5, 10.0, 0.0])
MSG_SHIFT = MSG_MEAN * MSG_PRECISION


def as_t(x):
    return torch.as_tensor(x, dtype=torch.float64)


def slab_integrals(m):
    """∫ w^k N(w; μ_m, v_m) exp(−τw²/2 + hw) dw for k = 0, 1, 2 by quadrature."""
    mu, v, tau, h = SLAB_MEAN[m], SLAB_VAR[m], MSG_PRECISION[m], MSG_SHIFT[m]

    def weight(w):
        return math.exp(-0.5 * (w - mu) ** 2 / v - 0.5 * tau * w * w + h * w) / math.sqrt(
            2 * math.pi * v
        )

    return [integrate.quad(lambda w, k=k: w**k * weight(w), -np.inf, np.inf, **QUAD)[0]
            for k in range(3)]


def brute_force():
    """Posterior of the group by enumerating its two states."""
    z = [slab_integrals(m) for m in range(len(SLAB_MEAN))]
    on = RHO * np.prod([zi[0] for zi in z])  # all active: ∏ ∫ slab · message
    off = 1.0 - RHO  # all zero: ∏ message(0) = 1
    p_on = on / (on + off)
    slab_mean = np.array([zi[1] / zi[0] for zi in z])
    slab_var = np.array([zi[2] / zi[0] for zi in z]) - slab_mean**2
    # B → A for element m by its definition: the prior with the other elements' messages
    # integrated out; its spike/slab weights are (1 − ρ) and ρ ∏_{m'≠m} ∫ slab · message.
    to_a = []
    for m in range(len(SLAB_MEAN)):
        others = RHO * np.prod([z[k][0] for k in range(len(z)) if k != m])
        to_a.append(others / (others + 1.0 - RHO))
    return p_on, slab_mean, slab_var, np.array(to_a), z


def run():
    return group_sparse_messages(
        as_t([RHO]), as_t(SLAB_MEAN[None]), as_t(SLAB_VAR[None]), as_t(MSG_PRECISION[None]),
        as_t(MSG_SHIFT[None]),
    )


def test_group_posterior_matches_enumeration():
    p_on, slab_mean, slab_var, _, _ = brute_force()
    out = run()
    assert out.posterior_activity.item() == pytest.approx(p_on, rel=1e-8, abs=1e-12)
    np.testing.assert_allclose(out.posterior_mean[0].numpy(), slab_mean, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(out.posterior_var[0].numpy(), slab_var, rtol=1e-8, atol=1e-12)
    mean = p_on * slab_mean
    var = p_on * (slab_var + slab_mean**2) - mean**2
    np.testing.assert_allclose(out.marginal_mean[0].numpy(), mean, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(out.marginal_var[0].numpy(), var, rtol=1e-8, atol=1e-12)


def test_b_to_a_messages_match_enumeration_and_rebuild_the_posterior():
    p_on, _, _, to_a_ref, z = brute_force()
    out = run()
    np.testing.assert_allclose(out.to_a_activity[0].numpy(), to_a_ref, rtol=1e-8, atol=1e-12)
    # Module A's view: B → A (slab = prior slab) times its own message is the exact marginal.
    for m, rho_ba in enumerate(out.to_a_activity[0].tolist()):
        rebuilt = rho_ba * z[m][0] / (rho_ba * z[m][0] + 1.0 - rho_ba)
        assert rebuilt == pytest.approx(p_on, rel=1e-8)


def test_log_evidence_ratio_matches_quadrature_and_is_zero_for_flat_messages():
    ratio = element_log_evidence_ratio(
        as_t(SLAB_MEAN), as_t(SLAB_VAR), as_t(MSG_PRECISION), as_t(MSG_SHIFT)
    )
    ref = [math.log(slab_integrals(m)[0]) for m in range(len(SLAB_MEAN))]
    np.testing.assert_allclose(ratio.numpy(), ref, rtol=1e-9, atol=1e-12)
    assert ratio[-1].item() == 0.0


def test_batched_groups_equal_one_group_at_a_time():
    gen = torch.Generator().manual_seed(11)
    shape = (2, 5, 3)  # two layers' worth of 5 groups of 3
    rho = torch.rand(shape[:-1], generator=gen, dtype=torch.float64)
    mean = torch.randn(shape, generator=gen, dtype=torch.float64)
    var = torch.rand(shape, generator=gen, dtype=torch.float64) + 0.1
    tau = torch.rand(shape, generator=gen, dtype=torch.float64) * 5
    h = torch.randn(shape, generator=gen, dtype=torch.float64)
    batched = group_sparse_messages(rho, mean, var, tau, h)
    for i in range(2):
        for g in range(5):
            one = group_sparse_messages(rho[i, g:g + 1], mean[i, g:g + 1], var[i, g:g + 1],
                                        tau[i, g:g + 1], h[i, g:g + 1])
            for got, ref in zip(one, batched, strict=True):
                torch.testing.assert_close(got[0], ref[i, g], rtol=1e-13, atol=0)


def test_flat_messages_return_the_prior_and_certain_activities_stay_certain():
    rho = as_t([0.0, 0.4, 1.0])
    mean, var = torch.ones(3, 2, dtype=torch.float64), torch.full((3, 2), 2.0, dtype=torch.float64)
    flat = torch.zeros(3, 2, dtype=torch.float64)
    out = group_sparse_messages(rho, mean, var, flat, flat)
    torch.testing.assert_close(out.posterior_activity, rho, rtol=0, atol=0)
    torch.testing.assert_close(out.to_a_activity, rho[:, None].expand(3, 2), rtol=0, atol=0)
    torch.testing.assert_close(out.posterior_mean, mean, rtol=0, atol=0)
    strong = group_sparse_messages(rho, mean, var, torch.full((3, 2), 1e6, dtype=torch.float64),
                                   torch.full((3, 2), 1e6, dtype=torch.float64))
    assert strong.posterior_activity.tolist()[0] == 0.0
    assert strong.posterior_activity.tolist()[2] == 1.0
    assert all(bool(torch.isfinite(t).all()) for t in strong)
    m, v = bernoulli_gaussian_moments(rho, as_t([1.0, 1.0, 1.0]), as_t([2.0, 2.0, 2.0]))
    torch.testing.assert_close(m, rho, rtol=0, atol=0)
    torch.testing.assert_close(v, rho * 3.0 - rho**2, rtol=1e-15, atol=0)


def test_invalid_arguments_are_one_line_value_errors():
    ones = torch.ones(2, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match="activity"):
        group_sparse_messages(as_t([0.5]), ones, ones, ones, ones)
    with pytest.raises(ValueError, match="activity"):
        group_sparse_messages(as_t([0.5, 1.5]), ones, ones, ones, ones)
    with pytest.raises(ValueError, match="slab_var"):
        group_sparse_messages(as_t([0.5, 0.5]), ones, -ones, ones, ones)
    with pytest.raises(ValueError, match="message_precision"):
        group_sparse_messages(as_t([0.5, 0.5]), ones, ones, -ones, ones)


@pytest.mark.parametrize("activity", ["mixed", "certain", "ones"])
def test_dense_layout_equals_module_b_per_group(activity):
    """dense_group_prior/dense_group_posterior (Module A's (N_out, N_in + 1) layout, eq. 3.6)
    give group_sparse_messages' activities, slab and marginals for the weight columns and
    the bias groups of one."""
    gen = torch.Generator().manual_seed(12)
    n_out, n_in, f64 = 9, 20, torch.float64
    rho = torch.rand(n_in, generator=gen, dtype=f64)
    rho_b = torch.rand(n_out, generator=gen, dtype=f64)
    if activity == "mixed":
        rho[:3] = torch.tensor([0.0, 1.0, 1.0], dtype=f64)
    elif activity == "certain":
        rho, rho_b = (rho > 0.5).to(f64), (rho_b > 0.5).to(f64)
    else:
        rho, rho_b = torch.ones_like(rho), torch.ones_like(rho_b)
    mean = torch.randn(n_out, n_in + 1, generator=gen, dtype=f64)
    var = torch.rand(n_out, n_in + 1, generator=gen, dtype=f64) + 0.05
    tau = 5 * torch.rand(n_out, n_in + 1, generator=gen, dtype=f64)
    tau[:, 4] = 0.0  # a flat message column
    h = torch.randn(n_out, n_in + 1, generator=gen, dtype=f64)
    h[:, 4] = 0.0
    prior = dense_group_prior(rho, rho_b, mean, var)
    ref_w, ref_b = bernoulli_gaussian_moments(rho, mean[:, :-1], var[:, :-1])
    torch.testing.assert_close(prior.marginal_mean[:, :-1], ref_w, rtol=1e-14, atol=1e-15)
    torch.testing.assert_close(prior.marginal_var[:, :-1], ref_b, rtol=1e-12, atol=1e-15)
    out = dense_group_posterior(prior, tau, h)
    weights = group_sparse_messages(rho, mean[:, :-1].T, var[:, :-1].T, tau[:, :-1].T,
                                    h[:, :-1].T)
    biases = group_sparse_messages(rho_b, mean[:, -1:], var[:, -1:], tau[:, -1:], h[:, -1:])
    close = {"rtol": 1e-12, "atol": 1e-14}
    torch.testing.assert_close(out.weight_activity, weights.posterior_activity, **close)
    torch.testing.assert_close(out.bias_activity, biases.posterior_activity, **close)
    for got, w, b in [(out.mean, weights.posterior_mean, biases.posterior_mean),
                      (out.var, weights.posterior_var, biases.posterior_var),
                      (out.marginal_mean, weights.marginal_mean, biases.marginal_mean),
                      (out.marginal_var, weights.marginal_var, biases.marginal_var)]:
        torch.testing.assert_close(got, torch.cat([w.T, b], dim=1), **close)
    if activity != "mixed":
        assert torch.equal(out.weight_activity, rho) and torch.equal(out.bias_activity, rho_b)
