"""``mx.contrib.autograd``: the autograd API of MXNet before 1.0, kept for old scripts.

It differs from :mod:`framework.autograd` in one way: training mode and recording are one
switch (``set_is_training`` turns both on or off), and ``train_section()`` /
``test_section()`` are its ``with`` blocks. Everything else forwards to framework.autograd.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from .. import autograd as _autograd
from ..ndarray import zeros_like
from ..ndarray.ndarray import NDArray


def set_is_training(is_train: bool) -> bool:
    """Turn training mode and recording on or off together; returns the previous training state."""
    previous = _autograd.set_training(is_train)
    _autograd.set_recording(is_train)
    return previous


class TrainingStateScope:
    """``with TrainingStateScope(True):`` records and trains inside the block, restores after."""

    def __init__(self, enter_state: bool) -> None:
        self._enter_state = bool(enter_state)
        self._prev: bool | None = None

    def __enter__(self) -> None:
        self._prev = set_is_training(self._enter_state)

    def __exit__(self, *exc: Any) -> None:
        if self._prev is not None and self._prev != self._enter_state:
            set_is_training(self._prev)


def train_section() -> TrainingStateScope:
    """A block that records operations in training mode (the old ``autograd.record()``)."""
    return TrainingStateScope(True)


def test_section() -> TrainingStateScope:
    """A block that neither records nor trains, e.g. for evaluation inside a train_section."""
    return TrainingStateScope(False)


def mark_variables(
    variables: Sequence[NDArray], gradients: Sequence[NDArray], grad_reqs: str | Sequence[str] = "write"
) -> None:
    """Make ``variables`` differentiable, with ``gradients`` as their gradient buffers."""
    _autograd.mark_variables(variables, gradients, grad_reqs)


def backward(outputs: Any, out_grads: Any = None, retain_graph: bool = False) -> None:
    """Gradients of ``outputs`` into the buffers given to :func:`mark_variables`."""
    _autograd.backward(outputs, out_grads, retain_graph=retain_graph)


def compute_gradient(outputs: Any) -> None:
    """The oldest name of :func:`backward`."""
    backward(outputs)


def grad_and_loss(func: Callable[..., Any], argnum: int | list[int] | None = None) -> Callable[..., Any]:
    """Wrap ``func`` so that calling it returns ``(gradients of the chosen arguments, outputs)``."""

    @functools.wraps(func)
    def wrapped(*args: Any) -> tuple[list[NDArray], Any]:
        variables = list(args)
        if argnum is not None:
            indices = argnum if isinstance(argnum, list) else [argnum]
            variables = [args[i] for i in indices]
        for i, x in enumerate(variables):
            if not isinstance(x, NDArray):
                raise TypeError(f"grad_and_loss: argument {i} must be an NDArray, got {type(x).__name__}")
        grads = [zeros_like(x) for x in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs

    return wrapped


def grad(func: Callable[..., Any], argnum: int | list[int] | None = None) -> Callable[..., list[NDArray]]:
    """Wrap ``func`` so that calling it returns the gradients of the chosen arguments."""
    with_loss = grad_and_loss(func, argnum)

    @functools.wraps(func)
    def wrapped(*args: Any) -> list[NDArray]:
        return with_loss(*args)[0]

    return wrapped


__all__ = [
    "TrainingStateScope",
    "backward",
    "compute_gradient",
    "grad",
    "grad_and_loss",
    "mark_variables",
    "set_is_training",
    "test_section",
    "train_section",
]
