"""mmWave range-azimuth radar maps (CD-BFL, Sec. IV): a synthetic generator and a loader.

A map is ``256 × 63`` non-negative magnitudes: range bin ``r`` is at ``r · 4.2 cm`` (0 to
10.71 m), the 63 azimuth bins are uniform over ±75°. The 10 labels are the regions of
interest of Table I (:data:`LABEL_BOXES`); a person stands uniformly inside the label's
range/azimuth box. Label 0 (``d > 2 m``) is open-ended in the paper; here it is capped at
:data:`LABEL0_MAX_RANGE_M` = 5 m (a worker elsewhere in the robot cell, inside the 10.7 m map
and still above the noise floor). Ranges are from the radar, as in the maps.

Synthetic scene, in raw magnitudes (the real maps' scale, up to ~1e4):

* person: a return ``HUMAN_RANGE_SIGMA_BINS`` deep (Gaussian, FWHM ≈ 3.5 bins) and
  ``ANGLE_RESOLUTION_DEG`` = 25° wide (Gaussian FWHM), peak amplitude
  ``gain · HUMAN_AMPLITUDE_1M · sqrt(σ / 1 m²) / R²`` with a log-normal radar cross-section
  σ (median ``HUMAN_RCS_MEDIAN_M2``, ``HUMAN_RCS_SD_DB`` dB spread) and R the range;
* per day: a robot (fixed position), static clutter (``N_PERMANENT_CLUTTER`` fixed
  reflectors and ``N_MOVABLE_CLUTTER`` that move from day to day) and near-range
  leakage ``LEAKAGE_AMPLITUDE · exp(-r / LEAKAGE_DECAY_BINS)`` in the first bins;
* noise: each cell is ``|S + σ_n (g₁ + i g₂)|`` with S the sum of the (noise-free) returns
  and ``g`` standard normal, so signal-free cells are Rayleigh with scale σ_n (the noise
  floor, mean ``σ_n √(π/2)``) and cells with a return are Rician.

Days shift the distribution (:class:`DayShift`): on day ``k ≥ 1`` the receiver gain, noise
floor, leakage, radar pose (azimuth rotation, range offset), robot position and the movable
clutter (position, strength) each move by a signed offset whose size is uniform in
``[½, 1] ×`` its magnitude. Day ``k``'s layout (:func:`day_layout`) depends only on
``(world_seed, k)``; day 0 (training) has the nominal pose, gain, noise and clutter. The labels stay
world boxes: a rotated radar sees the same person at a shifted map position. The maps
themselves come from the caller's ``numpy.random.Generator``.

Labels: :func:`radar_maps` balances them by default (every label ``n // 10`` times, the
``n % 10`` left over on distinct random labels); ``balanced=False`` draws them i.i.d. uniform.

Preprocessing (:func:`preprocess`) is the authors' ``x.astype(float32).clip(0) / 1000``
(without their trailing channel axis), for synthetic and real maps alike.

>>> x, y = radar_maps(20, np.random.default_rng(0), day=1)
>>> x.shape, x.dtype, y.dtype, np.bincount(y).tolist()
((20, 256, 63), dtype('float32'), dtype('int64'), [2, 2, 2, 2, 2, 2, 2, 2, 2, 2])

The real maps (IEEE Dataport "Federated Learning: mmWave MIMO Radar Dataset for Testing",
DOI 10.21227/0wmc-hq36) are read by :func:`load_radar_maps`; it never downloads anything.
"""

from __future__ import annotations

import dataclasses
import numbers
import operator
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple, overload

import numpy as np
import scipy.io

from bflnet.data.vision import DatasetNotFoundError

Split = Literal["train", "test"]

# -- geometry of the maps ---------------------------------------------------------------

N_RANGE_BINS = 256
N_AZIMUTH_BINS = 63
MAP_SHAPE = (N_RANGE_BINS, N_AZIMUTH_BINS)
RANGE_BIN_M = 0.042  #: range bin r is at r · RANGE_BIN_M metres
AZIMUTH_MAX_DEG = 75.0  #: azimuth bins are uniform over [-AZIMUTH_MAX_DEG, AZIMUTH_MAX_DEG]
AZIMUTH_STEP_DEG = 2 * AZIMUTH_MAX_DEG / (N_AZIMUTH_BINS - 1)
ANGLE_RESOLUTION_DEG = 25.0  #: the radar's angular resolution (width of a point return)
RANGE_AXIS_M = RANGE_BIN_M * np.arange(N_RANGE_BINS)
AZIMUTH_AXIS_DEG = np.linspace(-AZIMUTH_MAX_DEG, AZIMUTH_MAX_DEG, N_AZIMUTH_BINS)
RANGE_AXIS_M.flags.writeable = False
AZIMUTH_AXIS_DEG.flags.writeable = False

#: Raw magnitudes are divided by this in :func:`preprocess` (after clipping at 0).
RAW_SCALE = 1000.0
MAP_BYTES = N_RANGE_BINS * N_AZIMUTH_BINS * 4  #: one float32 map (64 512 bytes)
MAX_BYTES = 4 * 2**30  #: refuse to generate more than this many bytes of maps
MAX_MAPS = MAX_BYTES // MAP_BYTES  #: 66 576 maps
MAX_DAY = 9999
_CHUNK = 256  # maps rendered at once (bounds the temporaries to ~50 MB)

# -- labels (Table I) -------------------------------------------------------------------


class LabelBox(NamedTuple):
    """A Table I region of interest: ``range_min_m < d < range_max_m`` and
    ``azimuth_min_deg < a < azimuth_max_deg``."""

    range_min_m: float
    range_max_m: float
    azimuth_min_deg: float
    azimuth_max_deg: float


N_CLASSES = 10
LABEL0_MAX_RANGE_M = 5.0  #: label 0 is "d > 2 m" in Table I; the generator draws 2 < d < 5 m
LABEL_BOXES: tuple[LabelBox, ...] = (
    LabelBox(2.0, LABEL0_MAX_RANGE_M, -60.0, 60.0),
    LabelBox(0.6, 0.7, 40.0, 60.0),
    LabelBox(0.3, 0.5, -10.0, 10.0),
    LabelBox(0.5, 0.7, -60.0, -40.0),
    LabelBox(1.0, 1.2, 20.0, 40.0),
    LabelBox(0.9, 1.1, -10.0, 10.0),
    LabelBox(1.0, 1.2, -40.0, -20.0),
    LabelBox(1.2, 1.6, 10.0, 20.0),
    LabelBox(1.1, 1.5, -5.0, 5.0),
    LabelBox(1.2, 1.6, -20.0, -10.0),
)
_BOXES = np.array(LABEL_BOXES, dtype=np.float64)  # (10, 4)

# -- scene (raw magnitude units) --------------------------------------------------------

HUMAN_AMPLITUDE_1M = 1500.0  #: raw peak of a 1 m² target at 1 m (day gain 1)
HUMAN_RCS_MEDIAN_M2 = 0.5  #: median radar cross-section of a person
HUMAN_RCS_SD_DB = 3.0  #: standard deviation of the person's RCS in dB (log-normal)
HUMAN_RANGE_SIGMA_BINS = 1.5  #: depth of the person's return (Gaussian sigma, range bins)
HUMAN_AZIMUTH_FWHM_DEG = ANGLE_RESOLUTION_DEG

ROBOT_AMPLITUDE = 600.0  #: raw peak of the robot's return (day gain 1)
ROBOT_RANGE_M = (1.8, 2.6)  #: nominal robot range, drawn once per world seed
ROBOT_AZIMUTH_DEG = (-30.0, 30.0)  #: nominal robot azimuth, drawn once per world seed
ROBOT_RANGE_SIGMA_BINS = 4.0
ROBOT_AZIMUTH_FWHM_DEG = 35.0

N_PERMANENT_CLUTTER = 3  #: reflectors that never move (walls, pillars, benches)
N_MOVABLE_CLUTTER = 3  #: reflectors moved every day (carts, boxes, tools)
CLUTTER_RANGE_M = (0.8, 10.0)
CLUTTER_AZIMUTH_DEG = (-70.0, 70.0)
CLUTTER_AMPLITUDE = (40.0, 400.0)  #: raw peak, drawn log-uniformly
CLUTTER_RANGE_SIGMA_BINS = 1.0
CLUTTER_AZIMUTH_FWHM_DEG = ANGLE_RESOLUTION_DEG

LEAKAGE_AMPLITUDE = 8000.0  #: raw TX→RX leakage at range bin 0, boresight (day gain 1)
LEAKAGE_DECAY_BINS = 1.5  #: leakage falls as exp(-r / LEAKAGE_DECAY_BINS)
LEAKAGE_AZIMUTH_FLOOR = 0.3  #: leakage azimuth profile: floor + (1 - floor) · Gaussian
LEAKAGE_AZIMUTH_FWHM_DEG = 60.0

NOISE_SCALE = 20.0  #: Rayleigh scale of the receiver noise on day 0 (raw units)

_FWHM_PER_SIGMA = 2.0 * np.sqrt(2.0 * np.log(2.0))
_SEED_TAG = 0x52414441  # "RADA": keeps these streams apart from other users of world_seed
_RANGE_BINS = np.arange(N_RANGE_BINS, dtype=np.float64)
_AZIMUTH_BINS = np.arange(N_AZIMUTH_BINS, dtype=np.float64)


# -- validation -------------------------------------------------------------------------

def _int(name: str, value: Any, lo: int, hi: int) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        v = operator.index(value)
    except TypeError:
        raise ValueError(f"{name}: must be an integer in {lo}..{hi}, got {value!r}") from None
    if not lo <= v <= hi:
        raise ValueError(f"{name}: must be an integer in {lo}..{hi}, got {value!r}")
    return v


def _check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng: must be a numpy.random.Generator (np.random.default_rng(seed)), "
                         f"got {type(rng).__name__}")
    return rng


def _vector(name: str, value: Any, n: int | None = None) -> np.ndarray:
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: must be a 1-D array of real numbers") from None
    if v.ndim != 1 or (n is not None and len(v) != n):
        want = "a 1-D array" if n is None else f"a 1-D array of length {n}"
        raise ValueError(f"{name}: must be {want}, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: must be finite")
    return v


def _check_labels(labels: Any) -> np.ndarray:
    y = np.asarray(labels)
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"labels: must be a 1-D integer array, got {y.dtype} {y.shape}")
    if not 1 <= len(y) <= MAX_MAPS:
        raise ValueError(f"labels: must hold 1..{MAX_MAPS} labels (at most 4 GiB of maps), "
                         f"got {len(y)}")
    if y.min() < 0 or y.max() >= N_CLASSES:
        raise ValueError(f"labels: must lie in 0..{N_CLASSES - 1}, got {y.min()}..{y.max()}")
    return y.astype(np.int64)


# -- preprocessing ----------------------------------------------------------------------

def preprocess(raw: Any) -> np.ndarray:
    """The authors' preprocessing: ``float32(raw).clip(0) / RAW_SCALE`` (a fresh C-ordered
    float32 array of the same shape; no channel axis is added)."""
    a = np.asarray(raw)
    if not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise ValueError(f"raw: must be real magnitudes (integer or float), got {a.dtype}")
    x = a.astype(np.float32, order="C")
    np.clip(x, 0, None, out=x)
    x /= np.float32(RAW_SCALE)
    return x


# -- day layouts ------------------------------------------------------------------------

class Reflector(NamedTuple):
    """A static point-like return in the world frame (raw peak amplitude at day gain 1)."""

    range_m: float
    azimuth_deg: float
    amplitude: float
    range_sigma_bins: float
    azimuth_fwhm_deg: float


@dataclass(frozen=True, slots=True)
class DayShift:
    """Magnitudes of the day-to-day change (day ``k ≥ 1`` against day 0).

    Each field is the size of a signed offset drawn per day (per movable reflector for the
    ``clutter_*`` fields), with ``|offset|`` uniform in ``[½, 1] ×`` the field. The defaults
    move the gain and the noise floor by 1–2 dB, rotate the radar by 3–6° (1.3–2.5
    azimuth bins), move it 3.5–7 cm in range (0.8–1.7 bins), move the robot by 10–20 cm
    and 3–6°,
    change the leakage by 0.75–1.5 dB, and move each movable reflector by 0.5–1 m and
    7.5–15° and change its strength by 1.5–3 dB. :meth:`scaled` tunes all of them at once;
    ``scaled(0)`` makes every day identical to day 0.

    With these defaults the classic LeNet-5 trained on 2000 day-0 maps (99.5 % day-0 test
    accuracy) loses 8.6 points on average on days 1-4 (3.0-19.0 by day; 5.2 on the
    critical labels 1-6), by ``scripts/radar_day_shift.py``.
    """

    gain_db: float = 2.0
    noise_floor_db: float = 2.0
    azimuth_rotation_deg: float = 6.0
    range_offset_m: float = 0.07
    robot_range_m: float = 0.2
    robot_azimuth_deg: float = 6.0
    leakage_db: float = 1.5
    clutter_range_m: float = 1.0
    clutter_azimuth_deg: float = 15.0
    clutter_db: float = 3.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not (
                    np.isfinite(v) and 0 <= v <= 1e3):
                raise ValueError(f"{f.name}: must be a finite number in [0, 1000], got {v!r}")

    def scaled(self, factor: float) -> DayShift:
        """The same shift with every magnitude times ``factor`` (≥ 0)."""
        if isinstance(factor, bool) or not isinstance(factor, numbers.Real) or not (
                np.isfinite(factor) and factor >= 0):
            raise ValueError(f"factor: must be a finite number >= 0, got {factor!r}")
        return dataclasses.replace(self, **{
            f.name: float(getattr(self, f.name)) * factor for f in dataclasses.fields(self)})


DEFAULT_SHIFT = DayShift()
_SHIFT_FIELDS = ("gain_db", "noise_floor_db", "azimuth_rotation_deg", "range_offset_m",
                 "robot_range_m", "robot_azimuth_deg", "leakage_db")
_CLUTTER_FIELDS = ("clutter_range_m", "clutter_azimuth_deg", "clutter_db")


@dataclass(frozen=True, slots=True)
class DayLayout:
    """Everything fixed for one day: gain, noise floor, radar pose, leakage, robot, clutter.

    The robot and clutter are in the world frame; the map frame adds the pose:
    apparent range ``d + range_offset_m``, apparent azimuth ``a + azimuth_rotation_deg``.
    ``gain`` multiplies every return (person, robot, clutter, leakage), not the noise.
    """

    day: int
    world_seed: int
    gain: float
    noise_scale: float
    azimuth_rotation_deg: float
    range_offset_m: float
    leakage_amplitude: float
    robot: Reflector
    clutter: tuple[Reflector, ...]

    def map_bins(self, range_m: Any, azimuth_deg: Any) -> tuple[np.ndarray, np.ndarray]:
        """Fractional ``(range bin, azimuth bin)`` in this day's map of world positions."""
        r = (np.asarray(range_m, dtype=np.float64) + self.range_offset_m) / RANGE_BIN_M
        a = (np.asarray(azimuth_deg, dtype=np.float64) + self.azimuth_rotation_deg
             + AZIMUTH_MAX_DEG) / AZIMUTH_STEP_DEG
        return r, a

    def background(self) -> np.ndarray:
        """The noise-free static part of every map of the day (leakage, robot, clutter),
        raw units, float32 ``(256, 63)``."""
        leak_az = LEAKAGE_AZIMUTH_FLOOR + (1 - LEAKAGE_AZIMUTH_FLOOR) * _gauss(
            np.array([(N_AZIMUTH_BINS - 1) / 2]), _AZIMUTH_BINS,
            LEAKAGE_AZIMUTH_FWHM_DEG / _FWHM_PER_SIGMA / AZIMUTH_STEP_DEG)[0]
        out = self.leakage_amplitude * np.outer(np.exp(-_RANGE_BINS / LEAKAGE_DECAY_BINS),
                                                leak_az)
        refl = (self.robot, *self.clutter)
        rb, ab = self.map_bins([o.range_m for o in refl], [o.azimuth_deg for o in refl])
        for o, r, a in zip(refl, rb, ab, strict=True):
            if o.amplitude:
                out += o.amplitude * np.outer(
                    _gauss(np.array([r]), _RANGE_BINS, o.range_sigma_bins)[0],
                    _gauss(np.array([a]), _AZIMUTH_BINS,
                           o.azimuth_fwhm_deg / _FWHM_PER_SIGMA / AZIMUTH_STEP_DEG)[0])
        return (self.gain * out).astype(np.float32)


def _gauss(centres: np.ndarray, axis: np.ndarray, sigma: float) -> np.ndarray:
    """``exp(-½ ((axis - c) / sigma)²)`` for each centre c: shape (len(centres), len(axis))."""
    return np.exp(-0.5 * ((axis[None, :] - centres[:, None]) / sigma) ** 2)


def _clutter(rng: np.random.Generator, count: int) -> tuple[Reflector, ...]:
    r = rng.uniform(*CLUTTER_RANGE_M, count)
    a = rng.uniform(*CLUTTER_AZIMUTH_DEG, count)
    amp = np.exp(rng.uniform(*np.log(CLUTTER_AMPLITUDE), count))
    return tuple(Reflector(float(ri), float(ai), float(mi), CLUTTER_RANGE_SIGMA_BINS,
                           CLUTTER_AZIMUTH_FWHM_DEG) for ri, ai, mi in zip(r, a, amp, strict=True))


def day_layout(day: int = 0, world_seed: int = 0, shift: DayShift = DEFAULT_SHIFT) -> DayLayout:
    """Day ``day``'s layout: a deterministic function of ``(world_seed, day, shift)``.

    The robot's nominal position and the clutter's day-0 places come from
    ``SeedSequence([world_seed, tag, 0])``, the day's offsets (:class:`DayShift`) from
    ``SeedSequence([world_seed, tag, 1, day])``. Day 0 has no offsets (gain 1, noise scale
    ``NOISE_SCALE``, nominal pose, robot and clutter). Moved reflectors stay inside
    ``CLUTTER_RANGE_M`` × ``CLUTTER_AZIMUTH_DEG`` (clipped).
    """
    day = _int("day", day, 0, MAX_DAY)
    world_seed = _int("world_seed", world_seed, 0, 2**63 - 1)
    if not isinstance(shift, DayShift):
        raise ValueError(f"shift: must be a DayShift, got {type(shift).__name__}")
    world = np.random.default_rng(np.random.SeedSequence([world_seed, _SEED_TAG, 0]))
    robot_r, robot_a = world.uniform(*ROBOT_RANGE_M), world.uniform(*ROBOT_AZIMUTH_DEG)
    permanent = _clutter(world, N_PERMANENT_CLUTTER)
    movable = _clutter(world, N_MOVABLE_CLUTTER)

    daily = np.random.default_rng(np.random.SeedSequence([world_seed, _SEED_TAG, 1, day]))
    count = len(_SHIFT_FIELDS) + N_MOVABLE_CLUTTER * len(_CLUTTER_FIELDS)
    u = daily.choice([-1.0, 1.0], size=count) * daily.uniform(0.5, 1.0, size=count) * (day > 0)
    off = {name: float(u[i] * getattr(shift, name)) for i, name in enumerate(_SHIFT_FIELDS)}
    cu = u[len(_SHIFT_FIELDS):].reshape(N_MOVABLE_CLUTTER, len(_CLUTTER_FIELDS))
    movable = tuple(o._replace(
        range_m=float(np.clip(o.range_m + c[0] * shift.clutter_range_m, *CLUTTER_RANGE_M)),
        azimuth_deg=float(np.clip(o.azimuth_deg + c[1] * shift.clutter_azimuth_deg,
                                  *CLUTTER_AZIMUTH_DEG)),
        amplitude=float(o.amplitude * 10 ** (c[2] * shift.clutter_db / 20)))
        for o, c in zip(movable, cu, strict=True))
    robot = Reflector(float(robot_r) + off["robot_range_m"],
                      float(robot_a) + off["robot_azimuth_deg"], ROBOT_AMPLITUDE,
                      ROBOT_RANGE_SIGMA_BINS, ROBOT_AZIMUTH_FWHM_DEG)
    return DayLayout(
        day=day, world_seed=world_seed,
        gain=float(10 ** (off["gain_db"] / 20)),
        noise_scale=float(NOISE_SCALE * 10 ** (off["noise_floor_db"] / 20)),
        azimuth_rotation_deg=off["azimuth_rotation_deg"],
        range_offset_m=off["range_offset_m"],
        leakage_amplitude=float(LEAKAGE_AMPLITUDE * 10 ** (off["leakage_db"] / 20)),
        robot=robot, clutter=permanent + movable)


# -- people -----------------------------------------------------------------------------

def draw_labels(n: int, rng: np.random.Generator, balanced: bool = True) -> np.ndarray:
    """``n`` labels, int64. ``balanced``: every label ``n // 10`` times, and the ``n % 10``
    left over go to distinct labels chosen at random, in random order; otherwise i.i.d.
    uniform on 0..9."""
    n = _int("n", n, 1, MAX_MAPS)
    rng = _check_rng(rng)
    if not balanced:
        return rng.integers(0, N_CLASSES, size=n, dtype=np.int64)
    extra = rng.choice(N_CLASSES, size=n % N_CLASSES, replace=False)
    y = np.concatenate([np.tile(np.arange(N_CLASSES), n // N_CLASSES), extra])
    return rng.permutation(y).astype(np.int64)


def draw_positions(labels: Any, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """World-frame ``(range_m, azimuth_deg)`` drawn uniformly inside each label's box."""
    y = _check_labels(labels)
    rng = _check_rng(rng)
    box = _BOXES[y]
    d = box[:, 0] + (box[:, 1] - box[:, 0]) * rng.random(len(y))
    a = box[:, 2] + (box[:, 3] - box[:, 2]) * rng.random(len(y))
    return d, a


def draw_rcs(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` log-normal radar cross-sections (m²): median ``HUMAN_RCS_MEDIAN_M2``,
    ``HUMAN_RCS_SD_DB`` dB standard deviation."""
    n = _int("n", n, 1, MAX_MAPS)
    s = HUMAN_RCS_SD_DB * np.log(10) / 10
    return HUMAN_RCS_MEDIAN_M2 * np.exp(s * _check_rng(rng).standard_normal(n))


def human_amplitude(range_m: Any, rcs_m2: Any, gain: float = 1.0) -> np.ndarray:
    """Raw peak of a person's return: ``gain · HUMAN_AMPLITUDE_1M · sqrt(rcs / 1 m²) / R²``."""
    r, s = np.asarray(range_m, dtype=np.float64), np.asarray(rcs_m2, dtype=np.float64)
    return gain * HUMAN_AMPLITUDE_1M * np.sqrt(s) / r**2


def _people(range_m: Any, azimuth_deg: Any, rcs_m2: Any
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = _vector("range_m", range_m)
    if not 1 <= len(d) <= MAX_MAPS:
        raise ValueError(f"range_m: must hold 1..{MAX_MAPS} positions, got {len(d)}")
    a = _vector("azimuth_deg", azimuth_deg, len(d))
    s = _vector("rcs_m2", rcs_m2, len(d))
    if np.any(d <= 0):
        raise ValueError("range_m: must be > 0")
    if np.any(s < 0):
        raise ValueError("rcs_m2: must be >= 0")
    return d, a, s


def _human_maps(d: np.ndarray, a: np.ndarray, s: np.ndarray, layout: DayLayout) -> np.ndarray:
    rb, ab = layout.map_bins(d, a)
    # the apparent range (floored at one bin for extreme user-made layouts)
    amp = human_amplitude(np.maximum(d + layout.range_offset_m, RANGE_BIN_M), s, layout.gain)
    rp = (amp[:, None] * _gauss(rb, _RANGE_BINS, HUMAN_RANGE_SIGMA_BINS)).astype(np.float32)
    ap = _gauss(ab, _AZIMUTH_BINS, HUMAN_AZIMUTH_FWHM_DEG / _FWHM_PER_SIGMA / AZIMUTH_STEP_DEG
                ).astype(np.float32)
    return rp[:, :, None] * ap[:, None, :]


def human_returns(range_m: Any, azimuth_deg: Any, rcs_m2: Any,
                  layout: DayLayout | None = None) -> np.ndarray:
    """Noise-free raw returns of people at world positions, float32 ``(n, 256, 63)``, in
    ``layout``'s map frame (default: day 0). Peak :func:`human_amplitude` at the apparent
    range, reached when the person sits on a bin centre."""
    layout = _check_layout(layout)
    return _human_maps(*_people(range_m, azimuth_deg, rcs_m2), layout)


def _check_layout(layout: DayLayout | None) -> DayLayout:
    if layout is None:
        return day_layout(0)
    if not isinstance(layout, DayLayout):
        raise ValueError(f"layout: must be a DayLayout (see day_layout) or None, "
                         f"got {type(layout).__name__}")
    if not (np.isfinite(layout.noise_scale) and layout.noise_scale >= 0):
        raise ValueError(f"layout: noise_scale must be finite and >= 0, "
                         f"got {layout.noise_scale!r}")
    return layout


def _render(d: np.ndarray, a: np.ndarray, s: np.ndarray, layout: DayLayout,
            rng: np.random.Generator,
            transform: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """Noisy maps, chunk by chunk (bounded temporaries), each chunk passed through
    ``transform`` (e.g. :func:`preprocess`) before being stored."""
    out = np.empty((len(d), *MAP_SHAPE), dtype=np.float32)
    bg = layout.background()
    sigma = np.float32(layout.noise_scale)
    noise = np.empty((min(_CHUNK, len(d)), *MAP_SHAPE), dtype=np.float32)
    for start in range(0, len(d), _CHUNK):
        sl = slice(start, start + _CHUNK)
        maps = _human_maps(d[sl], a[sl], s[sl], layout)
        maps += bg
        g = noise[: len(maps)]
        rng.standard_normal(dtype=np.float32, out=g)  # in-phase noise
        g *= sigma
        maps += g
        rng.standard_normal(dtype=np.float32, out=g)  # quadrature noise
        g *= sigma
        np.hypot(maps, g, out=maps)
        out[sl] = maps if transform is None else transform(maps)
    return out


def render_maps(range_m: Any, azimuth_deg: Any, rcs_m2: Any, rng: np.random.Generator,
                layout: DayLayout | None = None) -> np.ndarray:
    """Raw noisy maps (float32 ``(n, 256, 63)``) of one person per map at the given world
    positions and RCS, on ``layout``'s day (default: day 0); the noise comes from ``rng``."""
    d, a, s = _people(range_m, azimuth_deg, rcs_m2)
    return _render(d, a, s, _check_layout(layout), _check_rng(rng))


@dataclass(frozen=True, eq=False, slots=True)
class RadarScene:
    """Raw synthetic maps with what was drawn for them (positions in the world frame)."""

    raw: np.ndarray  #: float32 (n, 256, 63) raw magnitudes
    labels: np.ndarray  #: int64 (n,)
    range_m: np.ndarray  #: person's range (world frame)
    azimuth_deg: np.ndarray  #: person's azimuth (world frame)
    rcs_m2: np.ndarray  #: person's radar cross-section
    layout: DayLayout


def simulate_radar(labels: Any, rng: np.random.Generator, layout: DayLayout | None = None
                   ) -> RadarScene:
    """Raw maps for the given labels on ``layout``'s day (default: day 0): positions
    (:func:`draw_positions`), RCS (:func:`draw_rcs`), then the noisy maps."""
    y, rng, layout = _check_labels(labels), _check_rng(rng), _check_layout(layout)
    d, a = draw_positions(y, rng)
    s = draw_rcs(len(y), rng)
    return RadarScene(_render(d, a, s, layout, rng), y, d, a, s, layout)


def radar_maps(n: int, rng: np.random.Generator, *, day: int = 0, world_seed: int = 0,
               balanced: bool = True, shift: DayShift = DEFAULT_SHIFT
               ) -> tuple[np.ndarray, np.ndarray]:
    """``n`` preprocessed synthetic maps of day ``day``: ``(x: float32 (n, 256, 63),
    y: int64 (n,))``. Labels from :func:`draw_labels` (``balanced``), then as
    :func:`simulate_radar` followed by :func:`preprocess`, without keeping the raw maps."""
    n = _int("n", n, 1, MAX_MAPS)
    rng = _check_rng(rng)
    layout = day_layout(day, world_seed, shift)
    y = draw_labels(n, rng, balanced)
    d, a = draw_positions(y, rng)
    s = draw_rcs(n, rng)
    return _render(d, a, s, layout, rng, preprocess), y


# -- loader for the real maps -----------------------------------------------------------

_HELP = ("get the 'Federated Learning: mmWave MIMO Radar Dataset for Testing' from IEEE "
         "Dataport (DOI 10.21227/0wmc-hq36) and put its day0/day1/day2 folders (train_data/"
         "mmwave_data_train_<k>.mat, test_data/mmwave_data_test.mat) there, or .npy pairs "
         "x_train_<k>.npy/y_train_<k>.npy and x_test.npy/y_test.npy (bflnet never downloads data)")
_TRAIN_MAT = re.compile(r"mmwave_data_train_(0|[1-9]\d*)\.mat")
_TRAIN_NPY = re.compile(r"x_train_(0|[1-9]\d*)\.npy")
_SPLIT_DIRS = {"train": ("train_data",), "test": ("test_data", "test_dat")}


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def _read_mat(path: Path, keys: tuple[tuple[str, ...], tuple[str, ...]]
              ) -> tuple[tuple[str, Any], tuple[str, Any]]:
    """``((data key, array), (label key, array))``: the first key of each group found."""
    try:
        content = scipy.io.loadmat(path, variable_names=[k for g in keys for k in g])
    except Exception as exc:  # scipy raises many types on bad files (IndexError, ...)
        raise ValueError(f"{path}: cannot read as a MATLAB (v4-v7.2) .mat file "
                         f"({_one_line(exc)}); re-save with -v7 or as .npy") from None
    found = []
    for group in keys:
        key = next((k for k in group if k in content), None)
        if key is None:
            raise ValueError(f"{path}: no variable {' or '.join(map(repr, group))} "
                             f"(the file holds {_mat_names(path)})")
        found.append((key, content[key]))
    return found[0], found[1]


def _mat_names(path: Path) -> str:
    try:
        names = [entry[0] for entry in scipy.io.whosmat(path)]
    except Exception:  # the file was readable a moment ago; do not mask the real error
        return "?"
    return ", ".join(map(repr, names[:10])) + (", ..." if len(names) > 10 else "") or "nothing"


def _read_npy(path: Path) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{path}: cannot read as a .npy array ({_one_line(exc)})") from None


def _as_maps(a: Any, path: Path, key: str) -> np.ndarray:
    """(N, 256, 63) from (N, 256, 63), (256, 63, N), (N, 256, 63, 1) or one (256, 63) map."""
    a = np.asarray(a)
    where = f"{path} [{key}]"
    if not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise ValueError(f"{where}: maps must be real numbers, got {a.dtype}")
    if a.ndim == 4 and a.shape[-1] == 1:
        a = a[..., 0]
    if a.ndim == 2 and a.shape == MAP_SHAPE:
        a = a[None]
    elif a.ndim == 3 and a.shape[1:] == MAP_SHAPE:
        pass
    elif a.ndim == 3 and a.shape[:2] == MAP_SHAPE:
        a = np.moveaxis(a, -1, 0)
    else:
        raise ValueError(f"{where}: maps must have shape (N, 256, 63), (256, 63, N) or "
                         f"(N, 256, 63, 1), got {np.shape(a)}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{where}: maps contain NaN or infinite values")
    return a


def _as_labels(a: Any, path: Path, key: str, n: int) -> np.ndarray:
    """(N,) int64 from (N,), (N, 1) or (1, N), checked to be integers in 0..9."""
    a = np.asarray(a)
    where = f"{path} [{key}]"
    if a.ndim == 2 and 1 in a.shape:
        a = a.reshape(-1)
    if a.ndim != 1:
        raise ValueError(f"{where}: labels must have shape (N,), (N, 1) or (1, N), "
                         f"got {a.shape}")
    if not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise ValueError(f"{where}: labels must be integers, got {a.dtype}")
    if len(a) != n:
        raise ValueError(f"{where}: {len(a)} labels for {n} maps")
    if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
        raise ValueError(f"{where}: labels must be whole numbers in 0..{N_CLASSES - 1}")
    if n and (a.min() < 0 or a.max() >= N_CLASSES):
        raise ValueError(f"{where}: labels must lie in 0..{N_CLASSES - 1}, "
                         f"got {a.min():g}..{a.max():g}")
    return a.astype(np.int64)


def _finish(maps: tuple[str, Any], labels: tuple[str, Any], path: Path, label_path: Path
            ) -> tuple[np.ndarray, np.ndarray]:
    x = _as_maps(maps[1], path, maps[0])
    y = _as_labels(labels[1], label_path, labels[0], len(x))
    return preprocess(x), y


def _load_pair(directory: Path, stem: str, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """One device's (or the test set's) maps from ``directory``; ``stem`` train/test."""
    suffix = "" if k is None else f"_{k}"
    mat = directory / f"mmwave_data_{stem}{suffix}.mat"
    if mat.is_file():
        data_keys = (f"mmwave_data_{stem}{suffix}",) + ((f"mmwave_data_{stem}",) if k else ())
        label_keys = (f"label_{stem}{suffix}",) + ((f"label_{stem}",) if k else ())
        maps, labels = _read_mat(mat, (data_keys, label_keys))
        return _finish(maps, labels, mat, mat)
    xp, yp = directory / f"x_{stem}{suffix}.npy", directory / f"y_{stem}{suffix}.npy"
    if not yp.is_file():
        raise DatasetNotFoundError(f"{yp}: missing (the labels of {xp.name}); {_HELP}")
    return _finish(("array", _read_npy(xp)), ("array", _read_npy(yp)), xp, yp)


def _split_dir(base: Path, split: Split) -> tuple[Path, list[Path]]:
    """The first of ``<base>/<split dir>`` and ``<base>`` holding files of ``split``."""
    tried = [base / sub for sub in _SPLIT_DIRS[split]] + [base]
    for directory in tried:
        if not directory.is_dir():
            continue
        names = {p.name for p in directory.iterdir()}
        if split == "test" and names & {"mmwave_data_test.mat", "x_test.npy"}:
            return directory, tried
        if split == "train" and any(_TRAIN_MAT.fullmatch(m) or _TRAIN_NPY.fullmatch(m)
                                    for m in names):
            return directory, tried
    pattern = ("mmwave_data_train_<k>.mat or x_train_<k>.npy" if split == "train"
               else "mmwave_data_test.mat or x_test.npy")
    raise DatasetNotFoundError(f"radar {split} maps not found: no {pattern} in "
                               f"{', '.join(map(str, tried))}; {_HELP}")


@overload
def load_radar_maps(folder: str | os.PathLike[str], *, day: int | None = ...,
                    split: Literal["train"] = ..., devices: Iterable[int] | None = ...
                    ) -> dict[int, tuple[np.ndarray, np.ndarray]]: ...
@overload
def load_radar_maps(folder: str | os.PathLike[str], *, day: int | None = ...,
                    split: Literal["test"], devices: Iterable[int] | None = ...
                    ) -> tuple[np.ndarray, np.ndarray]: ...
def load_radar_maps(folder: str | os.PathLike[str], *, day: int | None = None,
                    split: Split = "train", devices: Iterable[int] | None = None
                    ) -> dict[int, tuple[np.ndarray, np.ndarray]] | tuple[np.ndarray, np.ndarray]:
    """Read real range-azimuth maps, preprocessed like the synthetic ones.

    ``folder`` is the data set's root (with ``day<d>`` subfolders; pick one with ``day``) or a
    day folder (``day=None``). The split's files are looked for in ``train_data/`` (train) or
    ``test_data/`` / ``test_dat/`` (test; day 0's folder is misspelt), then in the folder
    itself. Files:

    * train, per device ``k``: ``mmwave_data_train_<k>.mat`` with variables
      ``mmwave_data_train_<k>`` and ``label_train_<k>`` (unsuffixed names are accepted too),
      or ``x_train_<k>.npy`` + ``y_train_<k>.npy``; the ``.mat`` wins when both exist;
    * test: ``mmwave_data_test.mat`` (``mmwave_data_test``, ``label_test``) or
      ``x_test.npy`` + ``y_test.npy``.

    Maps may be ``(N, 256, 63)``, ``(256, 63, N)`` or ``(N, 256, 63, 1)``; labels ``(N,)``,
    ``(N, 1)`` or ``(1, N)``, whole numbers in 0..9. Returns, for ``split="train"``, ``{k:
    (x, y)}`` sorted by ``k`` (all devices found, or those in ``devices``), for
    ``split="test"`` one ``(x, y)``; ``x`` float32 ``(N, 256, 63)`` after :func:`preprocess`,
    ``y`` int64. Missing files raise :class:`DatasetNotFoundError` (a FileNotFoundError),
    malformed ones a ``ValueError`` naming the file and variable.
    """
    if split not in _SPLIT_DIRS:
        raise ValueError(f"split: must be 'train' or 'test', got {split!r}")
    root = Path(folder)
    base = root if day is None else root / f"day{_int('day', day, 0, MAX_DAY)}"
    if not base.is_dir():
        raise DatasetNotFoundError(f"radar maps not found: {base} is not a directory; {_HELP}")
    directory, _ = _split_dir(base, split)
    if split == "test":
        if devices is not None:
            raise ValueError("devices: only for split='train' (the test set is one file)")
        return _load_pair(directory, "test", None)
    found = sorted({int(m.group(1)) for p in directory.iterdir()
                    if (m := _TRAIN_MAT.fullmatch(p.name) or _TRAIN_NPY.fullmatch(p.name))})
    if devices is None:
        wanted = found
    else:
        wanted = sorted({_int("devices", k, 0, 10**6) for k in devices})
        for k in set(wanted) - set(found):
            raise DatasetNotFoundError(
                f"radar train maps of device {k} not found: no mmwave_data_train_{k}.mat or "
                f"x_train_{k}.npy in {directory} (found devices {found}); {_HELP}")
    return {k: _load_pair(directory, "train", k) for k in wanted}


__all__ = [
    "ANGLE_RESOLUTION_DEG", "AZIMUTH_AXIS_DEG", "AZIMUTH_MAX_DEG", "AZIMUTH_STEP_DEG",
    "DEFAULT_SHIFT", "LABEL0_MAX_RANGE_M", "LABEL_BOXES", "MAP_SHAPE", "MAX_MAPS",
    "N_AZIMUTH_BINS", "N_CLASSES", "N_RANGE_BINS", "RANGE_AXIS_M", "RANGE_BIN_M", "RAW_SCALE",
    "DayLayout", "DayShift", "LabelBox", "RadarScene", "Reflector", "day_layout",
    "draw_labels", "draw_positions", "draw_rcs", "human_amplitude", "human_returns",
    "load_radar_maps", "preprocess", "radar_maps", "render_maps", "simulate_radar",
]
