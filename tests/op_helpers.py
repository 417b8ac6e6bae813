"""Helpers shared by the operator tests: seeded generators, arrays, inference calls, references.

Imported as ``from op_helpers import ...`` (``tests/`` is on the path, like ``engine_configs``),
so every operator test builds inputs and asks the registry the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import framework as mx
from framework import autograd


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


# ----------------------------------------------------------------------------- MXNet reference replays
# The peer scripts tests/data/mxnet_1_9_1/ops/ops_misc17.py and ops_tensorutil.py store their cases
# in one format (a JSON list of cases, arrays packed into per-dtype buffers of an .npz); the two
# test files replay them the same way, so loading and replaying live here once.


def load_reference_cases(folder: Path, stem: str) -> list[dict]:
    """The cases of ``stem``.json, each with its arrays (``in``, ``out``, ``grads``) cut out of the
    per-dtype buffers of ``stem``.npz in the order the script stored them."""
    with open(folder / f"{stem}.json") as f:
        cases = json.load(f)["cases"]
    with np.load(folder / f"{stem}.npz") as data:
        buffers = {k: data[k] for k in data.files}
    offsets = dict.fromkeys(buffers, 0)
    for case in cases:
        for key in ("in", "out", "grads"):
            arrays = []
            for dtype, shape in case.get(key, []):
                size = int(np.prod(shape))
                arrays.append(buffers[dtype][offsets[dtype] : offsets[dtype] + size].reshape(shape))
                offsets[dtype] += size
            case[key] = arrays
    assert all(offsets[k] == buffers[k].size for k in buffers), "the reference buffers hold unread values"
    return cases


def reference_head_gradient(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """The head gradients the peer scripts used (their ``head_gradient``; the scripts are not imported)."""
    size = int(np.prod(shape))
    return (0.5 + (np.arange(size) % 7) / 7).astype(dtype).reshape(shape)


def replay_reference_case(case: dict, grad_atol: float = 1e-5) -> None:
    """Run ``case`` through MXLab's front-end function and compare outputs and input gradients.

    The case runs under ``autograd.record`` in the mode it names (``train``, default training);
    list parameters become tuples (JSON has no tuples; MXNet's shape parameters are tuples).
    """
    cid = case["id"]
    inputs = [mx.nd.array(x, dtype=x.dtype) for x in case["in"]]
    for i in case["grad"]:
        inputs[i].attach_grad()
    fn = mx
    for part in case["function"].split("."):
        fn = getattr(fn, part)
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in case["params"].items()}
    with autograd.record(train_mode=case.get("train", True)):
        result = fn(*inputs, **params)
    outputs = list(result) if isinstance(result, list | tuple) else [result]
    assert len(outputs) == len(case["out"]), f"{cid}: {len(outputs)} outputs, MXNet has {len(case['out'])}"
    for k, (out, expected) in enumerate(zip(outputs, case["out"], strict=True)):
        assert out.shape == expected.shape, f"{cid}: output {k} shape {out.shape} != MXNet's {expected.shape}"
        assert out.dtype == expected.dtype, f"{cid}: output {k} dtype {out.dtype} != MXNet's {expected.dtype}"
        np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-4, atol=1e-5, err_msg=f"{cid}: output {k}")
    if case["grad"]:
        heads = [
            reference_head_gradient(o.shape, o.dtype) * (k not in case["zero_heads"]) for k, o in enumerate(outputs)
        ]
        autograd.backward(outputs, [mx.nd.array(h, dtype=h.dtype) for h in heads])
        for i, expected in zip(case["grad"], case["grads"], strict=True):
            np.testing.assert_allclose(
                inputs[i].grad.asnumpy(), expected, rtol=1e-4, atol=grad_atol, err_msg=f"{cid}: grad {i}"
            )
