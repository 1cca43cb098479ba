"""Links: serialisation, packetisation, ARQ and the record, told as short stories."""

import numpy as np
import pytest
import simpy

from bflnet.channels import FixedRateChannel, IdealChannel
from bflnet.simulator.link import Link, Medium
from bflnet.simulator.message import Message
from bflnet.simulator.recorder import Recorder


def make_link(env, channel, *, seed=0, **kwargs):
    rec = kwargs.pop("recorder", None) or Recorder(env, record_messages=True)
    inbox = simpy.Store(env)
    link = Link(env, "a", "b", channel, np.random.default_rng(seed), rec, inbox=inbox, **kwargs)
    return link, rec, inbox


def send_at(env, link, t, bits, log, name):
    def proc():
        yield env.timeout(t)
        d = yield from link.send(Message("a", "b", name, None, bits))
        log.append((name, d.start_s, round(d.end_s, 12), d.delivered))
    return env.process(proc())


def test_delivery_time_is_latency_plus_bits_over_rate_per_packet():
    env = simpy.Environment()
    link, _, inbox = make_link(env, FixedRateChannel(rate_bps=1e6, latency_s=0.005),
                               mtu_bits=1000)
    log = []
    send_at(env, link, 0.0, 2500, log, "m")  # packets of 1000, 1000 and 500 bits
    env.run()
    assert log == [("m", 0.0, round(3 * 0.005 + 2500 / 1e6, 12), True)]
    assert [m.kind for m in inbox.items] == ["m"]


def test_messages_are_serialised_fifo_on_one_link():
    env = simpy.Environment()
    link, _, inbox = make_link(env, FixedRateChannel(rate_bps=1000, latency_s=0.5))
    log = []
    send_at(env, link, 0.0, 1000, log, "first")   # 0.5 + 1.0
    send_at(env, link, 0.2, 500, log, "second")   # waits until 1.5, then 0.5 + 0.5
    env.run()
    assert log == [("first", 0.0, 1.5, True), ("second", 1.5, 2.5, True)]
    assert [m.kind for m in inbox.items] == ["first", "second"]


def test_links_sharing_a_medium_queue_behind_each_other():
    env = simpy.Environment()
    medium = Medium()
    rec = Recorder(env)
    ch = FixedRateChannel(rate_bps=1000, latency_s=0.0)
    up1, _, _ = make_link(env, ch, medium=medium, recorder=rec)
    up2, _, _ = make_link(env, ch, medium=medium, recorder=rec)
    log = []
    send_at(env, up1, 0.0, 1000, log, "agent1")
    send_at(env, up2, 0.0, 1000, log, "agent2")
    env.run()
    assert log == [("agent1", 0.0, 1.0, True), ("agent2", 1.0, 2.0, True)]


def test_zero_bit_message_still_pays_the_latency():
    env = simpy.Environment()
    link, _, _ = make_link(env, FixedRateChannel(rate_bps=1e6, latency_s=0.01))
    log = []
    send_at(env, link, 0.0, 0, log, "ack")
    env.run()
    assert log == [("ack", 0.0, 0.01, True)]


def test_a_packet_lost_on_every_attempt_drops_the_message():
    env = simpy.Environment()
    link, rec, inbox = make_link(env, FixedRateChannel(rate_bps=1000, loss_prob=0.999999),
                                 max_attempts=3, mtu_bits=100)
    log = []
    send_at(env, link, 0.0, 250, log, "m")
    env.run()
    assert log == [("m", 0.0, 0.3, False)]  # three attempts of the first 100-bit packet
    assert inbox.items == []
    assert rec.cum_bits == 300 and rec.cum_bits_delivered == 0
    row = rec.to_frame().iloc[-1]
    assert row["dropped"] and row["attempts"] == 3 and row["bits_on_air"] == 300


def test_recorder_counts_retransmitted_bits_on_air_and_payload_bits_delivered():
    env = simpy.Environment()
    link, rec, _ = make_link(env, FixedRateChannel(rate_bps=1e6, loss_prob=0.5),
                             max_attempts=None, mtu_bits=100, seed=3)
    done = env.process(link.send(Message("a", "b", "m", None, 1000)))
    env.run()
    delivery = done.value
    assert delivery.delivered
    assert rec.cum_bits == delivery.bits_on_air == 100 * delivery.attempts
    assert rec.cum_bits_delivered == 1000


@pytest.mark.parametrize("p", [0.1, 0.3, 0.6])
def test_mean_attempts_with_unlimited_arq_is_one_over_one_minus_p(p):
    env = simpy.Environment()
    link, _, _ = make_link(env, FixedRateChannel(rate_bps=1e6, loss_prob=p), max_attempts=None,
                           seed=11, recorder=Recorder(env))
    n = 20_000
    attempts = np.array([link.schedule(10)[2] for _ in range(n)])
    # Attempts are geometric: mean 1/(1-p), variance p/(1-p)^2.
    se = np.sqrt(p / (1 - p) ** 2 / n)
    assert abs(attempts.mean() - 1 / (1 - p)) < 4 * se


def test_ideal_channel_is_instantaneous():
    env = simpy.Environment()
    link, _, _ = make_link(env, IdealChannel())
    log = []
    send_at(env, link, 2.0, 10**6, log, "big")
    env.run()
    assert log == [("big", 2.0, 2.0, True)]


@pytest.mark.parametrize(("kwargs", "field"), [({"mtu_bits": 0}, "mtu_bits"),
                                               ({"max_attempts": 0}, "max_attempts"),
                                               ({"direction": "sideways"}, "direction")])
def test_bad_link_settings_are_one_line_errors(kwargs, field):
    env = simpy.Environment()
    with pytest.raises(ValueError, match=f"^{field}: must be"):
        make_link(env, IdealChannel(), **kwargs)


@pytest.mark.parametrize(("channel", "draws"), [
    (IdealChannel(), False),
    (FixedRateChannel(rate_bps=1e6, latency_s=0.005), False),
    (FixedRateChannel(rate_bps=1e6, latency_s=0.005, loss_prob=0.2), True),
])
def test_a_link_creates_its_stream_only_if_its_channel_draws(channel, draws):
    """A lossless link never builds its random stream (a saving of ~20 µs per link and
    run in Monte-Carlo studies); the draws of a lossy one are unchanged."""
    env = simpy.Environment()
    made = []

    def factory():
        made.append(True)
        return np.random.default_rng(3)

    link = Link(env, "a", "b", channel, factory, Recorder(env), inbox=simpy.Store(env))
    log = []
    for i in range(5):
        send_at(env, link, 0.01 * i, 30_000, log, f"m{i}")
    env.run()
    assert channel.draws is draws and bool(made) is draws and len(log) == 5
    if draws:  # the same deliveries as with the generator handed over directly
        env2 = simpy.Environment()
        direct, _, _ = make_link(env2, channel, seed=3)
        log2 = []
        for i in range(5):
            send_at(env2, direct, 0.01 * i, 30_000, log2, f"m{i}")
        env2.run()
        assert log == log2


def test_channels_that_draw_say_so():
    from bflnet.channels import GilbertElliottChannel, RayleighChannel

    fading = RayleighChannel(bandwidth_hz=1e6, mean_snr_db=10.0, distance_m=2.0)
    ge = GilbertElliottChannel(rate_bps=1e6, latency_s=0.0, p_good_to_bad=0.1,
                               p_bad_to_good=0.5)
    assert fading.draws and ge.draws
