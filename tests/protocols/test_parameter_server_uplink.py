"""The parameter server's uplink option: ``aircomp`` superposes the participants' updates
in one analog transmission and hands the learner the noisy mean, ``digital`` and
``ideal`` deliver a mean too; stop rules, deadlines, interventions, faults and agent
states keep working; learners whose merge is not a mean are refused in one line."""

import networkx as nx
import numpy as np
import pytest

from bflnet.learners.base import Combines, GlobalStateLearner, Update
from bflnet.protocols.coding.codecs import StochasticQuantizer
from bflnet.protocols.interventions import ForgetRequest
from bflnet.protocols.parameter_server import ParameterServerProtocol
from bflnet.protocols.scheduling import AllAgents
from bflnet.protocols.stopping import StopRule
from bflnet.protocols.uplink import AirCompUplink, DigitalUplink, IdealUplink
from bflnet.radio.aircomp import AirCompSpec, tx_power_from_snr_db
from bflnet.simulator import Simulation, Work
from bflnet.simulator.compute import TraceTime

D = 6
UPLINK_COLUMNS = ("k_active", "silent", "scale", "channel_var", "added_var", "clipped",
                  "round_energy_j", "max_device_energy_j", "cum_energy_j",
                  "cum_channel_uses")


class Pull(GlobalStateLearner):
    """Each agent pulls the state half-way to its own target (agent k: all k + 1); the
    server adds the mean of the pulls. An agent counts its merged updates (its state);
    a forgotten agent pulls to 0."""

    combines = Combines.AVERAGED
    merges_mean = True

    def init(self, rng):
        return np.zeros(D)

    def init_agent(self, agent, rng):
        return {"merged": 0, "forgot": False}

    def local_update(self, agent, state, agent_state, rng):
        target = 0.0 if agent_state["forgot"] else agent + 1.0
        return Update(0.5 * (target - state), Work(steps=1), agent,
                      {**agent_state, "merged": agent_state["merged"] + 1})

    def merge(self, state, updates):
        return state + np.mean([u.payload for u in updates], axis=0)

    def evaluate(self, state):
        return {"level": float(state.mean())}

    def forget(self, agent, agent_state):
        return {**agent_state, "forgot": True}


def aircomp(K, snr_db=90.0, **spec):
    return AirCompUplink(AirCompSpec(tx_power=tx_power_from_snr_db(snr_db), fading="none",
                                     bandwidth_hz=1e3, **spec), np.ones(K), clip=100.0)


EIGHT = StopRule(max_iterations=8)


def run(K, uplink, stop=EIGHT, compute=None, seed=0, **protocol):
    sim = Simulation(seed)
    sim.build_network(nx.empty_graph(K), server=True, compute=compute)
    return sim.run(ParameterServerProtocol(Pull(), stop, selector=AllAgents(), uplink=uplink,
                                           **protocol))


def test_aircomp_at_high_snr_gives_the_links_run_with_rows_for_devices_noise_and_energy():
    links = run(3, None)
    air = run(3, aircomp(3))
    np.testing.assert_allclose(air.state, links.state, atol=1e-3)
    it = air.frame[air.frame.event == "iteration"]
    assert it.k_active.tolist() == [3] * 8 and (it.silent == 0).all()
    assert (it.channel_var > 0).all() and (it.channel_var < 1e-6).all()
    assert (it.round_energy_j > 0).all()
    assert it.cum_energy_j.is_monotonic_increasing
    assert it.cum_channel_uses.tolist() == [D * r for r in range(1, 9)]
    assert it.time_s.tolist() == pytest.approx([D / 1e3 * r for r in range(1, 9)])
    assert (it.cum_bits_up == 0).all()  # analog: no bits
    assert set(UPLINK_COLUMNS) <= set(air.frame.columns)
    # the agents whose updates were heard keep their new states
    assert all(s["merged"] == 8 for s in air.agent_states.values())


def test_aircomp_at_low_snr_carries_channel_noise_and_same_seed_same_frame():
    a = run(3, aircomp(3, snr_db=-10.0), seed=5)
    b = run(3, aircomp(3, snr_db=-10.0), seed=5)
    assert a.frame.equals(b.frame)
    it = a.frame[a.frame.event == "iteration"]
    assert (it.channel_var > 1e-3).all()
    assert not np.allclose(a.state, run(3, None).state, atol=1e-2)


def test_a_stop_rule_on_time_counts_the_air_time():
    result = run(2, aircomp(2), stop=StopRule(max_time_s=3.5 * D / 1e3))
    it = result.frame[result.frame.event == "iteration"]
    assert len(it) == 4 and result.reason == "max_time_s"


def test_a_straggler_misses_the_deadline_and_the_superposition():
    # agent k computes 1, 2, 5 s; deadline 3 s: agent 2 is late every time it is launched
    trace = TraceTime({"0": [1.0], "1": [2.0], "2": [5.0]})
    result = run(3, aircomp(3), stop=StopRule(max_iterations=3), compute=trace,
                 deadline_s=3.0)
    frame = result.frame
    it = frame[frame.event == "iteration"]
    assert it.k_active.tolist() == [2, 2, 2]
    assert it.late.tolist() == [1, 0, 1] and it.busy.tolist() == [0, 1, 0]
    assert frame[frame.event == "late_update"].node.tolist() == [2]
    assert result.agent_states[2]["merged"] == 0  # never heard: its state is its first
    assert result.agent_states[0]["merged"] == 3


def test_an_intervention_forgets_an_agent_over_the_air():
    request = ForgetRequest(agents=[2], after_iteration=3)
    result = run(3, aircomp(3), stop=StopRule(max_iterations=40), interventions=[request])
    frame = result.frame
    assert frame[frame.event == "forget_request"].node.tolist() == [2]
    # targets 1, 2, 0 after the request: the state settles at their mean, 1
    np.testing.assert_allclose(result.state, 1.0, atol=1e-3)
    assert result.agent_states[2]["forgot"]


def test_a_lost_downlink_keeps_the_agent_out_of_the_round():
    sim = Simulation(1)
    from bflnet.channels import FixedRateChannel

    sim.build_network(nx.empty_graph(3), server=True, max_attempts=1,
                      downlink_channel=FixedRateChannel(1e6, 0.0, loss_prob=0.5))
    result = sim.run(ParameterServerProtocol(
        Pull(), StopRule(max_iterations=20), selector=AllAgents(), uplink=aircomp(3)))
    it = result.frame[result.frame.event == "iteration"]
    assert it.k_active.min() < 3 and (it.k_active == it.updates).all()
    merged = {k: s["merged"] for k, s in result.agent_states.items()}
    assert sum(merged.values()) == it.k_active.sum()


def test_a_threshold_above_every_gain_silences_every_round():
    result = run(3, aircomp(3, gain_threshold=10.0), stop=StopRule(max_iterations=3))
    it = result.frame[result.frame.event == "iteration"]
    assert it.k_active.tolist() == [0, 0, 0] and it.silent.tolist() == [3, 3, 3]
    assert (result.state == 0).all()
    assert not result.frame[list(UPLINK_COLUMNS)].isna().any().any()


def test_digital_and_ideal_uplinks_deliver_a_mean():
    ideal = run(3, IdealUplink())
    np.testing.assert_allclose(ideal.state, run(3, None).state)
    it = ideal.frame[ideal.frame.event == "iteration"]
    assert it.cum_bits_up.iloc[-1] == 8 * 3 * D * 32 and (it.time_s == 0).all()
    spec = AirCompSpec(tx_power=tx_power_from_snr_db(40.0), fading="none")
    digital = run(3, DigitalUplink(spec, np.ones(3), StochasticQuantizer(8)))
    it = digital.frame[digital.frame.event == "iteration"]
    assert it.k_active.tolist() == [3] * 8 and (it.cum_bits_up > 0).all()
    np.testing.assert_allclose(digital.state, ideal.state, atol=0.1)


class Particles(Pull):
    combines = Combines.PARTICLES
    merges_mean = "its particles interact through a kernel"


class Silent(Pull):
    merges_mean = False


def test_a_learner_whose_merge_is_not_a_mean_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^uplink: aircomp cannot carry learner Particles: it "
                       r"cannot take a noisy mean of the updates: its particles interact "
                       r"through a kernel$"):
        ParameterServerProtocol(Particles(), StopRule(max_iterations=1), uplink=aircomp(2))
    with pytest.raises(ValueError,
                       match=r"^uplink: digital cannot carry learner Silent: .*merges_mean\)$"):
        ParameterServerProtocol(Silent(), StopRule(max_iterations=1), uplink=DigitalUplink(
            AirCompSpec(), np.ones(2), StochasticQuantizer(4)))


def test_every_learner_declares_whether_it_takes_a_noisy_mean():
    from bflnet.learners.conjugate.gaussian_mean import GaussianMean
    from bflnet.learners.conjugate.gfvl import GFVL
    from bflnet.learners.emtdamp.learner import EMTDAMP
    from bflnet.learners.federated.fedavg import FedAvg
    from bflnet.learners.langevin.fald_server import FALDRounds
    from bflnet.learners.particles.dsvgd import DSVGD

    assert FedAvg.merges_mean is True and FALDRounds.merges_mean is True
    for refused in (DSVGD, GFVL, GaussianMean, EMTDAMP):
        assert isinstance(refused.merges_mean, str) and "\n" not in refused.merges_mean


@pytest.mark.parametrize("kwargs, message", [
    ({"uplink": "aircomp"}, "^uplink: must be None"),
    ({"uplink_codec": StochasticQuantizer(4)}, "^uplink_codec: not with uplink=aircomp"),
    ({"downlink": "air"}, "^downlink: must be links or ideal"),
])
def test_bad_uplink_arguments_name_the_field(kwargs, message):
    kwargs.setdefault("uplink", aircomp(2))
    with pytest.raises(ValueError, match=message):
        ParameterServerProtocol(Pull(), StopRule(max_iterations=1), **kwargs)


def test_an_intervention_may_not_switch_the_air_uplink_to_a_codec():
    from bflnet.protocols.interventions import Phase

    request = ForgetRequest(agents=[0], after_iteration=1,
                            then=Phase(uplink_codec=StochasticQuantizer(4)))
    with pytest.raises(ValueError, match="^forget.then.uplink_codec: not with uplink=aircomp"):
        ParameterServerProtocol(Pull(), StopRule(max_iterations=2), uplink=aircomp(2),
                                interventions=[request])


def test_a_plugin_learner_behind_the_fence_declares_its_mean_merge():
    from bflnet.learners.fenced import fenced_learner
    from bflnet.validation.errors import PluginError

    fenced = fenced_learner(Pull(), "plugin pull")
    assert fenced.merges_mean is True
    sim = Simulation(0)
    sim.build_network(nx.empty_graph(2), server=True)
    result = sim.run(ParameterServerProtocol(fenced, StopRule(max_iterations=3),
                                             selector=AllAgents(), uplink=aircomp(2)))
    assert result.frame[result.frame.event == "iteration"].k_active.tolist() == [2, 2, 2]
    assert fenced_learner(Particles(), "p").merges_mean == Particles.merges_mean

    class Odd(Pull):
        merges_mean = 3

    with pytest.raises(PluginError, match="^odd: merges_mean is int 3; it must be True, False"):
        fenced_learner(Odd(), "odd")

    class BadMean(Pull):
        def merge_mean(self, state, mean, channel_var, rng):
            return state

    with pytest.raises(PluginError, match="bad.*merge_mean"):
        fenced_learner(BadMean(), "bad").merge_mean(np.zeros(D), np.zeros(D), 0.0, None)


def test_mean_gains_must_match_the_agents():
    with pytest.raises(ValueError, match=r"^mean_gains: one per agent \(3\), got 2"):
        run(3, aircomp(2))
