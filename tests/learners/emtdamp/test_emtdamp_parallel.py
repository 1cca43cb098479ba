"""EM-TDAMP's clients in groups on threads (``parallel_clients``): the same updates bit for
bit as all clients in one batch on one thread; an error in a group or an interrupt of the
waiting thread stops the other groups and restores torch's thread count."""

import numpy as np
import pytest
import torch

from bflnet.learners.emtdamp import parallel
from bflnet.learners.emtdamp.damp_mlp import random_layer_priors
from bflnet.learners.emtdamp.learner import EMTDAMP
from bflnet.learners.emtdamp.parallel import client_groups, tdamp_clients_parallel
from bflnet.learners.emtdamp.tdamp_client import Cancelled, tdamp_clients
from bflnet.learners.hyper import EMTDAMPParams


def test_client_groups_are_contiguous_and_even():
    assert client_groups(10, 2) == [slice(0, 5), slice(5, 10)]
    assert client_groups(5, 2) == [slice(0, 2), slice(2, 5)]
    assert client_groups(3, 8) == [slice(0, 1), slice(1, 2), slice(2, 3)]
    assert client_groups(4, 1) == [slice(0, 4)]
    assert client_groups(1, 4) == [slice(0, 1)]


def _data(clients: int, count: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return {k: (rng.standard_normal((count, 30)), rng.integers(0, 10, count))
            for k in range(clients)}


@pytest.fixture
def threads_restored():
    before = torch.get_num_threads()
    yield before
    torch.set_num_threads(before)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_groups_on_threads_are_bit_for_bit_one_batch(dtype, threads_restored):
    # (a shape where a client's result does not depend on its batch: 16 x 20 hidden nodes)
    data = _data(5, 40)
    updates = {}
    for threads, parallel_clients in ((1, False), (3, True), (2, True)):
        torch.set_num_threads(threads)
        params = EMTDAMPParams(likelihood="probit", batch_size=20, tau_max=1, sweeps=2,
                               dtype=dtype, initial_activity=0.8,
                               parallel_clients=parallel_clients)
        learner = EMTDAMP((30, 16, 10), data, params)
        state = learner.init(np.random.default_rng(1))
        rngs = [np.random.default_rng(100 + a) for a in data]
        updates[threads] = learner.local_update_batch(list(data), state, [None] * 5, rngs)
        assert torch.get_num_threads() == threads
    for other in (3, 2):
        for a, b in zip(updates[1], updates[other], strict=True):
            assert a.agent == b.agent and a.metrics == b.metrics
            for key in a.payload:
                assert torch.equal(a.payload[key], b.payload[key]), (other, key)


def _clients(clients: int, count: int, bad: int | None = None):
    rng = np.random.default_rng(3)
    inputs = [torch.tensor(rng.standard_normal((12, count))) for _ in range(clients)]
    if bad is not None:
        inputs[bad][0, 5] = float("nan")
    targets = [torch.tensor(rng.integers(0, 3, count)) for _ in range(clients)]
    priors = random_layer_priors([12, 8, 3], torch.Generator().manual_seed(0))
    return inputs, targets, priors


def test_error_in_one_group_is_raised_as_in_one_batch(threads_restored):
    inputs, targets, priors = _clients(4, 30, bad=3)
    kwargs = {"likelihood": "probit", "batch_size": 10, "tau_max": 3}
    with pytest.raises(ValueError) as alone:
        tdamp_clients(inputs, targets, priors, 1.0, **kwargs)
    torch.set_num_threads(2)
    with pytest.raises(ValueError) as grouped:
        tdamp_clients_parallel(inputs, targets, priors, 1.0, **kwargs)
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
        tdamp_clients_parallel(inputs, targets, priors, 1.0, likelihood="probit",
                               batch_size=4, tau_max=200)
    assert len(outcomes) == 2 and all(isinstance(o, Cancelled) for o in outcomes)
    assert torch.get_num_threads() == 2
