"""Models for the learners (torch): logistic regression and Bayesian MLPs over parameter
rows, LeNet, the batched SGD stack, toy models and torch helpers.

``ParticleModel``, ``LogisticRegression`` and ``BayesianMLP`` are exported here lazily
(from :mod:`bflnet.learners.models.classifiers`)."""

from __future__ import annotations

from bflnet.lazy import lazy_exports

_HOMES = {name: "classifiers" for name in ("BayesianMLP", "LogisticRegression",
                                           "ParticleModel")}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _HOMES, globals())
