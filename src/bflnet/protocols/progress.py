"""Progress bars for long runs (tqdm). A bar is drawn as soon as it is opened, so a run
whose iterations are slow (a large model, many particles) shows one from its first
second; ``leave=False`` clears it when the run ends.

A run opens with a set-up line (:func:`setup_status`: the scenario and its memory and
set-up estimate), replaced by the first bar the run opens, so that something shows from
the start even while a large graph or data set is being built. A scenario that runs
several settings names each protocol's bar by its setting (:func:`run_label`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from bflnet.protocols.stopping import StopRule

if TYPE_CHECKING:  # tqdm is imported by the functions (its import takes 0.1 s)
    from tqdm import tqdm

SHOW_AFTER_S = 0.0
"""Seconds before a bar is first drawn (tqdm's ``delay``): 0, drawn at once."""

#: The open set-up line of the current run, closed by the run's first bar.
_status: list[tqdm] = []


def run_label(name: str, settings: Mapping[str, Any], *flags: str) -> str:
    """The name of one run's bar (and of its simulation, in its errors): ``name``, then
    ``key=value`` for each setting (numbers short), then ``flags``.

    >>> run_label("d2d-medium", {"task": "consensus", "K": 30, "mac": "csma"}, "broadcast")
    'd2d-medium task=consensus K=30 mac=csma broadcast'
    >>> run_label("cdbfl-local-steps", {"L": 4, "lr": 0.005})
    'cdbfl-local-steps L=4 lr=0.005'
    """
    words = [f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}"
             for key, value in settings.items()]
    return " ".join([name, *words, *flags])


def _end_status() -> None:
    while _status:
        _status.pop().close()


@contextmanager
def setup_status(desc: str, detail: str, enabled: bool) -> Iterator[None]:
    """A one-line ``desc set-up (detail)`` shown until the run opens its first bar (or
    ends); silent unless ``enabled``."""
    if enabled:
        from tqdm.auto import tqdm

        _end_status()
        _status.append(tqdm(total=None, disable=False, delay=SHOW_AFTER_S,
                            desc=f"{desc} set-up ({detail})", bar_format="{desc} {elapsed}",
                            leave=False, dynamic_ncols=True))
    try:
        yield
    finally:
        _end_status()


def progress_bar(stop: StopRule, enabled: bool, desc: str) -> tqdm:
    """A bar over a protocol's iterations; silent unless ``enabled``."""
    if enabled:
        _end_status()
    from tqdm.auto import tqdm

    return tqdm(total=stop.max_iterations, disable=not enabled, delay=SHOW_AFTER_S,
                desc=desc, unit="it", leave=False, dynamic_ncols=True)


def setup_bar(desc: str, total: int | None, enabled: bool, unit: str = "step") -> tqdm:
    """A bar over a scenario's set-up work before its protocol runs (loading data,
    pre-training); ``set_postfix_str`` names the current stage."""
    if enabled:
        _end_status()
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, delay=SHOW_AFTER_S, desc=f"{desc} set-up",
                unit=unit, leave=False, dynamic_ncols=True)


def runs_bar(items: Iterable[Any], enabled: bool, desc: str) -> tqdm:
    """A bar over a scenario's independent runs; silent unless ``enabled``."""
    if enabled:
        _end_status()
    from tqdm.auto import tqdm

    return tqdm(items, disable=not enabled, delay=SHOW_AFTER_S, desc=desc, unit="run",
                leave=False, dynamic_ncols=True)
