"""Scenario ``cdbfl-local-steps`` (CD-BFL paper, Fig. 3): CD-BFL with L local steps per
round, for each L in ``local_steps_values``, against uncompressed DSGLD, on K devices over
D2D links; accuracy, ECE and NLL of the devices' posterior predictives against rounds,
simulated seconds and bits.

All runs of one call share the data, the initial model and the links (the same seed).
The compression operator, the shortened run and the data are set in
:mod:`bflnet.scenarios.cdbfl.common` (``--set rounds=800 --set burn_in=700
--set lr=1e-4`` is the paper's length and step).

One row per (method, L, round): ``run_id``, ``method`` (``cd-bfl`` or ``dsgld``),
``local_steps`` (L; 1 for DSGLD), ``message_bits`` (one D2D message), ``iteration``
(round), ``time_s``, ``cum_bits``, ``cum_bits_delivered``, ``consensus_error`` (RMS
distance of the devices' samples to their mean), ``accuracy``, ``ece``, ``nll`` (the
devices' mean, of each device's average predictive over its kept samples; NaN between
evaluations), ``kept_samples``, and for CD-BFL ``missed_increments`` and ``copy_gap``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

from bflnet.learners.hyper import CDBFLParams, LangevinParams
from bflnet.protocols.progress import run_label
from bflnet.runs.lists import int_list
from bflnet.runs.registry import register
from bflnet.runs.schema import CUM_BITS, CUM_BITS_DELIVERED, EVENT, ITERATION, TIME_S, Schema
from bflnet.scenarios.cdbfl.common import (
    ROUND_COLUMNS,
    RUN_COLUMNS,
    CDBFLSettings,
    codec_for,
    run_consensus,
    sample_codec,
    tidy,
    workspace,
)
from bflnet.validation.params import param, subset, validate

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

NAME = "cdbfl-local-steps"
COLUMNS = ("run_id", "method", "local_steps", "message_bits")


@dataclass(frozen=True)
class CDBFLLocalStepsConfig(CDBFLSettings):
    """Parameters of ``cdbfl-local-steps``."""
    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {"local_steps_list": "local_steps_values"}

    local_steps_values: str = param("1,8", "comma list of L, the local steps per round, one "
                                  "CD-BFL run each (paper: 1..12)")
    dsgld: bool = param(True, "also run uncompressed DSGLD (the paper's baseline)")

    SCENARIO: ClassVar[str] = NAME
    #: Comma lists that emulate a sweep axis (``bflnet describe`` explains them).
    LIST_AXES: ClassVar[dict[str, str]] = {
        "local_steps_values": "one CD-BFL run per L, told apart by the column local_steps "
        "(the integer parameter local_steps is not used here: this list decides). `bflnet "
        "sweep cdbfl-local-steps --grid local_steps_values=1,8 --set dsgld=false` runs each L "
        "as its own sweep point instead (with dsgld=true every point also reruns the DSGLD "
        "baseline)"}

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()
        self.check_rounds()
        self.check_data_fields()
        int_list("local_steps_values", self.local_steps_values, 1, 10**6)


def default_plot(frame: pd.DataFrame) -> Figure:
    """Fig. 3: accuracy and ECE against rounds, one curve per method and L."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2)
    rows = frame.dropna(subset=["accuracy"])
    for (method, steps), run in rows.groupby(["method", "local_steps"]):
        label = "DSGLD" if method == "dsgld" else f"CD-BFL, L = {steps}"
        axes[0].plot(run["iteration"], run["accuracy"], label=label)
        axes[1].plot(run["iteration"], run["ece"], label=label)
    axes[0].set(xlabel="round", ylabel="accuracy", title="accuracy (Fig. 3a)")
    axes[1].set(xlabel="round", ylabel="ECE", title="calibration (Fig. 3b)")
    axes[0].legend(fontsize=7)
    for ax in axes:
        ax.grid(alpha=0.3)
    return fig


SCHEMA = Schema.of(
    *RUN_COLUMNS, ITERATION.means("round (0: the initial model)"), TIME_S,
    EVENT.means("init or round"), CUM_BITS, CUM_BITS_DELIVERED, *ROUND_COLUMNS,
)


@register(NAME, CDBFLLocalStepsConfig,
          "CD-BFL (paper Fig. 3): L local steps per round with top-k compressed gossip, "
          "against uncompressed DSGLD; accuracy and ECE against rounds, seconds and bits.",
          plot=default_plot, datasets=("fashion-mnist",), columns=SCHEMA)
def run(config: CDBFLLocalStepsConfig, *, seed: int = 0, progress: bool = False
        ) -> pd.DataFrame:
    from bflnet.protocols.progress import setup_bar
    from bflnet.simulator.rng import RngStreams
    setup = setup_bar(NAME, None, progress)
    setup.set_postfix_str("loading torch and data")
    from bflnet.learners.langevin.cdbfl import CDBFL  # lazily: torch
    from bflnet.learners.langevin.dsgld import DSGLD

    streams = RngStreams(seed)
    space = workspace(config, streams.numpy("data"))
    graph = config.run_graph(seed)
    d = space.model.d
    setup.close()
    frames = []
    for steps in int_list("local_steps_values", config.local_steps_values, 1, 10**6):
        params = replace(subset(CDBFLParams, config), local_steps=steps)
        learner = CDBFL(space.model, space.nodes, params, eval_sets=space.eval_sets)
        codec = codec_for(config, d)
        result = run_consensus(run_label(NAME, {"method": "cd-bfl", "L": steps}), config,
                               seed, learner, graph, codec, progress)
        bits = codec.bits_for((1, d)) if codec is not None else 64 * d
        frames.append(result.frame.assign(run_id=f"cd-bfl-L{steps}-s{seed}",
                                          method="cd-bfl", local_steps=steps,
                                          message_bits=bits))
    if config.dsgld:
        learner = DSGLD(space.model, space.nodes, subset(LangevinParams, config),
                        eval_sets=space.eval_sets)
        result = run_consensus(run_label(NAME, {"method": "dsgld"}), config, seed, learner,
                               graph, sample_codec(), progress)
        frames.append(result.frame.assign(run_id=f"dsgld-s{seed}", method="dsgld",
                                          local_steps=1,
                                          message_bits=sample_codec().bits_for((1, d))))
    return tidy(frames, (*COLUMNS, "iteration"))
