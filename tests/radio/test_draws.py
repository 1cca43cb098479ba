"""The MACs' block draws give exactly the values of numpy's calls, in the same order."""

import numpy as np
import pytest
import simpy

from bflnet.radio.draws import BlockDraws
from bflnet.radio.events import timeout


def _pair(seed: int) -> tuple[np.random.Generator, BlockDraws]:
    return (np.random.Generator(np.random.PCG64(seed)),
            BlockDraws(np.random.Generator(np.random.PCG64(seed))))


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 1000, 1024, 12345, 2**31 + 11, 2**32 - 1])
def test_below_is_integers(n):
    rng, draws = _pair(n)
    assert [draws.below(n) for _ in range(300)] == [int(rng.integers(n)) for _ in range(300)]


def test_below_follows_changing_windows_like_csma():
    rng, draws = _pair(7)
    windows = np.random.default_rng(1).integers(1, 2048, size=3000).tolist()
    windows[::3] = [16 << (w % 7) for w in windows[::3]]  # powers of two, as 802.11's
    assert [draws.below(w) for w in windows] == [int(rng.integers(w)) for w in windows]


@pytest.mark.parametrize("p", [1e-300, 0.001, 0.1, 0.3, 1 / 3, 0.5, 1.0])
def test_geometric_is_numpys(p):
    rng, draws = _pair(3)
    assert [draws.geometric(p) for _ in range(300)] == [int(rng.geometric(p))
                                                         for _ in range(300)]


def test_one_stream_is_read_one_way():
    _, draws = _pair(0)
    draws.below(16)
    with pytest.raises(RuntimeError, match="already read"):
        draws.geometric(0.1)


def test_timeout_is_env_timeout():
    fired = []
    for make in (lambda env, d: env.timeout(d), timeout):
        env = simpy.Environment()
        order = []
        for k, d in enumerate([0.5, 0.0, 0.5, 0.25]):
            make(env, d).callbacks.append(
                lambda e, k=k, order=order: order.append((e.env.now, k)))
        env.run()
        fired.append(order)
    assert fired[0] == fired[1] == [(0.0, 1), (0.25, 3), (0.5, 0), (0.5, 2)]
