"""Scenario ``wflmc-gaussian`` (Liu and Simeone, "Wireless Federated Langevin Monte Carlo:
Repurposing Channel Noise for Bayesian Sampling and Privacy", the Gaussian experiment):
how close over-the-air Langevin Monte Carlo comes to the exact posterior of Bayesian
linear regression against the SNR, beside noiseless Langevin, without and with the
paper's privacy constraint.

Set-up as in the authors' code: ``K · points_per_agent`` points (paper: 30 x 40 = 1200)
``x ~ N(0, I_dim)`` (paper: dim = 5), ``y = x θ* + N(0, 1)`` with ``θ* ~ N(0, I)``, prior
``N(0, I)``, data drawn once per seed and split in order over the K devices. Step
``η = step_scale · 2 / (μ + L)`` with μ, L the extreme eigenvalues of the posterior
precision (paper: 0.2); one full-batch step per round (``local_steps`` > 1: WFALD's
local steps, not in the paper); local gradients clipped to norm ``clip`` (paper: 30);
``rounds`` rounds of which the first ``burn_in`` are burn-in (paper: 100 and 50); the
initial sample ``θ_0 ~ N(0, I)``. Uplink: Rayleigh block fading, amplitude
``|h_k| = |CN(0, mean_gain)|`` per round (paper: mean_gain_db = −20, h = 0.1 CN(0, 1);
or, with ``placement`` distance or square, each device's mean gain from the log-distance
path loss at its distance: :mod:`bflnet.scenarios.ota.placement`), noise N_0 = 1, per-round
energy budget ``dim · 10^(snr_db/10) N_0``, the truncation threshold ``gain_threshold``
or, unset, the ``truncation`` rule's (:mod:`bflnet.radio.aircomp`; ``authors``, the
paper's code, by default: at d = 5 it rarely differs from ``consistent``).

Methods (``methods``):

* ``wflmc``: the paper's power allocation without the privacy constraint,
  ``a = min(h_min² E / clip², η N_0 K² / (2 K_a²))`` (with no privacy constraint the
  paper's optimised allocation reduces to this per-round maximum: its bound decreases in
  each ``a_s`` up to that cap): the channel noise is the Langevin noise when the budget
  allows it and more at low SNR;
* ``wflmc-full``: every round at the full budget, the learner adding the remainder of the
  Langevin noise (the same chain at low SNR, more energy at high SNR);
* ``noiseless``: Langevin over ideal links (its rows repeat on every SNR);

and under the privacy constraint, every device (ε, δ)-differentially private over the
``rounds`` (``epsilon``, ``delta``; paper: 15 and 0.01) against the server, the channel's
noise being the Gaussian mechanism (:mod:`bflnet.radio.privacy`;
:mod:`bflnet.scenarios.ota.wflmc_power` for the allocations,
:mod:`bflnet.scenarios.ota.wflmc_dp` for the runs):

* ``wflmc-equal-dp``: ``wflmc`` with every round's scaling also capped by the budget
  spread evenly over the rounds (the paper's equal power allocation);
* ``wflmc-opt-dp``: ``wflmc`` with the scalings of the paper's convex programme (the
  optimised power allocation), solved per run and SNR from the run's fading;
* ``noiseless-dp``: Langevin over ideal links with the privacy noise the budget calls for
  on the mean update, allocated over the rounds by the same programme (the paper's
  noiseless Langevin with DP; its rows repeat on every SNR).

The privacy noise of a DP method is at least the Langevin noise (the scaling is capped at
the Langevin level); where it is more the chain runs hot: the price of privacy.

Every method and SNR sees the same data (drawn once per seed) and, run by run, the same
random numbers (common random numbers): each of the ``runs`` independent runs has its own
seed, and under it θ_0, the fading (the same draws at every SNR) and the Langevin noise
are the same for every method: the channel's noise is drawn from the standard normals
that noiseless Langevin adds (:class:`~bflnet.protocols.uplink.
AirCompUplink`'s ``common_noise``), so where the channel supplies exactly 2η and
nobody is cut or clipped, ``wflmc``'s chain is noiseless Langevin's draw for draw.

After burn-in, at each round the samples of the ``runs`` runs are fitted by a Gaussian
(mean, covariance over the runs) and compared with the exact posterior by the squared
2-Wasserstein distance; ``w2`` is the largest over the kept rounds (the statistic the
authors' code plots), ``w2_mean`` the mean. The fit's own sampling error biases it upward
(the same for every method; about 5 times larger at 20 runs than at the paper's 100):
``w2_exact`` is the same statistic for the exact law of noiseless Langevin's discretised
chain (Gaussian, in closed form: :func:`~bflnet.learners.langevin.fald.fald_chain_laws`),
what ``noiseless``'s ``w2`` estimates. The spread over seeds is that of several seeds'
tables (``bflnet sweep`` or ``--seed``; ``bflnet summarize`` gives mean and sd). Rounds
in which no device was heard are counted in ``silent_rounds`` and said in one warning
line.

One row per (method, SNR): ``event`` = ``snr``, ``method``, ``snr_db``, ``w2``,
``w2_mean``, ``w2_exact``, ``k_active_mean`` (devices heard per round), ``silent_rounds`` (rounds no
device transmitted, summed over runs), ``channel_noise_ratio`` (mean channel noise over
the Langevin target 2η; 1: the channel supplies it exactly), ``added_noise_ratio``
(mean noise the learner added over 2η), ``energy_j`` (mean energy per device per round,
joules when N_0 is in watts), ``time_s`` (simulated seconds of one run), ``cum_bits``
and ``cum_bits_delivered`` (bits of one run: 0 over the air, 32 per coordinate per
device per round over ideal links), ``cum_channel_uses`` (analog channel uses of one run),
``eta``, ``epsilon_spent`` (the DP methods: the largest ε any device spent, over the runs;
NaN for the others, which promise none).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.runs.lists import comma_list
from bflnet.runs.registry import register
from bflnet.runs.resources import FLOAT64, Footprint
from bflnet.runs.schema import (
    CUM_BITS,
    CUM_BITS_DELIVERED,
    EVENT,
    METHOD,
    TIME_S,
    Schema,
    col,
)
from bflnet.scenarios.ota.placement import (
    PLACEMENT_ELSEWHERE,
    PLACEMENT_FIELDS,
    PLACEMENTS,
    check_placement,
    device_mean_gains,
    placement_fields,
)
from bflnet.scenarios.shared.network_settings import (
    GRAPH_FIELDS,
    SERVER_ONLY,
    NetworkSettings,
    ServerOnly,
)
from bflnet.scenarios.shared.radio_defaults import radio_default
from bflnet.validation.checks import check_real
from bflnet.validation.limits import MIN_BANDWIDTH_HZ, MIN_CLIP, MIN_METRES, MIN_STEP
from bflnet.validation.params import param, validate

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from matplotlib.figure import Figure

NAME = "wflmc-gaussian"
METHODS = ("wflmc", "wflmc-full", "noiseless", "wflmc-opt-dp", "wflmc-equal-dp",
           "noiseless-dp")
#: The methods under the privacy budget (``bflnet.scenarios.ota.wflmc_dp.DP_METHODS``).
DP_METHODS = ("wflmc-opt-dp", "wflmc-equal-dp", "noiseless-dp")
#: The methods whose rows repeat on every SNR.
IDEAL_METHODS = ("noiseless", "noiseless-dp")
#: The truncation rules (``bflnet.radio.aircomp.TRUNCATIONS``, named here without
#: importing numpy).
TRUNCATIONS = ("authors", "consistent")
#: Bytes a recorded row of one simulation takes (a dict of ~20 fields).
ROW_BYTES = 2000.0


def silent_warning(name: str, silent: Mapping[tuple[str, float], tuple[int, int]]) -> None:
    """One warning line if a method had rounds in which no device was heard: ``silent``
    maps (method, SNR) to (silent rounds, rounds); a method never heard is named as a
    silent baseline (its sample never left its start)."""
    import warnings

    never = [f"{m} at {snr:g} dB" for (m, snr), (n, total) in silent.items()
             if n and n == total]
    some = [f"{m} at {snr:g} dB ({n} of {total})" for (m, snr), (n, total) in silent.items()
            if 0 < n < total]
    parts = []
    if never:
        parts.append("no device was heard in any round of " + ", ".join(never)
                     + " (a silent baseline: its sample never left its start)")
    if some:
        parts.append("rounds in which no device was heard (the sample kept): "
                     + ", ".join(some))
    if parts:
        warnings.warn(f"{name}: " + "; ".join(parts), stacklevel=3)


def snr_list(text: str) -> list[float]:
    """The SNRs in dB of a comma list, each in [-50, 100]; one-line errors."""
    out = []
    for item in comma_list("snr_db", text):
        try:
            value = float(item)
        except ValueError:
            value = math.nan
        out.append(check_real("snr_db", value, ge=-50, le=100))
    if len(set(out)) != len(out):
        raise ValueError(f"snr_db: values must not repeat, got {text!r}")
    return out


#: The network fields an over-the-air scenario reads: the devices, the channel uses per
#: second and the latency of a round.
AIR_FIELDS = frozenset({"K", "bandwidth_hz", "latency_s"})
#: What decides instead of the other network fields.
AIR_ELSEWHERE = {
    **SERVER_ONLY,
    **{f.name: "the uplink is over-the-air aggregation (snr_db, mean_gain_db and the "
               "power control decide; the server's downlink is ideal)"
       for f in dataclasses.fields(NetworkSettings)
       if f.name not in AIR_FIELDS and f.name not in GRAPH_FIELDS}}


#: Why the over-the-air scenarios keep no latency by default (``RADIO_EXCEPTIONS``).
AIR_LATENCY = ("a round is one analog transmission of every device at once: its time is "
               "its channel uses over bandwidth_hz, as in the papers (no per-packet latency)")


def _placement_declarations() -> dict[str, tuple[str, Any]]:
    """``name: (annotation, field)`` of where the devices are and the path loss's fields
    (fresh ``Field`` objects: a dataclass takes ownership of those it is given)."""
    return {
        "placement": ("str", param(
            "fixed", "where the devices are: fixed (every mean gain mean_gain_db), distance "
            "(all at distance_m from the server) or square (uniform in a square of side "
            "distance_m, server at its centre); the mean gains then follow the "
            "log-distance path loss", choices=PLACEMENTS)),
        "distance_m": ("float", param(radio_default("distance_m"), "distance to the server "
                                      "(distance) or side of the square (square), metres",
                                      ge=MIN_METRES, le=1e6)),
        "path_loss_exponent": ("float", param(radio_default("path_loss_exponent"),
                                              "path-loss exponent n", ge=0, le=10)),
        "ref_loss_db": ("float", param(radio_default("ref_loss_db"), "path loss at 1 m, dB",
                                       ge=-100, le=300)),
    }


class AirUplinkSettings(ServerOnly):
    """Mixin (first base) of an over-the-air scenario's config: of the network fields it
    reads only ``K``, ``bandwidth_hz`` and ``latency_s``; setting another is a one-line
    error naming what decides instead.

    It declares the placement's fields (``placement``, ``distance_m``,
    ``path_loss_exponent``, ``ref_loss_db``; :mod:`bflnet.scenarios.ota.placement`) for the
    config that derives from it, which declares ``mean_gain_db`` (its help differs per
    scenario): ``placement`` comes right after it in the field order (``bflnet describe``,
    ``--help``); the other three are network fields and keep their place."""

    DECIDED_ELSEWHERE: ClassVar[Mapping[str, str]] = {**AIR_ELSEWHERE,
                                                      **PLACEMENT_ELSEWHERE}
    RADIO_EXCEPTIONS: ClassVar[Mapping[str, str]] = {"latency_s": AIR_LATENCY}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "placement" in getattr(cls, "__dataclass_fields__", {}):
            return  # a config derived from one that has them
        own = inspect.get_annotations(cls)
        if "mean_gain_db" not in own:
            raise TypeError(f"{cls.__name__}: an AirUplinkSettings config declares "
                            f"mean_gain_db (the placement's fields follow it)")
        annotations: dict[str, Any] = {}
        for name, annotation in own.items():
            annotations[name] = annotation
            if name == "mean_gain_db":
                for new, (kind, field) in _placement_declarations().items():
                    annotations[new] = kind
                    setattr(cls, new, field)
        cls.__annotations__ = annotations
    #: The scenario's ``methods`` values.
    METHOD_NAMES: ClassVar[tuple[str, ...]] = ()

    def used_fields(self) -> frozenset[str]:
        """The over-the-air fields and, unless ``placement=fixed``, the path loss's."""
        return AIR_FIELDS | placement_fields(self)

    @classmethod
    def refused_fields(cls) -> Mapping[str, str]:
        """The network fields decided elsewhere but the placement's (read with placement
        distance or square)."""
        return {name: why for name, why in super().refused_fields().items()  # type: ignore[misc]
                if name not in PLACEMENT_FIELDS}

    def check_air_settings(self) -> None:
        """The checks every over-the-air config makes: bounds, network fields, the SNR and
        method lists, the placement, and burn-in before the last round."""
        validate(self)
        self.check_network_fields()
        snr_list(self.snr_db)
        comma_list("methods", self.methods, self.METHOD_NAMES)
        check_placement(self)
        if self.burn_in >= self.rounds:
            raise ValueError(f"burn_in: must be < rounds ({self.rounds}), got {self.burn_in}")


@dataclass(frozen=True)
class WFLMCGaussianConfig(AirUplinkSettings, NetworkSettings):
    """Parameters of ``wflmc-gaussian``."""

    SCENARIO: ClassVar[str] = NAME

    K: int = param(30, "devices (paper: 30)", ge=2, le=1000)
    points_per_agent: int = param(40, "data points per device (paper: 40)", ge=1,
                                  le=10**6)
    dim: int = param(5, "dimension of θ (paper: 5)", ge=1, le=200)
    snr_db: str = param("5,10,15,20,25,30,35,40", "comma list of SNRs in dB, transmit "
                        "power over noise power (paper: 5 to 40)")
    methods: str = param("wflmc,wflmc-full,noiseless", "comma list of: "
                         + ", ".join(METHODS))
    runs: int = param(100, "independent runs fitted by a Gaussian per round (paper: 100; "
                      "fewer inflate W2² by the fit's own error: about 5 times at 20)",
                      ge=2, le=10**6)
    rounds: int = param(100, "rounds, burn-in included (paper: 100)", ge=2, le=10**7)
    burn_in: int = param(50, "burn-in rounds (paper: 50)", ge=0, le=10**7)
    local_steps: int = param(1, "local steps per round (1: WFLMC; more: WFALD)", ge=1,
                             le=1000)
    step_scale: float = param(0.2, "η = step_scale · 2 / (μ + L) (paper: 0.2)", ge=MIN_STEP,
                              lt=1)
    clip: float = param(30.0, "norm clip of the local gradients (paper: 30)", ge=MIN_CLIP,
                        le=1e12)
    mean_gain_db: float = param(-20.0, "mean power gain of the channel in dB (paper: −20; "
                                "placement fixed)", ge=-200, le=0)
    gain_threshold: float | None = param(None, "fixed amplitude threshold of the "
                                         "truncation (none: the truncation rule per "
                                         "round)", ge=0, le=1e6)
    truncation: str = param("authors", "rule for the truncation threshold when "
                            "gain_threshold is unset: authors (the WFLMC authors' rule) or "
                            "consistent (the whole vector's noise against the silent "
                            "devices' bias)", choices=TRUNCATIONS)
    epsilon: float = param(15.0, "privacy ε of every device over the rounds (the DP "
                           "methods; paper: 15)", gt=0, le=1e6)
    delta: float = param(0.01, "privacy δ (the DP methods; paper: 0.01)", gt=0, lt=1)
    bandwidth_hz: float = param(radio_default("bandwidth_hz"), "channel uses per second",
                                ge=MIN_BANDWIDTH_HZ, le=1e12)
    latency_s: float = param(0.0, "latency added to each round's air time", ge=0, le=1e6)

    METHOD_NAMES: ClassVar[tuple[str, ...]] = METHODS

    def __post_init__(self) -> None:
        self.check_air_settings()

    def footprint(self) -> Footprint:
        """The data, the kept samples of every method, SNR and run, one simulation's rows,
        and the local gradient steps (``flops``)."""
        n = float(self.K) * self.points_per_agent
        methods = len(comma_list("methods", self.methods, METHODS))
        snrs = len(snr_list(self.snr_db))
        kept = float(self.rounds - self.burn_in)
        sims = float(self.runs) * snrs * methods
        return (Footprint()
                .add("data x, y", ("K", "points_per_agent", "dim"),
                     bytes=2 * FLOAT64 * n * (self.dim + 1), work=n * (self.dim + 1))
                .add("kept samples", ("runs", "rounds", "burn_in", "snr_db", "methods", "dim"),
                     bytes=FLOAT64 * sims * kept * self.dim)
                .add("one simulation's rows", ("rounds",), bytes=ROW_BYTES * self.rounds)
                .add("exact posterior", ("dim",), bytes=4 * FLOAT64 * self.dim ** 2,
                     flops=n * self.dim ** 2 + self.dim ** 3))


def data(config: WFLMCGaussianConfig, rng: np.random.Generator
         ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """``x``, ``y`` and each device's rows (module docstring)."""
    import numpy as np

    n = config.K * config.points_per_agent
    theta_star = rng.standard_normal(config.dim)
    x = rng.standard_normal((n, config.dim))
    y = x @ theta_star + rng.standard_normal(n)
    parts = [np.arange(k * config.points_per_agent, (k + 1) * config.points_per_agent)
             for k in range(config.K)]
    return x, y, parts


def w2_per_round(samples: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Squared W2 between the Gaussian fit over runs (axis 0) and the posterior, per round
    (axis 1); the covariance is the maximum-likelihood one (divided by the runs), as in
    the authors' code."""
    import numpy as np

    from bflnet.learners.langevin.fald import gaussian_w2_squared

    out = np.empty(samples.shape[1])
    for s in range(samples.shape[1]):
        at = samples[:, s, :]
        m = at.mean(axis=0)
        c = (at - m).T @ (at - m) / at.shape[0]
        out[s] = gaussian_w2_squared(m, c, mean, cov)
    return out


def default_plot(frame: pd.DataFrame) -> Figure:
    """Squared W2 to the exact posterior against SNR, one curve per method (log scale),
    and the exact value of noiseless Langevin's chain (``w2_exact``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    styles = {"wflmc": "-o", "wflmc-full": "--s", "noiseless": ":*", "wflmc-opt-dp": "-^",
              "wflmc-equal-dp": "--v", "noiseless-dp": ":d"}
    for method, rows in frame.groupby("method", sort=False):
        ax.semilogy(rows["snr_db"], rows["w2"], styles.get(method, "-"), label=method)
    if "w2_exact" in frame:  # the noiseless chain's own law, without the fit's error
        ax.semilogy(frame["snr_db"].drop_duplicates(), [frame["w2_exact"].iloc[0]]
                    * frame["snr_db"].nunique(), "-", color="0.6", lw=1,
                    label="noiseless chain, exact")
    ax.set(xlabel="SNR (dB)", ylabel="squared 2-Wasserstein distance",
           title="WFLMC, Bayesian linear regression")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    return fig


def _allocation(config: WFLMCGaussianConfig, methods: list[str], learner: Any,
                posterior: tuple[np.ndarray, np.ndarray, np.ndarray], clip: float
                ) -> tuple[Any, np.ndarray | None]:
    """The DP methods' :class:`~bflnet.scenarios.ota.wflmc_dp.Allocation` (the authors'
    bound from the posterior's extreme precisions, the budget R_dp(ε, δ)) and
    ``noiseless-dp``'s privacy noise per round; ``(None, None)`` without DP methods."""
    if not any(m in DP_METHODS for m in methods):
        return None, None
    import numpy as np

    from bflnet.learners.langevin.fald import gaussian_w2_squared
    from bflnet.radio.privacy import dp_budget
    from bflnet.scenarios.ota.wflmc_dp import Allocation
    from bflnet.scenarios.ota.wflmc_power import LangevinBound

    mean, cov, eig = posterior
    d = config.dim
    start = gaussian_w2_squared(np.zeros(d), learner.init_scale ** 2 * np.eye(d), mean, cov)
    bound = LangevinBound(eta=learner.step_size, mu=float(eig.min()),
                          smooth=float(eig.max()), dim=d, initial_w2=start)
    alloc = Allocation(bound, dp_budget(config.epsilon, config.delta), clip, 1.0,
                       config.burn_in, config.K)
    noiseless = alloc.noiseless_var(config.rounds) if "noiseless-dp" in methods else None
    return alloc, noiseless


def _add_record(acc: dict[str, float], rec: Any, target: float, K: int, spec: Any,
                method: str, d: int) -> None:
    """Add a DP run's record (:class:`~bflnet.scenarios.ota.wflmc_dp.RunRecord`) to the
    (method, SNR)'s totals, as the rows of ``run_fald`` are for the other methods."""
    S = len(rec.k_active)
    ideal = method == "noiseless-dp"
    for key, value in (("k_active", rec.k_active.sum()), ("silent", (rec.k_active == 0).sum()),
                       ("channel", (rec.channel_var / target).sum()),
                       ("added", (rec.added_var / target).sum()),
                       ("energy", rec.energy.sum() / K), ("rounds", float(S))):
        acc[key] = acc.get(key, 0.0) + float(value)
    acc.update(time_s=0.0 if ideal else S * spec.airtime_s(d),
               cum_bits=float(S * K * d * 32) if ideal else 0.0,
               cum_bits_delivered=float(S * K * d * 32) if ideal else 0.0,
               uses=0.0 if ideal else float(S * d))


SCHEMA = Schema.of(
    TIME_S.means("simulated seconds of one run (rounds x air time; 0 over ideal links)"),
    EVENT.means("snr: one row per method and SNR"),
    CUM_BITS.means("bits of one run on the air (0 over the air: analog)"),
    CUM_BITS_DELIVERED.means("bits of one run delivered"),
    METHOD.means(", ".join(METHODS[:-1]) + " or " + METHODS[-1]),
    col("snr_db", "dB", "transmit power over noise power", label="SNR"),
    col("w2", "1", "largest over the kept rounds of the squared 2-Wasserstein distance "
        "between the Gaussian fit of the runs' samples and the exact posterior",
        label="squared W2 to the posterior, max over the kept rounds"),
    col("w2_mean", "1", "the same, averaged over the kept rounds",
        label="squared W2 to the posterior, mean over the kept rounds"),
    col("w2_exact", "1", "w2 of the exact law of noiseless Langevin's discretised chain "
        "(closed form; what noiseless's w2 estimates, without the fit's error)",
        label="exact squared W2 of noiseless Langevin, max over the kept rounds"),
    col("k_active_mean", "count", "devices heard per round, mean over rounds and runs"),
    col("silent_rounds", "count", "rounds in which no device transmitted, over all runs"),
    col("channel_noise_ratio", "1", "channel noise variance on the update over the "
        "Langevin target 2η, mean over rounds (1: the channel supplies it exactly)"),
    col("added_noise_ratio", "1", "noise variance the learner added over 2η, mean over "
        "rounds"),
    col("energy_j", "1", "energy per device per round, mean (joules when N_0 is in "
        "watts; 0 over ideal links)"),
    col("cum_channel_uses", "count", "analog channel uses of one run"),
    col("eta", "1", "the Langevin step size η"),
    col("epsilon_spent", "1", "the largest privacy ε any device spent over the rounds, "
        "over the runs (the DP methods; NaN for the others)"),
)


@register(NAME, WFLMCGaussianConfig,
          "WFLMC (Liu & Simeone) Gaussian experiment: squared 2-Wasserstein distance to "
          "the exact posterior of Bayesian linear regression against SNR, over-the-air "
          "Langevin vs noiseless Langevin.", plot=default_plot, columns=SCHEMA)
def run(config: WFLMCGaussianConfig, *, seed: int = 0, progress: bool = False
        ) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    from bflnet.learners.langevin.fald import (
        FALD,
        fald_chain_laws,
        gaussian_linear_grads,
        gaussian_linear_posterior,
        gaussian_w2_squared,
    )
    from bflnet.protocols.parameter_server import run_fald
    from bflnet.protocols.progress import runs_bar, setup_bar
    from bflnet.protocols.uplink import AirCompUplink
    from bflnet.radio.aircomp import AirCompSpec, tx_power_from_snr_db
    from bflnet.scenarios.ota import wflmc_dp
    from bflnet.scenarios.shared.seeds import run_seeds
    from bflnet.simulator.rng import RngStreams

    setup = setup_bar(NAME, None, progress)
    setup.set_postfix_str("data and exact posterior")
    x, y, parts = data(config, RngStreams(seed).numpy("data"))
    mean, cov = gaussian_linear_posterior(x, y)
    eig = np.linalg.eigvalsh(np.linalg.inv(cov))
    eta = config.step_scale * 2.0 / (eig.min() + eig.max())
    grads = gaussian_linear_grads(x, y, parts)
    learner = FALD(grads, step_size=eta, local_steps=config.local_steps)
    laws = fald_chain_laws(grads, eta, config.local_steps, config.rounds)
    w2_exact = max(gaussian_w2_squared(laws[0][s], laws[1][s], mean, cov)
                   for s in range(config.burn_in + 1, config.rounds + 1))
    K, d = config.K, config.dim
    snrs = snr_list(config.snr_db)
    methods = comma_list("methods", config.methods, METHODS)
    kept = config.rounds - config.burn_in
    mean_gains = device_mean_gains(config, RngStreams(seed).numpy("positions"))
    # payloads are the devices' changes -ηK·(clipped gradient): the clip in their units
    clip = eta * K * config.clip * config.local_steps
    setup.set_postfix_str("privacy budget")
    alloc, noiseless_var = _allocation(config, methods, learner, (mean, cov, eig), clip)
    setup.close()
    cases = [(m, s) for m in methods for s in (snrs if m not in IDEAL_METHODS else [snrs[0]])]
    samples = {case: np.empty((config.runs, kept, d)) for case in cases}
    stats: dict[Any, dict[str, float]] = {case: {} for case in cases}
    seeds = run_seeds(seed, config.runs)
    bar = runs_bar(range(config.runs * len(cases) * config.rounds), progress, NAME)
    bar.unit = "round"
    air_dp = any(m in DP_METHODS and m not in IDEAL_METHODS for m in methods)
    for r in range(config.runs):
        amps = (wflmc_dp.fading(seeds[r], mean_gains, config.rounds, "rayleigh")
                if air_dp else None)
        bases: dict[float, Any] = {}  # the run's plans without privacy, per SNR
        for method, snr in cases:
            store = samples[(method, snr)][r]

            def keep(s: int, theta: np.ndarray, store: np.ndarray = store) -> None:
                bar.update(1)
                if s > config.burn_in:
                    store[s - config.burn_in - 1] = theta

            spec = AirCompSpec(tx_power=tx_power_from_snr_db(snr), noise_power=1.0,
                               bandwidth_hz=config.bandwidth_hz, latency_s=config.latency_s,
                               gain_threshold=config.gain_threshold,
                               truncation=config.truncation,
                               power_rule="full" if method == "wflmc-full" else "langevin")
            acc = stats[(method, snr)]
            if method in DP_METHODS:
                if method == "noiseless-dp":
                    rec = wflmc_dp.run_noiseless_dp(learner, noiseless_var, dim=d,
                                                    seed=seeds[r], on_round=keep)
                else:
                    if snr not in bases:
                        bases[snr] = wflmc_dp.plans(amps, spec, dim=d, clip=clip,
                                                    target_var=learner.noise_target)
                    base = bases[snr]
                    rec = wflmc_dp.run_air(learner, amps, spec, dim=d, clip=clip,
                                           seed=seeds[r], on_round=keep,
                                           scale_caps=alloc.air_scales(method, base))
                _add_record(acc, rec, learner.noise_target, K, spec, method, d)
                acc["epsilon"] = max(acc.get("epsilon", 0.0),
                                     alloc.epsilon(rec, config.delta))
                continue
            uplink = None if method == "noiseless" else AirCompUplink(spec, mean_gains, clip)
            frame, _ = run_fald(learner, config.rounds, d, seed=seeds[r], uplink=uplink,
                                on_round=keep, name=f"{NAME} {method} run {r}",
                                common_noise=True)
            rounds = frame[frame["event"].isin(("round", "silent_round"))]
            for key, value in (
                    ("k_active", rounds["k_active"].sum()),
                    ("silent", (rounds["event"] == "silent_round").sum()),
                    ("channel", (rounds["channel_var"] / learner.noise_target).sum()),
                    ("added", (rounds["added_var"] / learner.noise_target).sum()),
                    ("energy", rounds["round_energy_j"].sum() / K),
                    ("rounds", float(len(rounds)))):
                acc[key] = acc.get(key, 0.0) + float(value)
            last = frame.iloc[-1]
            acc.update(time_s=float(last["time_s"]), cum_bits=float(last["cum_bits"]),
                       cum_bits_delivered=float(last["cum_bits_delivered"]),
                       uses=float(last["cum_channel_uses"]))
    bar.close()
    silent_warning(NAME, {case: (int(acc["silent"]), int(acc["rounds"]))
                          for case, acc in stats.items() if case[0] not in IDEAL_METHODS})
    out = []
    for method in methods:
        for snr in snrs:
            case = (method, snr if method not in IDEAL_METHODS else snrs[0])
            w2 = w2_per_round(samples[case], mean, cov)
            acc = stats[case]
            n = acc["rounds"]
            out.append({"time_s": acc["time_s"], "event": "snr", "cum_bits": acc["cum_bits"],
                        "cum_bits_delivered": acc["cum_bits_delivered"], "method": method,
                        "snr_db": snr, "w2": float(w2.max()), "w2_mean": float(w2.mean()),
                        "w2_exact": w2_exact,
                        "k_active_mean": acc["k_active"] / n,
                        "silent_rounds": int(acc["silent"]),
                        "channel_noise_ratio": acc["channel"] / n,
                        "added_noise_ratio": acc["added"] / n, "energy_j": acc["energy"] / n,
                        "cum_channel_uses": int(acc["uses"]), "eta": eta,
                        "epsilon_spent": acc.get("epsilon", math.nan)})
    return pd.DataFrame.from_records(out, columns=SCHEMA.names())
