"""EM-TDAMP server (eqs. 12-23 and the target-sparsity rule) against exact answers.

* eqs. 12/14: normalised ∏_k N^{w_k} by quadrature (rtol 1e-9);
* eqs. 13/15: spike and slab masses of the geometric mean of Bernoulli-Gaussians by
  quadrature (rtol 1e-8);
* eq. 18: scipy.optimize maximisation of the EM objective (rtol 1e-7);
* eqs. 21-23: β²F(α/β) from the table against direct maximisation of
  ∫ Gumbel · log Q(ξ/√v) (scipy quad + bounded Brent; rtol 1e-4, off the table's grid,
  where the spline through it is accurate to ~1e-5); the moment match against
  scipy.stats (rtol 1e-12);
* target sparsity: the active group count equals the target exactly.
"""

import math

import numpy as np
import pytest
import torch
from scipy import integrate, optimize, special, stats

from bflnet.learners.emtdamp.group_sparse import group_sparse_messages
from bflnet.learners.emtdamp.server_em import (
    aggregate_activity,
    aggregate_gaussians,
    apply_target_sparsity,
    classification_noise_statistics,
    classification_noise_variance,
    client_weights,
    gumbel_moment_match,
    gumbel_noise_variance,
    gumbel_table,
    regression_noise_statistic,
    regression_noise_variance,
)

QUAD = {"epsabs": 1e-14, "epsrel": 1e-12, "limit": 200}
COUNTS = [50, 120, 30]


def f64(x):
    return torch.as_tensor(x, dtype=torch.float64)


def log_normal(x, m, v):
    return -0.5 * (math.log(2 * math.pi * v) + (x - m) ** 2 / v)


def test_eq12_is_the_normalised_weighted_product_of_gaussians():
    means = np.array([[0.3, -1.0], [1.1, 0.5], [-0.4, 2.0]])
    variances = np.array([[0.5, 2.0], [1.5, 0.1], [0.2, 1.0]])
    w = client_weights(COUNTS)
    mean, var = aggregate_gaussians(f64(means), f64(variances), w)
    for j in range(2):
        def log_prod(x, j=j):
            return sum(w[k].item() * log_normal(x, means[k, j], variances[k, j]) for k in range(3))

        moments = [integrate.quad(lambda x, p=p: x**p * math.exp(log_prod(x)), -30, 30, **QUAD)[0]
                   for p in range(3)]
        ref_mean = moments[1] / moments[0]
        assert mean[j].item() == pytest.approx(ref_mean, rel=1e-9)
        assert var[j].item() == pytest.approx(moments[2] / moments[0] - ref_mean**2, rel=1e-9)


def test_eq13_15_activity_is_the_geometric_mean_of_bernoulli_gaussians():
    # K = 3 clients, 2 groups of 2 weights.
    rho = np.array([[0.9, 0.2], [0.6, 0.05], [0.99, 0.4]])
    means = np.array([[[0.5, -0.2], [1.0, 0.0]], [[0.7, 0.1], [0.8, -0.5]],
                      [[0.4, -0.3], [1.5, 0.3]]])
    variances = np.array([[[0.2, 0.3], [1.0, 0.5]], [[0.4, 0.1], [0.6, 0.9]],
                          [[0.1, 0.2], [2.0, 0.4]]])
    w = client_weights(COUNTS)
    mean, var = aggregate_gaussians(f64(means), f64(variances), w)
    activity = aggregate_activity(f64(rho), f64(means), f64(variances), w, mean, var)
    wn = w.numpy()
    for g in range(2):
        # ∏_k (ρ_k N_k(θ) + (1 − ρ_k) δ(θ))^{w_k}: slab mass ∏_k ρ_k^{w_k} ∏_m ∫ ∏_k N_k^{w_k},
        # spike mass ∏_k (1 − ρ_k)^{w_k}.
        slab = np.prod(rho[:, g] ** wn)
        for m in range(2):
            slab *= integrate.quad(
                lambda x, g=g, m=m: math.exp(sum(wn[k] * log_normal(x, means[k, g, m],
                                                                    variances[k, g, m])
                                                 for k in range(3))), -30, 30, **QUAD)[0]
        spike = np.prod((1 - rho[:, g]) ** wn)
        assert activity[g].item() == pytest.approx(slab / (slab + spike), rel=1e-8)


def test_one_client_aggregates_to_itself_and_certainty_is_kept():
    rho, mean, var = f64([[0.3, 0.0, 1.0]]), f64([[[0.2], [1.0], [-1.0]]]), f64([[[0.5], [1.0],
                                                                                  [2.0]]])
    w = client_weights([10])
    agg_mean, agg_var = aggregate_gaussians(mean, var, w)
    torch.testing.assert_close(agg_mean, mean[0], rtol=1e-15, atol=0)
    torch.testing.assert_close(agg_var, var[0], rtol=1e-15, atol=0)
    activity = aggregate_activity(rho, mean, var, w, agg_mean, agg_var)
    torch.testing.assert_close(activity, rho[0], rtol=1e-14, atol=0)
    with pytest.raises(ValueError, match="activities"):
        aggregate_activity(f64([[float("nan")], [1.0]]), mean[:, :1].expand(2, 1, 1),
                           var[:, :1].expand(2, 1, 1), client_weights([1, 1]),
                           agg_mean[:1], agg_var[:1])


SATURATION = -math.log(torch.finfo(torch.float64).eps / 2)  # logit at which float64 rho = 1


def test_opposite_certainties_are_read_from_the_clients_log_odds():
    """One client's rho rounded to 0, another's to 1: the sum uses their log-odds, each
    bounded on its own side of +-T; without them both read +-T (symmetric)."""
    means = f64([[[0.1], [0.3]], [[0.1], [0.3]]])  # equal slabs: log C = 0
    variances = f64([[[1.0], [2.0]], [[1.0], [2.0]]])
    rho = f64([[0.0, 0.4], [1.0, 0.7]])
    odds = f64([[-50.0, 123.0], [80.0, -7.0]])  # the second group's are not read
    for counts in ([1, 1], [1, 99], [30, 10]):
        w = client_weights(counts)
        agg_mean, agg_var = aggregate_gaussians(means, variances, w)
        with_odds = aggregate_activity(rho, means, variances, w, agg_mean, agg_var,
                                       log_odds=odds)
        torch.testing.assert_close(with_odds[0], torch.sigmoid(w[0] * -50.0 + w[1] * 80.0),
                                   rtol=1e-12, atol=0)
        plain = torch.sigmoid((w * torch.logit(rho[:, 1])).sum())
        torch.testing.assert_close(with_odds[1], plain, rtol=1e-12, atol=0)
        bare = aggregate_activity(rho, means, variances, w, agg_mean, agg_var)
        torch.testing.assert_close(bare[0], torch.sigmoid((w[1] - w[0]) * SATURATION),
                                   rtol=1e-12, atol=0)
        torch.testing.assert_close(bare[1], plain, rtol=1e-12, atol=0)
    # Equal weights and no log-odds: a 0 and a 1 tie; 19 clients at 1 outvote one at 0.
    w = client_weights([1, 1])
    agg = aggregate_gaussians(means, variances, w)
    assert float(aggregate_activity(rho, means, variances, w, *agg)[0]) == pytest.approx(0.5)
    many = torch.cat([rho[:1], rho[1:].expand(19, 2)])
    slabs = means[:1].expand(20, 2, 1), variances[:1].expand(20, 2, 1)
    w = client_weights([1] * 20)
    agg = aggregate_gaussians(*slabs, w)
    assert float(aggregate_activity(many, *slabs, w, *agg)[0]) > 1 - 1e-12
    # A log-odds on the wrong side of the rounding is bounded at +-T.
    wrong = f64([[+5.0, 0.0], [-5.0, 0.0]])
    w = client_weights([1, 3])
    agg = aggregate_gaussians(means, variances, w)
    out = aggregate_activity(rho, means, variances, w, *agg, log_odds=wrong)
    torch.testing.assert_close(out[0], torch.sigmoid((w[1] - w[0]) * SATURATION),
                               rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="log_odds"):
        aggregate_activity(rho, means, variances, w, *agg, log_odds=wrong[:, :1])


def test_flipping_every_client_flips_the_merge():
    """With equal slabs (log C = 0) the merged log-odds is odd in the clients' activities:
    rho -> 1 - rho (and log-odds -> -log-odds) gives 1 - merged, saturated groups too."""
    gen = torch.Generator().manual_seed(11)
    K, G, M = 5, 40, 3
    rho = torch.rand(K, G, generator=gen, dtype=torch.float64)
    parity = (torch.arange(K).reshape(-1, 1) + torch.arange(8)) % 2
    rho[:, :8] = parity.to(torch.float64)  # opposite certainties across clients
    rho[0, 8:16] = 0.0  # one client saturated among interior ones
    rho[1, 12:20] = 1.0
    rho[:, 20] = 0.0  # unanimous: stays exactly 0 / 1
    rho[:, 21] = 1.0
    odds = torch.logit(rho) + torch.where(rho == 0, -60.0, 0.0) + torch.where(rho == 1, 45.0, 0.0)
    odds = torch.where(torch.isfinite(odds), odds, torch.sign(odds) * 90.0)
    means = torch.randn(1, G, M, generator=gen, dtype=torch.float64).expand(K, G, M)
    variances = (0.1 + torch.rand(1, G, M, generator=gen, dtype=torch.float64)).expand(K, G, M)
    w = client_weights([3, 1, 4, 1, 5])
    agg = aggregate_gaussians(means, variances, w)
    for extra in ({}, {"log_odds": odds}):
        flipped_extra = {"log_odds": -odds} if extra else {}
        merged = aggregate_activity(rho, means, variances, w, *agg, **extra)
        flipped = aggregate_activity(1.0 - rho, means, variances, w, *agg, **flipped_extra)
        torch.testing.assert_close(flipped, 1.0 - merged, rtol=1e-12, atol=2e-16)
        assert merged[20] == 0.0 and merged[21] == 1.0


def test_identical_clients_merge_to_one_clients_posterior():
    """K identical posteriors: the weighted geometric mean is that posterior (closed form:
    precision sum_k w_k / v = 1/v, log C = 0, logit = sum_k w_k logit rho = logit rho),
    saturated activities included."""
    gen = torch.Generator().manual_seed(3)
    G, M = 12, 4
    rho = torch.rand(G, generator=gen, dtype=torch.float64)
    rho[0], rho[1] = 0.0, 1.0
    mean = torch.randn(G, M, generator=gen, dtype=torch.float64)
    var = 1e-13 + torch.rand(G, M, generator=gen, dtype=torch.float64)
    for K, counts in ((1, [7]), (4, [1, 1, 1, 1]), (3, [5, 90, 2])):
        w = client_weights(counts)
        odds = torch.logit(rho).expand(K, G)
        agg_mean, agg_var = aggregate_gaussians(mean.expand(K, G, M), var.expand(K, G, M), w)
        torch.testing.assert_close(agg_mean, mean, rtol=1e-13, atol=1e-15)
        torch.testing.assert_close(agg_var, var, rtol=1e-13, atol=0)
        activity = aggregate_activity(rho.expand(K, G), mean.expand(K, G, M),
                                      var.expand(K, G, M), w, agg_mean, agg_var,
                                      log_odds=odds)
        torch.testing.assert_close(activity, rho, rtol=1e-12, atol=1e-15)
        assert activity[0] == 0.0 and activity[1] == 1.0


def test_eq18_maximises_the_regression_em_objective():
    gen = torch.Generator().manual_seed(5)
    clients = []
    for n in COUNTS:
        y = torch.randn(2, n, generator=gen, dtype=torch.float64)
        mu = y + 0.7 * torch.randn(2, n, generator=gen, dtype=torch.float64)
        v = torch.rand(2, n, generator=gen, dtype=torch.float64) * 0.3
        clients.append((y, mu, v))
    sigmas = [regression_noise_statistic(*c) for c in clients]
    v_star = regression_noise_variance(sigmas, COUNTS)

    def negative_objective(log_v):  # −Σ_k Σ_{i,m} E log N(y; z, v), z ~ N(μ_z, v_z)
        v = math.exp(log_v)
        return sum(0.5 * float((math.log(2 * math.pi * v) + ((y - mu) ** 2 + vz) / v).sum())
                   for y, mu, vz in clients)

    res = optimize.minimize_scalar(negative_objective, bounds=(-10, 10), method="bounded",
                                   options={"xatol": 1e-12})
    assert v_star == pytest.approx(math.exp(res.x), rel=1e-7)


def test_margin_statistics_and_gumbel_moment_match():
    z_mean = f64([[1.0, -0.5, 0.2], [0.0, 2.0, -1.0], [-1.0, 0.5, 0.3]])  # (C=3, B=3)
    z_var = f64([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.7, 0.8, 0.9]])
    labels = torch.tensor([0, 1, 2])
    mu_k, e_k = classification_noise_statistics(labels, z_mean, z_var)
    xi = [(z_mean[m, i] - z_mean[labels[i], i], z_var[m, i] + z_var[labels[i], i])
          for i in range(3) for m in range(3) if m != labels[i]]
    assert mu_k == pytest.approx(sum(float(a) for a, _ in xi) / 6, rel=1e-14)
    assert e_k == pytest.approx(sum(float(a**2 + b) for a, b in xi) / 6, rel=1e-14)
    pooled_mean = (50 * -1.0 + 120 * -2.0 + 30 * -0.5) / 200
    pooled_second = (50 * 3.0 + 120 * 6.0 + 30 * 1.0) / 200
    for side, dist in (("min", stats.gumbel_l), ("max", stats.gumbel_r)):
        alpha, beta = gumbel_moment_match([-1.0, -2.0, -0.5], [3.0, 6.0, 1.0], COUNTS, side)
        assert dist(loc=alpha, scale=beta).mean() == pytest.approx(pooled_mean, rel=1e-12)
        assert dist(loc=alpha, scale=beta).var() == pytest.approx(
            pooled_second - pooled_mean**2, rel=1e-12)


def direct_optimum(alpha, beta, side):
    """argmax_v ∫ Gumbel(ξ; α, β) log Q(ξ/√v) dξ by quad + bounded Brent on log v."""
    dist = (stats.gumbel_l if side == "min" else stats.gumbel_r)(loc=alpha, scale=beta)
    lo, hi = dist.ppf(1e-15), dist.isf(1e-15)

    def negative(log_v):
        s = math.exp(-0.5 * log_v)
        return -integrate.quad(lambda x: dist.pdf(x) * special.log_ndtr(-x * s), lo, hi,
                               points=[0.0] if lo < 0 < hi else None, **QUAD)[0]

    return math.exp(optimize.minimize_scalar(negative, bounds=(-20, 20), method="bounded",
                                             options={"xatol": 1e-10}).x)


@pytest.mark.parametrize(("side", "alpha", "beta"), [
    ("min", -2.97, 1.0), ("min", -1.0, 0.83), ("min", 0.27, 2.0),
    ("max", -7.9, 1.13), ("max", -3.0, 1.57), ("max", -1.5, 1.27),
])  # α/β off the table's grid; away from where F blows up (μ ≈ 0.6 min, −0.6 max)
def test_tabulated_gumbel_optimum_matches_direct_maximisation(side, alpha, beta):
    assert gumbel_noise_variance(alpha, beta, side) == pytest.approx(
        direct_optimum(alpha, beta, side), rel=1e-4)


def test_table_saturates_where_there_is_no_interior_maximum():
    mus, log_f = gumbel_table("max")
    assert np.isinf(gumbel_noise_variance(0.0, 1.0, "max"))  # F = ∞ above μ ≈ −0.6
    assert np.all(np.isfinite(log_f)) and mus[0] == -10.0
    update = classification_noise_variance([0.0], [1.0], [10], previous=2.0, side="max",
                                           max_noise_var=100.0)
    assert update.clipped == 1 and update.value == pytest.approx(0.5 * 100.0 + 0.5 * 2.0)
    update = classification_noise_variance([-4.0], [17.0], [10], previous=2.0, side="max")
    alpha, beta = gumbel_moment_match([-4.0], [17.0], [10], "max")
    assert update.clipped == 0
    assert update.value == pytest.approx(0.5 * gumbel_noise_variance(alpha, beta, "max") + 1.0)


def test_target_sparsity_resets_to_exactly_the_target_count():
    gen = torch.Generator().manual_seed(2)
    activity = torch.rand(40, generator=gen, dtype=torch.float64)
    activity[:25] = 0.95 + 0.04 * torch.rand(25, generator=gen, dtype=torch.float64)
    out = apply_target_sparsity(activity, 10, threshold=0.9, initial_activity=0.5)
    assert out.fired and out.confident_count == 25
    assert int((out.activity > 0).sum()) == 10
    assert set(out.activity.unique().tolist()) == {0.0, 0.5}
    assert set(torch.nonzero(out.activity).flatten().tolist()) == set(
        torch.topk(activity, 10).indices.tolist())
    # Below the target the rule does nothing.
    quiet = apply_target_sparsity(activity, 30, threshold=0.9, initial_activity=0.5)
    assert not quiet.fired and torch.equal(quiet.activity, activity)
    # Rounds: Module B with strong evidence for every group cannot revive a pruned group,
    # so the count stays exactly at the target.
    rho = out.activity
    for _ in range(3):
        ones = torch.ones(40, 4, dtype=torch.float64)
        post = group_sparse_messages(rho, 0 * ones, ones, 50 * ones, 100 * ones)
        rho = apply_target_sparsity(post.posterior_activity, 10, threshold=0.9,
                                    initial_activity=0.5).activity
        assert int((rho > 0).sum()) == 10
        assert int((post.posterior_activity > 0).sum()) == 10


def test_invalid_arguments_are_one_line_value_errors():
    with pytest.raises(ValueError, match="counts"):
        client_weights([3, 0])
    with pytest.raises(ValueError, match="weights"):
        aggregate_gaussians(torch.ones(2, 3, dtype=torch.float64),
                            torch.ones(2, 3, dtype=torch.float64), client_weights([1, 2, 3]))
    with pytest.raises(ValueError, match="target_count"):
        apply_target_sparsity(torch.ones(3, dtype=torch.float64), 4, threshold=0.9,
                              initial_activity=0.5)
    with pytest.raises(ValueError, match="side"):
        gumbel_table("left")
    with pytest.raises(ValueError, match="damping"):
        classification_noise_variance([-4.0], [17.0], [10], previous=1.0, damping=2.0)
