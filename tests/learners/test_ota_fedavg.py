"""Over-the-air FedAvg: FedAvg's own arithmetic over ideal links, the same within rounding at
a very high SNR, and at a low SNR an aggregate error of variance N_0 / (a K_a²)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from bflnet.learners.federated.fedavg import FedAvg, FedAvgParams
from bflnet.learners.federated.ota_fedavg import AnalogFedAvg
from bflnet.learners.models.classifiers import BayesianMLP
from bflnet.protocols.parameter_server import run_fald
from bflnet.protocols.uplink import AirCompUplink
from bflnet.radio.aircomp import AirCompSpec, plan_round, transmit
from bflnet.simulator.rng import RngStreams

K, N_IN, HIDDEN, ROUNDS, SEED = 4, 6, 5, 5, 3


def make_fedavg() -> FedAvg:
    gen = np.random.default_rng(0)
    data = {k: (torch.as_tensor(gen.normal(size=(30, N_IN)), dtype=torch.float32),
                torch.as_tensor(gen.integers(0, 3, size=30))) for k in range(K)}
    model = BayesianMLP(N_IN, HIDDEN, 3)
    return FedAvg(model, data, FedAvgParams(local_steps=3, lr=0.2, batch_size=10,
                                            weight_decay=0.01))


def uplink(tx_power: float, clip: float) -> AirCompUplink:
    spec = AirCompSpec(tx_power=tx_power, noise_power=1.0, gain_threshold=0.0,
                       power_rule="full", fading="none")
    return AirCompUplink(spec, np.full(K, 0.01), clip)


def test_ideal_links_run_fedavgs_own_rounds():
    """The protocol over ideal links = FedAvg's own merge of its own local updates from the
    same streams (init from ``learner``, device k's minibatches from ``agent.k``)."""
    fedavg = make_fedavg()
    _, theta = run_fald(AnalogFedAvg(fedavg), ROUNDS, fedavg.shape[-1], seed=SEED)
    streams = RngStreams(SEED)
    w = fedavg.init(streams.numpy("learner"))
    rngs = [streams.numpy(f"agent.{k}") for k in range(K)]
    for _ in range(ROUNDS):
        w = fedavg.merge(w, fedavg.local_update_batch(range(K), w, [None] * K, rngs))
    np.testing.assert_allclose(theta, w[0].double().numpy(), rtol=0, atol=1e-6)


def test_at_a_very_high_snr_it_equals_digital_fedavg():
    fedavg = make_fedavg()
    d = fedavg.shape[-1]
    frame, air = run_fald(AnalogFedAvg(fedavg), ROUNDS, d, seed=SEED,
                          uplink=uplink(tx_power=1e20, clip=100.0))
    _, ideal = run_fald(AnalogFedAvg(fedavg), ROUNDS, d, seed=SEED)
    rounds = frame[frame["event"] == "round"]
    assert len(rounds) == ROUNDS and (rounds["k_active"] == K).all()
    assert (rounds["added_var"] == 0).all() and (rounds["clipped"] == 0).all()
    # N_0 / (a K²), a = h² E / clip² = 0.01 d 1e20 / 100²
    np.testing.assert_allclose(rounds["channel_var"], 1e4 / (0.01 * d * 1e20 * K ** 2),
                               rtol=1e-12)
    np.testing.assert_allclose(air, ideal, rtol=0, atol=1e-5)
    assert not np.array_equal(air, ideal)  # the channel's noise is there, only tiny


def test_at_a_low_snr_the_aggregate_error_has_variance_n0_over_a_ka_squared():
    """One round, d = 1 000+ coordinates as draws: the new model minus the noiseless
    FedAvg step has mean 0 and variance N_0 / (a K²), a = h_min² E / clip² (the ``full``
    rule, every device active), within 4 standard errors."""
    model = BayesianMLP(40, 30, 3)
    gen = np.random.default_rng(5)
    data = {k: (torch.as_tensor(gen.normal(size=(20, 40)), dtype=torch.float32),
                torch.as_tensor(gen.integers(0, 3, size=20))) for k in range(K)}
    learner = AnalogFedAvg(FedAvg(model, data, FedAvgParams(local_steps=2, lr=0.1,
                                                            batch_size=10)))
    d = model.d
    assert d >= 1000
    streams = RngStreams(11)
    theta = learner.init(streams.numpy("learner"), (d,))
    deltas = learner.local_updates(theta, [streams.numpy(f"agent.{k}") for k in range(K)])
    clip = 2.0 * float(np.linalg.norm(deltas, axis=1).max())
    up = uplink(tx_power=1.0, clip=clip)  # 0 dB, mean gain -20 dB
    amps = np.sqrt(up.mean_gains)
    plan = plan_round(amps, up.spec, dim=d, clip=clip, target_var=learner.noise_target)
    a = 0.01 * d * 1.0 / clip ** 2
    assert plan.k_active == K and plan.scale == pytest.approx(a, rel=1e-12)
    assert plan.noise_var == pytest.approx(1.0 / (a * K ** 2), rel=1e-12)
    rx = transmit(plan, amps, deltas, up.spec, streams.numpy("aircomp.noise"), clip=clip)
    assert rx.clipped == 0
    new, added = learner.merge(theta, rx.mean, plan.noise_var, streams.numpy("learner"))
    err = new - (theta + deltas.mean(axis=0))
    assert added == 0.0
    assert abs(err.mean()) < 4 * math.sqrt(plan.noise_var / d)
    se = plan.noise_var * math.sqrt(2.0 / (d - 1))
    assert abs(err.var(ddof=1) - plan.noise_var) < 4 * se
    assert plan.noise_var > 1e-3 * float(np.abs(deltas.mean(axis=0)).mean()) ** 2  # low SNR


def test_agents_must_be_the_devices():
    model = BayesianMLP(N_IN, HIDDEN, 3)
    data = {"a": (torch.zeros(2, N_IN), torch.zeros(2, dtype=torch.long))}
    with pytest.raises(ValueError, match="agents"):
        AnalogFedAvg(FedAvg(model, data))
