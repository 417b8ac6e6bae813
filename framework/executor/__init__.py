"""Graph passes and the graph executor. Today: the gradient pass shared with autograd."""

from __future__ import annotations

from .gradient import GradientError, build_gradient

__all__ = ["GradientError", "build_gradient"]
