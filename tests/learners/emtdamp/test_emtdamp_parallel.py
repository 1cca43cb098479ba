"""EM-TDAMP's clients in groups of at most ``client_group``, ``threads`` groups at once:
the groups depend on K and client_group only, so the updates are bit for bit the same
for every thread count (and for any torch thread count of the caller); one group is the
batched computation of all clients; an error in a group or an interrupt of the waiting
thread stops the other groups and restores torch's thread count."""

import itertools

import numpy as np
import pytest
import torch

from bflnet.learners.emtdamp import parallel
from bflnet.learners.emtdamp.damp_mlp import random_layer_priors
from bflnet.learners.emtdamp.learner import EMTDAMP, NOISE_STATE
from bflnet.learners.emtdamp.parallel import client_groups, tdamp_clients_grouped
from bflnet.learners.emtdamp.tdamp_client import Cancelled, tdamp_clients
from bflnet.learners.hyper import EMTDAMPParams
from bflnet.learners.models.torch_utils import torch_generator


def test_client_groups_are_contiguous_even_and_a_function_of_k_and_the_group():
    assert client_groups(10, 5) == [slice(0, 5), slice(5, 10)]
    assert client_groups(10, 3) == [slice(0, 2), slice(2, 5), slice(5, 7), slice(7, 10)]
    assert client_groups(4, 5) == [slice(0, 4)]
    assert client_groups(1, 5) == [slice(0, 1)]
    assert client_groups(3, 1) == [slice(0, 1), slice(1, 2), slice(2, 3)]
    for clients in range(1, 40):
        for group in range(1, 12):
            groups = client_groups(clients, group)
            sizes = [g.stop - g.start for g in groups]
            assert len(groups) == -(-clients // group)
            assert groups[0].start == 0 and groups[-1].stop == clients
            assert all(a.stop == b.start for a, b in itertools.pairwise(groups))
            assert max(sizes) <= group and max(sizes) - min(sizes) <= 1


@pytest.fixture
def threads_restored():
    before = torch.get_num_threads()
    yield before
    torch.set_num_threads(before)


# A shape where a client's last bits can depend on its batch (12-8-3 at batch 15): the
# grouping, not the thread count, decides them.
SIZES = (12, 8, 3)


def _data(clients: int, count: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return {k: (rng.standard_normal((count, SIZES[0])), rng.integers(0, SIZES[-1], count))
            for k in range(clients)}


def _params(**extra):
    return EMTDAMPParams(likelihood="probit", batch_size=15, tau_max=2, sweeps=2,
                         initial_activity=0.8, **extra)


def _updates(learner: EMTDAMP, data: dict):
    state = learner.init(np.random.default_rng(1))
    rngs = [np.random.default_rng(100 + a) for a in data]
    return learner.local_update_batch(list(data), state, [None] * len(data), rngs), state


def _assert_same(first, second, label):
    for a, b in zip(first, second, strict=True):
        assert a.agent == b.agent and a.metrics == b.metrics
        for key in a.payload:
            assert torch.equal(a.payload[key], b.payload[key]), (label, key)


@pytest.mark.parametrize("client_group", [5, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_thread_count_does_not_change_a_bit(client_group, dtype, threads_restored):
    data = _data(10, 30)
    updates = {}
    for threads in (1, 2, 3):
        torch.set_num_threads(4 - threads)  # the caller's torch threads do not matter either
        learner = EMTDAMP(SIZES, data, _params(client_group=client_group, dtype=dtype),
                          threads=threads)
        updates[threads], _ = _updates(learner, data)
        assert torch.get_num_threads() == 4 - threads  # restored
    for threads in (2, 3):
        _assert_same(updates[1], updates[threads], (client_group, dtype, threads))


@pytest.mark.parametrize("threads", [1, 2])
def test_one_group_of_k_is_the_batched_computation_of_all_clients(threads, threads_restored):
    data = _data(10, 30)
    learner = EMTDAMP(SIZES, data, _params(client_group=10), threads=threads)
    updates, state = _updates(learner, data)
    # the computation of all K in one batch on one torch thread (before the groups)
    torch.set_num_threads(1)
    p = learner.params
    gens = [torch_generator(np.random.default_rng(100 + a), torch.device("cpu"))
            for a in data]
    results = tdamp_clients(
        [learner.data[a][0] for a in data], [learner.data[a][1] for a in data],
        learner.priors(state), float(state[NOISE_STATE].reshape(-1)[0]),
        likelihood=p.likelihood, batch_size=p.batch_size, tau_max=p.tau_max,
        sweeps=p.sweeps, power=p.power, settings=learner.settings, generators=gens,
        start=learner.start)
    expected = [learner._update(a, r) for a, r in zip(data, results, strict=True)]
    _assert_same(expected, updates, threads)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), 1e308, "x", 2.5, True])
def test_bad_client_group_is_a_one_line_error(bad):
    with pytest.raises(ValueError, match=r"^client_group: must be an integer >= 1 and "
                                         r"<= 1000000, got "):
        EMTDAMPParams(client_group=bad)


def test_bad_thread_count_of_the_learner_is_a_one_line_error():
    with pytest.raises(ValueError, match="^threads: must be an integer in 1..1024"):
        EMTDAMP(SIZES, _data(2, 10), _params(), threads=0)


def _clients(clients: int, count: int, bad: int | None = None):
    rng = np.random.default_rng(3)
    inputs = [torch.tensor(rng.standard_normal((12, count))) for _ in range(clients)]
    if bad is not None:
        inputs[bad][0, 5] = float("nan")
    targets = [torch.tensor(rng.integers(0, 3, count)) for _ in range(clients)]
    priors = random_layer_priors([12, 8, 3], torch.Generator().manual_seed(0))
    return inputs, targets, priors


@pytest.mark.parametrize("threads", [1, 2])
def test_error_in_one_group_is_raised_as_in_one_batch(threads, threads_restored):
    inputs, targets, priors = _clients(4, 30, bad=3)
    kwargs = {"likelihood": "probit", "batch_size": 10, "tau_max": 3}
    with pytest.raises(ValueError) as alone:
        tdamp_clients(inputs, targets, priors, 1.0, **kwargs)
    torch.set_num_threads(2)
    with pytest.raises(ValueError) as grouped:
        tdamp_clients_grouped(inputs, targets, priors, 1.0, client_group=2, threads=threads,
                              **kwargs)
    assert str(grouped.value) == str(alone.value)
    assert type(grouped.value) is type(alone.value)
    assert torch.get_num_threads() == 2


def test_interrupt_while_waiting_cancels_the_groups(monkeypatch, threads_restored):
    inputs, targets, priors = _clients(4, 40)
    outcomes = []
    original = parallel.tdamp_clients

    def recording(*args, **kwargs):
        try:
            out = original(*args, **kwargs)
        except Cancelled as error:
            outcomes.append(error)
            raise
        outcomes.append("finished")
        return out

    def interrupted(futures, return_when):
        raise KeyboardInterrupt

    monkeypatch.setattr(parallel, "wait", interrupted)
    monkeypatch.setattr(parallel, "tdamp_clients", recording)
    torch.set_num_threads(2)
    with pytest.raises(KeyboardInterrupt):
        # long enough (2 000 minibatches a group) never to finish before the cancel
        tdamp_clients_grouped(inputs, targets, priors, 1.0, likelihood="probit",
                              batch_size=4, tau_max=200, client_group=2, threads=2)
    assert len(outcomes) == 2 and all(isinstance(o, Cancelled) for o in outcomes)
    assert torch.get_num_threads() == 2
