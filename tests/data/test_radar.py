"""Synthetic mmWave range-azimuth maps and the loader for the real ones (tiny files here)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.stats

from bflnet.data import radar as R
from bflnet.data.radar import (
    AZIMUTH_AXIS_DEG,
    LABEL_BOXES,
    MAP_SHAPE,
    RANGE_AXIS_M,
    DayShift,
    day_layout,
    draw_labels,
    draw_positions,
    draw_rcs,
    human_returns,
    load_radar_maps,
    preprocess,
    radar_maps,
    render_maps,
    simulate_radar,
)
from bflnet.data.vision import DatasetNotFoundError

#: Table I of the paper (label 0's open upper range capped by LABEL0_MAX_RANGE_M).
TABLE_I = [(2.0, R.LABEL0_MAX_RANGE_M, -60, 60), (0.6, 0.7, 40, 60), (0.3, 0.5, -10, 10),
           (0.5, 0.7, -60, -40), (1.0, 1.2, 20, 40), (0.9, 1.1, -10, 10),
           (1.0, 1.2, -40, -20), (1.2, 1.6, 10, 20), (1.1, 1.5, -5, 5), (1.2, 1.6, -20, -10)]
HALF_RANGE_BIN, HALF_AZIMUTH_BIN = R.RANGE_BIN_M / 2, R.AZIMUTH_STEP_DEG / 2
RCS_LN_SD = R.HUMAN_RCS_SD_DB * np.log(10) / 10


def quiet(layout: R.DayLayout) -> R.DayLayout:
    """``layout`` without its static returns (no leakage, robot or clutter)."""
    return dataclasses.replace(layout, leakage_amplitude=0.0, clutter=(),
                               robot=layout.robot._replace(amplitude=0.0))


def peak_cells(maps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(range bin, azimuth bin) of each map's maximum."""
    return np.unravel_index(maps.reshape(len(maps), -1).argmax(axis=1), MAP_SHAPE)


def on_bin_centres(layout: R.DayLayout, range_bin: int, azimuth_bin: int, n: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """World positions that ``layout`` maps exactly onto the given bin centre."""
    d = RANGE_AXIS_M[range_bin] - layout.range_offset_m
    a = AZIMUTH_AXIS_DEG[azimuth_bin] - layout.azimuth_rotation_deg
    return np.full(n, d), np.full(n, a)


# -- constants, shapes, scaling ---------------------------------------------------------

def test_geometry_constants_and_table_i():
    assert MAP_SHAPE == (256, 63)
    assert RANGE_AXIS_M[0] == 0 and RANGE_AXIS_M[1] == pytest.approx(0.042)
    assert RANGE_AXIS_M[-1] == pytest.approx(255 * 0.042)
    assert AZIMUTH_AXIS_DEG[0] == -75 and AZIMUTH_AXIS_DEG[-1] == 75
    assert AZIMUTH_AXIS_DEG[31] == 0 and np.allclose(np.diff(AZIMUTH_AXIS_DEG), 150 / 62)
    assert [tuple(b) for b in LABEL_BOXES] == TABLE_I
    assert 2 < R.LABEL0_MAX_RANGE_M <= 10


def test_radar_maps_shapes_dtypes_and_scale():
    x, y = radar_maps(30, np.random.default_rng(0), day=1)
    assert x.shape == (30, 256, 63) and x.dtype == np.float32 and x.flags.c_contiguous
    assert y.shape == (30,) and y.dtype == np.int64 and set(y.tolist()) <= set(range(10))
    assert np.all(x >= 0) and np.all(np.isfinite(x))
    # Raw scale ~1e3..1e4 at the leakage and near people, noise floor ~25 raw -> /1000.
    assert 1 < x.max() < 100
    assert np.median(x) == pytest.approx(day_layout(1).noise_scale * np.sqrt(2 * np.log(2))
                                         / 1000, rel=0.1)


def test_radar_maps_is_simulate_radar_then_preprocess():
    n, day = 300, 2  # more than one rendering chunk
    x, y = radar_maps(n, np.random.default_rng(3), day=day)
    rng = np.random.default_rng(3)
    labels = draw_labels(n, rng)
    scene = simulate_radar(labels, rng, day_layout(day))
    assert np.array_equal(y, scene.labels)
    assert np.array_equal(x, preprocess(scene.raw))
    assert scene.raw.dtype == np.float32 and np.all(scene.raw >= 0)


def test_preprocess_is_clip_then_divide_by_1000():
    raw = np.array([[-5.0, 0.0, 999.0, 12345.0]])
    out = preprocess(raw)
    assert out.dtype == np.float32 and out.shape == raw.shape
    assert np.array_equal(out, np.array([[0, 0, 0.999, 12.345]], dtype=np.float32))
    assert np.array_equal(preprocess(np.array([-3, 2000], dtype=np.int16)),
                          np.array([0, 2], dtype=np.float32))
    assert np.shares_memory(out, raw) is False
    with pytest.raises(ValueError, match="^raw: "):
        preprocess(np.array([1 + 1j]))


# -- geometry of the people -------------------------------------------------------------

def test_drawn_positions_are_uniform_inside_the_boxes():
    labels = np.repeat(np.arange(10), 2000)
    d, a = draw_positions(labels, np.random.default_rng(1))
    for label, (r0, r1, a0, a1) in enumerate(TABLE_I):
        dl, al = d[labels == label], a[labels == label]
        assert np.all((r0 <= dl) & (dl < r1)) and np.all((a0 <= al) & (al < a1))
        # uniform on the box: KS against U(lo, hi) in both coordinates
        assert scipy.stats.kstest(dl, "uniform", args=(r0, r1 - r0)).pvalue > 1e-3
        assert scipy.stats.kstest(al, "uniform", args=(a0, a1 - a0)).pvalue > 1e-3


@pytest.mark.parametrize("day", [0, 2])
def test_noise_free_person_peak_is_in_the_box_shifted_by_the_day_pose(day):
    layout = day_layout(day)
    labels = np.repeat(np.arange(10), 30)
    rng = np.random.default_rng(2)
    d, a = draw_positions(labels, rng)
    maps = human_returns(d, a, draw_rcs(len(labels), rng), layout)
    rb, ab = peak_cells(maps)
    r_map, a_map = RANGE_AXIS_M[rb], AZIMUTH_AXIS_DEG[ab]
    # the nearest bin centre to the apparent (pose-shifted) position
    assert np.all(np.abs(r_map - (d + layout.range_offset_m)) <= HALF_RANGE_BIN + 1e-9)
    assert np.all(np.abs(a_map - (a + layout.azimuth_rotation_deg)) <= HALF_AZIMUTH_BIN + 1e-9)
    box = np.array(TABLE_I)[labels]
    r_world, a_world = r_map - layout.range_offset_m, a_map - layout.azimuth_rotation_deg
    assert np.all((box[:, 0] - HALF_RANGE_BIN <= r_world) & (r_world <= box[:, 1] + HALF_RANGE_BIN))
    assert np.all((box[:, 2] - HALF_AZIMUTH_BIN <= a_world)
                  & (a_world <= box[:, 3] + HALF_AZIMUTH_BIN))


def test_noisy_map_minus_background_peaks_in_the_label_box():
    labels = np.repeat(np.arange(10), 40)
    scene = simulate_radar(labels, np.random.default_rng(4))
    rb, ab = peak_cells(scene.raw - scene.layout.background())
    r, a = RANGE_AXIS_M[rb], AZIMUTH_AXIS_DEG[ab]
    box = np.array(TABLE_I)[labels]
    inside = ((box[:, 0] - 0.05 <= r) & (r <= box[:, 1] + 0.05)
              & (box[:, 2] - 4 <= a) & (a <= box[:, 3] + 4))
    near = labels > 0  # the person at <= 1.6 m stands far above the noise
    assert inside[near].mean() >= 0.97
    assert inside[~near].mean() >= 0.5  # label 0, up to 5 m away, is often faint


# -- determinism and days ---------------------------------------------------------------

def test_same_seed_same_maps_and_layouts():
    a = radar_maps(12, np.random.default_rng(7), day=3, world_seed=5)
    b = radar_maps(12, np.random.default_rng(7), day=3, world_seed=5)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert day_layout(3, 5) == day_layout(3, 5)
    assert np.array_equal(day_layout(3, 5).background(), day_layout(3, 5).background())
    c = radar_maps(12, np.random.default_rng(8), day=3, world_seed=5)
    assert not np.array_equal(a[0], c[0])


def test_day_zero_is_nominal():
    layout = day_layout(0, world_seed=11)
    assert layout.gain == 1 and layout.noise_scale == R.NOISE_SCALE
    assert layout.azimuth_rotation_deg == 0 and layout.range_offset_m == 0
    assert layout.leakage_amplitude == R.LEAKAGE_AMPLITUDE
    assert R.ROBOT_RANGE_M[0] <= layout.robot.range_m <= R.ROBOT_RANGE_M[1]
    assert len(layout.clutter) == R.N_PERMANENT_CLUTTER + R.N_MOVABLE_CLUTTER
    for o in layout.clutter:
        assert R.CLUTTER_RANGE_M[0] <= o.range_m <= R.CLUTTER_RANGE_M[1]
        assert R.CLUTTER_AZIMUTH_DEG[0] <= o.azimuth_deg <= R.CLUTTER_AZIMUTH_DEG[1]
        assert R.CLUTTER_AMPLITUDE[0] <= o.amplitude <= R.CLUTTER_AMPLITUDE[1]


def test_days_differ_but_keep_the_world():
    shift = R.DEFAULT_SHIFT
    day0 = day_layout(0)
    n_perm = R.N_PERMANENT_CLUTTER
    for day in (1, 2, 3, 9999):
        layout = day_layout(day)
        assert layout.clutter[:n_perm] == day0.clutter[:n_perm]  # walls stay
        for moved, start in zip(layout.clutter[n_perm:], day0.clutter[n_perm:], strict=True):
            # moved by [1/2, 1] x the magnitude unless clipped at the edge of the clutter area
            for field, name, lo_hi in (("range_m", "clutter_range_m", R.CLUTTER_RANGE_M),
                                       ("azimuth_deg", "clutter_azimuth_deg",
                                        R.CLUTTER_AZIMUTH_DEG)):
                step, size = abs(getattr(moved, field) - getattr(start, field)), getattr(
                    shift, name)
                assert step <= size + 1e-9
                assert step >= 0.5 * size - 1e-9 or getattr(moved, field) in lo_hi
            step_db = abs(20 * np.log10(moved.amplitude / start.amplitude))
            assert 0.5 * shift.clutter_db - 1e-9 <= step_db <= shift.clutter_db + 1e-9
        offsets = {
            "gain_db": 20 * np.log10(layout.gain),
            "noise_floor_db": 20 * np.log10(layout.noise_scale / R.NOISE_SCALE),
            "azimuth_rotation_deg": layout.azimuth_rotation_deg,
            "range_offset_m": layout.range_offset_m,
            "robot_range_m": layout.robot.range_m - day0.robot.range_m,
            "robot_azimuth_deg": layout.robot.azimuth_deg - day0.robot.azimuth_deg,
            "leakage_db": 20 * np.log10(layout.leakage_amplitude / R.LEAKAGE_AMPLITUDE),
        }
        for name, value in offsets.items():
            size = getattr(shift, name)
            assert 0.5 * size - 1e-9 <= abs(value) <= size + 1e-9, (day, name, value)
        diff = np.abs(layout.background() - day0.background())
        assert diff.max() > 100  # robot, clutter and leakage all moved or changed
    assert day_layout(1, world_seed=1).clutter[:n_perm] != day0.clutter[:n_perm]


def test_shift_scaling_tunes_the_offsets():
    base, double = day_layout(2), day_layout(2, shift=R.DEFAULT_SHIFT.scaled(2))
    assert double.azimuth_rotation_deg == pytest.approx(2 * base.azimuth_rotation_deg)
    assert double.range_offset_m == pytest.approx(2 * base.range_offset_m)
    assert np.log(double.gain) == pytest.approx(2 * np.log(base.gain))
    frozen = day_layout(2, shift=DayShift().scaled(0))
    assert dataclasses.replace(frozen, day=0) == day_layout(0)  # no shift at all
    assert np.array_equal(frozen.background(), day_layout(0).background())


def test_days_change_the_maps_not_the_people():
    scenes = [simulate_radar(np.arange(10).repeat(3), np.random.default_rng(5), day_layout(d))
              for d in (0, 1)]
    for field in ("labels", "range_m", "azimuth_deg", "rcs_m2"):
        assert np.array_equal(getattr(scenes[0], field), getattr(scenes[1], field))
    assert not np.allclose(scenes[0].raw, scenes[1].raw)


# -- labels -----------------------------------------------------------------------------

def test_balanced_labels_have_equal_counts_and_random_leftovers():
    counts = np.bincount(draw_labels(1003, np.random.default_rng(0)), minlength=10)
    assert sorted(counts.tolist()) == [100] * 7 + [101] * 3
    rng = np.random.default_rng(1)
    extra = np.bincount(np.concatenate([draw_labels(7, rng) for _ in range(1000)]),
                        minlength=10)  # 7 of the 10 labels, each with probability 0.7
    assert scipy.stats.chisquare(extra).pvalue > 1e-3


def test_unbalanced_labels_are_uniform():
    y = draw_labels(20_000, np.random.default_rng(2), balanced=False)
    assert y.dtype == np.int64
    assert scipy.stats.chisquare(np.bincount(y, minlength=10)).pvalue > 1e-3
    assert len(set(np.bincount(y[:1003], minlength=10).tolist())) > 2  # not forced equal


# -- amplitude law and noise ------------------------------------------------------------

@pytest.mark.parametrize("day", [0, 1])
def test_person_peak_falls_as_one_over_range_squared(day):
    layout = day_layout(day)
    n, (bin_near, bin_far) = 800, (12, 30)  # apparent ranges 0.504 m and 1.26 m
    rng = np.random.default_rng(6)
    means, ses = [], []
    for rbin in (bin_near, bin_far):
        d, a = on_bin_centres(layout, rbin, 40, n)
        peaks = human_returns(d, a, draw_rcs(n, rng), layout).max(axis=(1, 2))
        means.append(peaks.mean())
        ses.append(peaks.std() / np.sqrt(n))
        # E[gain K sqrt(rcs)] / R^2, sqrt of a log-normal: median^1/2 exp(s^2 / 8)
        expected = (layout.gain * R.HUMAN_AMPLITUDE_1M * np.sqrt(R.HUMAN_RCS_MEDIAN_M2)
                    * np.exp(RCS_LN_SD**2 / 8) / RANGE_AXIS_M[rbin] ** 2)
        assert abs(peaks.mean() - expected) < 4 * ses[-1]
    ratio = means[0] / means[1]
    se = ratio * np.hypot(ses[0] / means[0], ses[1] / means[1])
    assert abs(ratio - (bin_far / bin_near) ** 2) < 4 * se


def test_noisy_peak_power_follows_the_rician_closed_form():
    # E|S + noise|^2 = E[S^2] + 2 sigma^2 with S = K sqrt(rcs) / R^2 at the person's cell.
    layout = quiet(day_layout(0))
    sigma, n = layout.noise_scale, 600
    rng = np.random.default_rng(9)
    excess = []
    for rbin in (12, 30):
        d, a = on_bin_centres(layout, rbin, 31, n)
        raw = render_maps(d, a, draw_rcs(n, rng), rng, layout)
        power = raw[:, rbin, 31].astype(np.float64) ** 2
        signal = R.HUMAN_AMPLITUDE_1M**2 * R.HUMAN_RCS_MEDIAN_M2 * np.exp(RCS_LN_SD**2 / 2) \
            / RANGE_AXIS_M[rbin] ** 4
        assert abs(power.mean() - (signal + 2 * sigma**2)) < 4 * power.std() / np.sqrt(n)
        excess.append(power.mean() - 2 * sigma**2)
    assert excess[0] / excess[1] == pytest.approx((30 / 12) ** 4, rel=0.15)


def test_signal_free_cells_are_rayleigh_with_the_noise_floor_scale():
    layout = dataclasses.replace(day_layout(0), gain=0.0)  # every return off
    sigma = layout.noise_scale
    rng = np.random.default_rng(10)
    raw = render_maps(np.ones(40), np.zeros(40), np.ones(40), rng, layout).ravel()
    m = raw.size
    var = (4 - np.pi) / 2 * sigma**2
    assert abs(raw.mean() - sigma * np.sqrt(np.pi / 2)) < 4 * np.sqrt(var / m)
    second = (raw.astype(np.float64) ** 2).mean()  # E X^2 = 2 s^2, Var X^2 = 4 s^4
    assert abs(second - 2 * sigma**2) < 4 * 2 * sigma**2 / np.sqrt(m)
    assert raw.var() == pytest.approx(var, rel=0.01)
    sub = rng.choice(raw, 5000, replace=False)
    assert scipy.stats.kstest(sub, "rayleigh", args=(0, sigma)).pvalue > 1e-3


def test_far_noise_region_of_a_shifted_day_is_rayleigh_at_that_days_floor():
    layout = day_layout(1)
    assert layout.noise_scale != R.NOISE_SCALE
    x, _ = radar_maps(60, np.random.default_rng(12), day=1)
    bg = layout.background()
    free = np.zeros(MAP_SHAPE, dtype=bool)
    free[160:] = True  # beyond every person (<= 5 m + margin)
    free &= bg < 1e-3 * layout.noise_scale  # away from clutter
    assert free.sum() > 2000
    cells = x[:, free].astype(np.float64).ravel() * R.RAW_SCALE
    sigma, m = layout.noise_scale, cells.size
    assert abs(cells.mean() - sigma * np.sqrt(np.pi / 2)) < 4 * np.sqrt(
        (4 - np.pi) / 2 * sigma**2 / m)
    assert abs((cells**2).mean() - 2 * sigma**2) < 4 * 2 * sigma**2 / np.sqrt(m)


def test_near_range_leakage_dominates_the_first_bins():
    layout = day_layout(0)
    bg = layout.background()
    assert bg[0].min() > 0.2 * R.LEAKAGE_AMPLITUDE
    assert bg[0].min() > 4 * bg[20:].max()  # stronger than the robot and any clutter
    leak = dataclasses.replace(quiet(layout), leakage_amplitude=R.LEAKAGE_AMPLITUDE).background()
    rows = np.arange(8)
    assert np.allclose(leak[rows, 31], R.LEAKAGE_AMPLITUDE * np.exp(-rows / R.LEAKAGE_DECAY_BINS),
                       rtol=1e-5)
    assert np.allclose(leak[0, [0, -1]], R.LEAKAGE_AMPLITUDE * (R.LEAKAGE_AZIMUTH_FLOOR + (
        1 - R.LEAKAGE_AZIMUTH_FLOOR) * 2 ** -((75 / (R.LEAKAGE_AZIMUTH_FWHM_DEG / 2)) ** 2)),
        rtol=1e-5)


# -- input validation -------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, -1, 2.5, True, "3", None, R.MAX_MAPS + 1, 10**9])
def test_bad_n(n):
    with pytest.raises(ValueError, match=r"^n: must be an integer in 1\.\.") as exc:
        radar_maps(n, np.random.default_rng(0))
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("day", [-1, 1.0, 1.5, True, "1", R.MAX_DAY + 1, 10**12])
def test_bad_day(day):
    with pytest.raises(ValueError, match=r"^day: must be an integer in 0\.\.9999"):
        radar_maps(3, np.random.default_rng(0), day=day)


@pytest.mark.parametrize(("call", "field"), [
    (lambda: radar_maps(3, 42), "rng"),
    (lambda: radar_maps(3, np.random.default_rng(0), world_seed=-1), "world_seed"),
    (lambda: radar_maps(3, np.random.default_rng(0), shift="big"), "shift"),
    (lambda: DayShift(gain_db=-1.0), "gain_db"),
    (lambda: DayShift(range_offset_m=float("nan")), "range_offset_m"),
    (lambda: DayShift(clutter_db=True), "clutter_db"),
    (lambda: DayShift().scaled(-1), "factor"),
    (lambda: simulate_radar([0, 10], np.random.default_rng(0)), "labels"),
    (lambda: simulate_radar([[0, 1]], np.random.default_rng(0)), "labels"),
    (lambda: simulate_radar([0.5], np.random.default_rng(0)), "labels"),
    (lambda: simulate_radar([1], np.random.default_rng(0), layout=3), "layout"),
    (lambda: human_returns([1.0, 2.0], [0.0], [1.0, 1.0]), "azimuth_deg"),
    (lambda: human_returns([0.0], [0.0], [1.0]), "range_m"),
    (lambda: human_returns([1.0], [np.nan], [1.0]), "azimuth_deg"),
    (lambda: human_returns([1.0], [0.0], [-1.0]), "rcs_m2"),
    (lambda: draw_rcs(0, np.random.default_rng(0)), "n"),
])
def test_bad_inputs_give_one_line_errors_naming_the_field(call, field):
    with pytest.raises(ValueError, match=f"^{field}: ") as exc:
        call()
    assert "\n" not in str(exc.value)


# -- loader -----------------------------------------------------------------------------

def raw_maps(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw-scale maps (some negative values, as FFT exports may have) and labels."""
    rng = np.random.default_rng(seed)
    return rng.normal(300, 600, size=(n, *MAP_SHAPE)), rng.integers(0, 10, size=n)


def write_dataset(root: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """day0 (N-first maps, (N, 1) labels, misspelt test_dat) and day1 ((256, 63, N) maps,
    (1, N) labels, test_data), as .mat files like the published data set."""
    written = {}
    for day, test_dir in ((0, "test_dat"), (1, "test_data")):
        train, test = root / f"day{day}" / "train_data", root / f"day{day}" / test_dir
        train.mkdir(parents=True)
        test.mkdir()
        for k in (1, 2):
            x, y = raw_maps(2 + k, seed=10 * day + k)
            written[f"day{day}/{k}"] = (x, y)
            stored = x if day == 0 else np.moveaxis(x, 0, -1)
            labels = y[:, None] if day == 0 else y[None, :]
            scipy.io.savemat(train / f"mmwave_data_train_{k}.mat",
                             {f"mmwave_data_train_{k}": stored, f"label_train_{k}": labels})
        x, y = raw_maps(4, seed=10 * day + 9)
        written[f"day{day}/test"] = (x, y)
        stored = x if day == 0 else np.moveaxis(x, 0, -1)
        scipy.io.savemat(test / "mmwave_data_test.mat",
                         {"mmwave_data_test": stored, "label_test": y.astype(np.float64)})
    return written


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("radar")
    return root, write_dataset(root)


def assert_same(got: tuple[np.ndarray, np.ndarray], raw: tuple[np.ndarray, np.ndarray]):
    x, y = got
    assert x.dtype == np.float32 and x.shape == raw[0].shape and x.flags.c_contiguous
    assert y.dtype == np.int64 and np.array_equal(y, raw[1])
    assert np.array_equal(x, (raw[0].astype(np.float32).clip(0) / 1000).astype(np.float32))


@pytest.mark.parametrize("day", [0, 1])
def test_loader_reads_mat_days_in_both_axis_orders(dataset, day):
    root, written = dataset
    train = load_radar_maps(root, day=day)
    assert list(train) == [1, 2]
    for k, pair in train.items():
        assert_same(pair, written[f"day{day}/{k}"])
    assert_same(load_radar_maps(root, day=day, split="test"), written[f"day{day}/test"])
    # the day folder itself, and a chosen device
    only = load_radar_maps(root / f"day{day}", devices=[2])
    assert list(only) == [2]
    assert_same(only[2], written[f"day{day}/2"])


def test_loader_reads_npy_pairs_and_unsuffixed_mat_keys(tmp_path):
    x3, y3 = raw_maps(3, seed=1)
    np.save(tmp_path / "x_train_3.npy", x3[..., None].astype(np.float32))  # channel axis
    np.save(tmp_path / "y_train_3.npy", y3)
    x5, y5 = raw_maps(2, seed=2)
    scipy.io.savemat(tmp_path / "mmwave_data_train_5.mat",
                     {"mmwave_data_train": x5, "label_train": y5})
    xt, yt = raw_maps(2, seed=3)
    np.save(tmp_path / "x_test.npy", np.moveaxis(xt, 0, -1))
    np.save(tmp_path / "y_test.npy", yt[:, None])
    train = load_radar_maps(tmp_path)
    assert list(train) == [3, 5]
    assert_same(train[3], (x3.astype(np.float32), y3))
    assert_same(train[5], (x5, y5))
    assert_same(load_radar_maps(tmp_path, split="test"), (xt, yt))


def test_loader_prefers_mat_over_npy(tmp_path):
    x, y = raw_maps(2, seed=4)
    scipy.io.savemat(tmp_path / "mmwave_data_train_1.mat",
                     {"mmwave_data_train_1": x, "label_train_1": y})
    np.save(tmp_path / "x_train_1.npy", np.zeros((2, *MAP_SHAPE)))
    np.save(tmp_path / "y_train_1.npy", np.zeros(2, dtype=np.int64))
    assert_same(load_radar_maps(tmp_path)[1], (x, y))


def test_loader_handles_a_single_map(tmp_path):
    x, y = raw_maps(1, seed=5)
    scipy.io.savemat(tmp_path / "mmwave_data_test.mat",
                     {"mmwave_data_test": x[0], "label_test": y})
    assert_same(load_radar_maps(tmp_path, split="test"), (x, y))


def one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_loader_missing_folder_and_files(tmp_path):
    with pytest.raises(DatasetNotFoundError) as exc:
        load_radar_maps(tmp_path / "nowhere")
    message = one_line(exc)
    assert "nowhere" in message and "10.21227/0wmc-hq36" in message
    assert isinstance(exc.value, FileNotFoundError)
    with pytest.raises(FileNotFoundError) as exc:
        load_radar_maps(tmp_path, day=2)
    assert "day2" in one_line(exc)
    (tmp_path / "train_data").mkdir()
    with pytest.raises(FileNotFoundError) as exc:
        load_radar_maps(tmp_path)
    message = one_line(exc)
    assert "mmwave_data_train_<k>.mat" in message and "train_data" in message
    assert "IEEE Dataport" in message
    with pytest.raises(FileNotFoundError, match="mmwave_data_test.mat") as exc:
        load_radar_maps(tmp_path, split="test")
    one_line(exc)


def test_loader_missing_device_and_label_file(dataset, tmp_path):
    root, _ = dataset
    with pytest.raises(FileNotFoundError, match="mmwave_data_train_7.mat") as exc:
        load_radar_maps(root, day=0, devices=[1, 7])
    one_line(exc)
    np.save(tmp_path / "x_train_1.npy", np.zeros((2, *MAP_SHAPE)))
    with pytest.raises(FileNotFoundError, match="y_train_1.npy") as exc:
        load_radar_maps(tmp_path)
    one_line(exc)


def bad_mat(path: Path, **variables) -> Path:
    scipy.io.savemat(path / "mmwave_data_train_1.mat", variables)
    return path


GOOD_X, GOOD_Y = np.ones((3, *MAP_SHAPE)), np.array([0, 1, 9])


@pytest.mark.parametrize(("variables", "pattern"), [
    ({"label_train_1": GOOD_Y}, r"no variable 'mmwave_data_train_1' or 'mmwave_data_train'"),
    ({"mmwave_data_train_1": GOOD_X}, r"no variable 'label_train_1' or 'label_train'"),
    ({"mmwave_data_train_1": np.ones((3, 255, 63)), "label_train_1": GOOD_Y},
     r"\[mmwave_data_train_1\]: maps must have shape"),
    ({"mmwave_data_train_1": np.ones((3, 63, 256)), "label_train_1": GOOD_Y},
     r"\[mmwave_data_train_1\]: maps must have shape"),
    ({"mmwave_data_train_1": GOOD_X, "label_train_1": np.array([0, 1, 10])},
     r"\[label_train_1\]: labels must lie in 0\.\.9"),
    ({"mmwave_data_train_1": GOOD_X, "label_train_1": np.array([0, -1, 2])},
     r"\[label_train_1\]: labels must lie in 0\.\.9"),
    ({"mmwave_data_train_1": GOOD_X, "label_train_1": np.array([0, 1.5, 2])},
     r"\[label_train_1\]: labels must be whole numbers"),
    ({"mmwave_data_train_1": GOOD_X, "label_train_1": np.array([0, 1])},
     r"\[label_train_1\]: 2 labels for 3 maps"),
    ({"mmwave_data_train_1": GOOD_X, "label_train_1": np.zeros((3, 10))},
     r"\[label_train_1\]: labels must have shape"),
    ({"mmwave_data_train_1": np.full((3, *MAP_SHAPE), np.nan), "label_train_1": GOOD_Y},
     r"\[mmwave_data_train_1\]: maps contain NaN"),
    ({"mmwave_data_train_1": GOOD_X * 1j, "label_train_1": GOOD_Y},
     r"\[mmwave_data_train_1\]: maps must be real"),
])
def test_loader_malformed_mat_names_file_and_variable(tmp_path, variables, pattern):
    bad_mat(tmp_path, **variables)
    with pytest.raises(ValueError, match=pattern) as exc:
        load_radar_maps(tmp_path)
    message = one_line(exc)
    assert "mmwave_data_train_1.mat" in message


def test_loader_unreadable_files(tmp_path):
    (tmp_path / "mmwave_data_train_1.mat").write_bytes(b"not a mat file" * 20)
    with pytest.raises(ValueError, match=r"mmwave_data_train_1\.mat: cannot read") as exc:
        load_radar_maps(tmp_path)
    one_line(exc)
    (tmp_path / "x_test.npy").write_bytes(b"junk")
    (tmp_path / "y_test.npy").write_bytes(b"junk")
    with pytest.raises(ValueError, match=r"x_test\.npy: cannot read") as exc:
        load_radar_maps(tmp_path, split="test")
    one_line(exc)


def test_loader_argument_errors(dataset):
    root, _ = dataset
    with pytest.raises(ValueError, match="^split: "):
        load_radar_maps(root, day=0, split="valid")
    with pytest.raises(ValueError, match="^day: "):
        load_radar_maps(root, day=-1)
    with pytest.raises(ValueError, match="^devices: "):
        load_radar_maps(root, day=0, split="test", devices=[1])
    with pytest.raises(ValueError, match="^devices: "):
        load_radar_maps(root, day=0, devices=["one"])
