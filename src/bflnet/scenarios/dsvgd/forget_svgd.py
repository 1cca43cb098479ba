"""Scenario ``forget-svgd`` (compressed-DSVGD letter, Fig. 5): compressed Forget-SVGD of
two agents' data from a Bayesian last layer, against training that layer from scratch
without them.

**Data (the letter's non-i.i.d. set-up, one reading of it).** K = 10 agents with
``points_per_agent = 100`` Fashion-MNIST training examples from two classes each (50 + 50). The
letter says "the two agents with labels 2 and 9 request that their contribution be
unlearned"; we read it as: the forgetting agents (the last ``n_forgetting = 2``, ids 8
and 9) both hold classes {2, 9} (``forget_classes``), so together they hold *all* the
training examples of labels 2 and 9, and the other 8 agents hold sliding pairs of the
remaining classes [0, 1, 3, 4, 5, 6, 7, 8]: agent k holds (r_k, r_(k+1 mod 8)). Every class
is then held by two agents. (Were labels 2 and 9 also held by agents that stay, no
unlearning could take their accuracy to zero.)

**Phases of one run** (same seed, same data):

1. *Pre-training* (not simulated: no network, no rows): FedAvg of the 784-100-10 MLP
   over all agents, ``pretrain_rounds`` rounds with every agent doing
   ``pretrain_local_steps`` SGD steps (lr ``pretrain_lr``; one agent after the other, the
   path of the documented results). The hidden layer is then
   frozen; every example becomes its 100 ReLU features.
2.-3. **One timeline per (``rate_multiple``, ``sharing_fraction``)**: learning, the forget
   request and unlearning are one simulation, so ``time_s`` and the bits run on through
   the request (a ``forget_request`` row marks it, at ``since_request = 0``).

2. ``method="learning"``: DSVGD with ``particles = 40`` particles of the last layer
   (``LogisticRegression(100, 10)``, d = 1010) on the features, starting (``head_init``
   "pretrained") from the pre-trained network's last layer plus N(0, ``head_init_std``²)
   noise per particle (a Bayesian last layer around the pre-trained one, as in the
   letter's ref. [17]; "scaled": from the random init), ``learn_rounds``
   round-robin iterations over all agents, the forgetting agents first in each round (so
   a round, and the phase, ends with a visit of an agent that stays), uncompressed float32
   uplink (the letter does not compress this phase).
3. ``method="forget-svgd"``: after iteration ``learn_rounds`` the forgetting agents ask
   to be forgotten (a :class:`~bflnet.protocols.ForgetRequest`: their factors restart at
   t_k ≡ 1 in unlearning mode), and from then on the server schedules only them; they run
   Forget-SVGD (eq. 8) in turn,
   uplink top-k + quantised within ``R_u = rate_multiple · d`` (alpha-shared with
   ``1/sharing_fraction`` patterns; 1 is shared, 1/40 per-particle), until the
   posterior-predictive accuracy on each forgetting agent's own training data is at most
   ``forget_stop_accuracy`` (checked, and the test metrics recorded, at every iteration;
   the agents can check this themselves), or ``unlearn_rounds`` iterations.
4. ``method="scratch"``, same (``rate_multiple``, ``sharing_fraction``): DSVGD of the last
   layer from the initial particles on the 8 remaining agents only (same features, same
   compressed uplink), ``scratch_rounds`` iterations.

Defaults are reduced where the letter is silent or for speed: 100 pre-training rounds,
20 + at most 100 + 200 iterations, L = ``local_steps`` = 10 SVGD steps per visit with
the *constant* step 0.001 (``--set`` any of them; ``step_rule=adagrad`` is the letter's
AdaGrad). With ``learn_rounds=0`` phase 2 is skipped (the request comes before the
first iteration) and the agents unlearn from the initial particles.

**Known behaviour** (docs/reproductions/dsvgd.md has numbers and the reasons):

- Eq. 8's target ``q/t_k · exp(+N_k L_k)`` has no mode near the learned particles: the
  KDE of q anchors each particle with variance λ only, while the loss of the forgotten
  data grows without bound. Unlearning therefore never settles: run long enough (or with
  an uncompressed uplink) it takes every label down, hence the stop rule.
- With AdaGrad (fresh every visit, first step ≈ ε·sign(φ) on every coordinate) the top-k
  uplink carries coordinates whose gradients are tiny, the remaining labels fall with the
  forgotten ones, and round-robin DSVGD on this label-skewed split drifts towards the
  classes of the most recently visited agents; the constant step avoids both.
- Which remaining labels suffer depends on which classes the forgotten ones are confused
  with (ascent on their loss raises those classes' logits), so results vary by seed.

**Learn once, unlearn many.** ``--save-state DIR`` saves the pre-trained network;
``--load-state DIR`` starts from it instead of pre-training, and may change every setting
the pre-training did not read, and ``forget_classes`` (see :data:`PRETRAIN_FIELDS`).

One row per (run_id, iteration), plus the ``forget_request`` rows: ``run_id`` (one timeline,
or one scratch run), ``method``, ``rate_multiple``, ``sharing_fraction``, ``groups``,
``budget_bits``, ``k``, ``message_bits`` (of the compressed uplink), ``iteration`` (of the
timeline), ``since_request`` (negative while learning), ``forget_pending`` (from the
request on), ``time_s``, ``cum_bits``, ``cum_bits_up``, ``cum_bits_down``, ``uplink_bits``,
``accuracy``, ``ece``, ``nll``, ``brier``, ``acc_class_0`` … ``acc_class_9``,
``acc_unlearned`` (mean accuracy over ``forget_classes``), ``acc_remaining`` (mean over the
other classes), ``pretrain_accuracy`` (the MLP's test accuracy after phase 1),
``forget_train_acc`` (timeline rows: the largest accuracy of the posterior predictive on
a forgetting agent's own training data).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bflnet.learners.hyper import DSVGDParams, FedAvgParams
from bflnet.protocols.interventions import KEEP, ForgetRequest, Phase
from bflnet.protocols.progress import run_label
from bflnet.runs.config import param, validate
from bflnet.runs.lists import float_list, int_list
from bflnet.runs.registry import register
from bflnet.runs.resources import FLOAT32
from bflnet.runs.schema import (
    EVENT,
    ITERATION,
    METHOD,
    RUN_ID,
    SCHEDULED,
    UPDATES,
    UPLINK_BITS,
    Schema,
    col,
)
from bflnet.scenarios.dsvgd.common import (
    BUDGET_COLUMNS,
    METRIC_COLUMNS,
    ONE_PER_ITERATION,
    SERVER_COLUMNS,
    DSVGDSettings,
    VisionData,
    budget_codec,
    eval_subset,
    mlp,
    mlp_dim,
    run_parameter_server,
    sparsity_groups,
    tidy,
)
from bflnet.validation.params import subset

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import torch
    from matplotlib.figure import Figure

    from bflnet.learners.particles.dsvgd import DSVGD
    from bflnet.runs.states import States

# torch and the torch learners are imported lazily, inside the functions that use them, so
# that importing the scenarios (``bflnet list``, ``bflnet describe``) stays fast.

NAME = "forget-svgd"
N_CLASSES = 10
COLUMNS = ("run_id", "method", "rate_multiple", "sharing_fraction", "groups", "budget_bits",
           "k", "message_bits", "iteration", "since_request", "acc_unlearned",
           "acc_remaining")


@dataclass(frozen=True)
class ForgetSVGDConfig(DSVGDSettings):
    """Parameters of ``forget-svgd``."""
    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {
        "learn_iterations": "learn_rounds", "unlearn_iterations": "unlearn_rounds",
        "scratch_iterations": "scratch_rounds"}

    SCENARIO: ClassVar[str] = NAME

    points_per_agent: int = param(100, "training examples per agent, half from each of its two "
                           "classes (letter: 100)", ge=2, le=60_000)
    eval_size: int = param(10_000, "test examples used for evaluation (letter: all 10000)",
                           ge=1, le=10_000)
    eval_every: int = param(5, "evaluate every this many iterations (and the last)", ge=1,
                            le=10**9)
    local_steps: int = param(10, "SVGD steps L per visit", ge=1, le=10**7)
    step_size: float = param(0.001, "SVGD step size (constant step, or AdaGrad master "
                             "step)", gt=0, le=1e6)
    step_rule: str = param("constant", "SVGD step rule: 'constant' (theta += step_size * "
                           "phi) or 'adagrad' (the letter's; fresh each visit)",
                           choices=("adagrad", "constant"))
    forget_classes: str = param("2,9", "comma list of the labels held by the forgetting "
                                "agents (letter: 2,9)")
    n_forgetting: int = param(2, "forgetting agents (the last ids), each holding all "
                              "forget_classes (letter: 2)", ge=1, le=59_999)
    particles: int = param(40, "particles N_p of the last layer (letter: 40; time "
                           "grows as N_p^2 and memory as N_p)", ge=1, le=10**6)
    pretrain_rounds: int = param(100, "FedAvg pre-training rounds (all agents per round)",
                                 ge=1, le=10**7)
    pretrain_local_steps: int = param(10, "SGD steps per agent per pre-training round", ge=1,
                                      le=10**7)
    pretrain_lr: float = param(0.1, "SGD learning rate of the pre-training", gt=0, le=1e3)
    learn_rounds: int = param(20, "DSVGD iterations of the last layer before the "
                                  "request (0: none, unlearn from the initial particles)",
                                  ge=0, le=10**8)
    unlearn_rounds: int = param(100, "Forget-SVGD iterations at most", ge=1, le=10**8)
    forget_stop_accuracy: float | None = param(
        0.1, "Forget-SVGD stops once the posterior-predictive accuracy on every forgetting "
        "agent's own training data is at most this (checked every iteration); none: run "
        "all unlearn_rounds", ge=0, le=1)
    scratch_rounds: int = param(200, "iterations of training from scratch without the "
                                    "forgetting agents", ge=1, le=10**8)
    head_init: str = param("pretrained", "initial particles of the last layer: "
                           "'pretrained' (the FedAvg MLP's last layer + noise) or 'scaled' "
                           "(from scratch)", choices=("pretrained", "scaled"))
    head_init_std: float = param(0.02, "std of the noise around the pre-trained last layer",
                                 ge=0, le=1e3)
    rate_multiples: str = param("1,0.5", "comma list of uplink budgets R_u / d of "
                                "unlearning and scratch (letter: 1,0.5)")
    sharing_fractions: str = param("0.5", "comma list of alpha (sharing fraction of "
                                   "alpha-shared sparsity): 1/g, g dividing N_p")

    def __post_init__(self) -> None:
        validate(self)
        self.check_network_fields()
        forget = int_list("forget_classes", self.forget_classes, 0, N_CLASSES - 1)
        if len(forget) >= N_CLASSES:
            raise ValueError("forget_classes: at least one class must remain")
        if self.n_forgetting >= self.K:
            raise ValueError(f"n_forgetting: must be < K={self.K}, got {self.n_forgetting}")
        remaining = N_CLASSES - len(forget)
        share = self.points_per_agent // min(2, remaining)
        if self.n_forgetting * (self.points_per_agent // len(forget)) > 6000 or share * \
                (2 * (self.K - self.n_forgetting)) > 6000 * remaining:
            raise ValueError(f"points_per_agent, K: {self.K} agents x {self.points_per_agent} "
                             f"examples per agent exceed the 6000 training examples per class")
        d = head_dim(self.hidden)
        # particles of the last layer; the FedAvg pre-training keeps K + 4 copies of the MLP
        self.check_fits_memory("hidden, particles, K", d, self.particles,
                               extra_bytes=FLOAT32 * mlp_dim(self.hidden) * (self.K + 4))
        for fraction in float_list("sharing_fractions", self.sharing_fractions):
            groups = sparsity_groups("alpha-shared", self.particles, fraction,
                                     field="sharing_fractions")
            for rate in float_list("rate_multiples", self.rate_multiples):
                budget_codec(rate, d, self.particles, groups, self.n_bits,
                             field="rate_multiples")


def head_dim(hidden: int) -> int:
    """``d`` of the last layer, ``LogisticRegression(hidden, N_CLASSES).d`` (``W`` and
    ``b``), without building it, which would import torch."""
    return hidden * N_CLASSES + N_CLASSES


def class_assignment(K: int, n_forgetting: int, forget: list[int]) -> list[tuple[int, ...]]:
    """Agent ``k``'s classes: the last ``n_forgetting`` agents hold ``forget``; the others
    sliding pairs of the remaining classes.

    >>> class_assignment(10, 2, [2, 9])[:2], class_assignment(10, 2, [2, 9])[7:]
    ([(0, 1), (1, 3)], [(8, 0), (2, 9), (2, 9)])
    """
    remaining = [c for c in range(N_CLASSES) if c not in forget]
    width = min(2, len(remaining))
    keep = [tuple(remaining[(k + j) % len(remaining)] for j in range(width))
            for k in range(K - n_forgetting)]
    return keep + [tuple(forget)] * n_forgetting


def default_plot(frame: pd.DataFrame) -> Figure:
    """Fig. 5: accuracy on the unlearned and on the remaining labels against iterations
    since the request, Forget-SVGD and from-scratch, for the first rate in the frame."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = frame[frame["method"] != "learning"].dropna(subset=["acc_unlearned"])
    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for (method, rate, frac), group in rows.groupby(["method", "rate_multiple",
                                                      "sharing_fraction"]):
        mean = group.groupby("since_request")[["acc_unlearned", "acc_remaining"]].mean()
        tag = f"{method}, R_u={rate:g}d, α={frac:g}"
        ax.plot(mean.index, mean["acc_unlearned"], label=f"{tag}: unlearned labels")
        ax.plot(mean.index, mean["acc_remaining"], linestyle="--",
                label=f"{tag}: remaining labels")
    ax.set(xlabel="iterations since the request", ylabel="test accuracy",
           title="Forget-SVGD vs training from scratch (Fig. 5)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return fig


def _features(model: Any, w: torch.Tensor, x: np.ndarray) -> np.ndarray:
    import torch  # lazily, so that `bflnet list` stays fast

    with torch.no_grad():
        return model.features(w, torch.as_tensor(x, device=w.device)).squeeze(0).cpu().numpy()


def _label_groups(frame: pd.DataFrame, forget: list[int]) -> pd.DataFrame:
    cols = [f"acc_class_{c}" for c in range(N_CLASSES)]
    if cols[0] not in frame:
        return frame
    gone = [f"acc_class_{c}" for c in forget]
    kept = [c for c in cols if c not in gone]
    return frame.assign(acc_unlearned=frame[gone].mean(axis=1, skipna=False),
                        acc_remaining=frame[kept].mean(axis=1, skipna=False))


_EVAL = ("init", "iteration")
SCHEMA = Schema.of(
    RUN_ID.means("one timeline (learning, request, unlearning) or one scratch run"),
    METHOD.means("learning, forget-svgd or scratch"),
    *(BUDGET_COLUMNS[n] for n in ("rate_multiple", "sharing_fraction", "groups",
                                  "budget_bits", "k", "message_bits")),
    ITERATION.means("iteration of the timeline (one scheduled agent)"),
    col("since_request", "count", "iterations since the forget request (negative while "
        "learning)"),
    col("acc_unlearned", "fraction", "mean test accuracy over the forgotten classes", *_EVAL),
    col("acc_remaining", "fraction", "mean test accuracy over the other classes", *_EVAL),
    SERVER_COLUMNS[0],
    EVENT.means("init, iteration, or forget_request (the request, at since_request = 0)"),
    *SERVER_COLUMNS[2:],
    *(c.on(*_EVAL) for c in METRIC_COLUMNS),
    *(col(f"acc_class_{c}", "fraction", f"test accuracy on class {c}", *_EVAL)
      for c in range(10)),
    col("forget_train_acc", "fraction", "largest accuracy of the predictive on a forgetting "
        "agent's own training data", *_EVAL),
    SCHEDULED.on("iteration"), UPDATES.on("iteration"),
    col("forget_pending", "count", "forgetting agents not yet forgotten (from the request "
        "on)", "iteration"),
    UPLINK_BITS,
    col("pretrain_accuracy", "fraction", "test accuracy of the pre-trained MLP (same on "
        "every row of a run)"),
)


#: The fields the FedAvg pre-training reads (with the seed): what a saved state
#: (``--save-state``: the pre-trained network) depends on. A run that loads it
#: (``--load-state``) may change every other field, and ``forget_classes``: what is
#: forgotten is chosen on load. The pre-training read it too (the agents' data are split
#: by it), so a load with other ``forget_classes`` splits the data by them and learns the
#: last layer on the features of the network pre-trained on the saved split: its rows
#: are not those of a run that pre-trains on its own split (with the saved
#: ``forget_classes`` they are, byte for byte).
PRETRAIN_FIELDS = ("K", "n_forgetting", "points_per_agent", "hidden", "pretrain_rounds",
                   "pretrain_local_steps", "pretrain_lr", "batch_size", "threads", "device")
STATE_FREE = tuple(f.name for f in dataclasses.fields(ForgetSVGDConfig)
                   if f.name not in PRETRAIN_FIELDS)
#: The saved pre-trained network's array in the state directory.
PRETRAINED = "pretrained.w"


@register(NAME, ForgetSVGDConfig,
          "Compressed Forget-SVGD (letter Fig. 5): accuracy on the unlearned labels (2, 9) "
          "and the remaining labels, vs training the last layer from scratch.",
          plot=default_plot, datasets=("fashion-mnist",), columns=SCHEMA,
          server_schedule=ONE_PER_ITERATION + "; after the forget request only the "
          "forgetting agents, in turn", state_free=STATE_FREE)
def run(config: ForgetSVGDConfig, *, seed: int = 0, progress: bool = False,
        states: States | None = None) -> pd.DataFrame:
    """The table (module docs). With ``states``: save the FedAvg pre-trained network
    (``states.saving``), or start from a saved one instead of pre-training
    (``states.loading``); the rest of the run, and so the table, is the same."""
    import numpy as np

    from bflnet.data import by_label, load_fashion_mnist
    from bflnet.protocols.coding.codecs import RawCodec
    from bflnet.protocols.progress import setup_bar
    from bflnet.simulator.rng import RngStreams
    setup = setup_bar(NAME, config.pretrain_rounds, progress, unit="round")
    setup.set_postfix_str("loading torch and data")
    # torch and the torch learners are imported here, not at module level, so that
    # `bflnet list` stays fast
    import torch

    from bflnet.learners.evaluation import predictive_metrics
    from bflnet.learners.federated.fedavg import FedAvg
    from bflnet.learners.models.classifiers import LogisticRegression
    from bflnet.learners.particles.dsvgd import DSVGD, torch_generator

    torch.set_num_threads(config.threads)
    streams = RngStreams(seed)
    forget = int_list("forget_classes", config.forget_classes, 0, N_CLASSES - 1)
    K, n_fg = config.K, config.n_forgetting
    forgetting = list(range(K - n_fg, K))
    staying = list(range(K - n_fg))
    rng = streams.numpy("data")
    x, y = load_fashion_mnist(split="train")
    parts = by_label(y, K, class_assignment(K, n_fg, forget), config.points_per_agent, rng)
    raw = VisionData({k: (x[p], y[p]) for k, p in enumerate(parts)},
                     eval_subset(config.eval_size, rng))

    # 1. FedAvg pre-training of the MLP (computation only)
    net = mlp(config)
    pre = FedAvg(net, raw.agents, FedAvgParams(local_steps=config.pretrain_local_steps,
                                               lr=config.pretrain_lr,
                                               batch_size=config.batch_size))
    w = pre.init(streams.numpy("pretrain"))
    if states is not None and states.loading:  # learnt once: no pre-training
        w = _loaded_network(states, w)
        setup.update(config.pretrain_rounds)
    else:
        pre_rngs = {k: streams.numpy(f"pretrain.agent.{k}") for k in range(K)}
        setup.set_postfix_str("FedAvg pre-training")
        for _ in range(config.pretrain_rounds):
            w = pre.merge(w, [pre.local_update(k, w, None, pre_rngs[k]) for k in range(K)])
            setup.update()
    if states is not None and states.saving:
        states.arrays[PRETRAINED] = w.detach().cpu().numpy().copy()
    setup.set_postfix_str("features")
    pretrain_accuracy = predictive_metrics(net, w, *raw.eval)["accuracy"]
    feats = VisionData({k: (_features(net, w, xk), yk) for k, (xk, yk) in raw.agents.items()},
                       (_features(net, w, raw.eval[0]), raw.eval[1]))
    setup.close()
    head = LogisticRegression(config.hidden, N_CLASSES, device=net.device)

    def learner(agents: list[int], start: torch.Tensor | None = None,
                check: Sequence[int] = ()) -> DSVGD:
        return DSVGD(head, {k: feats.agents[k] for k in agents}, config.particles,
                     subset(DSVGDParams, config), initial_particles=start,
                     eval_data=feats.eval, eval_per_class=True, forget_check_agents=check)

    # 2. DSVGD learning of the last layer, uncompressed, then 3. the forget request and
    # compressed Forget-SVGD by the forgetting agents: one timeline per uplink budget
    order = forgetting + staying  # each round ends with a staying agent's visit
    start = None
    if config.head_init == "pretrained":
        params = net.unpack(w)
        trained = head.pack({"W": params["W2"], "b": params["b2"]})
        gen = torch_generator(streams.numpy("head-init"), torch.device("cpu"))
        start = trained + config.head_init_std * torch.randn(
            config.particles, head.d, generator=gen, dtype=trained.dtype).to(trained.device)
    full = learner(order, start, check=forgetting)
    request = config.learn_rounds
    stop = config.forget_stop_accuracy
    frames = []
    for fraction in float_list("sharing_fractions", config.sharing_fractions):
        groups = sparsity_groups("alpha-shared", config.particles, fraction)
        for rate in float_list("rate_multiples", config.rate_multiples):
            budget = budget_codec(rate, head.d, config.particles, groups, config.n_bits)
            tags = dict(rate_multiple=rate, sharing_fraction=fraction, groups=groups,
                        budget_bits=budget.budget_bits, k=budget.k,
                        message_bits=budget.message_bits)
            phase = Phase(agents=forgetting, uplink_codec=budget.codec,
                          eval_every=KEEP if stop is None else 1)
            setting = {"rate_multiple": rate, "sharing_fraction": fraction}
            timeline = run_parameter_server(
                run_label(NAME, {"phase": "learn-forget", **setting}), config, seed, full,
                order, RawCodec(32),
                request + config.unlearn_rounds,
                until=None if stop is None else (
                    lambda m, limit=stop: "forget_pending" in m
                    and m.get("forget_train_acc", 1.0) <= limit),
                interventions=[ForgetRequest(forgetting, after_iteration=request, then=phase)],
                progress=progress).frame
            after = (timeline["iteration"] > request) | (timeline["event"] == "forget_request")
            frames.append(timeline.assign(
                run_id=f"forget-R{rate:g}-a{fraction:g}-s{seed}",
                method=np.where(after, "forget-svgd", "learning"),
                since_request=timeline["iteration"] - request, **tags))
            # 4. the last layer from scratch without the forgetting agents
            scratch = run_parameter_server(run_label(NAME, {"phase": "scratch", **setting}),
                                           config, seed, learner(staying), staying,
                                           budget.codec, config.scratch_rounds,
                                           progress=progress)
            frames.append(scratch.frame.assign(
                run_id=f"scratch-R{rate:g}-a{fraction:g}-s{seed}", method="scratch",
                since_request=scratch.frame["iteration"], **tags))
    frame = _label_groups(tidy(frames, COLUMNS), forget)
    frame["pretrain_accuracy"] = pretrain_accuracy
    return tidy([frame], COLUMNS)


def _loaded_network(states: States, template: Any) -> Any:
    """The saved pre-trained network, as a tensor like ``template`` (a fresh ``w``), once
    the state directory is verified to hold exactly that array, of ``template``'s dtype
    and shape, and finite (a one-line error otherwise)."""
    import torch

    from bflnet.runs.states.schema import StateSpec

    arrays = states.verify(StateSpec(arrays={PRETRAINED: template.detach().cpu().numpy()}))
    return torch.from_numpy(arrays[PRETRAINED]).to(template.device)
