"""The ``device`` setting: resolution, one-line errors naming the field, the scenarios that
have it, and (on a machine with a CUDA device) the torch learners on it."""

import numpy as np
import pytest
import torch
from tests.scenarios.test_dsvgd_scenarios import TINY as DSVGD_TINY

from bflnet.cli.main import main
from bflnet.runs.registry import get_scenario, scenario_names
from bflnet.runtime.devices import DEVICES, resolve_device
from bflnet.validation.params import field_names

CUDA = torch.cuda.is_available()
TORCH_SCENARIOS = ("dsvgd-sparsifiers", "dsvgd-vs-fedavg", "forget-svgd", "async-fedavg",
                   "cdbfl-shift", "cdbfl-local-steps", "d2d-medium", "emtdamp",
                   "emtdamp-boston", "emtdamp-mnist", "ota-langevin")
#: Tiny settings of each torch scenario, those of its own tests (on the tests' tiny
#: Fashion-MNIST stand-in, or synthetic data): a run takes a second or so.
TINY: dict[str, dict[str, object]] = {
    **DSVGD_TINY,
    "async-fedavg": {"K": 4, "points_per_agent": 40, "eval_size": 100, "hidden": 4,
                     "local_steps": 2, "batch_size": 8, "duration_s": 4.0,
                     "compute_s_per_step": 0.1, "deadline_s": 0.5, "buffer_size": 2,
                     "eval_every": 2},
    "cdbfl-shift": {"K": 3, "points_per_agent": 10, "eval_size": 30, "shift_size": 12,
                    "hidden": 4, "rounds": 4, "burn_in": 2, "eval_every": 2,
                    "local_steps": 2, "n_bins": 5},
    "cdbfl-local-steps": {"K": 4, "points_per_agent": 20, "eval_size": 100, "hidden": 8,
                          "rounds": 6, "burn_in": 3, "eval_every": 3,
                          "local_steps_values": "1,3"},
    "d2d-medium": {"rounds": 3, "burn_in": 1, "eval_every": 3, "eval_size": 100,
                   "hidden": 4, "macs": "links"},
    "emtdamp": {"rounds": 1},
    "emtdamp-boston": {"data": "synthetic", "rounds": 1},
    "emtdamp-mnist": {"dataset": "fashion-mnist", "K": 2, "points_per_agent": 100,
                      "eval_size": 50, "rounds": 1},
    "ota-langevin": {"K": 3, "points_per_agent": 40, "hidden": 4, "batch_size": 20,
                     "rounds": 2, "burn_in": 1, "eval_every": 2, "eval_size": 50,
                     "snr_db": "30"},
}


def tiny_args(name: str, device: str) -> list[str]:
    """``bflnet run NAME`` (seed 0) with the tiny settings and ``device``."""
    sets = [f"{key}={value}" for key, value in {**TINY[name], "device": device}.items()]
    return ["run", name, "--no-progress", *(arg for pair in sets for arg in ("--set", pair))]


def test_resolve_device():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if CUDA else "cpu")
    for bad in ("gpu", "CUDA", "", None, 0):
        with pytest.raises(ValueError, match="device: must be one of cpu, cuda, auto"):
            resolve_device(bad)


@pytest.mark.skipif(CUDA, reason="this machine has a CUDA device")
def test_cuda_without_a_device_is_a_one_line_error():
    with pytest.raises(ValueError, match="device: 'cuda' asked, but torch sees no CUDA"):
        resolve_device("cuda")


@pytest.mark.parametrize("name", TORCH_SCENARIOS)
def test_torch_scenarios_have_the_setting(name):
    config = get_scenario(name).config({})
    assert config.device == "cpu"
    assert get_scenario(name).config({"device": "auto"}).device == "auto"
    with pytest.raises(ValueError, match="device: must be one of"):
        get_scenario(name).config({"device": "tpu"})


def test_every_scenario_with_a_device_setting_is_listed():
    """A new scenario with a ``device`` setting must join the checks of this module."""
    have = {name for name in scenario_names()
            if "device" in field_names(get_scenario(name).config_cls)}
    assert have == set(TORCH_SCENARIOS) == set(TINY)
    for name in TORCH_SCENARIOS:  # the tiny settings are valid
        get_scenario(name).config(TINY[name])


@pytest.mark.skipif(CUDA, reason="this machine has a CUDA device")
@pytest.mark.usefixtures("use_tiny_fashion")
@pytest.mark.parametrize("name", TORCH_SCENARIOS)
def test_cuda_without_a_device_is_one_line_naming_the_field_in_every_scenario(name, capsys):
    assert main(tiny_args(name, "cuda")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bflnet: error: ")
    assert "device: 'cuda' asked, but torch sees no CUDA device" in err


def test_cli_names_the_field(capsys):
    assert main(["run", "dsvgd-vs-fedavg", "--set", "device=tpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "device: must be one of" in err
    assert tuple(DEVICES) == ("cpu", "cuda", "auto")


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_learners_on_cuda_follow_the_cpu():  # pragma: no cover - no GPU in CI
    """FedAvg (batched and one by one) and DSVGD on the GPU: the same draws, results equal
    to the CPU's up to float rounding, every tensor on the device."""
    from bflnet.learners.federated.fedavg import FedAvg
    from bflnet.learners.models.classifiers import BayesianMLP
    from bflnet.learners.particles.dsvgd import DSVGD

    gen = torch.Generator().manual_seed(0)
    data = {k: (torch.randn(60, 12, generator=gen), torch.randint(3, (60,), generator=gen))
            for k in range(3)}
    results = {}
    for device in ("cpu", "cuda"):
        model = BayesianMLP(12, 8, 3, device=device)
        fed = FedAvg(model, data, local_steps=5, lr=0.1, batch_size=10)
        w = fed.init(np.random.default_rng(0))
        batched = fed.local_update_batch([0, 1, 2], w, [None] * 3,
                                         [np.random.default_rng(k) for k in range(3)])
        single = fed.local_update(0, w, None, np.random.default_rng(0))
        svgd = DSVGD(model, data, 20, local_steps=5, batch_size=10)
        theta = svgd.init(np.random.default_rng(0))
        update = svgd.local_update(0, theta, None, np.random.default_rng(1))
        assert all(t.device.type == device for t in (batched[0].payload, single.payload,
                                                     update.payload))
        results[device] = [batched[0].payload.cpu(), single.payload.cpu(),
                           update.payload.cpu()]
    for cpu, gpu in zip(results["cpu"], results["cuda"], strict=True):
        torch.testing.assert_close(gpu, cpu, rtol=1e-3, atol=1e-4)


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.usefixtures("use_tiny_fashion")
@pytest.mark.parametrize("name", TORCH_SCENARIOS)
def test_every_torch_scenario_runs_on_cuda(name):  # pragma: no cover - no GPU in CI
    """The tiny run on the GPU gives the CPU's rows and columns (the values may differ
    in float rounding)."""
    scenario = get_scenario(name)
    frames = {device: scenario.run(scenario.config({**TINY[name], "device": device}),
                                   seed=0) for device in ("cpu", "cuda")}
    assert list(frames["cuda"].columns) == list(frames["cpu"].columns)
    assert len(frames["cuda"]) == len(frames["cpu"])
