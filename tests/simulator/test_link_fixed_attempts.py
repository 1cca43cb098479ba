"""A lossless fixed-rate or ideal link adds up a message's packets in one sequential
NumPy sum instead of one channel call per packet: the same schedules, bit for bit, as
the attempt-by-attempt loop (forced here by a subclass that redefines ``attempt``)."""

import numpy as np
import pytest
import simpy

from bflnet.channels import FixedRateChannel, IdealChannel
from bflnet.simulator.link import Link
from bflnet.simulator.recorder import Recorder


class LoopedFixed(FixedRateChannel):
    """The same channel; redefining ``attempt`` turns the fast path off."""

    def attempt(self, bits, start_s, rng):
        return super().attempt(bits, start_s, rng)


class LoopedIdeal(IdealChannel):
    def attempt(self, bits, start_s, rng):
        return super().attempt(bits, start_s, rng)


def schedules(channel, mtu, messages):
    env = simpy.Environment()
    link = Link(env, 0, 1, channel, np.random.default_rng(0), Recorder(env), mtu_bits=mtu)
    return [link.schedule(bits, at=at) for at, bits in messages]


def test_which_channels_take_the_fast_path():
    assert FixedRateChannel(1e6, 0.005).fixed_attempts
    assert not FixedRateChannel(1e6, 0.005, loss_prob=0.1).fixed_attempts
    assert IdealChannel().fixed_attempts
    assert not LoopedFixed(1e6, 0.005).fixed_attempts
    assert not LoopedIdeal().fixed_attempts


@pytest.mark.parametrize("seed", range(20))
def test_fixed_rate_schedules_equal_the_loop_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    rate, latency = float(10 ** rng.uniform(3, 9)), float(rng.choice([0.0, rng.uniform(0, 0.1)]))
    mtu = int(rng.integers(1, 20_000))
    times = np.cumsum(rng.exponential(rng.uniform(0.001, 50), size=12))
    messages = [(0, int(rng.integers(0, 50 * mtu)))]  # an int start, as env.now begins
    messages += [(float(t), int(rng.integers(0, 50 * mtu))) for t in times]
    messages.append((float(times[-1]), 86_560_608))  # a DSGLD sample of 2.7 M float32
    fast = schedules(FixedRateChannel(rate, latency), mtu, messages)
    loop = schedules(LoopedFixed(rate, latency), mtu, messages)
    assert fast == loop
    assert [tuple(map(type, s)) for s in fast] == [tuple(map(type, s)) for s in loop]


def test_ideal_schedules_equal_the_loop():
    messages = [(0, 50_000), (1.5, 12_000), (1.5, 12_001), (2.25, 10**7)]
    fast = schedules(IdealChannel(), 12_000, messages)
    assert fast == schedules(LoopedIdeal(), 12_000, messages)
    assert [tuple(map(type, s)) for s in fast] == [
        tuple(map(type, s)) for s in schedules(LoopedIdeal(), 12_000, messages)]


def test_the_sum_is_sequential_not_pairwise():
    # 0.1 added 10**5 times: a pairwise sum rounds differently from the loop's
    env = simpy.Environment()
    link = Link(env, 0, 1, FixedRateChannel(1e6, 0.1 - 1e-6), np.random.default_rng(0),
                Recorder(env), mtu_bits=1)
    end = link.schedule(10**5)[1]
    t = 0
    for _ in range(10**5):
        t += 0.1 - 1e-6 + 1 / 1e6
    assert end == t
