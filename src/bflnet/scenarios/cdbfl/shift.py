"""Scenario ``cdbfl-shift`` (CD-BFL paper, Fig. 4): DSGLD, CD-BFL (L local steps, top-k
gossip) and CF-FL (the same gossip without noise, a point estimate) trained on day-0
radar maps, then tested on the maps of other days, keeping only the critical labels 1-6
(a person within 1.5 m of the robot). Calibration under the shift, as reliability
diagrams.

All methods of one call share the data, the initial model and the links (the same seed).
The day-0 test maps are the ``eval`` set (all labels); the other days' maps, pooled over
``test_days`` (the paper averages days 2 and 3 of its numbering, our days 1 and 2), are
the ``shift`` set. Data and model come from :mod:`bflnet.scenarios.cdbfl.common`
(default: the synthetic maps of :mod:`bflnet.data.radar` and an MLP, so that the CLI run
is short; ``--set model=lenet-2.7m --set rounds=800 --set burn_in=700 --set lr=1e-4`` is
the paper's model and length).

Rows:

* per (method, round), as in ``cdbfl-local-steps``: ``iteration``, ``time_s``,
  ``cum_bits``, ``consensus_error``, ``accuracy``/``ece``/``nll`` on day 0 (all labels),
  ``critical_accuracy``/``critical_ece``/``critical_nll`` on day 0's critical maps (the
  unshifted reference) and ``shift_accuracy``/``shift_ece``/``shift_nll`` on the test
  days' critical maps (the devices' mean); the shift costs ``critical_accuracy -
  shift_accuracy``;
* per (method, confidence bin), ``event = "reliability"``: ``bin``, ``lower``, ``upper``,
  ``count``, ``bin_accuracy``, ``bin_confidence`` of the devices' final posterior
  predictives on the ``shift`` set, pooled over the devices (each device's predictions
  count once); ``ece`` of the pooled predictions on those rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.learners.hyper import CDBFLParams, LangevinParams
from bflnet.protocols.progress import run_label
from bflnet.runs.lists import comma_list, int_list
from bflnet.runs.registry import register
from bflnet.runs.schema import (
    CUM_BITS,
    CUM_BITS_DELIVERED,
    EVENT,
    ITERATION,
    TIME_S,
    Schema,
    col,
)
from bflnet.scenarios.cdbfl.common import (
    CRITICAL_LABELS,
    ROUND_COLUMNS,
    RUN_COLUMNS,
    CDBFLSettings,
    Workspace,
    codec_for,
    radar_file_test,
    run_consensus,
    sample_codec,
    synthetic_radar_test,
    tidy,
    workspace,
)
from bflnet.validation.params import param, subset, validate

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

NAME = "cdbfl-shift"
METHODS = ("dsgld", "cd-bfl", "cf-fl")
LABELS = {"dsgld": "DSGLD", "cd-bfl": "CD-BFL", "cf-fl": "CF-FL"}
COLUMNS = ("run_id", "method", "local_steps", "message_bits", "event")
MAX_DAY = 9999


@dataclass(frozen=True)
class CDBFLShiftConfig(CDBFLSettings):
    """Parameters of ``cdbfl-shift``."""

    data: str = param("radar-synthetic", "where the maps come from: synthetic or the real "
                      "ones in radar_dir (the shift needs days)",
                      choices=("radar-synthetic", "radar-files"))
    methods: str = param("dsgld,cd-bfl,cf-fl", "comma list of methods: dsgld, cd-bfl, cf-fl")
    hidden: int = param(32, "hidden units of the MLP (model=mlp; ours: 32 for a short CLI "
                        "run; time and memory grow linearly)", ge=1, le=4096)
    eval_size: int = param(200, "day-0 test maps (all labels) the predictive is measured on",
                           ge=1, le=10_000)
    rounds: int = param(100, "rounds T (paper: 800; ours shorter for a quick CLI run)",
                        ge=1, le=10**6)
    burn_in: int = param(80, "rounds T_b whose samples are discarded (paper: 700 of 800)",
                         ge=0, le=10**6)
    thin: int = param(5, "keep every thin-th sample after the burn-in for the predictive "
                      "(ours: 5, fewer predictive evaluations)", ge=1, le=10**6)
    lr: float = param(1e-4, "learning rate eta (paper: 1e-4)", gt=0, le=1e3)
    eval_every: int = param(20, "evaluate every this many rounds (and the last)", ge=1,
                            le=10**6)
    test_days: str = param("1,2", "comma list of the days whose test maps form the shifted "
                           "set (training is on day 0)")
    shift_size: int = param(100, "test maps of the critical labels 1-6 per test day, and "
                            "as many of day 0 (the unshifted reference)", ge=1, le=100_000)
    n_bins: int = param(10, "confidence bins of the reliability diagrams", ge=1, le=1000)

    SCENARIO: ClassVar[str] = NAME

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()
        self.check_rounds()
        days = int_list("test_days", self.test_days, 1, MAX_DAY)
        self.check_data_fields(extra_maps=(len(days) + 1) * self.shift_size,
                               extra_field="shift_size")
        comma_list("methods", self.methods, METHODS)


def default_plot(frame: pd.DataFrame) -> Figure:
    """Fig. 4: one reliability diagram per method on the shifted critical maps."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    bins = frame[frame["event"] == "reliability"]
    methods = [m for m in METHODS if m in set(bins["method"])]
    fig = Figure(figsize=(3.4 * max(1, len(methods)), 3.4), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, max(1, len(methods)), squeeze=False)[0]
    for ax, method in zip(axes, methods, strict=False):
        rows = bins[bins["method"] == method]
        width = rows["upper"] - rows["lower"]
        ax.bar(rows["lower"], rows["bin_accuracy"].fillna(0.0), width=width, align="edge",
               edgecolor="black", label="accuracy")
        ax.bar(rows["lower"], (rows["bin_confidence"] - rows["bin_accuracy"]).fillna(0.0),
               bottom=rows["bin_accuracy"].fillna(0.0), width=width, align="edge",
               color="tab:red", alpha=0.35, label="gap to confidence")
        ax.plot([0, 1], [0, 1], "k--", lw=1)
        ece = rows["ece"].iloc[0] if len(rows) else float("nan")
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="confidence", ylabel="accuracy",
               title=f"{LABELS[method]} (ECE {ece:.3f})")
    axes[0].legend(fontsize=7, loc="upper left")
    return fig


def critical_sets(config: CDBFLShiftConfig, rng: Any) -> dict[str, tuple[Any, Any]]:
    """Test maps of the critical labels only (flattened): ``critical``, ``shift_size`` of
    day 0, and ``shift``, ``shift_size`` of each test day, pooled."""
    import numpy as np


    draw = synthetic_radar_test if config.data == "radar-synthetic" else radar_file_test
    parts = [draw(config, config.shift_size, day, rng, CRITICAL_LABELS)
             for day in int_list("test_days", config.test_days, 1, MAX_DAY)]
    return {"critical": draw(config, config.shift_size, 0, rng, CRITICAL_LABELS),
            "shift": (np.concatenate([x for x, _ in parts]),
                      np.concatenate([y for _, y in parts]))}


def reliability_rows(learner: Any, states: dict[Any, Any], n_bins: int) -> pd.DataFrame:
    """The reliability bins of the devices' final predictives on the ``shift`` set,
    pooled over the devices."""
    import numpy as np
    import torch

    from bflnet.learners.calibration import reliability_data
    from bflnet.learners.langevin.langevin import node_predictive

    x, y = learner.eval_sets["shift"]
    probs = torch.cat([node_predictive(learner.model, s.theta, s.sums, s.kept, "shift", x)
                       for s in states.values()])
    labels = y.repeat(len(states))
    data = reliability_data(probs, labels, n_bins)
    table = data.as_frame().rename(columns={"accuracy": "bin_accuracy",
                                            "confidence": "bin_confidence"})
    return table.assign(bin=np.arange(len(table)), ece=data.ece, event="reliability")


_ROUND = ("init", "round")
SCHEMA = Schema.of(
    *RUN_COLUMNS,
    EVENT.means("init, round, or reliability (one confidence bin of the final reliability "
                "diagram on the shifted maps)"),
    TIME_S.on(*_ROUND), ITERATION.means("round (0: the initial model)").on(*_ROUND),
    CUM_BITS.on(*_ROUND), CUM_BITS_DELIVERED.on(*_ROUND),
    *ROUND_COLUMNS[:4],
    col("critical_accuracy", "fraction", "accuracy on day 0's critical maps (labels 1-6)",
        *_ROUND),
    col("critical_ece", "fraction", "ECE on day 0's critical maps", *_ROUND),
    col("critical_nll", "nats", "NLL on day 0's critical maps", *_ROUND),
    col("shift_accuracy", "fraction", "accuracy on the test days' critical maps", *_ROUND),
    col("shift_ece", "fraction", "ECE on the test days' critical maps", *_ROUND),
    col("shift_nll", "nats", "NLL on the test days' critical maps", *_ROUND),
    ROUND_COLUMNS[4], ROUND_COLUMNS[6],
    col("lower", "fraction", "the bin's lower confidence edge", "reliability"),
    col("upper", "fraction", "the bin's upper confidence edge", "reliability"),
    col("count", "count", "predictions in the bin", "reliability"),
    col("bin_accuracy", "fraction", "accuracy of the bin's predictions", "reliability"),
    col("bin_confidence", "fraction", "mean confidence of the bin's predictions",
        "reliability"),
    col("bin", "index", "the bin's number", "reliability"),
    ROUND_COLUMNS[5], ROUND_COLUMNS[7],
)


@register(NAME, CDBFLShiftConfig,
          "CD-BFL (paper Fig. 4): DSGLD, CD-BFL and CF-FL trained on day-0 radar maps, "
          "reliability diagrams on other days' maps of the critical labels 1-6.",
          plot=default_plot, columns=SCHEMA)
def run(config: CDBFLShiftConfig, *, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    from bflnet.protocols.progress import setup_bar

    setup = setup_bar(NAME, None, progress)
    setup.set_postfix_str("loading torch and making the maps")
    from bflnet.learners.langevin.cdbfl import CDBFL
    from bflnet.learners.langevin.cffl import CFFL
    from bflnet.learners.langevin.dsgld import DSGLD
    from bflnet.simulator.rng import RngStreams

    streams = RngStreams(seed)
    base = workspace(config, streams.numpy("data"))
    space = Workspace(base.nodes,
                      {**base.eval_sets, **critical_sets(config, streams.numpy("shift-data"))},
                      base.model)
    graph = config.run_graph(seed)
    d = space.model.d
    setup.close()
    frames = []
    for method in comma_list("methods", config.methods):
        if method == "dsgld":
            learner = DSGLD(space.model, space.nodes, subset(LangevinParams, config),
                            eval_sets=space.eval_sets)
            codec, steps = sample_codec(), 1
        else:
            cls = CDBFL if method == "cd-bfl" else CFFL
            learner = cls(space.model, space.nodes, subset(CDBFLParams, config),
                          eval_sets=space.eval_sets)
            codec, steps = codec_for(config, d), config.local_steps
        result = run_consensus(run_label(NAME, {"method": method}), config, seed, learner,
                               graph, codec, progress)
        bits = codec.bits_for((1, d)) if codec is not None else 64 * d
        tags = dict(run_id=f"{method}-s{seed}", method=method, local_steps=steps,
                    message_bits=bits)
        frames.append(result.frame.assign(**tags))
        frames.append(reliability_rows(learner, result.agent_states, config.n_bins)
                      .assign(**tags))
    return tidy(frames, COLUMNS)
