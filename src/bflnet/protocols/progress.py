"""Progress bars for long runs (tqdm). A bar is drawn as soon as it is opened, so a run
whose iterations are slow (a large model, many particles) shows one from its first
second; ``leave=False`` clears it when the run ends."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bflnet.protocols.stopping import StopRule

if TYPE_CHECKING:  # tqdm is imported by the functions (its import takes 0.1 s)
    from tqdm import tqdm

SHOW_AFTER_S = 0.0
"""Seconds before a bar is first drawn (tqdm's ``delay``): 0, drawn at once."""


def progress_bar(stop: StopRule, enabled: bool, desc: str) -> tqdm:
    """A bar over a protocol's iterations; silent unless ``enabled``."""
    from tqdm.auto import tqdm

    return tqdm(total=stop.max_iterations, disable=not enabled, delay=SHOW_AFTER_S,
                desc=desc, unit="it", leave=False, dynamic_ncols=True)


def setup_bar(desc: str, total: int | None, enabled: bool, unit: str = "step") -> tqdm:
    """A bar over a scenario's set-up work before its protocol runs (loading data,
    pre-training); ``set_postfix_str`` names the current stage."""
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, delay=SHOW_AFTER_S, desc=f"{desc} set-up",
                unit=unit, leave=False, dynamic_ncols=True)
