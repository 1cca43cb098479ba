"""EM-TDAMP as a :class:`~bflnet.learners.base.GlobalStateLearner` (Algorithms 1 and 2).

**Global state** ``ψ, v``: a dict of float64 tensors, the group Bernoulli-Gaussian prior of
every layer ``l`` in Module B's layout (``l<l>.w_activity`` ``(N_{l−1},)``,
``l<l>.w_mean``/``l<l>.w_var`` ``(N_{l−1}, N_l)``, ``l<l>.b_activity`` ``(N_l,)``,
``l<l>.b_mean``/``l<l>.b_var`` ``(N_l, 1)``), ``noise_var`` ``(1,)`` and ``round``
``(1,)``, the merges so far (the sparsity rule starts at round ``sparsify_from``). The
server sends all of it down (the downlink bits of ``ψ``, ``v`` and the round).

**Update** (one client, Algorithm 1): :func:`~.tdamp_client.tdamp_client` on the agent's
data from the prior ``ψ`` and ``v``; the payload is the local posterior ``φ^k`` in the same
keys plus ``noise_stat`` (``σ^k`` of eq. 19, ``(1,)``; or ``(μ_k, E_k)`` of eq. 22,
``(2,)``), each part an array the uplink codec may encode on its own
(:func:`part_codecs`). ``Update.metrics`` carries the clip counts of the pass (summed
over layers per quantity, ``clip_<quantity>``, and in total, ``clips``); the parameter
server adds them to the round's row.

**Merge** (Algorithm 2): the weighted geometric mean of the clients' posteriors (eqs.
12-15, weights ``I_k / I`` over the clients that arrived; where clients' activities
rounded to 0 or 1 disagree, their log-odds are read from their slabs against the
round's prior, :func:`~.server_em.aggregate_activity`), the noise variance (eq. 18, or
eqs. 20-23 damped), then the target-sparsity rule in every layer ``l``: when more than
``T_l = round(ρ·N_{l−1})`` (at least 1) of its groups have ``ρ_i > ρ_th``, the ``T_l``
confident groups of largest slab energy ``Σ_n μ²`` keep ``ρ₀`` and the layer's other groups
are pruned (``ρ = 0``, for good). Two choices are ours (docs/em-tdamp.md, Sec. 4.4): the
target per layer rather than over all ``Q_W`` groups at once (groups of different layers
have different fan-outs; one global ranking pruned the whole 64-1 output layer), and
ranking by energy rather than by ``ρ``, which saturates at 1 in float64.

With ``sparsity_mode="paper"`` the rule is the paper's instead (docs/em-tdamp.md, Sec.
4.5): ``ρ₀ < 1`` so that Module B moves the activities, one budget
``B = max(L, round(ρ Q_W))`` over all layers, the reset of confident groups to ``ρ₀`` and
the others to 0 when ``S > B``, completed by a cap on the survivors that shrinks
geometrically to ``B`` over ``budget_rounds`` merges, ranked by Module B's unsaturated
posterior log-odds (:func:`~.server_em.group_log_odds`).

**Batched clients** (``batch_agents``, on by default): when several clients compute in
the same round the protocol calls :meth:`EMTDAMP.local_update_batch`, which runs their
TDAMP passes together (:func:`~.tdamp_client.tdamp_clients`, clients with the same number
of examples as one batch). Each client keeps its own shuffling stream, so the updates are
bit for bit those of :meth:`EMTDAMP.local_update` one by one; the protocol still moves
one message per client, with the same bits and times.

**Client groups on threads** (``client_group``, the constructor's ``threads``): the
clients of a round are cut into ``ceil(K / client_group)`` contiguous groups (a function
of ``K`` and ``client_group`` only); each group is one batched computation with one torch
thread, and ``threads`` groups run at once (:mod:`.parallel`). A client's last bits can
depend on the batch it is computed in for some small shapes, never on ``threads``.

**Dtype and device** (``dtype``, ``device``): the clients' TDAMP runs in ``dtype``
(float32 by default, about twice as fast as float64; float64 gives the reproductions'
numbers, the differences are measured in docs/em-tdamp.md)
on ``device`` (``cpu``, ``cuda``, ``auto``): the clients' data live there and the prior is
moved there once per round. The global state, the server's EM merge and the evaluation
stay float64 on the CPU (the payloads are brought back once per client and round).

**Evaluate**: the posterior-mean network ``E[θ] = ρμ`` on the test set: ``test_mse`` and
``test_nmse`` ``‖ŷ − y‖²/‖y‖²`` (regression) or ``accuracy`` and ``test_error``
(classification); the ``noise_var``; ``active_groups`` (weight groups with ``ρ > 0``),
``confident_groups`` (``ρ > ρ_th``), ``target_groups`` (``Σ_l T_l``, or ``B``) and
``slab_var_l<l>`` (mean slab variance of layer ``l``'s alive weight groups).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from bflnet.learners.base import Combines, GlobalStateLearner, Update, Work
from bflnet.learners.hyper import EMTDAMPParams
from bflnet.learners.models.torch_utils import torch_generator
from bflnet.runtime.devices import resolve_device
from bflnet.runtime.threads import check_threads
from bflnet.validation.params import with_overrides

from .damp_mlp import DampSettings, LayerPrior, layer_means, mlp_forward, random_layer_priors
from .parallel import tdamp_clients_grouped
from .server_em import (
    aggregate_activity,
    aggregate_gaussians,
    apply_target_sparsity,
    budget_cap,
    classification_noise_variance,
    client_weights,
    group_log_odds,
    paper_sparsity,
    regression_noise_variance,
)
from .tdamp_client import ClientResult

__all__ = ["EMTDAMP", "PART_KINDS", "every_part", "part_codecs", "state_keys"]

F64 = torch.float64
#: The parts of one layer's prior, in :class:`LayerPrior` order, with their kind.
LAYER_PARTS = (("w_activity", "activity"), ("w_mean", "mean"), ("w_var", "var"),
               ("b_activity", "activity"), ("b_mean", "mean"), ("b_var", "var"))
#: The kinds of payload parts a codec can be chosen for.
PART_KINDS = ("activity", "mean", "var", "noise")
NOISE_STATE, NOISE_STAT, ROUND = "noise_var", "noise_stat", "round"
#: Clip counters of Module A, by quantity (the key after ``layer<l>/``).
CLIP_QUANTITIES = ("p_var_floor", "z_to_p_ratio", "r_var_cap", "r_gain", "q_var_cap",
                   "q_gain", "output_precision")


def state_keys(depth: int) -> list[tuple[str, str]]:
    """``(key, kind)`` of every per-layer part of a network with ``depth`` layers."""
    return [(f"l{layer}.{name}", kind) for layer in range(1, depth + 1)
            for name, kind in LAYER_PARTS]


def part_codecs(depth: int, codecs: Mapping[str, Any]) -> dict[str, Any]:
    """A dict codec spec for the payload of a ``depth``-layer network: ``codecs`` maps each
    kind of :data:`PART_KINDS` (missing kinds: ``None``, float64) to a codec."""
    unknown = sorted(set(codecs) - set(PART_KINDS))
    if unknown:
        raise ValueError(f"codecs: unknown part kind {unknown[0]!r}; kinds are "
                         f"{', '.join(PART_KINDS)}")
    spec = {key: codecs.get(kind) for key, kind in state_keys(depth)}
    spec[NOISE_STAT] = codecs.get("noise")
    spec[NOISE_STATE] = codecs.get("noise")
    spec[ROUND] = None
    return spec


def every_part(depth: int, codec: Any) -> dict[str, Any]:
    """The dict codec spec that encodes every part of a ``depth``-layer payload with
    ``codec`` (the round counter always as float64)."""
    return part_codecs(depth, dict.fromkeys(PART_KINDS, codec))


def _as_tensor(x: Any, name: str) -> Tensor:
    t = torch.as_tensor(np.asarray(x) if not isinstance(x, Tensor) else x)
    if not bool(torch.isfinite(t.to(F64)).all()):
        raise ValueError(f"{name}: must be finite everywhere")
    return t


class EMTDAMP(GlobalStateLearner):
    """Bayesian FL by server EM and client TDAMP over a ReLU MLP ``sizes``.

    ``agent_data[k] = (x, y)`` with ``x`` ``(I_k, N_0)`` and ``y`` ``(I_k,)`` or
    ``(I_k, N_L)`` targets (gaussian) or ``(I_k,)`` class indices (probit);
    ``eval_data`` the same for the test set. Inputs should be centred (probit needs it,
    docs/em-tdamp.md Sec. 6.6). ``threads``: how many client groups compute at once, each
    with one torch thread (module docs; the results do not depend on it).
    """

    #: How the state combines the agents' contributions: the server's prior
    #: aggregates the clients' Gaussians, weighted.
    combines = Combines.AVERAGED
    #: Why an over-the-air uplink refuses it (quoted by the protocol).
    merges_mean = ("its merge fits Gaussians to the agents' per-layer moments weighted "
                   "by their data counts, not a mean of update vectors")

    def __init__(self, sizes: Sequence[int], agent_data: Mapping[Any, tuple[Any, Any]],
                 params: EMTDAMPParams | None = None, *,
                 eval_data: tuple[Any, Any] | None = None, threads: int = 1,
                 **hyper: Any) -> None:
        self.params = with_overrides(params if params is not None else EMTDAMPParams(), hyper)
        #: How many client groups compute at once (each with one torch thread).
        self.threads = check_threads(threads)
        self.sizes = [int(s) for s in sizes]
        if len(self.sizes) < 2 or min(self.sizes) < 1:
            raise ValueError(f"sizes: must list at least 2 positive layer widths, got "
                             f"{list(sizes)!r}")
        if not agent_data:
            raise ValueError("agent_data: must hold at least one agent")
        self.depth = len(self.sizes) - 1
        self.settings = DampSettings(damping=self.params.damping,
                                     variance_clip=self.params.variance_clip,
                                     hold_activity=self.params.activity_update == "round")
        #: Where and in which float type the clients' TDAMP computes.
        self.device = resolve_device(self.params.device)
        self.dtype = getattr(torch, self.params.dtype)
        self.data = {agent: self._client_columns(x, y, f"agent_data[{agent!r}]")
                     for agent, (x, y) in agent_data.items()}
        self.counts = {agent: int(x.shape[1]) for agent, (x, _) in self.data.items()}
        self.eval = None if eval_data is None else self._columns(*eval_data, "eval_data")
        #: ``T_l = round(ρ N_{l−1})`` surviving weight groups per layer (at least one).
        self.targets = [max(1, round(self.params.target_density * n)) for n in self.sizes[:-1]]
        #: ``Q_W`` (weight groups over all layers) and the paper mode's budget
        #: ``round(ρ Q_W)`` (at least one group per layer).
        self.total_groups = sum(self.sizes[:-1])
        self.budget = max(self.depth, round(self.params.target_density * self.total_groups))
        #: Module A's shared first linearisation point (``init_slab="zero"``), set by init.
        self.start: list[Tensor] | None = None

    # ------------------------------------------------------------------ data

    def _client_columns(self, x: Any, y: Any, name: str) -> tuple[Tensor, Tensor]:
        """:meth:`_columns` in the clients' dtype, on their device. The inputs are an
        ``(N_0, I)`` view of an ``(I, N_0)`` array (one example's pixels contiguous), so
        that a shuffled minibatch is gathered as whole rows (:func:`~.tdamp_client.tdamp_clients`;
        a column gather from ``(N_0, I)`` reads one cache line per value: about 5 x slower
        at 6 000 images per client)."""
        inputs, targets = self._columns(x, y, name)
        inputs = inputs.to(dtype=self.dtype).T.contiguous().T
        if targets.dtype.is_floating_point:
            targets = targets.to(dtype=self.dtype)
        for part, kind in ((inputs, "inputs"), (targets, "targets")):
            if part.dtype.is_floating_point and not bool(torch.isfinite(part).all()):
                raise ValueError(f"{name} {kind}: values beyond {self.params.dtype}'s range "
                                 f"(|x| > {torch.finfo(part.dtype).max:.3g}); use "
                                 f"dtype=float64")
        return inputs.to(device=self.device), targets.to(device=self.device)

    def _columns(self, x: Any, y: Any, name: str) -> tuple[Tensor, Tensor]:
        """``(N_0, I)`` inputs and ``(N_L, I)`` targets or ``(I,)`` labels."""
        inputs = _as_tensor(x, f"{name} inputs").to(F64)
        if inputs.dim() != 2 or inputs.shape[1] != self.sizes[0]:
            raise ValueError(f"{name}: inputs must be (I, {self.sizes[0]}), got "
                             f"{tuple(inputs.shape)}")
        count = inputs.shape[0]
        targets = _as_tensor(y, f"{name} targets")
        if self.params.likelihood == "probit":
            if targets.shape != (count,) or targets.dtype.is_floating_point:
                raise ValueError(f"{name}: labels must be ({count},) integers")
            if int(targets.min()) < 0 or int(targets.max()) >= self.sizes[-1]:
                raise ValueError(f"{name}: labels must be in [0, {self.sizes[-1]})")
            return inputs.T.contiguous(), targets.long()
        targets = targets.to(F64).reshape(count, -1)
        if targets.shape[1] != self.sizes[-1]:
            raise ValueError(f"{name}: targets must be (I, {self.sizes[-1]}), got "
                             f"{tuple(targets.shape)}")
        return inputs.T.contiguous(), targets.T.contiguous()

    # ------------------------------------------------------------------ state

    def pack(self, priors: Sequence[LayerPrior]) -> dict[str, Tensor]:
        """The per-layer parts of a state or payload."""
        return {f"l{layer}.{name}": part for layer, prior in enumerate(priors, start=1)
                for (name, _), part in zip(LAYER_PARTS, prior, strict=True)}

    def priors(self, state: Mapping[str, Tensor]) -> list[LayerPrior]:
        """The :class:`LayerPrior` of every layer of ``state`` (a state or payload)."""
        return [LayerPrior(*(torch.as_tensor(state[f"l{layer}.{name}"], dtype=F64)
                             for name, _ in LAYER_PARTS))
                for layer in range(1, self.depth + 1)]

    def init(self, rng: np.random.Generator) -> dict[str, Tensor]:
        p = self.params
        generator = torch_generator(rng, torch.device("cpu"))
        priors = random_layer_priors(self.sizes, generator, activity=p.initial_activity,
                                     mean_scale=p.prior_mean_scale,
                                     var_scale=p.prior_var_scale, bias_var=p.bias_var)
        if p.init_slab == "zero":
            # The random draw becomes Module A's first linearisation point (shared by the
            # clients, like a common seed); the prior's slab means are zero.
            self.start = [torch.cat([prior.weight_mean.T, prior.bias_mean], dim=1)
                          for prior in priors]
            priors = [prior._replace(weight_mean=torch.zeros_like(prior.weight_mean))
                      for prior in priors]
        return {**self.pack(priors), NOISE_STATE: torch.tensor([p.noise_var], dtype=F64),
                ROUND: torch.zeros(1, dtype=F64)}

    # ------------------------------------------------------------------ client

    def pass_flops(self, count: int) -> float:
        """Multiply-adds of one TDAMP pass over ``count`` examples, times two: per layer
        and sweep about 8 products of ``(N_l, N_{l−1} + 1)`` by ``(N_{l−1} + 1, B)``."""
        per_example = sum((n_in + 1) * n_out for n_in, n_out
                          in zip(self.sizes[:-1], self.sizes[1:], strict=True))
        return 2.0 * 8 * per_example * count * self.params.sweeps

    def local_update(self, agent: Any, state: Mapping[str, Tensor], agent_state: Any,
                     rng: np.random.Generator) -> Update:
        return self._updates([agent], state, [rng])[0]

    @property
    def batches_agents(self) -> bool:
        """Whether protocols should call :meth:`local_update_batch` for clients that
        compute in the same round (``batch_agents``)."""
        return bool(self.params.batch_agents)

    def local_update_batch(self, agents: Sequence[Any], state: Mapping[str, Tensor],
                           agent_states: Sequence[Any],
                           rngs: Sequence[np.random.Generator | None]) -> list[Update]:
        """:meth:`local_update` for each of ``agents`` from the same downloaded state,
        computed together (module docs); the updates in ``agents`` order."""
        if not (len(agent_states) == len(rngs) == len(agents)):
            raise ValueError("agent_states, rngs: need one per agent")
        return self._updates(agents, state, rngs)

    def _updates(self, agents: Sequence[Any], state: Mapping[str, Tensor],
                 rngs: Sequence[np.random.Generator | None]) -> list[Update]:
        """The clients' updates, those with the same number of examples as one batch."""
        unknown = [a for a in agents if a not in self.data]
        if unknown:
            raise ValueError(f"agent: {unknown[0]!r} has no data")
        p = self.params
        noise_var = float(torch.as_tensor(state[NOISE_STATE]).reshape(-1)[0])
        priors = self.priors(state)
        start = self.start if float(torch.as_tensor(state[ROUND]).reshape(-1)[0]) == 0 \
            else None
        # one generator per client, drawn from its stream in order, as one by one
        gens = [torch_generator(rng, torch.device("cpu")) if rng is not None else None
                for rng in rngs]
        groups: dict[int, list[int]] = {}
        for i, agent in enumerate(agents):
            groups.setdefault(self.counts[agent], []).append(i)
        out: list[Update | None] = [None] * len(agents)
        for rows in groups.values():
            results = tdamp_clients_grouped(
                [self.data[agents[i]][0] for i in rows], [self.data[agents[i]][1] for i in rows],
                priors, noise_var, likelihood=p.likelihood,  # type: ignore[arg-type]
                batch_size=p.batch_size, tau_max=p.tau_max, sweeps=p.sweeps, power=p.power,
                settings=self.settings, generators=[gens[i] for i in rows], start=start,
                client_group=p.client_group, threads=self.threads)
            for i, result in zip(rows, results, strict=True):
                out[i] = self._update(agents[i], result)
        return [u for u in out if u is not None]

    def _update(self, agent: Any, result: ClientResult) -> Update:
        """A client's :class:`Update`: its posterior as float64 on the CPU (the wire)."""
        stat = torch.tensor(result.noise_statistic, dtype=F64).reshape(-1)
        payload = {key: part.to(device="cpu", dtype=F64)
                   for key, part in self.pack(result.posterior).items()}
        payload[NOISE_STAT] = stat
        count = self.counts[agent]
        return Update(payload, Work(steps=result.minibatches,
                                    flops=self.pass_flops(count) * self.params.tau_max),
                      agent, metrics=clip_metrics(result.clips))

    # ------------------------------------------------------------------ server

    def merge(self, state: Mapping[str, Tensor], updates: Sequence[Update]) -> dict[str, Tensor]:
        if not updates:
            return dict(state)
        counts = [self.counts[u.agent] for u in updates]
        weights = client_weights(counts)
        new: dict[str, Tensor] = {}
        for layer in range(1, self.depth + 1):
            for kind in ("w", "b"):
                parts = [torch.stack([torch.as_tensor(u.payload[f"l{layer}.{kind}_{name}"],
                                                      dtype=F64) for u in updates])
                         for name in ("activity", "mean", "var")]
                mean, var = aggregate_gaussians(parts[1], parts[2], weights)
                prior = [torch.as_tensor(state[f"l{layer}.{kind}_{name}"], dtype=F64)
                         for name in ("activity", "mean", "var")]
                # Each client's unsaturated log-odds (eq. 4.10 against the round's prior):
                # read only where some client's activity rounded to 0 or 1 and another's
                # did not round the same way (server_em.aggregate_activity).
                odds = group_log_odds(*prior, parts[1], parts[2], clamp=math.inf)
                activity = aggregate_activity(parts[0], parts[1], parts[2], weights, mean, var,
                                              log_odds=odds)
                new[f"l{layer}.{kind}_activity"] = activity
                new[f"l{layer}.{kind}_mean"], new[f"l{layer}.{kind}_var"] = mean, var
        new[NOISE_STATE] = torch.tensor([self._noise(state, updates, counts)], dtype=F64)
        new[ROUND] = torch.as_tensor(state[ROUND], dtype=F64) + 1
        merge = int(new[ROUND][0])
        if self.params.sparsity_mode == "paper":
            return self._paper_sparsify(state, new, merge)
        if merge >= self.params.sparsify_from:
            new = self._sparsify(new)
        return new

    def _paper_sparsify(self, prior: Mapping[str, Tensor], state: dict[str, Tensor],
                        merge: int) -> dict[str, Tensor]:
        """The paper's rule over the whole network with the shrinking cap (module docs)."""
        p = self.params
        keys = [f"l{layer}.w_" for layer in range(1, self.depth + 1)]
        odds = [group_log_odds(torch.as_tensor(prior[k + "activity"], dtype=F64),
                               torch.as_tensor(prior[k + "mean"], dtype=F64),
                               torch.as_tensor(prior[k + "var"], dtype=F64),
                               state[k + "mean"], state[k + "var"]) for k in keys]
        cap = budget_cap(self.total_groups, self.budget, merge, p.sparsify_from,
                         p.budget_rounds)
        if merge < p.sparsify_from:
            return state
        reset = paper_sparsity([state[k + "activity"] for k in keys], odds,
                               target=self.budget, cap=cap, threshold=p.threshold,
                               initial_activity=p.initial_activity)
        for key, activity in zip(keys, reset.activities, strict=True):
            state[key + "activity"] = activity
        return state

    def _noise(self, state: Mapping[str, Tensor], updates: Sequence[Update],
               counts: list[int]) -> float:
        p = self.params
        stats = [torch.as_tensor(u.payload[NOISE_STAT], dtype=F64).reshape(-1)
                 for u in updates]
        previous = float(torch.as_tensor(state[NOISE_STATE]).reshape(-1)[0])
        if p.likelihood == "gaussian":
            value = regression_noise_variance([float(s[0]) for s in stats], counts)
            return min(max(value, p.min_noise_var), 1e6)
        return classification_noise_variance(
            [float(s[0]) for s in stats], [float(s[1]) for s in stats], counts, previous,
            damping=p.noise_damping, side=p.gumbel_side,  # type: ignore[arg-type]
            min_noise_var=p.min_noise_var).value

    def _weight_activity(self, state: Mapping[str, Tensor]) -> Tensor:
        return torch.cat([torch.as_tensor(state[f"l{layer}.w_activity"], dtype=F64)
                          for layer in range(1, self.depth + 1)])

    def _sparsify(self, state: dict[str, Tensor]) -> dict[str, Tensor]:
        """The target-sparsity rule, layer by layer (module docs)."""
        p = self.params
        for layer, target in enumerate(self.targets, start=1):
            if target >= self.sizes[layer - 1]:
                continue
            key = f"l{layer}.w_activity"
            reset = apply_target_sparsity(state[key], target, threshold=p.threshold,
                                          initial_activity=p.initial_activity,
                                          score=state[f"l{layer}.w_mean"].pow(2).sum(1))
            if reset.fired:
                state[key] = reset.activity
        return state

    # ------------------------------------------------------------------ evaluation

    def slab_variances(self, state: Mapping[str, Tensor]) -> dict[str, float]:
        """``slab_var_l<l>``: the mean slab variance of layer ``l``'s weights over its
        alive groups (``ρ > 0``; NaN if none), to watch the variances shrink."""
        out = {}
        for layer in range(1, self.depth + 1):
            alive = torch.as_tensor(state[f"l{layer}.w_activity"], dtype=F64) > 0
            var = torch.as_tensor(state[f"l{layer}.w_var"], dtype=F64)[alive]
            out[f"slab_var_l{layer}"] = float(var.mean()) if var.numel() else float("nan")
        return out

    def predict(self, state: Mapping[str, Tensor], inputs: Tensor) -> Tensor:
        """Outputs ``(N_L, I)`` of the posterior-mean network ``ρμ`` on ``(N_0, I)`` inputs."""
        return mlp_forward(layer_means(self.priors(state)), inputs)

    def evaluate(self, state: Mapping[str, Tensor]) -> dict[str, float]:
        activity = self._weight_activity(state)
        metrics = {
            "noise_var": float(torch.as_tensor(state[NOISE_STATE]).reshape(-1)[0]),
            "active_groups": float((activity > 0).sum()),
            "confident_groups": float((activity > self.params.threshold).sum()),
            "target_groups": float(self.budget if self.params.sparsity_mode == "paper"
                                   else sum(self.targets)),
            **self.slab_variances(state),
        }
        if self.eval is None:
            return metrics
        inputs, targets = self.eval
        out = self.predict(state, inputs)
        if self.params.likelihood == "probit":
            accuracy = float((out.argmax(0) == targets).to(F64).mean())
            return {**metrics, "accuracy": accuracy, "test_error": 1.0 - accuracy}
        error = float(((out - targets) ** 2).sum())
        energy = float((targets * targets).sum())
        return {**metrics, "test_mse": error / targets.numel(),
                "test_nmse": error / energy if energy > 0 else float("nan")}


def clip_metrics(clips: Mapping[str, int]) -> dict[str, float]:
    """Clip counts summed over layers per quantity (``clip_<quantity>``) and in total."""
    totals = dict.fromkeys(CLIP_QUANTITIES, 0)
    for key, value in clips.items():
        quantity = key.split("/", 1)[-1]
        totals[quantity] = totals.get(quantity, 0) + int(value)
    out = {f"clip_{q}": float(v) for q, v in totals.items()}
    out["clips"] = float(sum(totals.values()))
    return out
