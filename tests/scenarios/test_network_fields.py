"""No silently ignored network parameter: every registered scenario either reads each
shared network field it accepts, or rejects a non-default value in one line naming what
decides instead.

The first test walks every scenario and every field. The second checks that the
``used_fields()`` declarations tell the truth: for every scenario cheap enough to run,
each field it declares as used changes its output when set (in a setting that reads it).
The parameter-server scenarios are too costly to run here; they build their links through
the same ``NetworkSettings.network_kwargs`` as the cheap ones, so the channel fields they
declare are verified through those.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from bflnet.scenarios import get_scenario, scenario_names
from bflnet.scenarios.shared.network_settings import NetworkSettings

FIELDS = [f.name for f in dataclasses.fields(NetworkSettings)]

#: A valid non-default value of every field (``graph_file``: set by the fixture).
ALT = {
    "graph": "star", "K": 5, "edge_prob": 0.8, "radius_m": 60.0, "area_m": 90.0,
    "graph_file": "second", "channel": "rayleigh", "rate_bps": 1e4,
    "latency_s": 0.001, "loss_prob": 0.3, "ge_p_good_to_bad": 0.5, "ge_p_bad_to_good": 0.9,
    "ge_loss_bad": 0.5, "bandwidth_hz": 1e4, "mean_snr_db": 35.0, "path_loss_exponent": 2.5,
    "distance_m": 5.0, "coding_rate": 1.0, "rician_k": 10.0, "mtu_bits": 16,
    "max_attempts": 1, "compute_s_per_step": 0.5,
    "medium": "shared", "mac": "tdma", "broadcast": True, "reception": "per",
    "tx_power_dbm": -20.0,
    "noise_figure_db": 40.0, "ref_loss_db": 80.0, "shadowing_db": 10.0,
    "sinr_threshold_db": 20.0, "layout": "circle", "aloha_p": 0.5, "mac_slot_s": 0.05,
    "tdma_frame_slots": 50, "sense_range_m": 1.0, "backoff_slot_s": 1e-3, "cw_min": 2,
    "cw_max": 16, "retry_limit": 0, "phy": "ideal", "ed_threshold_dbm": 30.0,
    "pd_threshold_dbm": 30.0, "tdma_schedule": "distance2", "tdma_margin_db": 30.0,
    "guard_s": 0.01,
    "coherence_time_s": 1e-3, "fading_model": "gauss-markov",
    "data_rate": "54",
}
#: Settings under which the field is read (where there are such settings).
LOSSY_FADING = {"mean_snr_db": 35.0}
SHARED = {"medium": "shared", "channel": "rayleigh"}
CONTEXT: dict[str, dict[str, object]] = {
    "edge_prob": {"graph": "erdos-renyi"},
    "radius_m": {"graph": "random-geometric", "area_m": 50.0},
    "area_m": {"graph": "random-geometric", "radius_m": 80.0},
    "graph_file": {"graph": "file", "graph_file": "first"},
    "ge_p_good_to_bad": {"channel": "gilbert-elliott"},
    "ge_p_bad_to_good": {"channel": "gilbert-elliott", "ge_p_good_to_bad": 0.5},
    "ge_loss_bad": {"channel": "gilbert-elliott", "ge_p_good_to_bad": 0.5},
    "bandwidth_hz": {"channel": "rayleigh"},
    "mean_snr_db": {"channel": "rayleigh"},
    "path_loss_exponent": {"channel": "rayleigh", **LOSSY_FADING},
    "distance_m": {"channel": "rayleigh", **LOSSY_FADING},
    "coding_rate": {"channel": "rayleigh"},
    "rician_k": {"channel": "rician", **LOSSY_FADING},
    "max_attempts": {"loss_prob": 0.3, "mtu_bits": 32},
    "medium": {"channel": "rayleigh"},
    # a mean SNR near the threshold, where the SINR -> error-rate map and the shadowing
    # draws decide packets
    **{name: {**SHARED, "tx_power_dbm": -25.0} for name in ("reception", "shadowing_db")},
    # the threshold decides packets with reception=threshold (a PHY preset's default is mcs)
    "sinr_threshold_db": {**SHARED, "tx_power_dbm": -25.0, "reception": "threshold"},
    **{name: SHARED for name in ("mac", "broadcast", "tx_power_dbm", "noise_figure_db",
                                 "ref_loss_db",
                                 "layout", "sense_range_m", "retry_limit", "phy")},
    # the old CSMA window (16 ... 1024): a PHY preset's window starts at its CWmin (32 for
    # 80211b, the default), above ALT's cw_max
    **{name: {**SHARED, "phy": "ideal"} for name in ("backoff_slot_s", "cw_min", "cw_max")},
    "aloha_p": {**SHARED, "mac": "aloha"},
    "mac_slot_s": {**SHARED, "mac": "aloha"},
    "tdma_frame_slots": {**SHARED, "mac": "tdma"},
    # carrier sense by received power: the other threshold out of reach, so that this one
    # alone decides (30 dBm: nothing sensed)
    "ed_threshold_dbm": {**SHARED, "phy": "80211b", "pd_threshold_dbm": 30.0},
    "pd_threshold_dbm": {**SHARED, "phy": "80211b", "ed_threshold_dbm": 30.0},
    # nodes on a circle: the SINR schedule (auto under the default 80211b) shares slots,
    # distance2 and a 30 dB margin do not
    "tdma_schedule": {**SHARED, "mac": "tdma", "layout": "circle"},
    "tdma_margin_db": {**SHARED, "mac": "tdma", "tdma_schedule": "sinr", "layout": "circle"},
    "guard_s": {**SHARED, "mac": "aloha"},
    "coherence_time_s": SHARED,
    "fading_model": {**SHARED, "coherence_time_s": 1e-3},
    "data_rate": {**SHARED, "phy": "80211a"},
}
#: Where one scenario reads a field only under settings of its own (it has no ``layout``):
#: added to the field's context.
SCENARIO_CONTEXT: dict[tuple[str, str], dict[str, object]] = {
    ("mobile-gossip", f): {"layout": None, "area_m": 100.0, "radius_m": 30.0}
    for f in ("tdma_schedule", "tdma_margin_db")}
#: Scenarios cheap enough to run for every field, with tiny settings.
TINY: dict[str, dict[str, object]] = {
    "consensus-averaging": {"K": 6, "rounds": 5},
    "cover-time": {"K": 6, "runs": 3},
    "gfvl-beta-bernoulli": {"K": 6, "graphs": "complete", "runs": 1, "rounds": 8,
                            "points_per_agent": 5},
    "gfvl-beta-exponential": {"K": 6, "runs": 1, "rounds": 8, "local_steps_values": "1,2",
                              "points_per_agent": 5, "eval_every": 2},
    "gfvl-unlearning": {"K": 6, "runs": 1, "learn_rounds": 5, "rounds": 5,
                        "points_per_agent": 5, "eval_every": 2},
    "unlearning-latency": {"K": 6, "runs": 3, "learn_rounds": 3, "max_rounds": 500},
    # static nodes: mac=tdma (whose schedule is coloured once) is refused with moving ones;
    # synchronous rounds, whose packets contend on a shared medium
    "mobile-gossip": {"K": 6, "mode": "sync", "duration_s": 0.1, "speeds": "0",
                      "area_m": 20.0, "radius_m": 20.0},
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("graphs")
    first, second = folder / "first.txt", folder / "second.txt"
    first.write_text("0 1\n1 2\n2 3\n3 4\n4 5\n5 0\n")  # a ring of 6
    second.write_text("0 1\n0 2\n0 3\n0 4\n0 5\n")  # a star of 6
    return {"first": str(first), "second": str(second)}


def _overrides(name: str, base: dict[str, object], context: dict[str, object],
               alt: dict[str, object], *, files: dict[str, str]) -> dict[str, object]:
    """``base``, then ``context`` (whose ``graph`` becomes ``graphs`` where the scenario
    takes a list of topologies), then ``alt``; ``graph_file`` names become paths and
    ``graph=file`` drops ``K``."""
    fields = {f.name for f in dataclasses.fields(get_scenario(name).config_cls)}
    context = dict(context)
    if "graphs" in fields and "graph" in context:
        context["graphs"] = context.pop("graph")
    out = {**base, **context, **alt}
    if "graph_file" in out:
        out["graph_file"] = files[str(out["graph_file"])]
    if "file" in (out.get("graph"), out.get("graphs")):
        out.pop("K", None)
    return out


def _config(name: str, overrides: dict[str, object]) -> object:
    return get_scenario(name).config(overrides)


def test_every_scenario_is_a_network_settings_config() -> None:
    for name in scenario_names():
        assert issubclass(get_scenario(name).config_cls, NetworkSettings), name
        config = _config(name, {})
        assert config.used_fields() <= set(FIELDS)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", scenario_names())
@pytest.mark.parametrize("field", FIELDS)
def test_a_set_field_is_used_or_rejected_naming_what_decides(name: str, field: str,
                                                            files: dict[str, str]) -> None:
    fields = {f.name for f in dataclasses.fields(get_scenario(name).config_cls)}
    contexts = [{}]
    if field in CONTEXT:
        try:
            _config(name, _overrides(name, {}, CONTEXT[field], {}, files=files))
            contexts.append(CONTEXT[field])
        except ValueError:
            pass  # this scenario has no setting that reads the field (e.g. no D2D graph)
    for context in contexts:
        overrides = _overrides(name, {}, context, {field: ALT[field]}, files=files)
        try:
            config = _config(name, overrides)
        except ValueError as exc:
            message = str(exc)
            assert "\n" not in message
            assert message.startswith(f"{field}: not used "), message
            reason = message.split(";", 1)[1]
            # names the parameter (or setting) that decides, or that would read it
            assert any(other in reason for other in fields - {field}), message
            continue
        assert field in config.used_fields(), (name, overrides)  # type: ignore[attr-defined]


def _same(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    return a.shape == b.shape and a.equals(b)


@pytest.mark.parametrize("name", sorted(TINY))
def test_declared_fields_change_the_output(name: str, files: dict[str, str]) -> None:
    scenario = get_scenario(name)
    cache: dict[str, pd.DataFrame] = {}

    def run(overrides: dict[str, object]) -> pd.DataFrame:
        key = repr(sorted(overrides.items()))
        if key not in cache:
            cache[key] = scenario.run(scenario.config(overrides), seed=3)
        return cache[key]

    checked = []
    for field in FIELDS:
        own = {**CONTEXT.get(field, {}), **SCENARIO_CONTEXT.get((name, field), {})}
        own = {k: v for k, v in own.items() if v is not None}
        context = _overrides(name, TINY[name], own, {}, files=files)
        try:
            config = scenario.config(context)
        except ValueError:
            continue  # no setting of this scenario reads the field (first test)
        if field not in config.used_fields():
            continue
        changed = _overrides(name, TINY[name], own, {field: ALT[field]}, files=files)
        assert not _same(run(context), run(changed)), (name, field)
        checked.append(field)
    assert set(checked) == set(FIELDS) - set(scenario.config_cls.decided_elsewhere())
