"""Posterior-predictive evaluation of a particle set.

The predictive distribution of ``N`` particles is the average of their softmax outputs,
``p(y | x) = (1/N) Σ_n p(y | x, θ_n)``; accuracy, ECE (eq. 14 of the compressed-DSVGD
letter), NLL and Brier score are computed on it with :mod:`bflnet.learners.calibration`.

>>> from bflnet.learners.models.classifiers import LogisticRegression
>>> model = LogisticRegression(n_in=2, n_out=2)
>>> theta = torch.zeros(3, model.d)                     # 3 particles, all-zero weights
>>> posterior_predictive(model, theta, torch.ones(4, 2))[0]
tensor([0.5000, 0.5000])
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from bflnet.learners.calibration import scores
from bflnet.learners.models.classifiers import ParticleModel

#: Activations per chunk of examples (4 Mi floats, 16 MB) when the model states its width.
CHUNK_ACTIVATIONS = 1 << 22


def chunk_rows(model: ParticleModel, n_particles: int) -> int:
    """Examples per chunk: 1024, or more for a model with ``activation_width()`` (the
    widest layer per example and particle) while ``N · rows · width`` stays within
    :data:`CHUNK_ACTIVATIONS` (a logistic regression on 2 classes takes 100 000s of rows
    at once: per-chunk overhead, not arithmetic, is its cost)."""
    width = getattr(model, "activation_width", None)
    if not callable(width):
        return 1024
    return max(1024, CHUNK_ACTIVATIONS // max(1, n_particles * int(width())))


def posterior_predictive(model: ParticleModel, theta: Tensor, x: Tensor | np.ndarray,
                         batch_size: int | None = None) -> Tensor:
    """``(B, C)``: the particles' softmax outputs averaged over particles.

    Examples are evaluated ``batch_size`` at a time (memory ``∝ N · batch_size · width``;
    default :func:`chunk_rows`), without autograd, by the model's ``mean_proba`` where it
    has one (else the mean of ``predict_proba`` over the particles). ``x`` may be a numpy
    array; it is moved to ``theta``'s device/dtype.
    """
    if batch_size is None:
        batch_size = chunk_rows(model, theta.shape[0])
    if batch_size < 1:
        raise ValueError(f"batch_size: must be >= 1, got {batch_size}")
    x = torch.as_tensor(x, dtype=theta.dtype, device=theta.device)
    if x.ndim != 2:
        raise ValueError(f"x: expected shape (B, n_in), got {tuple(x.shape)}")
    mean_proba = getattr(model, "mean_proba", None)
    if not callable(mean_proba):
        def mean_proba(theta: Tensor, x: Tensor) -> Tensor:
            return model.predict_proba(theta, x).mean(dim=0)
    with torch.no_grad():
        theta = theta.detach()
        chunks = [mean_proba(theta, x[i:i + batch_size])
                  for i in range(0, x.shape[0], batch_size)]
    if not chunks:
        return torch.empty(0, model.n_classes, dtype=theta.dtype, device=theta.device)
    return torch.cat(chunks)


def predictive_metrics(model: ParticleModel, theta: Tensor, x: Tensor | np.ndarray,
                       y: Tensor | np.ndarray, n_bins: int = 10,
                       batch_size: int | None = None) -> dict[str, float]:
    """``accuracy``, ``ece`` (``n_bins`` equal-width confidence bins), ``nll`` and
    ``brier`` of the posterior predictive of ``theta`` on ``(x, y)``."""
    probs = posterior_predictive(model, theta, x, batch_size)
    labels = torch.as_tensor(y, device=probs.device)
    if labels.shape != probs.shape[:1]:
        raise ValueError(f"y: expected shape ({probs.shape[0]},) to match x, "
                         f"got {tuple(labels.shape)}")
    if not torch.isfinite(probs).all():
        raise ValueError("theta: the posterior predictive has non-finite probabilities")
    return scores(probs, labels, n_bins=n_bins)


def per_class_accuracy(probs: Tensor | np.ndarray, y: Tensor | np.ndarray,
                       n_classes: int) -> np.ndarray:
    """``(n_classes,)`` accuracy of ``argmax probs`` among the examples of each true class
    (``nan`` for a class with no examples), e.g. for unlearned vs remaining labels."""
    p = probs.detach().cpu().numpy() if isinstance(probs, Tensor) else np.asarray(probs)
    labels = y.detach().cpu().numpy() if isinstance(y, Tensor) else np.asarray(y)
    if p.ndim != 2 or labels.shape != p.shape[:1]:
        raise ValueError(f"probs, y: expected shapes (B, C) and (B,), got {p.shape} and "
                         f"{labels.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise ValueError(f"y: labels must be in 0..{n_classes - 1}, got "
                         f"{labels.min()}..{labels.max()}")
    labels = labels.astype(np.int64)
    hits = np.bincount(labels, weights=p.argmax(axis=1) == labels, minlength=n_classes)
    counts = np.bincount(labels, minlength=n_classes)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, hits / np.maximum(counts, 1), np.nan)


__all__ = ["per_class_accuracy", "posterior_predictive", "predictive_metrics"]
