"""TDMA schedules with spatial reuse (:mod:`bflnet.radio.scheduling.sinr`) and the guard
times of slotted MACs (:mod:`bflnet.radio.scheduling.guard`)."""

from bflnet.radio.scheduling.guard import default_guard_s
from bflnet.radio.scheduling.sinr import sinr_schedule

__all__ = ["default_guard_s", "sinr_schedule"]
