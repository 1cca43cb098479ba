"""Scenario ``ota-langevin``: Bayesian federated learning by Langevin dynamics whose noise is
the channel's (WFALD: Zhang, Liu, Simeone and Zhu, "Bayesian Over-the-Air FedAvg via
Channel Driven Stochastic Gradient Langevin Dynamics"), against noiseless FALD over
ideal links and a digital implementation under the same energy budget, over a sweep of
SNR: accuracy, ECE and NLL of the posterior predictive against rounds, seconds and
energy.

A Bayesian 784-``hidden``-10 MLP (prior N(0, I)) on ``K`` i.i.d. shards of
``points_per_agent`` Fashion-MNIST training images; every round each device runs
``local_steps`` Langevin steps on minibatches of ``batch_size`` from the server's sample
(:class:`~bflnet.learners.langevin.fald_torch.TorchFALD`, step ``step_size`` η), and the server
builds the next sample from the devices' changes:

* ``wfald``: over the air (:mod:`bflnet.radio.aircomp`), Rayleigh block fading of mean
  gain ``mean_gain_db``, noise N_0 = 1, energy budget ``d · 10^(snr_db/10)`` per device
  and round, the truncation threshold ``gain_threshold`` or, unset, the ``truncation``
  rule's (:mod:`bflnet.radio.aircomp`: ``authors``, the WFLMC authors' rule, which at
  this d almost never silences a device, or ``consistent``, which weighs the whole
  vector's channel noise against the silent devices' bias), payloads clipped to
  ``η K (local_steps · grad_clip) + 1.5 sqrt(2 η K (local_steps − 1) d)`` (the
  gradient part plus 1.5 times the norm of the local Langevin noise), the Langevin power
  rule: the channel's noise replaces the last step's Langevin noise, the learner adds
  the rest; one round lasts d / ``bandwidth_hz`` whatever K;
* ``digital``: each device sends its change alone in its own slot of d real channel uses
  (TDMA; the analog side's channel-use convention and bandwidth) under the same fading
  and energy budget, quantised (unbiased stochastic quantiser) at the bits its channel
  supports that round, ``½ log2(1 + P̄ h²/(Γ N_0))`` per real channel use (rate
  adaptation, :mod:`bflnet.radio.digital_uplink`; Γ from ``digital_gap_db``), spending
  its whole budget; below 2 bits per coordinate it sends a random subset of the
  coordinates, and a device whose budget carries none stays silent; the server averages
  what arrived and the learner adds all of the Langevin noise (the quantisation noise is
  extra); a round lasts the analog round's air time once per device heard;
* ``digital-min``: the same at the energy-minimising operating point: at most
  ``digital_bits`` bits per coordinate, with the least energy that carries them in the
  slot, ``d Γ N_0 / h² (2^(2B/d) − 1)`` for B bits (the same air time);
* ``fald``: ideal links (no time, no energy counted; its rows repeat on every SNR);
* ``ota-fedavg``: over-the-air FedAvg (:mod:`bflnet.learners.federated.ota_fedavg`; Zhu, Wang and
  Huang, "Broadband Analog Aggregation for Low-Latency Federated Edge Learning"; Amiri
  and Gündüz, "Federated Learning over Wireless Fading Channels"): FedAvg's
  ``local_steps`` SGD steps of ``fedavg_lr`` on the minibatch mean negative
  log-likelihood plus the prior's L2 penalty ``‖w‖² / (2 N)``, its change clipped to
  ``fedavg_clip`` and sent over the same analog uplink with the ``full`` power rule (as
  little channel noise as the budget allows); the server's new model is the noisy mean;
* ``fedavg``: the same FedAvg over ideal links (rows repeat on every SNR).

FedAvg's predictive is its current model (no average over rounds).

**Where the devices are.** ``placement=fixed``: every device's mean power gain is
``mean_gain_db``. ``distance``: all at ``distance_m`` from the server (evenly spaced
on a circle); ``square``: uniform in a square of side ``distance_m`` centred on the
server (stream ``positions``); their mean gains are then the log-distance path loss
(:class:`~bflnet.radio.pathloss.LogDistance`, exponent ``path_loss_exponent``, loss
``ref_loss_db`` at 1 m). ``snr_db`` is the transmit power over the noise power, so with
the noise power fixed the SNR sweep is a transmit-power sweep; a distance sweep is
``bflnet sweep`` over ``distance_m``.

**Threads and device.** ``threads`` (default 1; ``bflnet run --threads N`` fills it) is
torch's thread count inside the run: more than one can change the last bits of the
table (torch's parallel kernels sum in another order). ``device`` (``cpu``, ``cuda``,
``auto``) is where torch computes.

The posterior predictive averages the samples' softmax outputs over the rounds after
``burn_in`` (before: the current sample), evaluated on ``eval_size`` test images every
``eval_every`` rounds and at the last. One row per (method, SNR, evaluation): ``event``
= ``eval``, ``method``, ``snr_db``, ``iteration`` (round), ``time_s``, ``cum_bits``,
``cum_bits_delivered`` (uplink bits: 0 over the air), ``accuracy``, ``ece``, ``nll``,
``energy_j`` (energy per device so far, joules when N_0 is in watts), ``k_active_mean``
(devices heard per round so far), ``silent_rounds`` (rounds so far in which no device
was heard: the sample stays as it was), ``channel_noise_ratio`` (mean channel noise over
the Langevin target 2η so far; 0 for digital and ideal links; for ``ota-fedavg`` its
channel noise over the 2η of the same ``step_size``, for comparison). A run with silent
rounds says so in one warning line, naming a method never heard at an SNR (a silent
baseline: its predictive is the initial sample's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.runs.lists import comma_list
from bflnet.runs.registry import register
from bflnet.runs.resources import FLOAT64, THREAD_BYTES, Footprint
from bflnet.runs.schema import (
    ACCURACY,
    CUM_BITS,
    CUM_BITS_DELIVERED,
    ECE,
    EVENT,
    ITERATION,
    METHOD,
    NLL,
    TIME_S,
    Schema,
    col,
)
from bflnet.runtime.devices import DEVICES
from bflnet.scenarios.ota.placement import (
    device_mean_gains,
)
from bflnet.scenarios.ota.wflmc_gaussian import (
    TRUNCATIONS,
    AirUplinkSettings,
    silent_warning,
    snr_list,
)
from bflnet.scenarios.shared.network_settings import NetworkSettings
from bflnet.scenarios.shared.radio_defaults import radio_default
from bflnet.validation.limits import MIN_BANDWIDTH_HZ, MIN_CLIP, MIN_STEP
from bflnet.validation.params import param

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from matplotlib.figure import Figure

NAME = "ota-langevin"
METHODS = ("wfald", "digital", "digital-min", "fald", "ota-fedavg", "fedavg")
FLOAT32 = 4
#: Methods over ideal links (their rows repeat on every SNR).
IDEAL = ("fald", "fedavg")
#: Bytes per device and parameter that a round of each method holds at its peak (its
#: methods run one after the other, so a run needs the largest of its methods'):
#: ``fald`` the devices' float32 stack, their noise and the first layer's gradient
#: product during the local steps (4 + 4 + 4), then the float32 stack and its float64
#: copy (the changes); ``fedavg`` FedAvg's float32 changes, their concatenation and its
#: float64 copy (4 + 4 + 8); ``wfald`` the float64 changes and their clipped copy on the
#: air (8 + 8, measured 16.6); ``ota-fedavg`` FedAvg's 16 then the air's (measured 17.8);
#: ``digital`` and ``digital-min`` the float64 changes, the decoded changes and their
#: stacked copy for the mean (8 + 8 + 8). Measured: the peak resident memory from K = 2
#: to 16 grows by 11.4, 15.5, 16.6, 17.8 and 21.9 bytes per device and parameter.
ROUND_BYTES = {"fald": 12, "fedavg": 16, "wfald": 18, "ota-fedavg": 20, "digital": 24,
               "digital-min": 24}
#: Float64 vectors of ``d`` a run holds whatever K: the server's sample and its torch
#: copies, the merge's noise, the model's initial draw and the evaluation's copy of the
#: first layer (measured: 7 to 11 at d = 1.2 million, with what does not grow with d).
SAMPLE_COPIES = 20


@dataclass(frozen=True)
class OTALangevinConfig(AirUplinkSettings, NetworkSettings):
    """Parameters of ``ota-langevin``."""

    SCENARIO: ClassVar[str] = NAME

    K: int = param(10, "devices", ge=2, le=1000)
    points_per_agent: int = param(300, "training images per device", ge=1, le=60_000)
    hidden: int = param(100, "hidden units of the MLP", ge=1, le=4096)
    batch_size: int = param(50, "minibatch of a local step", ge=1, le=60_000)
    rounds: int = param(60, "communication rounds", ge=1, le=10**6)
    burn_in: int = param(30, "rounds before the samples enter the predictive", ge=0,
                         le=10**6)
    local_steps: int = param(2, "local Langevin steps per round", ge=1, le=1000)
    step_size: float = param(1e-4, "Langevin step η", ge=MIN_STEP, le=1.0)
    grad_clip: float = param(1000.0, "gradient norm that sets the payload clip", ge=MIN_CLIP,
                             le=1e12)
    snr_db: str = param("10,20,30,40", "comma list of SNRs in dB (transmit power over "
                        "noise power)")
    methods: str = param("wfald,digital,digital-min,fald", "comma list of: "
                         + ", ".join(METHODS))
    fedavg_lr: float = param(0.1, "SGD step of ota-fedavg and fedavg", ge=MIN_STEP,
                             le=100.0)
    fedavg_clip: float = param(1.0, "payload norm clip of ota-fedavg's power control",
                               ge=MIN_CLIP,
                               le=1e12)
    digital_bits: int = param(4, "most bits per coordinate of digital-min (the "
                              "energy-minimising digital baseline)", ge=2, le=32)
    digital_gap_db: float = param(0.0, "gap to capacity of the digital baselines' "
                                  "modulation and code in dB (0: Shannon)", ge=0, le=30)
    mean_gain_db: float = param(-20.0, "mean power gain of the channel in dB (placement "
                                "fixed)", ge=-200, le=0)
    gain_threshold: float | None = param(None, "fixed amplitude threshold of the "
                                         "truncation of wfald and ota-fedavg (none: the "
                                         "truncation rule per round)", ge=0, le=1e6)
    truncation: str = param("consistent", "rule for the truncation threshold when "
                            "gain_threshold is unset: consistent (the whole vector's noise "
                            "against the silent devices' bias) or authors (the WFLMC "
                            "authors' rule; at this d it almost never silences a device)",
                            choices=TRUNCATIONS)
    bandwidth_hz: float = param(radio_default("bandwidth_hz"), "channel uses per second",
                                ge=MIN_BANDWIDTH_HZ, le=1e12)
    latency_s: float = param(0.0, "latency added to each round's air time", ge=0, le=1e6)
    eval_every: int = param(10, "rounds between evaluations", ge=1, le=10**6)
    eval_size: int = param(1000, "test images evaluated", ge=1, le=10_000)
    threads: int = param(1, "torch threads inside the run", ge=1, le=1024)
    device: str = param("cpu", "where torch computes: cpu, cuda or auto", choices=DEVICES)

    METHOD_NAMES: ClassVar[tuple[str, ...]] = METHODS

    def __post_init__(self) -> None:
        self.check_air_settings()
        if self.K * self.points_per_agent > 60_000:
            raise ValueError(f"points_per_agent: K·points_per_agent = "
                             f"{self.K * self.points_per_agent} exceeds the 60000 training "
                             f"images")

    @property
    def dim(self) -> int:
        """Parameters of the MLP."""
        return 784 * self.hidden + self.hidden + self.hidden * 10 + 10

    def footprint(self) -> Footprint:
        """Fashion-MNIST and the shards, the buffers of a round for the most demanding
        selected method (:data:`ROUND_BYTES`), the sample's copies, the local steps'
        minibatches and activations, the evaluation, the local steps' FLOPs (the
        ideal-link methods run once, not once per SNR) and, with ``threads`` > 1, the
        threads' stacks."""
        d, K = float(self.dim), float(self.K)
        methods = comma_list("methods", self.methods, METHODS)
        m = min(self.batch_size, self.points_per_agent)
        runs = sum(1 if method in IDEAL else len(snr_list(self.snr_db))
                   for method in methods)
        steps = runs * float(self.rounds) * K * self.local_steps
        worst = max(methods, key=ROUND_BYTES.__getitem__)
        # FedAvg draws every step's minibatch indices and labels (int64) when it starts
        fedavg = bool({"fedavg", "ota-fedavg"} & set(methods))
        fp = (Footprint()
                .add("Fashion-MNIST and the devices' shards", ("K", "points_per_agent"),
                     bytes=(70_000 + K * self.points_per_agent) * 785 * FLOAT32,
                     work=K * self.points_per_agent * 784 + 10_000 * 784)
                .add(f"the devices' changes of a round ({worst})", ("K", "hidden", "methods"),
                     bytes=ROUND_BYTES[worst] * K * d)
                .add("the sample's copies", ("hidden",), bytes=SAMPLE_COPIES * FLOAT64 * d)
                .add("the local steps' minibatches and activations",
                     ("K", "batch_size", "hidden", "local_steps"),
                     bytes=FLOAT32 * K * m * (784 + 3 * self.hidden)
                     + (16 * K * m * self.local_steps if fedavg else 0))
                .add("the evaluation", ("eval_size", "hidden"),
                     bytes=FLOAT32 * self.eval_size * (784 + 3 * self.hidden + 10))
                .add("local steps", ("rounds", "K", "local_steps", "batch_size", "hidden",
                                     "snr_db", "methods"),
                     flops=6.0 * d * steps * m))
        if self.threads > 1:  # as the other torch scenarios' (NetworkSettings.footprint)
            fp = fp.add(f"{self.threads} threads' stacks", ("threads",),
                        bytes=THREAD_BYTES * self.threads)
        return fp


def default_plot(frame: pd.DataFrame) -> Figure:
    """Accuracy and ECE at the last round against SNR, and accuracy against energy."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 3)
    last = frame[frame["iteration"] == frame["iteration"].max()]
    for method, rows in last.groupby("method", sort=False):
        axes[0].plot(rows["snr_db"], rows["accuracy"], "-o", label=method)
        axes[1].plot(rows["snr_db"], rows["ece"], "-o", label=method)
    off = []  # rows at 0 J are off the log axis: left out and named in the title
    for (method, snr), rows in frame.groupby(["method", "snr_db"], sort=False):
        if method not in IDEAL:
            on = rows[rows["energy_j"] > 0]
            if len(on) < len(rows):
                off.append(f"{method} {snr:g} dB")
            axes[2].plot(on["energy_j"], on["accuracy"], "-", label=f"{method} {snr:g} dB")
    axes[0].set(xlabel="SNR (dB)", ylabel="accuracy", title="last round")
    axes[1].set(xlabel="SNR (dB)", ylabel="ECE", title="last round")
    axes[2].set(xlabel="energy per device (J)", ylabel="accuracy", xscale="log")
    axes[2].set_title("accuracy vs energy" + (f"\n0 J, off the log axis: {', '.join(off)}"
                                              if off else ""), fontsize="small")
    axes[0].legend(fontsize=7)
    axes[2].legend(fontsize=6)
    for ax in axes:
        ax.grid(alpha=0.3)
    return fig


SCHEMA = Schema.of(
    TIME_S.means("simulated seconds of the run so far (air time; 0 over ideal links)"),
    ITERATION.means("round of the evaluation"),
    EVENT.means("eval: one row per method, SNR and evaluation"),
    CUM_BITS.means("uplink bits so far (0 over the air: analog)"),
    CUM_BITS_DELIVERED.means("uplink bits delivered so far"),
    METHOD.means("wfald, digital, digital-min, fald, ota-fedavg or fedavg"),
    col("snr_db", "dB", "transmit power over noise power", label="SNR"),
    ACCURACY.means("test accuracy of the posterior predictive"),
    ECE.means("test ECE of the posterior predictive (10 bins)"),
    NLL.means("test NLL of the posterior predictive"),
    col("energy_j", "1", "energy per device so far (joules when N_0 is in watts)"),
    col("k_active_mean", "count", "devices heard per round so far"),
    col("silent_rounds", "count", "rounds so far in which no device was heard"),
    col("channel_noise_ratio", "1", "channel noise on the update over 2η, mean so far"),
)


@register(NAME, OTALangevinConfig,
          "WFALD (over-the-air federated Langevin dynamics, channel noise as Langevin "
          "noise) vs noiseless FALD vs a quantised digital uplink at the same energy, "
          "over SNR: accuracy, ECE, NLL vs rounds, seconds and energy.",
          plot=default_plot, datasets=("fashion-mnist",), columns=SCHEMA)
def run(config: OTALangevinConfig, *, seed: int = 0, progress: bool = False
        ) -> pd.DataFrame:
    from bflnet.protocols.progress import runs_bar, setup_bar

    setup = setup_bar(NAME, None, progress)
    setup.set_postfix_str("loading torch and data")
    import pandas as pd
    import torch

    from bflnet.data import iid, load_fashion_mnist
    from bflnet.learners.calibration import scores
    from bflnet.learners.langevin.fald_torch import TorchFALD
    from bflnet.learners.models.classifiers import BayesianMLP
    from bflnet.protocols.parameter_server import run_fald
    from bflnet.protocols.uplink import AirCompUplink, DigitalUplink
    from bflnet.radio.aircomp import AirCompSpec, tx_power_from_snr_db
    from bflnet.radio.digital_uplink import DigitalLink
    from bflnet.runtime.devices import resolve_device
    from bflnet.simulator.rng import RngStreams

    torch.set_num_threads(config.threads)
    rng = RngStreams(seed).numpy("data")
    x, y = load_fashion_mnist(split="train")
    xt, yt = load_fashion_mnist(split="test")
    parts = iid(len(y), config.K, rng, per_agent=config.points_per_agent)
    data = {k: (x[p].reshape(len(p), -1), y[p]) for k, p in enumerate(parts)}
    pick = rng.permutation(len(yt))[:config.eval_size]
    x_eval, y_eval = xt[pick].reshape(len(pick), -1), torch.as_tensor(yt[pick])
    model = BayesianMLP(784, config.hidden, 10, prior_var=1.0,
                        device=resolve_device(config.device))
    fald = TorchFALD(model, data, step_size=config.step_size,
                     local_steps=config.local_steps, batch_size=config.batch_size)
    K, d, eta = config.K, model.d, config.step_size
    clip = (eta * K * config.local_steps * config.grad_clip
            + 1.5 * math.sqrt(2.0 * eta * K * (config.local_steps - 1) * d))
    mean_gains = device_mean_gains(config, RngStreams(seed).numpy("positions"))
    fedavg: Any = None
    if {"ota-fedavg", "fedavg"} & set(comma_list("methods", config.methods, METHODS)):
        from bflnet.learners.federated.fedavg import FedAvg, FedAvgParams
        from bflnet.learners.federated.ota_fedavg import AnalogFedAvg

        n_all = K * config.points_per_agent
        fedavg = AnalogFedAvg(FedAvg(model, data, FedAvgParams(
            local_steps=config.local_steps, lr=config.fedavg_lr,
            batch_size=config.batch_size, weight_decay=1.0 / n_all),
            dtype=model.dtype, device=model.device))
    snrs = snr_list(config.snr_db)
    methods = comma_list("methods", config.methods, METHODS)
    cases = [(m, s) for m in methods for s in (snrs if m not in IDEAL else [snrs[0]])]
    setup.close()
    bar = runs_bar(range(len(cases) * config.rounds), progress, NAME)
    bar.unit = "round"
    out: list[dict[str, Any]] = []
    silent: dict[tuple[str, float], tuple[int, int]] = {}
    for method, snr in cases:
        spec = AirCompSpec(tx_power=tx_power_from_snr_db(snr), noise_power=1.0,
                           bandwidth_hz=config.bandwidth_hz, latency_s=config.latency_s,
                           gain_threshold=config.gain_threshold,
                           truncation=config.truncation)
        uplink: Any = None
        learner: Any = fedavg if method in ("ota-fedavg", "fedavg") else fald
        if method == "wfald":
            uplink = AirCompUplink(spec, mean_gains, clip)
        elif method == "ota-fedavg":
            uplink = AirCompUplink(replace(spec, power_rule="full"), mean_gains,
                                   config.fedavg_clip)
        elif method in ("digital", "digital-min"):
            uplink = DigitalLink("full" if method == "digital" else "min-energy",
                                 config.digital_bits, config.digital_gap_db)
        evals: list[tuple[int, dict[str, float]]] = []
        acc: dict[str, Any] = {"sum": None, "n": 0}

        def on_round(r: int, theta: np.ndarray, acc: dict[str, Any] = acc,
                     evals: list[tuple[int, dict[str, float]]] = evals,
                     learner: Any = learner, bayes: bool = learner is fald) -> None:
            bar.update(1)
            if bayes and r > config.burn_in:
                probs = learner.predictive(theta, x_eval)
                acc["sum"] = probs if acc["sum"] is None else acc["sum"] + probs
                acc["n"] += 1
            if r % config.eval_every == 0 or r == config.rounds:
                probs = (acc["sum"] / acc["n"] if acc["n"]
                         else learner.predictive(theta, x_eval))
                evals.append((r, scores(probs, y_eval, n_bins=10)))

        name = f"{NAME} {method} {snr:g} dB"
        if isinstance(uplink, DigitalLink):
            uplink = DigitalUplink(spec, mean_gains, link=uplink)
        frame, _ = run_fald(learner, config.rounds, d, seed=seed, uplink=uplink,
                            on_round=on_round, name=name)
        rounds = frame[frame["event"].isin(("round", "silent_round"))].set_index("iteration")
        k_cum = rounds["k_active"].cumsum()
        silent_cum = (rounds["event"] == "silent_round").cumsum()
        silent[(method, snr)] = (int(silent_cum.iloc[-1]), len(rounds))
        ratio = (rounds["channel_var"] / fald.noise_target).cumsum()
        for r, metrics in evals:
            row = rounds.loc[r]
            for snr_out in (snrs if method in IDEAL else [snr]):
                out.append({"time_s": float(row["time_s"]), "iteration": r, "event": "eval",
                            "cum_bits": float(row["cum_bits"]),
                            "cum_bits_delivered": float(row["cum_bits_delivered"]),
                            "method": method, "snr_db": snr_out,
                            "accuracy": metrics["accuracy"], "ece": metrics["ece"],
                            "nll": metrics["nll"],
                            "energy_j": float(row["cum_energy_j"]) / K,
                            "k_active_mean": float(k_cum.loc[r]) / r,
                            "silent_rounds": int(silent_cum.loc[r]),
                            "channel_noise_ratio": float(ratio.loc[r]) / r})
    bar.close()
    silent_warning(NAME, silent)
    frame = pd.DataFrame.from_records(out, columns=SCHEMA.names())
    return frame.sort_values(["method", "snr_db", "iteration"], kind="stable",
                             key=lambda c: c.map(METHODS.index) if c.name == "method"
                             else c).reset_index(drop=True)
