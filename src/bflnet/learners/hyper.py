"""Learners' hyper-parameters as frozen, validated dataclasses (no torch here): a learner
takes one, and a scenario config embeds it by inheritance, so one declaration gives the
learner's checks, ``bflnet describe``, ``--set`` and sweeps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from bflnet.runtime.devices import DEVICES
from bflnet.validation.params import param, validate

#: SVGD step rules: AdaGrad (fresh each local update) or a constant step size.
STEP_RULES = ("adagrad", "constant")
#: KDE bandwidth λ of the compressed-DSVGD letter.
DEFAULT_KDE_BANDWIDTH = 0.55
#: EM-TDAMP's target-sparsity rules, slab initialisations and nu_s safeguards.
SPARSITY_MODES = ("per-layer", "paper")
INIT_SLABS = ("random", "zero")
VARIANCE_CLIPS = ("posterior", "extrinsic")
#: When a client's Module B updates the group activities (every minibatch, as eq. 27 is
#: written, or once per round from the round's accumulated messages).
ACTIVITY_UPDATES = ("minibatch", "round")
#: How a group budget is spread: per layer (T_l) or over the whole network.
BUDGET_SCOPES = ("per-layer", "network")
#: FedAvg's local optimisers.
OPTIMIZERS = ("sgd", "adam")


#: Why DSVGD takes no noisy mean of its updates (its ``merges_mean``; here, torch-free,
#: for the configs that refuse it before a run).
DSVGD_NO_MEAN = ("each agent keeps a kernel density fit of the particles it sent (its "
                 "local factor); a noisy mean would leave the server's particles out of "
                 "step with those factors")


@dataclass(frozen=True)
class DSVGDParams:
    """DSVGD's hyper-parameters (scenario configs embed them, so their fields are also
    ``--set`` parameters)."""

    #: Old parameter names, still accepted (bflnet.validation.renames).
    RENAMED: ClassVar[dict[str, str]] = {"local_iters": "local_steps"}

    local_steps: int = param(200, "SVGD steps L per local update", ge=1, le=10**7)
    distill_iters: int | None = param(None, "distillation SVGD steps per visit (none: = "
                                      "local_steps)", ge=0, le=10**7)
    step_size: float = param(0.05, "SVGD step size (constant step, or AdaGrad master step)",
                             gt=0, le=1e6)
    step_rule: str = param("adagrad", "SVGD step rule: 'adagrad' (fresh each visit) or "
                           "'constant' (theta += step_size * phi)", choices=STEP_RULES)
    kde_bandwidth: float = param(DEFAULT_KDE_BANDWIDTH, "KDE bandwidth lambda", gt=0, le=1e6)
    temperature: float = param(1.0, "temperature alpha of eq. 2", gt=0, le=1e6)
    batch_size: int = param(100, "minibatch size per SVGD step", ge=1, le=10**7)
    adagrad_decay: float = param(0.9, "AdaGrad decay of the squared-gradient average",
                                 ge=0, lt=1)
    adagrad_fudge: float = param(1e-6, "AdaGrad fudge factor", gt=0, le=1)
    svgd_bandwidth: float | None = param(None, "RBF bandwidth of the SVGD kernel (none: the "
                                         "median heuristic)", gt=0, le=1e12)

    def __post_init__(self) -> None:
        validate(self)


@dataclass(frozen=True)
class FedAvgParams:
    """FedAvg's hyper-parameters."""

    local_steps: int = param(1, "optimiser steps per local update", ge=1, le=10**7)
    lr: float = param(0.01, "learning rate", gt=0, le=1e6)
    batch_size: int = param(100, "minibatch size per step", ge=1, le=10**7)
    optimizer: str = param("sgd", "local optimiser", choices=OPTIMIZERS)
    momentum: float = param(0.0, "SGD momentum (sgd only)", ge=0, lt=1)
    weight_decay: float = param(0.0, "L2 penalty weight (weight_decay/2)·‖w‖²", ge=0, le=1e6)
    batch_agents: bool = param(True, "agents scheduled in the same round compute as one "
                               "batch (a stack of models; the same minibatches, equal to "
                               "one by one up to float rounding)")

    def __post_init__(self) -> None:
        validate(self)
        if self.optimizer == "adam" and self.momentum:
            raise ValueError("momentum: only used with optimizer='sgd'")


#: The structured-pruning baselines of the EM-TDAMP paper (Sec. IV), all FedAvg + Adam.
GROUP_METHODS = ("plain", "group-lasso", "group-snip")


@dataclass(frozen=True)
class GroupFedAvgParams(FedAvgParams):
    """FedAvg with neuron-level (weight-column) group sparsity: plain training, a group-lasso
    penalty, or group SNIP at initialisation; every model is evaluated pruned by energy to
    ``target_density`` (:mod:`bflnet.learners.federated.group_baselines`)."""

    method: str = param("plain", "baseline: plain, group-lasso (penalty) or group-snip "
                        "(prune at initialisation by neuron saliency)", choices=GROUP_METHODS)
    group_lasso: float = param(0.0, "group-lasso weight lambda of "
                               "lambda sum_l sum_n sqrt(N_l) ||W_l[:, n]|| (group-lasso only)",
                               ge=0, le=1e6)
    target_density: float = param(1.0, "rho: fraction of each layer's weight groups kept "
                                  "(T_l = round(rho N_{l-1}), at least 1)", gt=0, le=1)
    budget_scope: str = param("per-layer", "how the target groups are chosen: 'per-layer' "
                              "(T_l per layer) or 'network' (round(rho Q_W) over all layers, "
                              "at least one per layer)", choices=BUDGET_SCOPES)
    batch_agents: bool = param(False, "not supported by the group baselines (their "
                               "penalties and masks act per agent)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.method == "group-lasso" and self.group_lasso == 0:
            raise ValueError("group_lasso: must be > 0 with method='group-lasso'")
        if self.method != "group-lasso" and self.group_lasso != 0:
            raise ValueError("group_lasso: used only with method='group-lasso'")


@dataclass(frozen=True)
class LangevinParams:
    """What the decentralised Langevin learners (DSGLD, CD-BFL, CF-FL) share: the step
    size η, the minibatch, the noise temperature, the burn-in and the thinning of the
    samples the posterior predictive averages."""

    lr: float = param(1e-4, "learning rate eta (paper: 1e-4)", gt=0, le=1e3)
    batch_size: int = param(10, "minibatch size M per local step (paper: 10)", ge=1, le=10**6)
    temperature: float = param(1.0, "noise temperature: the Langevin noise is "
                               "sqrt(2 eta temperature) xi (1: the posterior; 0: no noise)",
                               ge=0, le=1e3)
    burn_in: int = param(700, "rounds T_b whose samples are discarded (paper: 700)", ge=0,
                         le=10**8)
    thin: int = param(1, "keep every thin-th sample after the burn-in for the predictive",
                      ge=1, le=10**8)

    def __post_init__(self) -> None:
        validate(self)


@dataclass(frozen=True)
class CDBFLParams(LangevinParams):
    """CD-BFL's hyper-parameters (Algorithm 1): L local steps and the mixing step ζ."""

    local_steps: int = param(8, "local SGD steps L per round (paper: 1..12, best 8)", ge=1,
                             le=10**6)
    zeta: float = param(0.03, "mixing step zeta of the control sequences (paper: 0.03)",
                        gt=0, le=1)


#: G-FVL's ways to compute a local update: closed-form (conjugate) or natural gradient.
GFVL_METHODS = ("exact", "natgrad")
#: REINFORCE sampling unit: S draws per agent (eq. 18) or S draws per data point.
REINFORCE_DRAWS = ("per-agent", "per-point")
#: G-FVL unlearning: subtract η_k at once (Sec. IV), or reversed natural-gradient visits.
UNLEARNING = ("exact", "iterative")


@dataclass(frozen=True)
class GFVLParams:
    """G-FVL's hyper-parameters (the REINFORCE baseline ``c``, a number or ``'loo'``, is a
    keyword of :class:`~bflnet.learners.conjugate.gfvl.GFVL` itself)."""

    method: str | None = param(None, "local update: 'exact' (conjugate) or 'natgrad' (none: "
                               "exact when the likelihood is conjugate)", choices=GFVL_METHODS)
    alpha: float = param(1.0, "temperature alpha", gt=0, le=1e6)
    rho: float = param(5e-3, "natural-gradient step size", gt=0, le=1e6)
    S: int = param(30, "Monte Carlo samples per gradient", ge=1, le=10**6)
    L: int = param(1, "local natural-gradient steps per visit", ge=1, le=10**7)
    unlearning: str = param("exact", "'exact' (subtract eta_k) or 'iterative' (natgrad "
                            "visits with the reversed sign)", choices=UNLEARNING)
    unlearn_visits: int = param(1, "iterative: visits of a forgetting agent", ge=1, le=10**7)
    reinforce_draws: str = param("per-agent", "REINFORCE sampling unit", choices=REINFORCE_DRAWS)

    def __post_init__(self) -> None:
        validate(self)
        if self.unlearning == "iterative" and self.method == "exact":
            raise ValueError("unlearning: 'iterative' needs method='natgrad'")
        if self.reinforce_draws != "per-agent" and self.method == "exact":
            raise ValueError(f"reinforce_draws: {self.reinforce_draws!r} needs "
                             f"method='natgrad' (exact G-FVL draws nothing)")


#: EM-TDAMP's likelihoods: Gaussian (regression, eq. 5) or probit-product (eq. 6).
EMTDAMP_LIKELIHOODS = ("gaussian", "probit")
#: Float types of EM-TDAMP's client computation.
EMTDAMP_DTYPES = ("float64", "float32")
#: Which Gumbel the classification noise update moment-matches (docs/em-tdamp.md, Sec. 4.3).
GUMBEL_SIDES = ("min", "max")


@dataclass(frozen=True)
class EMTDAMPParams:
    """EM-TDAMP's hyper-parameters: client TDAMP (Algorithm 1), the server's EM
    (Algorithm 2) and the prior's initialisation (docs/em-tdamp.md)."""

    likelihood: str = param("gaussian", "likelihood: 'gaussian' (regression) or 'probit' "
                            "(classification)", choices=EMTDAMP_LIKELIHOODS)
    batch_size: int = param(101, "minibatch size of TDAMP (paper: 101 for Boston)", ge=1,
                            le=10**6)
    tau_max: int = param(1, "passes over the local data per round (Algorithm 1's tau_max; "
                         "paper: 10 with several clients)", ge=1, le=10**4)
    sweeps: int = param(5, "DAMP forward/backward sweeps per minibatch (Algorithm 1 as "
                        "transcribed: 1)", ge=1, le=10**4)
    damping: float = param(0.5, "weight of the new value in the damped s, nu_s and weight "
                           "means (1: no damping)", gt=0, le=1)
    power: float = param(1.0, "PasP power lambda of eq. 27 (paper: 1)", gt=0, le=1)
    noise_var: float = param(1.0, "initial noise variance v", gt=0, le=1e6)
    noise_damping: float = param(0.5, "damping of the classification noise update (eq. 23; "
                                 "paper 0.5; regression uses eq. 18 undamped)", ge=0, le=1)
    min_noise_var: float = param(1e-6, "smallest noise variance the M-step may set", gt=0,
                                 le=1e6)
    gumbel_side: str = param("min", "Gumbel of eq. 21: 'min' (as transcribed) or 'max'",
                             choices=GUMBEL_SIDES)
    initial_activity: float = param(1.0, "rho_0: initial activity of every weight group "
                                    "and bias, and the value the sparsity rule resets "
                                    "survivors to", gt=0, le=1)
    target_density: float = param(1.0, "rho: fraction of the weight groups (neurons) kept "
                                  "by the target-sparsity rule (1: the rule never fires)",
                                  gt=0, le=1)
    threshold: float = param(0.99, "rho_th: a group counts as confident above it", gt=0,
                             lt=1)
    sparsify_from: int = param(1, "first round whose merge applies the target-sparsity "
                               "rule (with rho_0 = 1 every group is confident at once, so "
                               "later rounds prune on learned weights)", ge=1, le=10**8)
    prior_var_scale: float = param(1.0, "initial slab variance of a weight: "
                                   "prior_var_scale / fan_in", gt=0, le=1e6)
    prior_mean_scale: float = param(1.0, "initial slab means drawn N(0, prior_mean_scale / "
                                    "fan_in) (breaks the hidden units' symmetry)", ge=0,
                                    le=1e6)
    bias_var: float = param(1.0, "initial slab variance of a bias", gt=0, le=1e6)
    sparsity_mode: str = param("per-layer", "target-sparsity rule: 'per-layer' (ours: "
                               "T_l = round(rho N_{l-1}) per layer, confident groups ranked "
                               "by slab energy) or 'paper' (rho_0 < 1 with Module B active, "
                               "one budget round(rho Q_W) over all layers, the paper's reset "
                               "of confident groups to rho_0 and the others to 0, completed "
                               "by a shrinking cap on survivors ranked by Module B's "
                               "log-odds)", choices=SPARSITY_MODES)
    budget_rounds: int = param(10, "sparsity_mode=paper: merges from sparsify_from over which "
                               "the cap on surviving groups shrinks geometrically from Q_W "
                               "to the budget (met exactly from then on)", ge=1, le=10**8)
    init_slab: str = param("random", "initial slab means: 'random' N(0, prior_mean_scale / "
                           "fan_in), or 'zero' (no bias on Module B's evidence; the hidden "
                           "units' symmetry is broken by a random start of Module A's first "
                           "linearisation, drawn the same way and shared by the clients)",
                           choices=INIT_SLABS)
    variance_clip: str = param("posterior", "safeguard on nu_s: 'posterior' (cap nu_z/nu_p "
                               "at 0.99, BiG-AMP's; compounds under PasP) or 'extrinsic' "
                               "(floor the extrinsic precision 1/nu_z - 1/nu_p at 1e-6)",
                               choices=VARIANCE_CLIPS)
    activity_update: str = param("minibatch", "when a client's Module B updates the group "
                                 "activities: 'minibatch' (PasP of eq. 27 on the whole "
                                 "prior, activities too) or 'round' (Module A keeps the "
                                 "round's activities; eq. 26 once, from the round's "
                                 "accumulated messages: no loop through Module A's "
                                 "linearisation, docs/em-tdamp.md Sec. 6.10)",
                                 choices=ACTIVITY_UPDATES)
    batch_agents: bool = param(True, "clients scheduled in the same round run their TDAMP "
                               "together, as one batch (bit for bit the results of one by "
                               "one, with less overhead per operation)")
    client_group: int = param(5, "clients computed together in one batched computation: "
                              "the clients of a round are cut into ceil(K / client_group) "
                              "contiguous groups (sizes within one), each group one batch on "
                              "one torch thread; the groups depend on K and client_group only, "
                              "so the results do not depend on how many groups run at once "
                              "(a client's last bits can depend on its batch for some small "
                              "shapes, not at MNIST's 784-128-10 with batch 100; "
                              "docs/em-tdamp.md Sec. 7.5)", ge=1, le=10**6)
    dtype: str = param("float32", "float type of the clients' TDAMP: float32 (about twice "
                       "as fast), or float64 (the reproductions' numbers; results differ in "
                       "the last digits, docs/em-tdamp.md); the server's EM and the "
                       "evaluation stay float64", choices=EMTDAMP_DTYPES)
    device: str = param("cpu", "where the clients' TDAMP computes: cpu, cuda (an error "
                        "without a CUDA device) or auto (cuda when available, else cpu)",
                        choices=DEVICES)

    def __post_init__(self) -> None:
        validate(self)
        self.check_sparsity_mode()

    def check_sparsity_mode(self) -> None:
        """``sparsity_mode="paper"`` needs ``ρ₀ < 1`` (scenario configs call this too)."""
        if self.sparsity_mode == "paper" and self.initial_activity >= 1:
            raise ValueError("initial_activity: must be < 1 with sparsity_mode='paper' "
                             "(rho_0 = 1 switches Module B off)")


@dataclass(frozen=True)
class GaussianMeanParams:
    """The ``gaussian-mean`` learner's settings (``custom-learner``: ``--set
    learner.noise_var=...``): its data and its prior."""

    theta: float = param(0.7, "the true mean the agents' data are drawn around", ge=-1e6,
                         le=1e6)
    noise_var: float = param(1.0, "variance of the Gaussian noise on each data point",
                             gt=0, le=1e12)
    prior_var: float = param(1.0, "variance of the prior N(0, prior_var) of theta", gt=0,
                             le=1e12)

    def __post_init__(self) -> None:
        validate(self)
