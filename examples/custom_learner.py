"""A user-written scenario: Bayesian estimation of a scalar over a wireless D2D network.

Every agent holds noisy measurements of an unknown θ (known noise variance). The learner
keeps a Gaussian posterior N(mean, 1/precision) as its global state, in natural
parameters [precision·mean, precision]; an agent adds the sufficient statistics of its
data once, the first time it is scheduled (exactly the conjugate G-FVL update). Whether it
has contributed is the agent's private state: the protocol keeps it at the agent's node
and hands it to the learner, which returns the new one (so the learner object holds only
hyper-parameters and data, and an update lost on the way changes nothing). The same
learner then runs under a random walk over Rayleigh-fading D2D links, under a parameter
server and, through ``GossipAdapter``, under gossip (every node keeps a copy of the
posterior and mixes it with its neighbours'; the increments are scaled by K because the
learner declares that its state adds the agents' contributions, ``combines =
Combines.ADDITIVE``), and each run returns a tidy DataFrame.

Run it:  python examples/custom_learner.py
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bflnet.channels import FixedRateChannel, RayleighChannel
from bflnet.learners import Combines, GlobalStateLearner, Update
from bflnet.protocols import ParameterServerProtocol, RandomWalkProtocol, StopRule
from bflnet.protocols.graphs.topologies import node_distance, random_geometric
from bflnet.protocols.graphs.walks import MetropolisHastingsWalk
from bflnet.simulator import FixedStepTime, Simulation, Work


class GaussianMean(GlobalStateLearner):
    """Posterior of θ with prior N(0, 1) and Gaussian noise of variance ``noise_var``."""

    combines = Combines.ADDITIVE  # the state is the prior + the agents' statistics

    def __init__(self, data: dict[int, np.ndarray], noise_var: float, theta: float) -> None:
        self.data, self.noise_var, self.theta = data, noise_var, theta

    def init(self, rng: np.random.Generator) -> np.ndarray:
        return np.array([0.0, 1.0])  # prior: precision·mean = 0, precision = 1

    def init_agent(self, agent: int, rng: np.random.Generator) -> bool:
        return False  # the agent has not contributed yet

    def local_update(self, agent: int, state: np.ndarray, added: bool,
                     rng: np.random.Generator) -> Update:
        if added:
            return Update(np.zeros(2), Work(steps=1), agent, agent_state=True)
        x = self.data[agent]
        stats = np.array([x.sum() / self.noise_var, len(x) / self.noise_var])
        return Update(stats, Work(steps=len(x)), agent, agent_state=True)

    def merge(self, state: np.ndarray, updates: list[Update]) -> np.ndarray:
        return state + sum(u.payload for u in updates)

    def evaluate(self, state: np.ndarray) -> dict[str, float]:
        mean, var = state[0] / state[1], 1.0 / state[1]
        return {"posterior_mean": mean, "posterior_sd": np.sqrt(var),
                "abs_error": abs(mean - self.theta)}


def make_data(K: int, seed: int) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {k: 0.7 + rng.standard_normal(20) for k in range(K)}


def run_random_walk(K: int = 12, iterations: int = 200, seed: int = 0) -> pd.DataFrame:
    sim = Simulation(seed, name="gaussian-mean-walk")
    graph = random_geometric(K, radius_m=45.0, area_m=100.0, rng=sim.streams.numpy("graph"))
    template = RayleighChannel(bandwidth_hz=1e6, mean_snr_db=60.0, coding_rate=2.0,
                               latency_s=0.002)

    def channel(u: int, v: int) -> RayleighChannel:  # path loss from the node positions
        return template.with_distance(node_distance(graph, u, v))

    sim.build_network(graph, channel=channel, compute=FixedStepTime(1e-4), max_attempts=4)
    learner = GaussianMean(make_data(K, seed), noise_var=1.0, theta=0.7)
    return sim.run(RandomWalkProtocol(learner, MetropolisHastingsWalk(graph),
                                      StopRule(max_iterations=iterations))).frame


def run_parameter_server(K: int = 12, iterations: int = 24, seed: int = 0) -> pd.DataFrame:
    import networkx as nx

    sim = Simulation(seed, name="gaussian-mean-server")
    sim.build_network(nx.empty_graph(K), server=True, shared_uplink=True,
                      channel=FixedRateChannel(rate_bps=250e3, latency_s=0.01, loss_prob=0.05))
    learner = GaussianMean(make_data(K, seed), noise_var=1.0, theta=0.7)
    return sim.run(ParameterServerProtocol(learner, StopRule(max_iterations=iterations))).frame


def run_gossip(K: int = 12, rounds: int = 150, seed: int = 0) -> pd.DataFrame:
    from bflnet.learners.gossip.gossip_adapter import GossipAdapter
    from bflnet.protocols import ConsensusProtocol

    sim = Simulation(seed, name="gaussian-mean-gossip")
    graph = random_geometric(K, radius_m=45.0, area_m=100.0, rng=sim.streams.numpy("graph"))
    sim.build_network(graph, channel=FixedRateChannel(rate_bps=250e3, latency_s=0.002),
                      compute=FixedStepTime(1e-4))
    learner = GaussianMean(make_data(K, seed), noise_var=1.0, theta=0.7)
    gossip = GossipAdapter(learner, agents=K)  # the same learner, consensus on it
    return sim.run(ConsensusProtocol(gossip, "metropolis-hastings",
                                     StopRule(max_iterations=rounds))).frame


if __name__ == "__main__":
    for name, frame in (("random walk", run_random_walk()),
                        ("parameter server", run_parameter_server()),
                        ("gossip", run_gossip())):
        last = frame[frame.event.isin(("iteration", "round"))].iloc[-1]
        print(f"{name}: {int(last.iteration)} iterations, {last.time_s:.3f} s simulated, "
              f"{int(last.cum_bits)} bits on air, posterior mean {last.posterior_mean:.4f} "
              f"± {last.posterior_sd:.4f}")
