"""CF-FL: compressed frequentist federated learning over D2D links (CHOCO-SGD, Koloskova et
al. 2019), the CD-BFL paper's baseline: CD-BFL's compressed gossip (L local SGD steps,
public copies, control sequences, mixing step ζ) without the Langevin noise, and with a
point estimate: its predictive is the current model's, not an average over samples.
"""

from __future__ import annotations

from typing import Any

from bflnet.learners.hyper import CDBFLParams
from bflnet.learners.langevin.cdbfl import CDBFL
from bflnet.validation.params import with_overrides

__all__ = ["CFFL"]


class CFFL(CDBFL):
    """CD-BFL with ``temperature = 0`` and no sample averaging (see the module docs)."""

    averages_samples = False

    def __init__(self, model: Any, node_data: Any, params: CDBFLParams | None = None,
                 **kwargs: Any) -> None:
        hyper = {k: kwargs.pop(k) for k in list(kwargs) if k not in ("eval_sets", "dtype")}
        params = with_overrides(params if params is not None else CDBFLParams(), hyper)
        if params.temperature != 0:
            params = with_overrides(params, {"temperature": 0.0})
        super().__init__(model, node_data, params, **kwargs)
