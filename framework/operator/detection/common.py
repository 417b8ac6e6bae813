"""Inference pieces the detection operators share (this module registers no operator)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..infer import InferenceError, ShapeT, type_assign


def check_rank(op_name: str, shape: ShapeT, what: str, rank: int, layout: str) -> None:
    """An InferenceError when a known ``shape`` does not have ``rank`` axes (``layout`` says which)."""
    if shape is not None and len(shape) != rank:
        raise InferenceError(f"{op_name}: {what} must be {rank}-d {layout}, got shape {tuple(shape)}")


def one_float_type(input_names: Sequence[str], float32_only: bool = False) -> Callable[..., bool]:
    """Every input and output share one floating-point dtype, inferred from whichever is known.

    ``float32_only``: MXNet's legacy detection operators (MultiBox*, Proposal) accept float32 alone.
    """

    def infer(attrs: Any, in_types: list, out_types: list) -> bool:
        known = next((t for t in [*in_types, *out_types] if t is not None), None)
        if known is None:
            return False
        if float32_only and np.dtype(known) != np.float32:
            raise InferenceError(f"{attrs.name}: works on float32 only (as in MXNet 1.9.1), got {np.dtype(known)}")
        if np.dtype(known).kind != "f":
            raise InferenceError(f"{attrs.name}: needs floating-point inputs, got {np.dtype(known)}")
        for i, name in enumerate(input_names):
            type_assign(in_types, i, known, attrs.name, name)
        for i in range(len(out_types)):
            type_assign(out_types, i, known, attrs.name, f"output {i}")
        return True

    return infer
