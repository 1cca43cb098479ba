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
from typing import TYPE_CHECKING, Any

from bflnet.learners.hyper import CDBFLParams
from bflnet.params import param
from bflnet.protocols.stopping import StopRule
from bflnet.scenarios.network_settings import GRAPHS, NetworkSettings

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np
    import pandas as pd

    from bflnet.learners.base import ConsensusLearner
    from bflnet.protocols.codecs import RawCodec
    from bflnet.simulator.simulation import RunResult

#: Where the examples come from.
DATA_SOURCES = ("fashion-mnist",)
COMPRESSION = ("topk", "quantize", "none")
#: Row events kept in the frames.
ROW_EVENTS = ("init", "round")


@dataclass(frozen=True)
class CDBFLSettings(CDBFLParams, NetworkSettings):
    """Network, data and CD-BFL settings (:class:`CDBFLParams` embedded)."""

    graph: str = param("complete", "topology of the D2D graph (paper: complete)",
                       choices=GRAPHS)
    K: int = param(10, "number of devices (paper: 10)", ge=2, le=4096)
    data: str = param("fashion-mnist", "where the examples come from", choices=DATA_SOURCES)
    per_node: int = param(50, "training examples per device (paper: 50)", ge=1, le=60_000)
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

    def check_rounds(self) -> None:
        """``burn_in`` must leave rounds whose samples the predictive keeps."""
        if self.burn_in >= self.rounds:
            raise ValueError(f"burn_in: must be < rounds = {self.rounds}, got {self.burn_in}")


def codec_for(config: CDBFLSettings, d: int) -> Any:
    """The compression operator Q as a codec (``None``: uncompressed float64)."""
    from bflnet.protocols.codecs import StochasticQuantizer, TopKCodec
    if config.compression == "topk":
        return TopKCodec(k=max(1, round(config.keep_ratio * d)), value_bits=32)
    if config.compression == "quantize":
        return StochasticQuantizer(config.n_bits)
    return None


def sample_codec() -> RawCodec:
    """DSGLD's samples travel as float32."""
    from bflnet.protocols.codecs import RawCodec

    return RawCodec(32)


@dataclass(frozen=True)
class Workspace:
    """The devices' training data, the evaluation sets and the model."""

    nodes: dict[int, tuple[np.ndarray, np.ndarray]]
    eval_sets: dict[str, tuple[np.ndarray, np.ndarray]]
    model: Any


def fashion_workspace(config: CDBFLSettings, rng: np.random.Generator) -> Workspace:
    """``K`` disjoint i.i.d. shards of ``per_node`` Fashion-MNIST training images, a test
    subset, and a 784-``hidden``-10 Bayesian MLP (prior N(0, I))."""
    from bflnet.data import iid, load_fashion_mnist
    from bflnet.learners.models import BayesianMLP
    from bflnet.scenarios.dsvgd_common import eval_subset

    if config.K * config.per_node > 60_000:
        raise ValueError(f"per_node: K·per_node = {config.K * config.per_node} exceeds the "
                         f"60000 training images")
    x, y = load_fashion_mnist(split="train")
    parts = iid(len(y), config.K, rng, per_agent=config.per_node)
    nodes = {k: (x[p], y[p]) for k, p in enumerate(parts)}
    return Workspace(nodes, {"eval": eval_subset(config.eval_size, rng)},
                     BayesianMLP(784, config.hidden, 10, prior_var=1.0))


def workspace(config: CDBFLSettings, rng: np.random.Generator) -> Workspace:
    """The data and model of ``config.data``."""
    return fashion_workspace(config, rng)


def run_consensus(name: str, config: CDBFLSettings, seed: int, learner: ConsensusLearner,
                  graph: nx.Graph, codec: Any, progress: bool) -> RunResult:
    """``config.rounds`` synchronous rounds of ``learner`` over ``graph`` (Metropolis-
    Hastings weights) with the config's links; the frame keeps the init and round rows."""
    import torch  # lazily, so that `bflnet list` stays fast

    from bflnet.protocols.consensus import ConsensusProtocol
    from bflnet.protocols.mixing import metropolis_hastings_weights
    from bflnet.simulator.simulation import Simulation

    torch.set_num_threads(config.threads)
    sim = Simulation(seed, name=name)
    sim.build_network(graph, **config.network_kwargs(graph))
    protocol = ConsensusProtocol(learner, metropolis_hastings_weights(graph, sparse=True),
                                 StopRule(max_iterations=config.rounds), codec=codec,
                                 eval_every=config.eval_every, progress=progress)
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
