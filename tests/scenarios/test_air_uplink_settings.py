"""The over-the-air configs take the placement's fields from their shared mixin: the same
declarations in both, ``placement`` right after each one's ``mean_gain_db``, and a config
without ``mean_gain_db`` is refused when its class is made."""

import dataclasses

import pytest

from bflnet.scenarios.ota.ota_langevin import OTALangevinConfig
from bflnet.scenarios.ota.wflmc_gaussian import AirUplinkSettings, WFLMCGaussianConfig
from bflnet.scenarios.shared.network_settings import NetworkSettings
from bflnet.validation.params import param

SHARED = ("placement", "distance_m", "path_loss_exponent", "ref_loss_db")


def spec(cls, name):
    f = {f.name: f for f in dataclasses.fields(cls)}[name]
    return f.type, f.default, dict(f.metadata)


@pytest.mark.parametrize("cls", [OTALangevinConfig, WFLMCGaussianConfig])
def test_placement_follows_mean_gain_db(cls):
    names = [f.name for f in dataclasses.fields(cls)]
    assert names[names.index("mean_gain_db") + 1] == "placement"
    assert len(names) == len(set(names))
    assert cls().placement == "fixed"


def test_both_configs_declare_the_same_placement_fields():
    for name in SHARED:
        assert spec(OTALangevinConfig, name) == spec(WFLMCGaussianConfig, name)
    # distinct Field objects: a dataclass owns the ones it is given
    ota = {f.name: f for f in dataclasses.fields(OTALangevinConfig)}
    wflmc = {f.name: f for f in dataclasses.fields(WFLMCGaussianConfig)}
    assert all(ota[n] is not wflmc[n] for n in SHARED)


def test_a_config_without_mean_gain_db_is_refused():
    with pytest.raises(TypeError, match="mean_gain_db"):
        @dataclasses.dataclass(frozen=True)
        class NoGain(AirUplinkSettings, NetworkSettings):
            rounds: int = param(3, "rounds", ge=1, le=10)
