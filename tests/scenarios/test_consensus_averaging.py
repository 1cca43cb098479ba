import numpy as np

from bflnet.runs.registry import run_scenario


def test_rows_carry_time_bits_and_deviation_and_deviation_falls_geometrically():
    frame = run_scenario("consensus-averaging", {"graph": "ring", "K": 20}, seed=3)
    for col in ("time_s", "iteration", "cum_bits", "cum_bits_delivered", "max_deviation"):
        assert col in frame.columns
    dev = frame.max_deviation.to_numpy()
    assert dev[-1] < 1e-3 * dev[0]
    gap = frame.spectral_gap.iloc[0]
    slope = np.polyfit(np.arange(100, 300), np.log(dev[100:300]), 1)[0]
    assert abs(np.exp(slope) - (1 - gap)) < 0.005
    assert frame.time_s.is_monotonic_increasing and frame.cum_bits.is_monotonic_increasing


def test_same_seed_same_frame_different_seed_different_frame():
    params = {"graph": "random-geometric", "K": 15, "channel": "rayleigh", "rounds": 40,
              "max_attempts": 2}
    a = run_scenario("consensus-averaging", params, seed=1)
    b = run_scenario("consensus-averaging", params, seed=1)
    c = run_scenario("consensus-averaging", params, seed=2)
    assert a.equals(b)
    assert not a.equals(c)


def test_every_channel_runs_end_to_end():
    lossy = {"ideal": {}, "fixed": {"loss_prob": 0.1, "max_attempts": 1}}
    for channel in ("ideal", "fixed", "gilbert-elliott", "rayleigh", "rician"):
        extra = lossy.get(channel, {"max_attempts": 1})  # only the settings each one reads
        frame = run_scenario("consensus-averaging",
                             {"channel": channel, "K": 6, "rounds": 30, **extra}, seed=0)
        assert len(frame) == 31
        assert frame.max_deviation.iloc[-1] < frame.max_deviation.iloc[0]


def test_spectral_gap_of_a_torus_above_the_dense_limit_is_the_closed_form():
    """K = 2116 = 46 x 46 (sparse weights, Lanczos gap): (2 - 2 cos(2 pi / 46)) / 5."""
    frame = run_scenario("consensus-averaging", {"graph": "torus", "K": 2116, "rounds": 1},
                         seed=0)
    expected = (2 - 2 * np.cos(2 * np.pi / 46)) / 5
    assert abs(frame.spectral_gap.iloc[0] - expected) < 1e-12
