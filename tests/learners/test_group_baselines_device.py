"""The EM-TDAMP comparison's baselines honour ``device``: every tensor of the learner (the
clients' data, the test set, the models, the masks, the pruning) is made on the learner's
device. Checked on the CPU by making ``meta`` torch's default device: a tensor created
without the learner's device would land there and fail, or differ, when mixed with the
learner's. A CUDA run follows the CPU's (skipped without a GPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bflnet.learners.federated.group_baselines import DenseMLP, GroupFedAvg
from bflnet.learners.hyper import GroupFedAvgParams

CUDA = torch.cuda.is_available()
CASES = [("gaussian", "group-snip", "per-layer"), ("softmax", "group-lasso", "network"),
         ("softmax", "plain", "per-layer"), ("gaussian", "group-snip", "network")]


def run(likelihood, method, scope, device, rounds=2):
    """A few FedAvg rounds of three clients: the final weights and the metrics."""
    rng = np.random.default_rng(0)
    sizes = [4, 6, 3] if likelihood == "softmax" else [4, 6, 1]

    def targets(n):
        return rng.integers(0, 3, n) if likelihood == "softmax" else rng.normal(size=(n, 1))

    data = {k: (rng.normal(size=(20, 4)), targets(20)) for k in range(3)}
    test = (rng.normal(size=(15, 4)), targets(15))
    params = GroupFedAvgParams(local_steps=3, lr=1e-2, batch_size=5, optimizer="adam",
                               method=method, group_lasso=1e-3 if method == "group-lasso"
                               else 0.0, target_density=0.5, budget_scope=scope)
    learner = GroupFedAvg(DenseMLP(sizes, likelihood), data, params, eval_data=test,
                          device=device)
    w = learner.init(np.random.default_rng(1))
    streams = {k: np.random.default_rng(10 + k) for k in data}
    for _ in range(rounds):
        w = learner.merge(w, [learner.local_update(k, w, None, streams[k]) for k in data])
    return learner, w, learner.evaluate(w)


@pytest.mark.parametrize(("likelihood", "method", "scope"), CASES)
def test_every_tensor_is_made_on_the_learners_device(likelihood, method, scope):
    _, expected, metrics = run(likelihood, method, scope, "cpu")
    with torch.device("meta"):  # where a tensor made without the learner's device goes
        learner, w, got = run(likelihood, method, scope, "cpu")
    assert learner.device == torch.device("cpu") and w.device == torch.device("cpu")
    assert all(t.device == learner.device for t in (*learner.test, *learner.data[0]))
    assert torch.equal(w, expected)  # bit for bit: the device changes nothing on the CPU
    assert got == metrics and metrics["active_groups"] <= metrics["target_groups"]


def test_cuda_without_a_device_is_a_one_line_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="device: 'cuda' asked, but torch sees no CUDA"):
        run("gaussian", "plain", "per-layer", "cuda")


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize(("likelihood", "method", "scope"), CASES[:2])
def test_baselines_on_cuda_follow_the_cpu(likelihood, method, scope):  # pragma: no cover
    _, expected, metrics = run(likelihood, method, scope, "cpu")
    learner, w, got = run(likelihood, method, scope, "cuda")
    assert w.device.type == "cuda" and learner.test[0].device.type == "cuda"
    torch.testing.assert_close(w.cpu(), expected, rtol=1e-4, atol=1e-5)
    assert got["active_groups"] == metrics["active_groups"]
