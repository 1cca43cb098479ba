"""What the CD-BFL scenarios share: the network and learner settings (the paper's regime by
default where it fits in a CLI run), the data, the compression operator and running one
consensus simulation to a tidy frame.

**The paper's regime** (CD-BFL paper, Sec. V): K = 10 devices on a complete graph with
Ω = J/K (Metropolis-Hastings weights give exactly that on a complete graph), 50 i.i.d.
examples per device, prior N(0, I), η = 1e-4, T = 800 rounds with a burn-in of 700,
ζ = 0.03, top-k keeping 1 % of the parameters, L = 1..12 local steps (8 best), minibatch
10. The learners' defaults (:class:`bflnet.learners.hyper.CDBFLParams`) are the paper's;
the scenarios shorten the run (``rounds``, ``burn_in``) so that their CLI default finishes
in about two minutes: ``--set rounds=800 --set burn_in=700`` is the paper's.

**Bits.** Top-k messages cost ⌈log2 C(d, k)⌉ position bits plus 32 bits per kept value;
the quantiser (``compression=quantize``) 1 sign + N_b − 1 magnitude bits per value plus 32
bits of range; DSGLD's samples travel as float32 (32 bits per parameter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.learners.hyper import CDBFLParams
from bflnet.protocols.stopping import StopRule
from bflnet.runs.resources import FLOAT32, check_memory
from bflnet.runs.schema import ACCURACY, DROPPED, ECE, METHOD, NLL, RUN_ID, col
from bflnet.runtime.devices import DEVICES, resolve_device
from bflnet.scenarios.shared.fashion import eval_subset
from bflnet.scenarios.shared.network_settings import GRAPHS, NetworkSettings
from bflnet.validation.params import param

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np
    import pandas as pd

    from bflnet.learners.base import ConsensusLearner
    from bflnet.protocols.coding.codecs import RawCodec
    from bflnet.simulator.simulation import RunResult

#: Where the examples come from.
DATA_SOURCES = ("fashion-mnist", "radar-synthetic", "radar-files")
#: The Bayesian network: an MLP with ``hidden`` units, the classic LeNet-5 (1.42 M
#: parameters on the 256 x 63 maps) or the paper's 2.7 M LeNet (FC1 = 229 units).
MODELS = ("mlp", "lenet", "lenet-2.7m")
#: Labels the CD-BFL paper calls critical (human within 1.5 m of the robot): the shifted
#: test sets keep only these.
CRITICAL_LABELS = (1, 2, 3, 4, 5, 6)
COMPRESSION = ("topk", "quantize", "none")
#: Row events kept in the frames.
ROW_EVENTS = ("init", "round")


@dataclass(frozen=True)
class CDBFLSettings(CDBFLParams, NetworkSettings):
    """Network, data and CD-BFL settings (:class:`CDBFLParams` embedded)."""
    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {"per_node": "points_per_agent"}

    SHARED_MEDIUM: ClassVar[bool] = True

    graph: str = param("complete", "topology of the D2D graph (paper: complete)",
                       choices=GRAPHS)
    K: int = param(10, "number of devices (paper: 10)", ge=2, le=4096)
    data: str = param("fashion-mnist", "where the examples come from: Fashion-MNIST, the "
                      "synthetic 256 x 63 radar maps (bflnet.data.radar), or the real maps "
                      "in radar_dir", choices=DATA_SOURCES)
    radar_dir: str | None = param(None, "folder of the real radar maps (data=radar-files): "
                                  "day0/train_data/mmwave_data_train_<k>.mat ... (IEEE "
                                  "Dataport, DOI 10.21227/0wmc-hq36)")
    world_seed: int = param(0, "seed of the synthetic radar world: the day layouts "
                            "(data=radar-synthetic)", ge=0, le=2**63 - 1)
    model: str = param("mlp", "Bayesian network: mlp (hidden units), lenet (LeNet-5, 1.42 M "
                       "parameters on radar maps), lenet-2.7m (the paper's size; time and "
                       "memory grow with the size)", choices=MODELS)
    points_per_agent: int = param(50, "training examples per device (paper: 50)", ge=1, le=60_000)
    eval_size: int = param(1000, "test examples the predictive is measured on", ge=1,
                           le=10_000)
    hidden: int = param(100, "hidden units of the MLP (fashion-mnist; time and "
                        "memory grow linearly)", ge=1, le=4096)
    rounds: int = param(200, "rounds T (paper: 800; ours shorter for a quick CLI run)",
                        ge=1, le=10**6)
    burn_in: int = param(150, "rounds T_b whose samples are discarded (paper: 700 of 800)",
                         ge=0, le=10**6)
    lr: float = param(1e-3, "learning rate eta (paper: 1e-4 with 800 rounds; ours 1e-3 "
                      "for the shorter run)", gt=0, le=1e3)
    compression: str = param("topk", "the compression operator Q: top-k, the stochastic "
                             "quantiser, or none", choices=COMPRESSION)
    keep_ratio: float = param(0.01, "top-k: the fraction of parameters kept (paper: 0.01)",
                              gt=0, le=1)
    n_bits: int = param(5, "quantiser: bits per value", ge=2, le=32)
    eval_every: int = param(10, "evaluate every this many rounds (and the last)", ge=1,
                            le=10**6)
    threads: int = param(1, "torch threads inside the run", ge=1, le=256)
    device: str = param("cpu", "where torch computes: cpu, cuda (an error without a CUDA "
                          "device) or auto (cuda when available, else cpu)", choices=DEVICES)

    def check_rounds(self) -> None:
        """``burn_in`` must leave rounds whose samples the predictive keeps."""
        if self.burn_in >= self.rounds:
            raise ValueError(f"burn_in: must be < rounds = {self.rounds}, got {self.burn_in}")

    def check_data_fields(self, extra_maps: int = 0, extra_field: str = "") -> None:
        """No silently ignored data or model field, and a data set that can be had:
        ``extra_maps`` test maps beyond ``eval_size`` (e.g. shifted test sets)."""

        unused = {"radar_dir": self.data != "radar-files",
                  "world_seed": self.data != "radar-synthetic",
                  "hidden": self.model != "mlp"}
        for name, ignored in unused.items():
            default = type(self).__dataclass_fields__[name].default
            if ignored and getattr(self, name) != default:
                reads = {"radar_dir": "data=radar-files", "world_seed": "data=radar-synthetic",
                         "hidden": "model=mlp"}[name]
                raise ValueError(f"{name}: only read with {reads}; this run has "
                                 f"data={self.data}, model={self.model}")
        if self.data == "radar-files" and not self.radar_dir:
            raise ValueError("radar_dir: must name the folder of the maps when "
                             "data=radar-files")
        train = self.K * self.points_per_agent
        if self.data == "fashion-mnist" and train > 60_000:
            raise ValueError(f"points_per_agent: K·points_per_agent = {train} exceeds the "
                             f"60000 training images")
        if self.data != "fashion-mnist":
            pixels = RADAR_PIXELS
            fields = "K, points_per_agent, eval_size" + (f", {extra_field}" if extra_field else "")
            check_memory(fields,
                         (train + self.eval_size + extra_maps) * pixels * FLOAT32,
                         "the radar maps")


def codec_for(config: CDBFLSettings, d: int) -> Any:
    """The compression operator Q as a codec (``None``: uncompressed float64)."""
    from bflnet.protocols.coding.codecs import StochasticQuantizer, TopKCodec
    if config.compression == "topk":
        return TopKCodec(k=max(1, round(config.keep_ratio * d)), value_bits=32)
    if config.compression == "quantize":
        return StochasticQuantizer(config.n_bits)
    return None


def sample_codec() -> RawCodec:
    """DSGLD's samples travel as float32."""
    from bflnet.protocols.coding.codecs import RawCodec

    return RawCodec(32)


#: Pixels of one radar map (256 range x 63 azimuth bins).
RADAR_PIXELS = 256 * 63


@dataclass(frozen=True)
class Workspace:
    """The devices' training data, the evaluation sets and the model."""

    nodes: dict[int, tuple[np.ndarray, np.ndarray]]
    eval_sets: dict[str, tuple[np.ndarray, np.ndarray]]
    model: Any


def make_model(config: CDBFLSettings, height: int, width: int) -> Any:
    """The Bayesian network of ``config.model`` on ``height`` x ``width`` inputs (given
    flattened), 10 classes, prior N(0, I)."""
    device = resolve_device(config.device)
    if config.model == "mlp":
        from bflnet.learners.models.classifiers import BayesianMLP

        return BayesianMLP(height * width, config.hidden, 10, prior_var=1.0, device=device)
    from bflnet.learners.models.lenet import BayesianLeNet

    padding = 2 if height < 32 else 0  # 28 x 28 images: LeNet-5's 32 x 32 input
    if config.model == "lenet-2.7m":
        return BayesianLeNet.cdbfl(height, width, 10, prior_var=1.0, padding=padding,
                                   device=device)
    return BayesianLeNet(height, width, 10, prior_var=1.0, padding=padding, device=device)


def split_iid(x: np.ndarray, y: np.ndarray, config: CDBFLSettings, rng: np.random.Generator
              ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``K`` disjoint i.i.d. shards of ``points_per_agent`` examples, flattened to rows."""
    from bflnet.data import iid

    if config.K * config.points_per_agent > len(y):
        raise ValueError(f"points_per_agent: K·points_per_agent = "
                         f"{config.K * config.points_per_agent} exceeds the "
                         f"{len(y)} training examples")
    parts = iid(len(y), config.K, rng, per_agent=config.points_per_agent)
    return {k: (x[p].reshape(len(p), -1), y[p]) for k, p in enumerate(parts)}


def fashion_workspace(config: CDBFLSettings, rng: np.random.Generator) -> Workspace:
    """``K`` disjoint i.i.d. shards of ``points_per_agent`` Fashion-MNIST training images, a test
    subset, and the model."""
    from bflnet.data import load_fashion_mnist

    x, y = load_fashion_mnist(split="train")
    return Workspace(split_iid(x, y, config, rng), {"eval": eval_subset(config.eval_size, rng)},
                     make_model(config, 28, 28))


def synthetic_radar_test(config: CDBFLSettings, n: int, day: int, rng: np.random.Generator,
                         labels: tuple[int, ...] | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
    """``n`` synthetic maps of ``day`` (flattened), balanced over ``labels`` (default:
    all ten)."""
    import numpy as np

    from bflnet.data.radar import day_layout, preprocess, radar_maps, simulate_radar

    if labels is None:
        x, y = radar_maps(n, rng, day=day, world_seed=config.world_seed)
    else:
        y = np.resize(np.asarray(labels, dtype=np.int64), n)
        rng.shuffle(y)
        scene = simulate_radar(y, rng, day_layout(day, config.world_seed))
        x = preprocess(scene.raw)
    return x.reshape(n, -1), y


def radar_file_test(config: CDBFLSettings, n: int, day: int, rng: np.random.Generator,
                    labels: tuple[int, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``n`` maps of the real test split of ``day`` (flattened), drawn without
    replacement among ``labels`` (default: all)."""
    import numpy as np

    from bflnet.data.radar import load_radar_maps

    x, y = load_radar_maps(config.radar_dir, day=day, split="test")
    keep = np.flatnonzero(np.isin(y, labels)) if labels is not None else np.arange(len(y))
    pick = rng.permutation(keep)[:n]
    return x[pick].reshape(len(pick), -1), y[pick]


def radar_workspace(config: CDBFLSettings, rng: np.random.Generator) -> Workspace:
    """Day-0 radar maps, synthetic or the real ones in ``radar_dir``: ``K`` i.i.d. shards
    of ``points_per_agent`` training maps (the paper: 50 each), ``eval_size`` day-0 test maps,
    and the model on 256 x 63 maps."""
    import numpy as np

    from bflnet.data.radar import MAP_SHAPE, load_radar_maps, radar_maps

    if config.data == "radar-synthetic":
        x, y = radar_maps(config.K * config.points_per_agent, rng, day=0,
                          world_seed=config.world_seed)
        test = synthetic_radar_test(config, config.eval_size, 0, rng)
    else:
        devices = load_radar_maps(config.radar_dir, day=0, split="train")
        x = np.concatenate([xy[0] for xy in devices.values()])
        y = np.concatenate([xy[1] for xy in devices.values()])
        test = radar_file_test(config, config.eval_size, 0, rng)
    return Workspace(split_iid(x, y, config, rng), {"eval": test}, make_model(config, *MAP_SHAPE))


def workspace(config: CDBFLSettings, rng: np.random.Generator) -> Workspace:
    """The data and model of ``config.data``."""
    if config.data == "fashion-mnist":
        return fashion_workspace(config, rng)
    return radar_workspace(config, rng)


def run_consensus(name: str, config: CDBFLSettings, seed: int, learner: ConsensusLearner,
                  graph: nx.Graph, codec: Any, progress: bool) -> RunResult:
    """``config.rounds`` synchronous rounds of ``learner`` over ``graph`` (Metropolis-
    Hastings weights) with the config's links; the frame keeps the init and round rows."""
    import torch  # lazily, so that `bflnet list` stays fast

    from bflnet.protocols.consensus import ConsensusProtocol
    from bflnet.protocols.graphs.mixing import metropolis_hastings_weights
    from bflnet.simulator.simulation import Simulation

    torch.set_num_threads(config.threads)
    sim = Simulation(seed, name=name)
    sim.build_network(graph, **config.network_kwargs(graph))
    protocol = ConsensusProtocol(learner, metropolis_hastings_weights(graph, sparse=True),
                                 StopRule(max_iterations=config.rounds), codec=codec,
                                 eval_every=config.eval_every, progress=progress,
                                 broadcast=config.broadcast)
    result = sim.run(protocol)
    frame = result.frame
    result.frame = frame[frame["event"].isin(ROW_EVENTS)].reset_index(drop=True)
    return result


def tidy(frames: list[pd.DataFrame], first: tuple[str, ...]) -> pd.DataFrame:
    """Concatenate run frames, ``first`` columns in front."""
    import pandas as pd
    frame = pd.concat(frames, ignore_index=True)
    head = [c for c in first if c in frame.columns]
    return frame[head + [c for c in frame.columns if c not in head]]


#: The columns of a CD-BFL round row (both scenarios).
ROUND_COLUMNS = (
    col("consensus_error", "1", "RMS distance of the devices' samples to their mean",
        "init", "round"),
    ACCURACY.means("the devices' mean test accuracy of their posterior predictives (NaN "
                   "between evaluations)").on("init", "round"),
    ECE.means("the devices' mean test ECE").on("init", "round", "reliability"),
    NLL.means("the devices' mean test NLL").on("init", "round"),
    col("kept_samples", "count", "samples each device has kept for its predictive so far",
        "init", "round"),
    col("missed_increments", "count", "CD-BFL: compressed increments lost, over the nodes "
        "(NaN for DSGLD)", "init", "round"),
    DROPPED.on("round"),
    col("copy_gap", "1", "CD-BFL: largest gap between a device's copy and the sum of its "
        "neighbours' (0 up to rounding while nothing is lost)", "round"),
)
#: The columns that say which run a row belongs to (both scenarios).
RUN_COLUMNS = (
    RUN_ID, METHOD,
    col("local_steps", "count", "local Langevin steps per round, L (1 for DSGLD)"),
    col("message_bits", "bits", "size of one D2D message"),
)
