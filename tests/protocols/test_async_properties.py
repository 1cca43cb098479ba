"""Properties of the deadline and buffered (FedBuff) servers over random seeds, under
log-normal stragglers and a lossy uplink: the record is in simulated-time order, no
update is merged before it was sent, and every recorded staleness equals the number of
global-state versions between the download and the merge, reconstructed from the
download, merge and iteration rows alone."""

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from bflnet.channels import FixedRateChannel
from bflnet.learners.base import Combines, GlobalStateLearner, Update
from bflnet.protocols.buffered_server import BufferedServerProtocol
from bflnet.protocols.parameter_server import ParameterServerProtocol
from bflnet.protocols.scheduling import UniformSelector
from bflnet.protocols.stopping import StopRule
from bflnet.simulator import Simulation, Work
from bflnet.simulator.compute import LogNormalTime

SEEDS = range(20)
K = 6


class PullToTargets(GlobalStateLearner):
    """One number; agent k pulls it half way to k; merges average the deltas."""

    combines = Combines.AVERAGED

    def init(self, rng):
        return np.zeros(1)

    def local_update(self, agent, state, agent_state=None, rng=None):
        return Update(0.5 * (agent - state), Work(steps=1 + agent % 3))

    def merge(self, state, updates):
        return state + np.mean([u.payload for u in updates], axis=0)


def simulate(seed: int, protocol) -> pd.DataFrame:
    sim = Simulation(seed)
    sim.build_network(nx.empty_graph(K), server=True,
                      compute=LogNormalTime(0.05, sigma=1.0),
                      channel=FixedRateChannel(2e4, 0.005, loss_prob=0.15), max_attempts=2)
    return sim.run(protocol).frame


def in_time_order(frame: pd.DataFrame) -> bool:
    return bool((np.diff(frame.time_s.to_numpy()) >= 0).all())


@pytest.mark.parametrize("seed", SEEDS)
def test_buffered_server_records(seed):
    frame = simulate(seed, BufferedServerProtocol(PullToTargets(), StopRule(max_iterations=25),
                                                  buffer_size=3, staleness_weighted=False))
    assert in_time_order(frame)
    merged = frame[frame.event == "merged_update"]
    assert len(merged) == 75
    t = merged.time_s
    assert (merged.download_s <= merged.sent_s).all()
    assert (merged.sent_s <= merged.arrived_s).all() and (merged.arrived_s <= t).all()

    # independent reconstruction: the versions made between an update's download row and
    # the row of its merge are the iteration rows in between
    is_merge = (frame.event == "iteration").to_numpy()
    merges_before = np.cumsum(is_merge) - is_merge  # merges strictly before each row
    downloads = frame[frame.event == "download"]
    where = {(n, s): i for i, n, s in zip(downloads.index, downloads.node, downloads.time_s,
                                          strict=True)}
    assert len(where) == len(downloads)  # an agent's downloads are at distinct times
    rows = [where[(n, s)] for n, s in zip(merged.node, merged.download_s, strict=True)]
    download_version = merges_before[rows]
    assert (download_version == merged.downloaded_version.to_numpy()).all()
    staleness = merges_before[merged.index.to_numpy()] - download_version
    assert (staleness == merged.staleness.to_numpy()).all()
    assert merged.staleness.max() > 0  # stragglers make stale updates

    # every merge row follows the B updates it merged and summarises their staleness
    it = frame[is_merge]
    assert (it.updates == 3).all()
    merge_of = np.searchsorted(it.index.to_numpy(), merged.index.to_numpy())
    by_merge = merged.groupby(merge_of).staleness
    assert (by_merge.size().to_numpy() == 3).all()
    assert np.array_equal(by_merge.max().to_numpy(), it.staleness_max.to_numpy())
    assert np.allclose(by_merge.mean().to_numpy(), it.staleness_mean.to_numpy())


@pytest.mark.parametrize("seed", SEEDS)
def test_deadline_server_records(seed):
    deadline = 0.12
    frame = simulate(seed, ParameterServerProtocol(
        PullToTargets(), StopRule(max_iterations=25), selector=UniformSelector(4),
        deadline_s=deadline))
    assert in_time_order(frame)
    it = frame[frame.event == "iteration"]
    starts = np.concatenate([[0.0], it.time_s.to_numpy()[:-1]])  # each round's broadcast
    assert (it.time_s.to_numpy() - starts <= deadline + 1e-12).all()

    merged = frame[frame.event == "merged_update"]
    round_of = np.searchsorted(it.index.to_numpy(), merged.index.to_numpy())
    assert np.array_equal(merged.download_s.to_numpy(), starts[round_of])
    assert (merged.download_s <= merged.sent_s).all()
    assert (merged.sent_s <= merged.arrived_s).all() and (merged.arrived_s <= merged.time_s).all()
    assert (merged.arrived_s <= merged.download_s + deadline + 1e-12).all()
    # staleness: versions made between the broadcast and the merge (none in a round)
    made = np.searchsorted(it.time_s.to_numpy(), merged.download_s.to_numpy(), side="right")
    assert np.array_equal(it.iteration.to_numpy()[round_of] - 1 - made,
                          merged.staleness.to_numpy())
    assert np.array_equal(np.bincount(round_of, minlength=len(it)), it.updates.to_numpy())

    late = frame[frame.event == "late_update"]
    assert (late.lateness_s >= 0).all() and (late.sent_s >= late.download_s).all()
    assert np.allclose(late.time_s, late.download_s + deadline + late.lateness_s)
    # a late update was not merged: its round's row counted it as late
    late_rounds = late["round"].value_counts()
    counted = it.set_index("iteration").late
    assert (counted.loc[late_rounds.index] >= late_rounds).all()
    assert it.late.sum() > 0
