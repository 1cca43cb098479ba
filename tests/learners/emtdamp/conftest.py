"""Fixtures the EM-TDAMP tests share."""

from __future__ import annotations

import pytest
import torch

F64 = torch.float64


@pytest.fixture
def linear_problem() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One Gaussian linear layer ``y = W̃ [x; 1] + noise`` (8 inputs, 2 outputs, 300
    examples, noise sd 0.5) and a Gaussian prior ``(m0, v0)`` on ``W̃``: ``(x, y, m0, v0)``."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(8, 300, generator=gen, dtype=F64)
    x_tilde = torch.cat([x, torch.ones(1, 300, dtype=F64)])
    y = torch.randn(2, 9, generator=gen, dtype=F64) @ x_tilde + 0.5 * torch.randn(
        2, 300, generator=gen, dtype=F64)
    return x, y, 0.1 * torch.ones(2, 9, dtype=F64), torch.full((2, 9), 2.0, dtype=F64)
