"""FedAvg: convergence to the closed-form MAP/MLE of a linear-Gaussian model, payloads,
the parameter-server run with a compressed uplink, determinism and errors."""

import doctest

import networkx as nx
import numpy as np
import pytest
import torch

from bflnet.learners.base import Update
from bflnet.learners.federated import fedavg as fedavg_module
from bflnet.learners.federated.fedavg import FedAvg
from bflnet.learners.models.toy_models import GaussianMeanModel, LinearGaussianModel
from bflnet.protocols.coding.codecs import topk_quantized
from bflnet.protocols.local import LocalDriver
from bflnet.protocols.parameter_server import ParameterServerProtocol
from bflnet.protocols.scheduling import AllAgents
from bflnet.protocols.stopping import StopRule
from bflnet.simulator import Simulation


def regression_agents(k=3, n=20, d=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    w_true = torch.tensor([1.0, -2.0, 0.5])[:d]
    data = {}
    for a in range(k):
        x = torch.randn(n, d, generator=gen) + 0.3 * a      # agents see shifted inputs
        data[a] = (x, x @ w_true + 0.5 * torch.randn(n, generator=gen))
    return data


def rounds(learner, agents, n, seed=0):
    """``n`` synchronous rounds of ``agents`` from ``learner.init`` (seed ``seed``)."""
    driver = LocalDriver(learner, seed)
    for _ in range(n):
        driver.merge([driver.update(a) for a in agents])
    return driver.state


def test_full_batch_fedavg_converges_to_the_map():
    model = LinearGaussianModel(d=3, prior_var=0.5, noise_var=0.25)
    data = regression_agents()
    x = torch.cat([v[0] for v in data.values()])
    y = torch.cat([v[1] for v in data.values()])
    map_w, _ = model.posterior(x, y)
    # f_k = (1/N_k)·NLL_k + (wd/2)‖w‖²; the mean over equal-size agents is (1/N)·(NLL +
    # ‖w‖²/(2·prior_var)) when wd = 1/(N·prior_var): its minimiser is the posterior mean.
    learner = FedAvg(model, data, local_steps=1, lr=0.05, batch_size=20,
                     weight_decay=1.0 / (60 * 0.5))
    w = rounds(learner, [0, 1, 2], 400)
    assert w.shape == (1, 3)
    assert torch.allclose(w[0].double(), map_w, atol=1e-4)


@pytest.mark.parametrize("optimizer, lr, steps, tol", [("sgd", 0.05, 5, 0.05),
                                                       ("adam", 0.01, 10, 0.15)])
def test_local_steps_reach_the_mle_neighbourhood(optimizer, lr, steps, tol):
    model = LinearGaussianModel(d=3, noise_var=0.25)
    data = regression_agents()
    x = torch.cat([v[0] for v in data.values()]).double()
    y = torch.cat([v[1] for v in data.values()]).double()
    mle = torch.linalg.lstsq(x, y.unsqueeze(1)).solution[:, 0]
    learner = FedAvg(model, data, local_steps=steps, lr=lr, batch_size=20, optimizer=optimizer)
    w = rounds(learner, [0, 1, 2], 150)
    # Client drift leaves a small bias; Adam restarted every round takes near-sign steps,
    # so heterogeneous agents settle where their steps balance, a little further away.
    assert torch.allclose(w[0].double(), mle, atol=tol)


def test_equal_curvature_agents_have_no_client_drift():
    data = {0: (torch.full((4, 1), 1.0), torch.zeros(4)),
            1: (torch.full((4, 1), 3.0), torch.zeros(4))}
    learner = FedAvg(GaussianMeanModel(d=1), data, local_steps=5, lr=0.1, momentum=0.5)
    w = rounds(learner, [0, 1], 60)
    assert float(w) == pytest.approx(2.0, abs=1e-5)


def test_payload_merge_and_work():
    model = LinearGaussianModel(d=3)
    learner = FedAvg(model, regression_agents(), local_steps=4, lr=0.01, batch_size=5)
    driver = LocalDriver(learner, 0)
    w = driver.state
    u0, u1 = driver.update(0), driver.update(1)
    assert u0.payload.shape == (1, 3) and u0.agent == 0
    assert u0.work.steps == 4 and u0.work.flops == 4 * 5 * model.flops_per_example()
    assert torch.equal(learner.merge(w, [u0]), w + u0.payload)
    assert torch.allclose(learner.merge(w, [u0, u1]), w + (u0.payload + u1.payload) / 2)
    assert torch.equal(learner.merge(w, []), w)


def test_weighted_merge_scales_each_delta_and_divides_by_the_count():
    learner = FedAvg(LinearGaussianModel(d=3), regression_agents(), local_steps=2, lr=0.01)
    driver = LocalDriver(learner, 0)
    w = driver.state
    u0, u1 = driver.update(0), driver.update(1)
    got = learner.merge_weighted(w, [u0, u1], [1.0, 0.5])
    assert torch.allclose(got, w + (u0.payload + 0.5 * u1.payload) / 2, rtol=0, atol=1e-7)
    assert torch.allclose(learner.merge_weighted(w, [u0, u1], [1.0, 1.0]),
                          learner.merge(w, [u0, u1]), rtol=0, atol=1e-7)
    assert torch.equal(learner.merge_weighted(w, [], []), w)
    with pytest.raises(ValueError, match="1 weights for 2 updates"):
        learner.merge_weighted(w, [u0, u1], [1.0])


def test_same_seed_same_model_with_minibatches():
    data = regression_agents()

    def run(seed):
        learner = FedAvg(LinearGaussianModel(d=3), data, local_steps=3, lr=0.05, batch_size=4)
        return rounds(learner, [0, 1, 2], 5, seed)

    assert torch.equal(run(1), run(1))
    assert not torch.equal(run(1), run(2))


def test_runs_under_the_parameter_server_with_compressed_uplink():
    model = LinearGaussianModel(d=3, noise_var=0.25)
    data = regression_agents()
    x = torch.cat([v[0] for v in data.values()]).double()
    y = torch.cat([v[1] for v in data.values()]).double()
    mle = torch.linalg.lstsq(x, y.unsqueeze(1)).solution[:, 0]

    class Tracked(FedAvg):
        def evaluate(self, state):
            return {"err": float((state[0].double() - mle).norm())}

    learner = Tracked(model, data, local_steps=2, lr=0.05, batch_size=20)
    codec = topk_quantized(k=2, n_bits=6)                    # n_rows = 1
    sim = Simulation(0)
    sim.build_network(nx.empty_graph(3), server=True)
    frame = sim.run(ParameterServerProtocol(learner, StopRule(max_iterations=60),
                                            selector=AllAgents(), uplink_codec=codec)).frame
    err = frame.err.dropna().to_numpy()
    assert err[-1] < 0.1 * err[0]
    it = frame[frame.event == "iteration"]
    assert (it.cum_bits_up.diff().dropna() == 3 * codec.bits_for((1, 3))).all()


def test_errors():
    model = LinearGaussianModel(d=3)
    data = regression_agents()
    for kwargs, field in [({"local_steps": 0}, "local_steps"), ({"lr": 0.0}, "lr"),
                          ({"optimizer": "rmsprop"}, "optimizer"),
                          ({"batch_size": 0}, "batch_size"), ({"momentum": 1.0}, "momentum"),
                          ({"weight_decay": -1.0}, "weight_decay")]:
        with pytest.raises(ValueError, match=field):
            FedAvg(model, data, **kwargs)
    learner = FedAvg(model, data, lr=1e6)
    w = learner.init(np.random.default_rng(0))
    with pytest.raises(ValueError, match="agent 0.*non-finite"):
        LocalDriver(learner, state=w * 1e30).update(0)
    with pytest.raises(ValueError, match=r"merge: non-finite .* agents \[1\]"):
        learner.merge(w, [Update(torch.full((1, 3), float("nan")), agent=1)])
    with pytest.raises(ValueError, match="NaN or inf"):
        learner.merge(w * float("inf"), [])
    with pytest.raises(ValueError, match="no data for agent 9"):
        LocalDriver(learner, state=w).update(9)
    with pytest.raises(NotImplementedError):
        learner.forget(0, None)


def test_evaluate_single_model_predictive():
    from bflnet.learners.models.classifiers import LogisticRegression

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(80, 2, generator=gen)
    y = (x[:, 0] - x[:, 1] > 0).long()
    learner = FedAvg(LogisticRegression(n_in=2, n_out=2), {0: (x[:60], y[:60])},
                     local_steps=20, lr=0.5, batch_size=60, eval_data=(x[60:], y[60:]))
    w = rounds(learner, [0], 5)
    metrics = learner.evaluate(w)
    assert metrics.keys() == {"accuracy", "ece", "nll", "brier"}
    assert metrics["accuracy"] > 0.85


def test_doctests():
    assert doctest.testmod(fedavg_module).failed == 0
