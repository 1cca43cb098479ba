"""Where the devices of an over-the-air scenario are, and their mean power gains to the
server: ``placement=fixed`` (every gain ``mean_gain_db``), ``distance`` (all at
``distance_m``, evenly spaced on a circle around the server) or ``square`` (uniform in a
square of side ``distance_m`` centred on the server), the last two through the
log-distance path loss (:class:`~bflnet.radio.pathloss.LogDistance`, exponent
``path_loss_exponent``, loss ``ref_loss_db`` at 1 m).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

PLACEMENTS = ("fixed", "distance", "square")
#: The config fields the placement reads besides ``placement`` and ``mean_gain_db``.
PLACEMENT_FIELDS = frozenset({"distance_m", "path_loss_exponent", "ref_loss_db"})


#: Why a placement field is refused under ``placement=fixed`` (a config's
#: ``DECIDED_ELSEWHERE`` entries).
PLACEMENT_ELSEWHERE = {name: "read only with placement distance or square (placement "
                             "fixed: mean_gain_db decides)" for name in PLACEMENT_FIELDS}


def placement_fields(config: Any) -> frozenset[str]:
    """The placement fields ``config`` reads: none under ``placement=fixed``."""
    return frozenset() if config.placement == "fixed" else PLACEMENT_FIELDS


def check_placement(config: Any) -> None:
    """One-line ``ValueError`` for ``mean_gain_db`` set but not read (the placement's
    own fields are checked with the network fields: :func:`placement_fields`)."""
    fields = {f.name: f for f in dataclasses.fields(config)}
    if (config.placement != "fixed"
            and config.mean_gain_db != fields["mean_gain_db"].default):
        raise ValueError(f"mean_gain_db: only read with placement fixed (placement "
                         f"{config.placement} takes the gains from the path loss)")


def device_mean_gains(config: Any, rng: np.random.Generator) -> np.ndarray:
    """Each of ``config.K`` devices' mean power gain under ``config.placement`` (module
    docstring); ``rng`` places the devices of ``square``."""
    import numpy as np

    from bflnet.radio.aircomp import mean_gains_to_server
    from bflnet.radio.pathloss import LogDistance

    K = config.K
    if config.placement == "fixed":
        return np.full(K, 10.0 ** (config.mean_gain_db / 10.0))
    if config.placement == "distance":
        angle = 2.0 * np.pi * np.arange(K) / K
        xy = config.distance_m * np.column_stack([np.cos(angle), np.sin(angle)])
    else:
        xy = rng.uniform(-config.distance_m / 2.0, config.distance_m / 2.0, size=(K, 2))
    pathloss = LogDistance(exponent=config.path_loss_exponent, ref_distance_m=1.0,
                           ref_loss_db=config.ref_loss_db)
    return mean_gains_to_server(xy, np.zeros(2), pathloss)
