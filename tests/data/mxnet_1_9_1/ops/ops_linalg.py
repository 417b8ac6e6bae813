"""Write reference results of MXNet 1.9.1's linalg operators to ``ops_linalg.npz``.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/ops/ops_linalg.py [output.npz]

For each case of :data:`CASES` (an operator, its parameters and seeded inputs shaped for
it), the file holds, under the keys ``<case>/...``:

* ``op`` and ``params`` (JSON text), ``in0, in1, ...``: the inputs;
* ``out0, ...``: MXNet's visible outputs;
* ``head0, ...`` and ``grad0, ...``: random head gradients for the visible outputs, and the
  input gradients MXNet's autograd computes from them.

tests/operator/test_linalg.py compares MXLab against the committed file, and runs this
script live when the environment variable ``MXNET_PYTHON`` names such an interpreter. The
script needs only MXNet and NumPy; it never imports MXLab.
"""

from __future__ import annotations

import json
import os
import sys

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _spd(rng: np.random.Generator, batch: tuple, n: int) -> np.ndarray:
    """Symmetric positive-definite matrices (well conditioned)."""
    x = rng.uniform(-1, 1, (*batch, n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _lower(rng: np.random.Generator, batch: tuple, n: int) -> np.ndarray:
    """Lower-triangular matrices with a diagonal in [1, 2]: well conditioned."""
    x = np.tril(rng.uniform(-1, 1, (*batch, n, n)), -1)
    return x + np.eye(n) * rng.uniform(1, 2, (*batch, n, 1))


def _square(rng: np.random.Generator, batch: tuple, n: int) -> np.ndarray:
    return rng.uniform(-1, 1, (*batch, n, n)) + 2 * np.eye(n)


def _symmetric_distinct(rng: np.random.Generator, batch: tuple, n: int) -> np.ndarray:
    """Symmetric matrices with well separated eigenvalues (syevd's gradient needs gaps)."""
    q, _ = np.linalg.qr(rng.standard_normal((*batch, n, n)))
    w = np.arange(1, n + 1, dtype=np.float64) * 1.5
    return q @ (w[..., :, None] * np.swapaxes(q, -1, -2))


def _uniform(shape: tuple):
    return lambda rng: rng.uniform(-1, 1, shape)


#: (case name, operator, parameters, input makers, dtype)
CASES = [
    (
        "gemm",
        "_linalg_gemm",
        {"alpha": 1.5, "beta": 0.5},
        [_uniform((2, 3, 4)), _uniform((2, 4, 5)), _uniform((2, 3, 5))],
        "float64",
    ),
    (
        "gemm_t_axis0",
        "linalg_gemm",
        {"transpose_a": True, "transpose_b": True, "axis": 0},
        [_uniform((4, 2, 3)), _uniform((5, 2, 4)), _uniform((3, 2, 5))],
        "float64",
    ),
    ("gemm2", "_linalg_gemm2", {}, [_uniform((2, 3, 4)), _uniform((2, 4, 5))], "float64"),
    (
        "gemm2_f32",
        "linalg_gemm2",
        {"alpha": 2.0, "transpose_b": True},
        [_uniform((3, 6, 4)), _uniform((3, 5, 4))],
        "float32",
    ),
    (
        "gemm2_axis",
        "_linalg_gemm2",
        {"axis": -3, "transpose_a": True},
        [_uniform((4, 2, 3, 5)), _uniform((4, 2, 3, 6))],
        "float64",
    ),
    ("trmm", "_linalg_trmm", {}, [lambda r: _lower(r, (2,), 3), _uniform((2, 3, 4))], "float64"),
    (
        "trmm_right_t_upper",
        "linalg_trmm",
        {"rightside": True, "transpose": True, "lower": False, "alpha": 0.5},
        [lambda r: np.swapaxes(_lower(r, (2,), 4), -1, -2), _uniform((2, 3, 4))],
        "float64",
    ),
    ("trsm", "_linalg_trsm", {"alpha": 2.0}, [lambda r: _lower(r, (2,), 3), _uniform((2, 3, 4))], "float64"),
    (
        "trsm_right_t",
        "linalg_trsm",
        {"rightside": True, "transpose": True},
        [lambda r: _lower(r, (2,), 4), _uniform((2, 3, 4))],
        "float64",
    ),
    (
        "trsm_upper",
        "_linalg_trsm",
        {"lower": False},
        [lambda r: np.swapaxes(_lower(r, (), 3), -1, -2), _uniform((3, 2))],
        "float64",
    ),
    ("syrk", "_linalg_syrk", {}, [_uniform((2, 3, 4))], "float64"),
    ("syrk_t", "linalg_syrk", {"transpose": True, "alpha": 0.5}, [_uniform((3, 4))], "float64"),
    ("potrf", "_linalg_potrf", {}, [lambda r: _spd(r, (2,), 4)], "float64"),
    ("potri", "_linalg_potri", {}, [lambda r: _lower(r, (2,), 3)], "float64"),
    ("sumlogdiag", "_linalg_sumlogdiag", {}, [lambda r: _spd(r, (3,), 3)], "float64"),
    ("gelqf", "_linalg_gelqf", {}, [_uniform((2, 3, 5))], "float64"),
    ("syevd", "_linalg_syevd", {}, [lambda r: _symmetric_distinct(r, (2,), 4)], "float64"),
    ("inverse", "_linalg_inverse", {}, [lambda r: _square(r, (2,), 3)], "float64"),
    ("det", "_linalg_det", {}, [lambda r: _square(r, (3,), 3)], "float64"),
    ("det_single", "linalg_det", {}, [lambda r: _square(r, (), 4)], "float64"),
    ("slogdet", "_linalg_slogdet", {}, [lambda r: _square(r, (2,), 4) * np.array([1, -1, 1, 1])], "float64"),
    ("extractdiag", "_linalg_extractdiag", {"offset": 1}, [_uniform((2, 4, 4))], "float64"),
    ("makediag", "_linalg_makediag", {"offset": -1}, [_uniform((2, 3))], "float64"),
    ("extracttrian", "_linalg_extracttrian", {"lower": False}, [_uniform((2, 4, 4))], "float64"),
    ("extracttrian_neg", "linalg_extracttrian", {"offset": -1}, [_uniform((4, 4))], "float64"),
    ("maketrian", "_linalg_maketrian", {"offset": 1, "lower": False}, [_uniform((2, 6))], "float64"),
    ("maketrian_lower", "linalg_maketrian", {}, [_uniform((10,))], "float64"),
]


def front_end(mx, op: str):
    """``mx.nd.linalg.<x>`` for ``_linalg_<x>``, ``mx.nd.<op>`` for the ``linalg_<x>`` aliases."""
    return getattr(mx.nd.linalg, op[len("_linalg_") :]) if op.startswith("_linalg_") else getattr(mx.nd, op)


def run_case(mx, rng: np.random.Generator, name: str, op: str, params: dict, makers: list, dtype: str) -> dict:
    """One case's inputs, outputs, head gradients and input gradients, keyed by case name."""
    values = [np.asarray(make(rng), dtype=dtype) for make in makers]
    arrays = [mx.nd.array(v, dtype=dtype) for v in values]
    for a in arrays:
        a.attach_grad()
    function = front_end(mx, op)
    with mx.autograd.record():
        result = function(*arrays, **params)
    outputs = [result] if isinstance(result, mx.nd.NDArray) else list(result)
    heads = [rng.uniform(-1, 1, o.shape).astype(dtype) for o in outputs]
    mx.autograd.backward(outputs, [mx.nd.array(h, dtype=dtype) for h in heads])
    record = {f"{name}/op": np.array(op), f"{name}/params": np.array(json.dumps(params))}
    for i, v in enumerate(values):
        record[f"{name}/in{i}"] = v
        record[f"{name}/grad{i}"] = arrays[i].grad.asnumpy()
    for i, (o, h) in enumerate(zip(outputs, heads, strict=True)):
        record[f"{name}/out{i}"] = o.asnumpy()
        record[f"{name}/head{i}"] = h
    return record


def main(path: str) -> None:
    rng = np.random.default_rng(17)
    record: dict = {}
    for case in CASES:
        record.update(run_case(mx, rng, *case))
    np.savez_compressed(path, **record)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "ops_linalg.npz"))
