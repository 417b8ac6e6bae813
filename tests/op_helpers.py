"""Helpers shared by the operator tests: seeded generators, arrays, inference calls, references.

Imported as ``from op_helpers import ...`` (``tests/`` is on the path, like ``engine_configs``),
so every operator test builds inputs and asks the registry the same way.
"""

from __future__ import annotations

import numpy as np

import framework as mx


def seeded_rng(seed: int = 0) -> np.random.Generator:
    """A NumPy generator with a fixed seed, so a failing case can be replayed."""
    return np.random.default_rng(seed)


def to_nd(x: np.ndarray, dtype: str = "float64") -> mx.nd.NDArray:
    """``x`` as an NDArray (float64 by default, the dtype finite differences need)."""
    return mx.nd.array(x, dtype=dtype)


def infer_shapes(name: str, params: dict, in_shapes: list, out_shapes: list | None = None) -> tuple[list, list, bool]:
    """Run operator ``name``'s shape inference on copies of the lists: (inputs, outputs, done).

    ``out_shapes`` defaults to one unknown shape per output of the operator.
    """
    op = mx.operator.get(name)
    attrs = op.parse_attrs(params)
    outs = list(out_shapes) if out_shapes is not None else [None] * op.get_num_outputs(attrs)
    ins = list(in_shapes)
    done = op.run_infer_shape(attrs, ins, outs)
    return ins, outs, done


def infer_types(name: str, params: dict, in_types: list, out_types: list | None = None) -> tuple[list, list]:
    """Run operator ``name``'s type inference on copies of the lists: (inputs, outputs)."""
    op = mx.operator.get(name)
    attrs = op.parse_attrs(params)
    outs = list(out_types) if out_types is not None else [None] * op.get_num_outputs(attrs)
    ins = list(in_types)
    op.run_infer_type(attrs, ins, outs)
    return ins, outs


def away_from_zero(x: np.ndarray, gap: float = 0.1) -> np.ndarray:
    """``x`` with every value at least ``gap`` from 0 (finite differences straddling a kink
    at 0, as in ``abs`` or ``relu``, are meaningless)."""
    return np.where(np.abs(x) < gap, np.copysign(gap, x) + np.sign(x) * gap + (x == 0) * gap, x)


def mod_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """MXNet's ``mod``: Python's sign rule, and 0 where the divisor is 0."""
    return np.where(b == 0, 0, np.mod(a, np.where(b == 0, 1, b)))


def softmax_reference(x: np.ndarray, axis: int, temperature: float = 1.0) -> np.ndarray:
    """Softmax of ``x / temperature`` along ``axis``, computed stably."""
    z = x / temperature
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
