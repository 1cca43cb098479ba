"""The ``device`` setting: resolution, one-line errors naming the field, the scenarios that
have it, and (on a machine with a CUDA device) the torch learners on it."""

import numpy as np
import pytest
import torch

from bflnet.devices import DEVICES, resolve_device
from bflnet.scenarios.cli import main
from bflnet.scenarios.registry import get_scenario

CUDA = torch.cuda.is_available()
TORCH_SCENARIOS = ("dsvgd-sparsifiers", "dsvgd-vs-fedavg", "forget-svgd", "async-fedavg",
                   "cdbfl-shift", "cdbfl-local-steps")


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
    from bflnet.learners.dsvgd import DSVGD
    from bflnet.learners.fedavg import FedAvg
    from bflnet.learners.models import BayesianMLP

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
