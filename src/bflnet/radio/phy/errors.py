"""The error model of ``reception="mcs"``: a frame's success from the SINR of each interval
of it, bit error curves per MCS, preamble detection and capture.

**Bit error curves** (the probability ``pe`` that a bit is wrong after decoding, at SINR
``s``, linear), as ns-3's wifi module computes them:

* OFDM (``80211a``/``80211g``): ns-3's ``NistErrorRateModel`` (G. Pei and T. R.
  Henderson, "Validation of OFDM error rate model in ns-3", Boeing Research &
  Technology, 2010). The raw BER of the constellation in Gaussian noise, BPSK
  ``½ erfc(√s)``, QPSK ``½ erfc(√(s/2))``, 16-QAM ``⅜ erfc(√(s/10))``, 64-QAM
  ``7/24 erfc(√(s/42))``, goes through the union bound of the 802.11 convolutional code
  (hard-decision Viterbi; rate 1/2, 2/3, 3/4 by its distance spectrum), with ``D =
  √(4 p (1 - p))``: ``pe = ½ Σ_d a_d D^d`` (1/2) or ``1/(2b) Σ_d c_d D^d`` (b = 2, 3), at
  most 1.
* DSSS (``80211b``): ns-3's ``DsssErrorRateModel`` with ``Eb/N0 = s · 22 MHz / R_symbol``:
  DBPSK 1 Mbit/s ``½ exp(-22 s)``; DQPSK 2 Mbit/s its approximation
  ``(√2 + 1) / √(8π√2) · x^(-½) · exp(-(2 - √2) x)`` with ``x = 11 s``; CCK 5.5 and 11
  Mbit/s the curve fits ns-3 uses without GSL (``pe = 0`` above ``s = 10``, ``½`` below
  ``s = 0.1``). ``pe`` is at most 1.

**A frame's success** (:meth:`ErrorModel.frame_success`). While a frame is on the air its
SINR changes whenever a transmission near its receiver starts or ends; between two
changes it is constant: an interval ``i`` of ``t_i`` seconds at SINR ``s_i``. The frame
is received with probability ``Π_i (1 - pe(s_i))^(b_i)`` over the intervals, ``b_i`` the
bits sent in interval ``i`` (``t_i`` times the rate), in two parts: the PLCP header
(DSSS: its 48 bits at 1 Mbit/s; OFDM: the SIGNAL symbol, 24 bits at 6 Mbit/s, BPSK 1/2)
at the basic rate, then the frame's data symbols (MAC header, payload, FCS; OFDM: with
the SERVICE, tail and pad bits of its symbols, not the ERP signal extension) at its
MCS. The packet error rate is ``1 - `` that. The PLCP preamble before the header carries
no bits: it is for detection.

**Preamble detection and capture** (a receiver follows one frame at a time, ns-3's
``ThresholdPreambleDetectionModel`` and ``SimpleFrameCaptureModel`` at their defaults):

* a frame is detected iff its SINR when it starts is at least
  :data:`PREAMBLE_SNR_DB` (4 dB); an undetected frame is lost, and its receiver stays
  free for the next one;
* a receiver that has detected a frame is locked on it until it ends: a frame for it
  that starts meanwhile is lost, unless it starts within the locked frame's PLCP
  preamble and header and is at least :data:`CAPTURE_MARGIN_DB` (5 dB) stronger: then
  the receiver switches to it (if it is detected) and the locked frame is lost.
  Only frames addressed to the receiver lock it; others are interference alone.

>>> from bflnet.radio.phy.mcs import pick_mcs
>>> from bflnet.radio.phy.timing import phy_preset
>>> model = ErrorModel(phy_preset("80211a"))
>>> m = pick_mcs("80211a", 6)
>>> f"{bit_error(m, 10 ** 0.3):.3g} {bit_error(m, 10 ** 0.5):.3g}"  # 3 and 5 dB
'0.000244 1.56e-07'
>>> frame = model.frame_s(8000, m)
>>> round(1 - model.frame_success(m, 10 ** 0.5, frame), 4)  # 5 dB, 1000 bytes
0.0013
>>> model.frame_success(m, 10 ** 0.3, frame)  # 3 dB: the preamble is not detected
0.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from bflnet.radio.phy.mcs import HEADER_S, Mcs, mcs_table
from bflnet.radio.phy.timing import Phy

#: The lowest SINR (dB) at which a frame's preamble is detected.
PREAMBLE_SNR_DB = 4.0
#: How much stronger (dB) a frame must be to take its receiver from the one it is locked on.
CAPTURE_MARGIN_DB = 5.0
#: The same, linear.
PREAMBLE_SNR = 10.0 ** (PREAMBLE_SNR_DB / 10.0)
CAPTURE_MARGIN = 10.0 ** (CAPTURE_MARGIN_DB / 10.0)
#: ``data_rate="auto"``: the packet error rate at the link's mean SNR the chosen MCS may have.
AUTO_TARGET_PER = 0.1

#: The union bound of the convolutional code: code rate -> (scale, {d: c_d}).
_CODE = {
    "1/2": (0.5, {10: 36.0, 12: 211.0, 14: 1404.0, 16: 11633.0, 18: 77433.0, 20: 502690.0,
                  22: 3322763.0, 24: 21292910.0, 26: 134365911.0}),
    "2/3": (0.25, {6: 3.0, 7: 70.0, 8: 285.0, 9: 1276.0, 10: 6160.0, 11: 27128.0,
                   12: 117019.0, 13: 498860.0, 14: 2103891.0, 15: 8784123.0}),
    "3/4": (1.0 / 6.0, {5: 42.0, 6: 201.0, 7: 1492.0, 8: 10469.0, 9: 62935.0, 10: 379644.0,
                        11: 2253373.0, 12: 13073811.0, 13: 75152755.0, 14: 428005675.0}),
}
#: The raw BER of an OFDM constellation: modulation -> (factor, divisor): factor ·
#: erfc(√(s / divisor)).
_RAW = {"BPSK": (0.5, 1.0), "QPSK": (0.5, 2.0), "16-QAM": (0.375, 10.0),
        "64-QAM": (7.0 / 24.0, 42.0)}
_DQPSK = (math.sqrt(2.0) + 1.0) / math.sqrt(8.0 * math.pi * math.sqrt(2.0))
_CCK55 = (5.3681634344056195e-001, 3.3092430025608586e-003, 4.1654372361004000e-001,
          1.0288981434358866e+000)
_CCK11 = (7.9056742265333456e-003, -1.8397449399176360e-001, 1.0740689468707241e+000,
          1.0523316904502553e+000, 3.0552298746496687e-001, 2.2032715128698435e+000)


def _horner(rate: str) -> tuple[float, int, int, tuple[float, ...]]:
    """``_CODE[rate]`` as ``(scale, first power, step, coefficients highest first)``."""
    scale, terms = _CODE[rate]
    powers = sorted(terms)
    step = powers[1] - powers[0]
    return scale, powers[0], step, tuple(terms.get(k, 0.0) for k in
                                         range(powers[-1], powers[0] - 1, -step))


_HORNER = {rate: _horner(rate) for rate in _CODE}


def _coded(p: float, rate: str) -> float:
    if p <= 0.0:
        return 0.0
    scale, first, step, coefs = _HORNER[rate]
    d = math.sqrt(4.0 * p * (1.0 - p))
    x = d ** step
    acc = 0.0
    for c in coefs:
        acc = acc * x + c
    return min(scale * acc * d ** first, 1.0)


def _cck(sinr: float, mbps: float) -> float:
    if sinr > 10.0:
        return 0.0
    if sinr < 0.1:
        return 0.5
    if mbps < 6:
        a1, a2, a3, a4 = _CCK55
        return a1 * math.exp(-(((sinr - a2) / a3) ** a4))
    a1, a2, a3, a4, a5, a6 = _CCK11
    return (a1 * sinr * sinr + a2 * sinr + a3) / (sinr ** 3 + a4 * sinr * sinr + a5 * sinr
                                                  + a6)


def bit_error(mcs: Mcs, sinr: float) -> float:
    """``pe``, the probability that a bit of ``mcs`` is wrong at SINR ``sinr`` (linear),
    module docstring."""
    sinr = max(sinr, 0.0)
    mod = mcs.modulation
    if mcs.ofdm:
        factor, div = _RAW[mod]
        return _coded(factor * math.erfc(math.sqrt(sinr / div)), mcs.coding_rate)
    if mod == "DBPSK":
        return 0.5 * math.exp(-22.0 * sinr)
    if mod == "DQPSK":
        x = 11.0 * sinr
        return 1.0 if x <= 0.0 else min(_DQPSK / math.sqrt(x) * math.exp(-(2.0 - math.sqrt(
            2.0)) * x), 1.0)
    return _cck(sinr, mcs.rate_bps / 1e6)


def bit_errors(mcs: Mcs, sinr: np.ndarray | Sequence[float]) -> np.ndarray:
    """:func:`bit_error` over an array of SINRs, vectorised (the curves, the tests)."""
    from scipy.special import erfc  # lazily: only the curves need it

    s = np.maximum(np.asarray(sinr, dtype=np.float64), 0.0)
    mod = mcs.modulation
    if mcs.ofdm:
        factor, div = _RAW[mod]
        p = factor * erfc(np.sqrt(s / div))
        scale, terms = _CODE[mcs.coding_rate]
        d = np.sqrt(4.0 * p * (1.0 - p))
        pe = scale * sum(c * d ** k for k, c in terms.items())
        return np.where(p <= 0.0, 0.0, np.minimum(pe, 1.0))
    if mod == "DBPSK":
        return 0.5 * np.exp(-22.0 * s)
    if mod == "DQPSK":
        x = 11.0 * s
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            pe = _DQPSK / np.sqrt(x) * np.exp(-(2.0 - math.sqrt(2.0)) * x)
        return np.where(x <= 0.0, 1.0, np.minimum(pe, 1.0))
    if mcs.rate_bps < 6e6:
        a1, a2, a3, a4 = _CCK55
        mid = a1 * np.exp(-(np.abs((s - a2) / a3) ** a4))
    else:
        a1, a2, a3, a4, a5, a6 = _CCK11
        mid = (a1 * s * s + a2 * s + a3) / (s ** 3 + a4 * s * s + a5 * s + a6)
    return np.where(s > 10.0, 0.0, np.where(s < 0.1, 0.5, mid))


#: Below this bit error rate a bit counts as certain (it changes a frame's success by less
#: than 1e-14 for frames of up to a million bits).
CLEAN_BER = 1e-20


def clean_sinr(mcs: Mcs) -> float:
    """The SINR (linear) above which ``mcs``'s bit error rate is below :data:`CLEAN_BER`
    (by bisection in dB: the curves fall with the SINR)."""
    lo, hi = -30.0, 80.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if bit_error(mcs, 10.0 ** (mid / 10.0)) < CLEAN_BER:
            hi = mid
        else:
            lo = mid
    return 10.0 ** (hi / 10.0)


def _log_keep(pe: float) -> float:
    """``log(1 - pe)`` (``-inf`` at ``pe = 1``)."""
    return -math.inf if pe >= 1.0 else math.log1p(-pe)


class ErrorModel:
    """The frame error model of one PHY preset (module docstring)."""

    def __init__(self, phy: Phy) -> None:
        self.phy = phy
        self.table = mcs_table(phy.name)
        #: The basic rate's MCS (ACKs, broadcasts, the PLCP header).
        self.basic = self.table[0]
        header = HEADER_S[phy.name]
        #: The PLCP preamble's detection part and the header's time, in seconds.
        self.sync_s = phy.preamble_s - header
        self.header_s = header
        self._best: dict[tuple[float, int], Mcs] = {}
        #: Per MCS name: :func:`clean_sinr` (intervals above it cost nothing).
        self._clean = {m.name: clean_sinr(m) for m in self.table}
        #: Per MCS name, for :meth:`success`: the basic rate's and its clean SINR, and the
        #: SINR above which an interval costs nothing at all (the larger of the two).
        clean_h = self._clean[self.basic.name]
        self._cleans = {name: (clean_h, clean, max(clean_h, clean))
                        for name, clean in self._clean.items()}
        self._extension_s = phy.extension_s

    def frame_s(self, bits: int, mcs: Mcs) -> float:
        """The air time of a data frame of ``bits`` payload bits at ``mcs``."""
        return self.phy.frame_s(bits, mcs.rate_bps)

    def frame_success(self, mcs: Mcs, sinr: float, duration_s: float) -> float:
        """The probability that a frame of ``duration_s`` at ``mcs`` is received at a
        constant SINR ``sinr`` (0 if its preamble is not detected)."""
        if sinr < PREAMBLE_SNR:
            return 0.0
        return self.success(mcs, 0.0, duration_s, [0.0, 0.0], sinr, False, 1.0)

    def success(self, mcs: Mcs, start: float, end: float, log: Sequence[float],
                signal: float, own: bool, noise: float) -> float:
        """The probability that a frame at ``mcs`` on the air from ``start`` to ``end`` is
        received, given ``log``: ``[t0, total0, t1, total1, ...]``, the receiver's summed
        power (mW, the frame's own ``signal`` included iff ``own``) from each time on,
        ``t0 = start``; ``noise`` in mW. Preamble detection is not judged here."""
        clean_h, clean_d, clean = self._cleans[mcs.name]
        acc = 0.0
        bounds: tuple[float, float, float] | None = None  # (h0, h1, d1), once needed
        n = len(log)
        for i in range(0, n, 2):
            a = log[i]
            b = log[i + 2] if i + 2 < n else end
            if b > end:
                b = end
            if b <= a:
                continue
            interference = log[i + 1] - signal if own else log[i + 1]
            if interference < 0.0:
                interference = 0.0
            sinr = signal / (noise + interference)
            if sinr >= clean:  # (the common case: nothing to add)
                continue
            if bounds is None:
                h0 = start + self.sync_s
                bounds = (h0, h0 + self.header_s, end - self._extension_s)
            h0, h1, d1 = bounds
            head = min(b, h1) - max(a, h0)
            if head > 0.0 and sinr < clean_h:
                basic = self.basic
                acc += head * basic.rate_bps * _log_keep(bit_error(basic, sinr))
            data = min(b, d1) - max(a, h1)
            if data > 0.0 and sinr < clean_d:
                acc += data * mcs.rate_bps * _log_keep(bit_error(mcs, sinr))
        return math.exp(acc) if acc else 1.0  # (exp(0) is 1.0: the call spared)

    def best(self, snr: float, bits: int, target: float) -> Mcs:
        """The fastest MCS whose frame of ``bits`` payload bits has a packet error rate at
        most ``target`` at the constant SNR ``snr`` (the basic rate if none has)."""
        key = (snr, bits)
        found = self._best.get(key)
        if found is None:
            found = self.basic
            for m in reversed(self.table):
                if 1.0 - self.frame_success(m, snr, self.frame_s(bits, m)) <= target:
                    found = m
                    break
            self._best[key] = found
        return found


def frame_error_rates(model: ErrorModel, mcs: Mcs, sinr: np.ndarray | Sequence[float],
                      bits: int) -> np.ndarray:
    """The packet error rate of a frame of ``bits`` payload bits at ``mcs`` at each
    constant SINR of ``sinr`` (linear), vectorised: the curve of
    :meth:`ErrorModel.frame_success` with preamble detection."""
    s = np.asarray(sinr, dtype=np.float64)
    duration = model.frame_s(bits, mcs)
    head = model.header_s * model.basic.rate_bps
    data = (duration - model.phy.preamble_s - model.phy.extension_s) * mcs.rate_bps
    with np.errstate(divide="ignore"):
        log_keep = (head * np.log1p(-np.minimum(bit_errors(model.basic, s), 1.0))
                    + data * np.log1p(-np.minimum(bit_errors(mcs, s), 1.0)))
    clean = (s >= model._clean[model.basic.name]) & (s >= model._clean[mcs.name])
    return np.where(s < PREAMBLE_SNR, 1.0, np.where(clean, 0.0, -np.expm1(log_keep)))


#: ``ErrorModel`` by PHY preset name, made once.
_MODELS: dict[str, ErrorModel] = {}


def error_model(phy: Phy) -> ErrorModel:
    """The (shared) :class:`ErrorModel` of ``phy``."""
    found = _MODELS.get(phy.name)
    if found is None:
        found = _MODELS[phy.name] = ErrorModel(phy)
    return found


__all__ = ["AUTO_TARGET_PER", "CAPTURE_MARGIN_DB", "PREAMBLE_SNR_DB", "ErrorModel",
           "bit_error", "bit_errors", "error_model", "frame_error_rates"]
