"""EM-TDAMP's batched clients, dtype and device: the clients of a round computed together
give bit for bit the updates of one by one; float32 runs in float32 and stays close to
float64; the ``device`` setting; a CUDA run (skipped cleanly without a CUDA device)."""

import numpy as np
import pytest
import torch

from bflnet.learners.emtdamp.learner import EMTDAMP
from bflnet.learners.emtdamp.moments import client_sigmoid
from bflnet.learners.hyper import EMTDAMPParams

CUDA = torch.cuda.is_available()


def _problem(likelihood: str, sizes: tuple[int, ...], counts: list[int], seed: int = 0):
    rng = np.random.default_rng(seed)
    data = {}
    for k, n in enumerate(counts):
        x = rng.standard_normal((n, sizes[0]))
        if likelihood == "probit":
            y = rng.integers(0, sizes[-1], n)
        else:
            y = np.tanh(x[:, :2].sum(1, keepdims=True)) + 0.1 * rng.standard_normal((n, 1))
        data[k] = (x, y)
    return data


def _round(learner: EMTDAMP, state, agents, *, batched: bool):
    rngs = [np.random.default_rng(100 + a) for a in agents]
    if batched:
        return learner.local_update_batch(agents, state, [None] * len(agents), rngs)
    return [learner.local_update(a, state, None, r) for a, r in zip(agents, rngs, strict=True)]


@pytest.mark.parametrize(("likelihood", "sizes", "counts", "extra"), [
    # Boston's shapes (13-64-64-1, batch 101; odd sizes exercise the scalar tails)
    ("gaussian", (13, 64, 64, 1), [101, 101, 101, 101], {"batch_size": 101}),
    # MNIST-like, Module B active (rho_0 < 1), PasP power < 1, clients of two sizes
    ("probit", (30, 16, 10), [70, 70, 45, 70], {"batch_size": 20, "initial_activity": 0.8,
                                                 "power": 0.9, "init_slab": "zero"}),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batched_clients_are_bit_for_bit_one_by_one(likelihood, sizes, counts, extra, dtype):
    params = EMTDAMPParams(likelihood=likelihood, tau_max=2, sweeps=2, dtype=dtype, **extra)
    learner = EMTDAMP(sizes, _problem(likelihood, sizes, counts), params)
    state = learner.init(np.random.default_rng(1))
    agents = list(range(len(counts)))
    for _ in range(2):  # round 0 (the start point) and a merged round
        one = _round(learner, state, agents, batched=False)
        together = _round(learner, state, agents, batched=True)
        for a, b in zip(one, together, strict=True):
            assert a.agent == b.agent and a.metrics == b.metrics and a.work == b.work
            assert a.payload.keys() == b.payload.keys()
            for key in a.payload:
                assert torch.equal(a.payload[key], b.payload[key]), key
        state = learner.merge(state, together)
    assert learner.batches_agents


def test_client_sigmoid_matches_each_slice():
    x = torch.randn(5, 13, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    out = client_sigmoid(x, core=1)
    assert all(torch.equal(out[k], torch.sigmoid(x[k])) for k in range(5))


def test_float32_computes_in_float32_and_stays_close():
    sizes, counts = (13, 16, 1), [101, 101]
    data = _problem("gaussian", sizes, counts)
    updates = {}
    for dtype in ("float64", "float32"):
        learner = EMTDAMP(sizes, data, EMTDAMPParams(dtype=dtype, tau_max=2, sweeps=2))
        assert learner.data[0][0].dtype == getattr(torch, dtype)
        state = learner.init(np.random.default_rng(1))
        updates[dtype] = _round(learner, state, [0, 1], batched=True)
    for a, b in zip(updates["float64"], updates["float32"], strict=True):
        for key, value in a.payload.items():
            assert b.payload[key].dtype == torch.float64  # the wire stays float64
            torch.testing.assert_close(b.payload[key], value, rtol=2e-3, atol=2e-4)


def test_device_and_dtype_settings_are_checked():
    with pytest.raises(ValueError, match="dtype: must be one of"):
        EMTDAMPParams(dtype="float16")
    with pytest.raises(ValueError, match="device: must be one of"):
        EMTDAMPParams(device="tpu")
    assert EMTDAMPParams().device == "cpu" and EMTDAMPParams().dtype == "float32"


@pytest.mark.skipif(CUDA, reason="this machine has a CUDA device")
def test_cuda_without_a_device_is_a_one_line_error():
    with pytest.raises(ValueError, match="device: 'cuda' asked, but torch sees no CUDA"):
        EMTDAMP((4, 3, 2), _problem("probit", (4, 3, 2), [10]),
                EMTDAMPParams(likelihood="probit", device="cuda"))


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_clients_on_cuda_follow_the_cpu():  # pragma: no cover - no GPU in CI
    """A batched round on the GPU: the data on the device, the payload back on the CPU in
    float64, equal to the CPU's up to float rounding."""
    sizes, counts = (30, 16, 10), [60, 60, 60]
    data = _problem("probit", sizes, counts)
    payloads = {}
    for device in ("cpu", "cuda"):
        learner = EMTDAMP(sizes, data, EMTDAMPParams(likelihood="probit", batch_size=20,
                                                     tau_max=2, sweeps=2, device=device))
        assert learner.data[0][0].device.type == device
        state = learner.init(np.random.default_rng(1))
        updates = _round(learner, state, [0, 1, 2], batched=True)
        assert all(p.device.type == "cpu" for u in updates for p in u.payload.values())
        payloads[device] = [u.payload for u in updates]
    for cpu, gpu in zip(payloads["cpu"], payloads["cuda"], strict=True):
        for key, value in cpu.items():
            torch.testing.assert_close(gpu[key], value, rtol=1e-6, atol=1e-8)


def test_the_device_path_gives_the_same_numbers(monkeypatch):
    """Off the CPU nothing in a sweep waits for the host (checks queued, clips by
    torch.where): forced on the CPU, that path gives bit for bit the same updates."""
    from bflnet.learners.emtdamp import moments

    sizes, counts = (30, 16, 10), [50, 50]
    params = EMTDAMPParams(likelihood="probit", batch_size=20, tau_max=2, sweeps=2,
                           initial_activity=0.8)
    learner = EMTDAMP(sizes, _problem("probit", sizes, counts), params)
    state = learner.init(np.random.default_rng(1))
    host = _round(learner, state, [0, 1], batched=True)
    monkeypatch.setattr(moments, "on_host", lambda t: False)
    device = _round(learner, state, [0, 1], batched=True)
    for a, b in zip(host, device, strict=True):
        assert a.metrics == b.metrics
        assert all(torch.equal(a.payload[k], b.payload[k]) for k in a.payload)


def test_queued_checks_name_the_first_quantity_that_failed(monkeypatch):
    from bflnet.learners.emtdamp import moments
    from bflnet.learners.emtdamp.damp import NonFiniteError

    monkeypatch.setattr(moments, "on_host", lambda t: False)
    data = _problem("gaussian", (13, 8, 1), [101])
    data[0][0][3, 2] = 1e308  # overflows in the first layer's products (float64)
    learner = EMTDAMP((13, 8, 1), data, EMTDAMPParams(sweeps=1, dtype="float64"))
    with pytest.raises(NonFiniteError, match="layer 1: ν_p is not finite"):
        learner.local_update(0, learner.init(np.random.default_rng(0)), None, None)


@pytest.mark.parametrize("name", ["emtdamp", "emtdamp-boston", "emtdamp-mnist"])
def test_scenarios_have_the_settings(name):
    from bflnet.runs.registry import get_scenario

    scenario = get_scenario(name)
    config = scenario.config({})
    assert (config.device, config.dtype, config.batch_agents) == ("cpu", "float32", True)
    assert scenario.config({"device": "auto", "dtype": "float64"}).dtype == "float64"
    with pytest.raises(ValueError, match="device: must be one of"):
        scenario.config({"device": "tpu"})


def test_data_beyond_float32_is_a_one_line_error():
    data = _problem("gaussian", (13, 8, 1), [101])
    data[0][0][3, 2] = 1e39  # finite in float64, infinite in float32
    with pytest.raises(ValueError, match=r"agent_data\[0\] inputs: values beyond float32's "
                                         r"range .*use dtype=float64"):
        EMTDAMP((13, 8, 1), data, EMTDAMPParams())
    EMTDAMP((13, 8, 1), data, EMTDAMPParams(dtype="float64"))  # fine in float64
