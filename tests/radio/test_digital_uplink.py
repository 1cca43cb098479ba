"""The digital uplink in closed form: the rate adaptation carries ½ log2(1 + SNR / Γ) bits
per real channel use, the full-energy point spends the budget, the energy-minimising
point spends d Γ N_0 / h² (2^(2B/d) − 1) for its B bits, the air time, the unbiased
payload and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bflnet.radio.aircomp import AirCompSpec
from bflnet.radio.digital_uplink import (
    SIDE_BITS,
    DigitalLink,
    Payload,
    bits_per_use,
    channel_uses_for,
    energy_for,
    payload_for,
    plan_digital_round,
)

D = 1000
AMPS = np.array([0.05, 0.3, 1.0, 3.0, 0.0])


def test_bits_per_real_channel_use_is_half_log2_of_one_plus_snr():
    for snr in (0.0, 1.0, 3.0, 99.0, 1e6):
        assert bits_per_use(snr) == pytest.approx(0.5 * math.log2(1 + snr), rel=1e-15)
        assert bits_per_use(snr, gap=10 ** 0.6) == pytest.approx(
            0.5 * math.log2(1 + snr / 10 ** 0.6), rel=1e-15)
    assert bits_per_use(3.0) == 1.0  # half of the complex log2(1 + 3) = 2


@pytest.mark.parametrize("gap_db", [0.0, 6.0])
@pytest.mark.parametrize("point", ["full", "min-energy"])
def test_each_device_sends_the_largest_payload_its_channel_carries_in_d_uses(point, gap_db):
    """Rate adaptation per device: the payload is the largest that fits in ⌊d ½ log2(1 +
    P̄ h² / (Γ N_0))⌋ bits (at most 4 bits per coordinate at the energy-minimising point)."""
    spec = AirCompSpec(tx_power=20.0, noise_power=2.0)
    link = DigitalLink(point, target_bits=4, gap_db=gap_db)
    plan = plan_digital_round(AMPS, spec, D, link)
    gap = 10 ** (gap_db / 10)
    for h, payload in zip(AMPS, plan.payloads, strict=True):
        budget = math.floor(D * 0.5 * math.log2(1 + 20.0 * h * h / (2.0 * gap)))
        assert payload.bits <= max(budget, 0)
        cap = 4 if point == "min-energy" else 32
        b = min((budget - SIDE_BITS) // D, cap)
        if b >= 2:
            assert payload == Payload(b, D, b * D + SIDE_BITS)
        elif budget >= SIDE_BITS + 2:  # a random subset at 2 bits each
            m = (budget - SIDE_BITS) // 2
            assert payload == Payload(2, m, 2 * m + SIDE_BITS)
        else:
            assert payload.coordinates == 0
    assert plan.heard.tolist() == [p.coordinates > 0 for p in plan.payloads]
    assert plan.bits == sum(p.bits for p in plan.payloads)


def test_the_full_energy_point_spends_the_budget_the_minimising_point_the_formula():
    """Full energy: E = d P̄ for every device heard. Energy-minimising: d Γ N_0 / h² (2^(2B/d)
    − 1) for its B bits (at most E), which carries exactly B bits in d real channel uses;
    both points send the same payload when the channel carries fewer bits than the target,
    and take the same air time (heard devices x d / bandwidth + latency)."""
    spec = AirCompSpec(tx_power=20.0, noise_power=2.0, bandwidth_hz=1e4, latency_s=0.5)
    for gap_db in (0.0, 3.0):
        gap = 10 ** (gap_db / 10)
        full = plan_digital_round(AMPS, spec, D, DigitalLink("full", 4, gap_db))
        low = plan_digital_round(AMPS, spec, D, DigitalLink("min-energy", 4, gap_db))
        budget = D * 20.0
        assert full.energy.tolist() == [budget if h else 0.0 for h in full.heard]
        for h, p, e in zip(AMPS, low.payloads, low.energy, strict=True):
            if not p.coordinates:
                assert e == 0
                continue
            formula = D * gap * 2.0 / h ** 2 * (2 ** (2 * p.bits / D) - 1)
            assert e == pytest.approx(formula, rel=1e-12) and e <= budget
            # the least energy: it carries exactly the payload's bits in the slot
            assert D * 0.5 * math.log2(1 + e / D * h * h / (2.0 * gap)) == pytest.approx(
                p.bits, rel=1e-12)
        for pf, pl, ef, el in zip(full.payloads, low.payloads, full.energy, low.energy,
                                  strict=True):
            if pf.bits_per_coordinate <= 4:
                assert pf == pl
            else:  # the strong channel: fewer bits for far less energy
                assert pl.bits_per_coordinate == 4 and el < ef / 10
        for plan in (full, low):
            assert plan.airtime_s == pytest.approx(int(plan.heard.sum()) * D / 1e4 + 0.5)
    assert energy_for(0.0, D, 1.0, 1.0) == 0.0 and energy_for(10.0, D, 0.0, 1.0) == math.inf


def test_ten_db_is_not_outage_by_construction():
    """ota-langevin's setting at 10 dB (mean gain −20 dB, d = 79 510): a device at the
    mean gain sends 0.069 bits per channel use, a random subset of the coordinates at 2
    bits; it stays silent only below 34 bits."""
    d, p_bar = 79_510, 10.0
    spec = AirCompSpec(tx_power=p_bar)
    plan = plan_digital_round(np.array([0.1]), spec, d, DigitalLink())
    bits = math.floor(d * 0.5 * math.log2(1 + p_bar * 0.01))
    assert plan.heard.all() and plan.payloads[0] == Payload(2, (bits - 32) // 2, bits - bits % 2)
    assert payload_for(33.9, d) == Payload(0, 0, 0) and payload_for(34, d).coordinates == 1


def test_channel_uses_for_solves_the_real_channel_equation():
    for bits, energy, h, gap in [(10.0, 30.0, 1.0, 1.0), (9e3, 3e5, 0.3, 2.0),
                                 (7.0, 1e6, 2.0, 1.0)]:
        n = channel_uses_for(bits, energy, h, 1.0, gap)
        assert 0.5 * n * math.log2(1 + energy * h * h / (n * gap)) == pytest.approx(
            bits, rel=1e-9)
    assert channel_uses_for(8.0, 10.0, 1.0, 1.0) == math.inf  # 10 / (2 ln 2) = 7.2 < 8
    assert channel_uses_for(0.0, 10.0, 1.0, 1.0) == 0.0


def test_the_payload_is_unbiased_dense_and_sparse():
    """Mean of 3000 decodings within 5 standard errors of x, for 3 bits on every
    coordinate and for 2 of 6 coordinates at 2 bits (scaled by 3)."""
    from bflnet.protocols.uplink import unbiased_payload

    x = np.array([0.7, -0.2, 0.05, -1.0, 0.4, 0.0])
    for payload in (Payload(3, 6, 3 * 6 + 32), Payload(2, 2, 36)):
        rng = np.random.default_rng(7)
        est = np.array([unbiased_payload(x, payload, rng) for _ in range(3000)])
        se = est.std(axis=0) / math.sqrt(len(est)) + 1e-12
        assert (np.abs(est.mean(axis=0) - x) < 5 * se).all()
        if payload.coordinates < 6:
            assert ((est != 0).sum(axis=1) <= 2).all()


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"operating_point": "min"}, "operating_point"), ({"target_bits": 1}, "target_bits"),
    ({"target_bits": 2.5}, "target_bits"), ({"gap_db": float("nan")}, "gap_db"),
    ({"gap_db": -1.0}, "gap_db")])
def test_bad_link_settings_are_one_line(kwargs, field):
    with pytest.raises(ValueError, match=field) as err:
        DigitalLink(**kwargs)
    assert "\n" not in str(err.value)
