"""The example scenario scripts run, and their learner reaches the exact posterior."""

import runpy
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_custom_learner_example_runs_under_both_patterns_and_is_exact():
    module = runpy.run_path(str(EXAMPLES / "custom_learner.py"))
    data = module["make_data"](12, 0)
    x = np.concatenate(list(data.values()))
    exact_mean = x.sum() / (1.0 + len(x))  # prior N(0, 1), unit noise variance
    for frame in (module["run_random_walk"](), module["run_parameter_server"](),
                  module["run_gossip"]()):
        rows = frame[frame.event.isin(("iteration", "round"))]
        assert {"time_s", "cum_bits", "posterior_mean"} <= set(frame.columns)
        assert rows.time_s.is_monotonic_increasing
        # Every agent has been scheduled by the end, so the posterior is exact.
        assert np.isclose(rows.posterior_sd.iloc[-1], (1.0 + len(x)) ** -0.5)
        assert np.isclose(rows.posterior_mean.iloc[-1], exact_mean)


def test_example_runs_as_a_script(capsys):
    runpy.run_path(str(EXAMPLES / "custom_learner.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "random walk:" in out and "parameter server:" in out and "gossip:" in out
