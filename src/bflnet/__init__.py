"""bflnet: discrete-event wireless network simulator with Bayesian federated learning in the loop.

The packages follow one rule: what is computed (``learners``) is separate from how it
travels (``protocols`` move messages over ``channels``); the ``simulator`` owns the clock,
the randomness and the record of what happened.

``bflnet.run(name, seed=..., **params)``, ``bflnet.sweep(name, grid, out, ...)`` and
``bflnet.summarize(table, targets, ...)`` are the ``bflnet run``, ``bflnet sweep`` and
``bflnet summarize`` commands as functions (:mod:`bflnet.api`), imported on first use so
that ``import bflnet`` stays cheap.
"""

from bflnet.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(
    __name__, {"run": "api", "summarize": "api", "sweep": "api"}, globals())
