"""The linear-algebra family (``mx.nd.linalg.*``, ``_linalg_*``/``linalg_*``).

Each operator is checked against a NumPy reference on random batch shapes in float32 and
float64, against finite differences (float64), for ``req`` add/null, for shape and type
inference in both directions and for its errors; and against MXNet 1.9.1 itself through
the committed reference file tests/data/mxnet_1_9_1/ops/ops_linalg.npz (written by the script
beside it, which the last test also runs live when ``MXNET_PYTHON`` names an interpreter
with MXNet 1.9.1).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

import framework as mx
from framework import backend
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd
FLOATS = ["float32", "float64"]
DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "ops"


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _batch(rng: np.random.Generator) -> tuple[int, ...]:
    """A random batch shape of 0 to 2 axes (0 axes: a single matrix)."""
    return tuple(int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 3))))


def _arr(x: np.ndarray, dtype: str = "float64") -> mx.nd.NDArray:
    return nd.array(np.asarray(x, dtype=dtype), dtype=dtype)


def _t(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def _spd(rng: np.random.Generator, batch: tuple, n: int) -> np.ndarray:
    x = rng.uniform(-1, 1, (*batch, n, n))
    return x @ _t(x) + n * np.eye(n)


def _lower(rng: np.random.Generator, batch: tuple, n: int) -> np.ndarray:
    x = np.tril(rng.uniform(-1, 1, (*batch, n, n)), -1)
    return x + np.eye(n) * rng.uniform(1, 2, (*batch, n, 1))


def _square(rng: np.random.Generator, batch: tuple, n: int) -> np.ndarray:
    return rng.uniform(-1, 1, (*batch, n, n)) + 2 * np.eye(n)


def _tol(dtype: str) -> dict:
    return {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-12}


def _infer(name: str, params: dict, in_shapes: list, out_shapes: list | None = None):
    op = mx.operator.get(name)
    attrs = op.parse_attrs(params)
    outs = list(out_shapes) if out_shapes is not None else [None] * op.get_num_outputs(attrs)
    ins = list(in_shapes)
    done = op.run_infer_shape(attrs, ins, outs)
    return ins, outs, done


def _infer_type(name: str, params: dict, in_types: list, out_types: list | None = None):
    op = mx.operator.get(name)
    attrs = op.parse_attrs(params)
    outs = list(out_types) if out_types is not None else [None] * op.get_num_outputs(attrs)
    ins = list(in_types)
    op.run_infer_type(attrs, ins, outs)
    return ins, outs


# ============================================================================ names
OPERATORS = [
    "gemm",
    "gemm2",
    "potrf",
    "potri",
    "trmm",
    "trsm",
    "sumlogdiag",
    "syrk",
    "gelqf",
    "syevd",
    "inverse",
    "det",
    "slogdet",
    "extractdiag",
    "makediag",
    "extracttrian",
    "maketrian",
]


@pytest.mark.parametrize("short", OPERATORS)
def test_names_namespaces_and_aliases_follow_mxnet(short):
    full = f"_linalg_{short}"
    assert mx.operator.get(full).name == full
    assert mx.operator.get(f"_backward_linalg_{short}").is_backward
    assert callable(getattr(nd.linalg, short)) and callable(getattr(mx.sym.linalg, short))
    if short == "syevd":  # MXNet 1.9.1 registers no linalg_syevd alias
        assert not mx.operator.registry.exists("linalg_syevd")
    else:
        assert mx.operator.get(f"linalg_{short}").name == full
        assert callable(getattr(nd, f"linalg_{short}")) and callable(getattr(mx.sym, f"linalg_{short}"))


def test_inputs_and_visible_outputs_match_mxnet():
    a, b, c = mx.sym.var("A"), mx.sym.var("B"), mx.sym.var("C")
    assert mx.sym.linalg.gemm(a, b, c).list_arguments() == ["A", "B", "C"]
    assert mx.sym.linalg.trsm(a, b).list_arguments() == ["A", "B"]
    # det and slogdet keep LU factors and pivots as hidden outputs, as MXNet does
    for name, total, visible in (("det", 3, 1), ("slogdet", 4, 2), ("gelqf", 2, 2), ("syevd", 2, 2)):
        op = mx.operator.get(f"_linalg_{name}")
        attrs = op.parse_attrs({})
        assert (op.get_num_outputs(attrs), op.get_num_visible_outputs(attrs)) == (total, visible)
        assert len(getattr(mx.sym.linalg, name)(a).list_outputs()) == visible
    assert isinstance(nd.linalg.det(_arr(np.eye(2))), mx.nd.NDArray)


# ============================================================================ BLAS-3: forward
def _op(x: np.ndarray, flag: bool) -> np.ndarray:
    return _t(x) if flag else x


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("seed", range(4))
def test_gemm_and_gemm2_forward(dtype, seed):
    rng = _rng(seed)
    batch, (m, k, n) = _batch(rng), rng.integers(1, 5, 3)
    ta, tb = bool(seed & 1), bool(seed & 2)
    alpha, beta = float(rng.uniform(-2, 2)), float(rng.uniform(-2, 2))
    a = rng.uniform(-1, 1, (*batch, *((k, m) if ta else (m, k))))
    b = rng.uniform(-1, 1, (*batch, *((n, k) if tb else (k, n))))
    c = rng.uniform(-1, 1, (*batch, m, n))
    product = alpha * _op(a, ta) @ _op(b, tb)
    params = {"transpose_a": ta, "transpose_b": tb, "alpha": alpha}
    out = nd.linalg.gemm(_arr(a, dtype), _arr(b, dtype), _arr(c, dtype), beta=beta, **params)
    assert out.dtype == np.dtype(dtype)
    assert_almost_equal(out, product + beta * c, **_tol(dtype))
    assert_almost_equal(nd.linalg_gemm2(_arr(a, dtype), _arr(b, dtype), **params), product, **_tol(dtype))


@pytest.mark.parametrize("axis", [0, 1, 2, -3, -4])
def test_gemm_row_axis_is_swapped_next_to_the_columns(axis):
    rng = _rng(5)
    # the matrices as gemm sees them (rows next to the last axis), batch (2, 3)
    a_view, b_view, c_view = (
        rng.uniform(-1, 1, (2, 3, 6, 4)),
        rng.uniform(-1, 1, (2, 3, 4, 5)),
        rng.uniform(-1, 1, (2, 3, 6, 5)),
    )
    ax = axis % 4
    a, b, c = (np.swapaxes(v, ax, 2) for v in (a_view, b_view, c_view))
    expected = np.swapaxes(a_view @ b_view + c_view, ax, 2)
    assert_almost_equal(nd.linalg.gemm(_arr(a), _arr(b), _arr(c), axis=axis), expected)
    assert_almost_equal(nd.linalg.gemm2(_arr(a), _arr(b), axis=axis), expected - c)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("rightside", [False, True])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("lower", [False, True])
def test_trmm_and_trsm_forward(dtype, rightside, transpose, lower):
    rng = _rng(int(rightside) + 2 * int(transpose) + 4 * int(lower))
    batch, m, n = _batch(rng), 3, 4
    size = n if rightside else m
    tri = _lower(rng, batch, size)
    tri = tri if lower else _t(tri)
    # garbage in the other triangle: never read
    a = tri + (np.triu(np.ones((size, size)), 1) if lower else np.tril(np.ones((size, size)), -1)) * 7.0
    b = rng.uniform(-1, 1, (*batch, m, n))
    alpha = 1.5
    op_a = _op(tri, transpose)
    params = {"rightside": rightside, "transpose": transpose, "lower": lower, "alpha": alpha}
    product = alpha * (b @ op_a if rightside else op_a @ b)
    solved = alpha * (b @ np.linalg.inv(op_a) if rightside else np.linalg.inv(op_a) @ b)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {"rtol": 1e-9, "atol": 1e-10}
    assert_almost_equal(nd.linalg.trmm(_arr(a, dtype), _arr(b, dtype), **params), product, **tol)
    assert_almost_equal(nd.linalg.trsm(_arr(a, dtype), _arr(b, dtype), **params), solved, **tol)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("transpose", [False, True])
def test_syrk_forward(dtype, transpose):
    rng = _rng(int(transpose))
    a = rng.uniform(-1, 1, (*_batch(rng), 3, 5))
    expected = 0.5 * (_t(a) @ a if transpose else a @ _t(a))
    out = nd.linalg.syrk(_arr(a, dtype), transpose=transpose, alpha=0.5)
    assert out.shape == expected.shape
    assert_almost_equal(out, expected, **_tol(dtype))


# ============================================================================ factorisations: forward
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("seed", range(3))
def test_potrf_potri_sumlogdiag_inverse_forward(dtype, seed):
    rng = _rng(seed)
    batch, n = _batch(rng), int(rng.integers(1, 5))
    spd = _spd(rng, batch, n)
    # potrf reads the lower triangle only
    upper_garbage = spd + np.triu(np.ones((n, n)), 1) * 3.0
    chol = np.linalg.cholesky(spd)
    tol = {"rtol": 1e-3, "atol": 1e-4} if dtype == "float32" else {"rtol": 1e-9, "atol": 1e-10}
    assert_almost_equal(nd.linalg.potrf(_arr(upper_garbage, dtype)), chol, **tol)
    assert_almost_equal(nd.linalg.potri(_arr(chol + np.triu(np.ones((n, n)), 1), dtype)), np.linalg.inv(spd), **tol)
    logs = np.log(np.diagonal(spd, axis1=-2, axis2=-1)).sum(-1)
    assert_almost_equal(nd.linalg.sumlogdiag(_arr(spd, dtype)), logs.reshape(batch or (1,)), **tol)
    square = _square(rng, batch, n)
    assert_almost_equal(nd.linalg.inverse(_arr(square, dtype)), np.linalg.inv(square), **tol)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("seed", range(3))
def test_det_and_slogdet_forward(dtype, seed):
    rng = _rng(seed)
    batch, n = _batch(rng), int(rng.integers(1, 5))
    a = rng.uniform(-1, 1, (*batch, n, n))
    sign, logdet = np.linalg.slogdet(a)
    tol = {"rtol": 1e-3, "atol": 1e-4} if dtype == "float32" else {"rtol": 1e-9, "atol": 1e-10}
    assert_almost_equal(nd.linalg.det(_arr(a, dtype)), np.linalg.det(a).reshape(batch or (1,)), **tol)
    got_sign, got_log = nd.linalg.slogdet(_arr(a, dtype))
    assert_almost_equal(got_sign, sign.reshape(batch or (1,)))
    assert_almost_equal(got_log, logdet.reshape(batch or (1,)), **tol)


@pytest.mark.filterwarnings("ignore:Diagonal number")  # SciPy's LU warns that the matrix is singular
def test_slogdet_of_a_singular_matrix_is_zero_sign_and_minus_infinity():
    # MXNet 1.9.1's documented example
    a = _arr([[[2.0, 3.0], [1.0, 4.0]], [[1.0, 2.0], [2.0, 4.0]], [[1.0, 2.0], [4.0, 3.0]]])
    sign, logdet = nd.linalg.slogdet(a)
    assert sign.asnumpy().tolist() == [1.0, 0.0, -1.0]
    assert_almost_equal(logdet, np.array([np.log(5.0), -np.inf, np.log(5.0)]), equal_nan=True)
    assert nd.linalg.det(a).asnumpy()[1] == 0.0


@pytest.mark.parametrize("dtype", FLOATS)
def test_gelqf_forward(dtype):
    rng = _rng(3)
    a = rng.uniform(-1, 1, (2, 3, 5))
    q, low = nd.linalg.gelqf(_arr(a, dtype))
    q, low = q.asnumpy().astype(np.float64), low.asnumpy().astype(np.float64)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-12}
    assert q.shape == (2, 3, 5) and low.shape == (2, 3, 3)
    assert_almost_equal(low @ q, a, **tol)
    assert_almost_equal(q @ _t(q), np.broadcast_to(np.eye(3), (2, 3, 3)), **tol)
    assert_almost_equal(np.triu(low, 1), np.zeros_like(low))
    # MXNet 1.9.1's documented example (LAPACK's Householder signs)
    q, low = nd.linalg.gelqf(_arr([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    assert_almost_equal(q, np.array([[-0.26726124, -0.53452248, -0.80178373], [0.87287156, 0.21821789, -0.43643578]]))
    assert_almost_equal(low, np.array([[-3.74165739, 0.0], [-8.55235974, 1.96396101]]))


@pytest.mark.parametrize("dtype", FLOATS)
def test_syevd_forward_and_sign_convention(dtype):
    rng = _rng(4)
    x = rng.uniform(-1, 1, (3, 4, 4))
    sym = x + _t(x)
    u, w = nd.linalg.syevd(_arr(sym + np.triu(np.ones((4, 4)), 1), dtype))  # reads the lower triangle
    u, w = u.asnumpy().astype(np.float64), w.asnumpy().astype(np.float64)
    tol = {"rtol": 1e-3, "atol": 1e-4} if dtype == "float32" else {"rtol": 1e-9, "atol": 1e-10}
    assert_almost_equal(w, np.linalg.eigvalsh(sym), **tol)
    assert_almost_equal(u @ sym, w[..., :, None] * u, **tol)
    biggest = np.take_along_axis(u, np.abs(u).argmax(-1)[..., None], -1)
    assert (biggest > 0).all()
    # MXNet 1.9.1's documented example
    u, w = nd.linalg.syevd(_arr([[1.0, 2.0], [2.0, 4.0]]))
    assert_almost_equal(u, np.array([[0.89442719, -0.4472136], [0.4472136, 0.89442719]]))
    assert_almost_equal(w, np.array([0.0, 5.0]), atol=1e-12)


# ============================================================================ layout: forward
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("offset", [-2, -1, 0, 1, 3])
def test_extractdiag_makediag_forward(dtype, offset):
    rng = _rng(offset + 2)
    batch = _batch(rng)
    a = rng.uniform(-1, 1, (*batch, 4, 4))
    diag = np.diagonal(a, offset, -2, -1)
    assert_almost_equal(nd.linalg.extractdiag(_arr(a, dtype), offset=offset), diag, **_tol(dtype))
    made = nd.linalg.makediag(_arr(diag, dtype), offset=offset).asnumpy()
    expected = np.zeros((*batch, 4, 4))
    rows, cols = np.nonzero(np.eye(4, k=offset))
    expected[..., rows, cols] = diag
    assert_almost_equal(made, expected, **_tol(dtype))


def _trian_reference(a: np.ndarray, offset: int, lower: bool) -> np.ndarray:
    """Row by row for lower triangles; column by column for upper ones (MXNet 1.9.1)."""
    n = a.shape[-1]
    if offset < 0 or (offset == 0 and lower):
        keep = [(i, j) for i in range(n) for j in range(n) if i - j >= -offset]
    else:
        keep = [(i, j) for j in range(n) for i in range(n) if j - i >= offset]
    return np.stack([a[..., i, j] for i, j in keep], axis=-1)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("offset", "lower"), [(0, True), (0, False), (1, True), (2, False), (-1, True), (-3, False)])
def test_extracttrian_maketrian_forward(dtype, offset, lower):
    rng = _rng(offset + 5)
    batch = _batch(rng)
    a = rng.uniform(-1, 1, (*batch, 4, 4))
    packed = _trian_reference(a, offset, lower)
    assert_almost_equal(nd.linalg.extracttrian(_arr(a, dtype), offset=offset, lower=lower), packed, **_tol(dtype))
    keep = _trian_reference(np.arange(16.0).reshape(4, 4), offset, lower).astype(int)
    expected = np.zeros_like(a).reshape(*batch, 16)
    expected[..., keep] = packed
    made = nd.linalg.maketrian(_arr(packed, dtype), offset=offset, lower=lower)
    assert_almost_equal(made, expected.reshape(a.shape), **_tol(dtype))


def test_layout_examples_from_mxnet_docs():
    a = _arr([[1.0, 2.0], [3.0, 4.0]])
    assert nd.linalg.extracttrian(a).asnumpy().tolist() == [1.0, 3.0, 4.0]
    assert nd.linalg.extracttrian(a, lower=False).asnumpy().tolist() == [1.0, 2.0, 4.0]
    assert nd.linalg.extracttrian(a, offset=1).asnumpy().tolist() == [2.0]
    assert nd.linalg.maketrian(_arr([1.0, 2.0, 3.0]), offset=1).asnumpy().tolist() == [
        [0.0, 1.0, 2.0],
        [0.0, 0.0, 3.0],
        [0.0, 0.0, 0.0],
    ]


# ============================================================================ gradients
def _sym(x):
    """A symmetric positive-definite matrix built from any square x (so finite differences
    perturb both triangles together, as the operators' symmetric gradients assume)."""
    n = x.shape[-1]
    return nd.linalg.syrk(x) + nd.array(n * np.eye(n), dtype="float64")


def test_blas_gradients():
    rng = _rng(10)
    u = lambda *shape: rng.uniform(-1, 1, shape)  # noqa: E731
    check_imperative_gradient(
        lambda a, b, c: nd.linalg.gemm(a, b, c, transpose_a=True, alpha=0.7, beta=-1.3),
        [u(2, 4, 3), u(2, 4, 5), u(2, 3, 5)],
    )
    check_imperative_gradient(lambda a, b: nd.linalg.gemm2(a, b, transpose_b=True, axis=0), [u(3, 2, 4), u(5, 2, 4)])
    for params in ({}, {"rightside": True, "transpose": True, "lower": False, "alpha": 2.0}):
        check_imperative_gradient(lambda a, b, p=params: nd.linalg.trmm(a, b, **p), [_lower(rng, (2,), 3), u(2, 3, 3)])
        check_imperative_gradient(lambda a, b, p=params: nd.linalg.trsm(a, b, **p), [_lower(rng, (2,), 3), u(2, 3, 3)])
    check_imperative_gradient(lambda a: nd.linalg.syrk(a, alpha=0.5), [u(2, 3, 4)])
    check_imperative_gradient(lambda a: nd.linalg.syrk(a, transpose=True), [u(3, 4)])


def test_factorisation_gradients():
    rng = _rng(11)
    u = lambda *shape: rng.uniform(-1, 1, shape)  # noqa: E731
    check_imperative_gradient(lambda x: nd.linalg.potrf(_sym(x)), [u(2, 3, 3)])
    check_imperative_gradient(nd.linalg.potri, [_lower(rng, (2,), 3)])
    check_imperative_gradient(nd.linalg.sumlogdiag, [_spd(rng, (3,), 3)])
    check_imperative_gradient(nd.linalg.inverse, [_square(rng, (2,), 3)])
    check_imperative_gradient(nd.linalg.det, [_square(rng, (2,), 3)])
    check_imperative_gradient(nd.linalg.det, [_square(rng, (), 4)])
    check_imperative_gradient(nd.linalg.slogdet, [_square(rng, (2,), 3) * np.array([1, -1, 1])])
    check_imperative_gradient(nd.linalg.gelqf, [u(2, 2, 4)])
    # syevd: well separated eigenvalues, both triangles perturbed together
    check_imperative_gradient(lambda x: nd.linalg.syevd(_sym(x * 2.0)), [u(2, 3, 3)])


def test_layout_gradients():
    rng = _rng(12)
    for params in ({"offset": 0}, {"offset": -1}, {"offset": 2}):
        check_imperative_gradient(lambda a, p=params: nd.linalg.extractdiag(a, **p), [rng.uniform(-1, 1, (2, 4, 4))])
        check_imperative_gradient(lambda a, p=params: nd.linalg.makediag(a, **p), [rng.uniform(-1, 1, (2, 3))])
    for params in ({"lower": False}, {"offset": -1}, {"offset": 1}):
        check_imperative_gradient(lambda a, p=params: nd.linalg.extracttrian(a, **p), [rng.uniform(-1, 1, (2, 3, 3))])
        check_imperative_gradient(lambda a, p=params: nd.linalg.maketrian(a, **p), [rng.uniform(-1, 1, (2, 6))])


# ============================================================================ req
def test_req_write_add_null():
    rng = _rng(13)
    u = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)  # noqa: E731
    f32 = lambda x: np.asarray(x, np.float32)  # noqa: E731
    check_req("_linalg_gemm", [u(2, 3, 4), u(2, 4, 5), u(2, 3, 5)], alpha=0.5, beta=2.0)
    check_req("_linalg_gemm", [u(3, 2, 4), u(4, 2, 5), u(3, 2, 5)], axis=0)
    check_req("_linalg_gemm2", [u(2, 3, 4), u(2, 5, 4)], transpose_b=True)
    check_req("_linalg_trmm", [f32(_lower(rng, (2,), 3)), u(2, 3, 4)], alpha=2.0)
    check_req("_linalg_trsm", [f32(_lower(rng, (2,), 4)), u(2, 3, 4)], rightside=True)
    check_req("_linalg_syrk", [u(2, 3, 4)], transpose=True)
    check_req("_linalg_potrf", [f32(_spd(rng, (2,), 3))])
    check_req("_linalg_potri", [f32(_lower(rng, (2,), 3))])
    check_req("_linalg_sumlogdiag", [f32(_spd(rng, (2,), 3))])
    check_req("_linalg_gelqf", [u(2, 3, 4)])
    check_req("_linalg_syevd", [f32(_spd(rng, (2,), 3))])
    check_req("_linalg_inverse", [f32(_square(rng, (2,), 3))])
    check_req("_linalg_det", [f32(_square(rng, (2,), 3))])
    check_req("_linalg_slogdet", [f32(_square(rng, (), 3))])
    check_req("_linalg_extractdiag", [u(2, 4, 4)], offset=-1)
    check_req("_linalg_makediag", [u(2, 3)], offset=1)
    check_req("_linalg_extracttrian", [u(2, 4, 4)], lower=False)
    check_req("_linalg_maketrian", [u(2, 6)], offset=-2)


# ============================================================================ in-place
def _run(name: str, inputs: list, params: dict, alias: tuple[int, int] | None = None) -> list:
    """One call of ``name``'s compute; with ``alias`` (input i, output o) output o *is* input i."""
    op = mx.operator.get(name)
    attrs = op.parse_attrs(params)
    ins = [np.array(x, copy=True) for x in inputs]
    count = op.get_num_outputs(attrs)
    in_shapes, out_shapes = [x.shape for x in ins], [None] * count
    in_types, out_types = [x.dtype.name for x in ins], [None] * count
    op.run_infer_shape(attrs, in_shapes, out_shapes)
    op.run_infer_type(attrs, in_types, out_types)
    outs = [np.zeros(shape, dtype) for shape, dtype in zip(out_shapes, out_types, strict=True)]
    if alias is not None:
        outs[alias[1]] = ins[alias[0]]
    ctx = mx.cpu(0)
    op.get_compute("cpu")(attrs, mx.operator.OpContext(True, ctx), ins, [mx.operator.WRITE] * count, outs)
    return outs


IN_PLACE_CASES = [  # (operator, inputs, parameters, MXNet 1.9.1's in-place pairs)
    (
        "_linalg_gemm",
        lambda r: [r.uniform(-1, 1, (2, 3, 4)), r.uniform(-1, 1, (2, 4, 3)), r.uniform(-1, 1, (2, 3, 3))],
        {"beta": 2.0},
        [(2, 0)],
    ),
    ("_linalg_potrf", lambda r: [_spd(r, (2,), 3)], {}, [(0, 0)]),
    ("_linalg_potri", lambda r: [_lower(r, (2,), 3)], {}, [(0, 0)]),
    ("_linalg_trmm", lambda r: [_lower(r, (2,), 3), r.uniform(-1, 1, (2, 3, 3))], {}, [(1, 0)]),
    ("_linalg_trsm", lambda r: [_lower(r, (2,), 3), r.uniform(-1, 1, (2, 3, 3))], {"transpose": True}, [(1, 0)]),
    ("_linalg_gelqf", lambda r: [r.uniform(-1, 1, (2, 3, 3))], {}, [(0, 0)]),
    ("_linalg_syevd", lambda r: [_spd(r, (2,), 3)], {}, [(0, 0)]),
    ("_linalg_inverse", lambda r: [_square(r, (2,), 3)], {}, [(0, 0)]),
    ("_backward_linalg_gemm", lambda r: [r.uniform(-1, 1, (2, 3, 3)) for _ in range(3)], {"alpha": 0.5}, [(2, 1)]),
    ("_backward_linalg_gemm2", lambda r: [r.uniform(-1, 1, (2, 3, 3)) for _ in range(3)], {}, [(2, 1)]),
    (
        "_backward_linalg_trmm",
        lambda r: [r.uniform(-1, 1, (2, 3, 3)), _lower(r, (2,), 3), r.uniform(-1, 1, (2, 3, 3))],
        {"alpha": 2.0},
        [(0, 1)],
    ),
    (
        "_backward_linalg_trsm",
        lambda r: [r.uniform(-1, 1, (2, 3, 3)), _lower(r, (2,), 3), r.uniform(-1, 1, (2, 3, 3))],
        {"rightside": True},
        [(0, 1), (1, 0)],
    ),
    ("_backward_linalg_potrf", lambda r: [r.uniform(-1, 1, (2, 3, 3)), _lower(r, (2,), 3)], {}, [(0, 0)]),
    ("_backward_linalg_sumlogdiag", lambda r: [r.uniform(-1, 1, (2,)), _spd(r, (2,), 3)], {}, [(1, 0)]),
    ("_backward_linalg_inverse", lambda r: [r.uniform(-1, 1, (2, 3, 3)), _square(r, (2,), 3)], {}, [(0, 0)]),
    (
        "_backward_linalg_gelqf",
        lambda r: [
            r.uniform(-1, 1, (2, 3, 3)),
            r.uniform(-1, 1, (2, 3, 3)),
            r.uniform(-1, 1, (2, 3, 3)),
            _lower(r, (2,), 3),
        ],
        {},
        [(0, 0)],
    ),
    (
        "_backward_linalg_syevd",
        lambda r: [
            r.uniform(-1, 1, (2, 3, 3)),
            r.uniform(-1, 1, (2, 3)),
            r.uniform(-1, 1, (2, 3, 3)),
            np.array([[1.0, 2, 4]] * 2),
        ],
        {},
        [(0, 0)],
    ),
]


@pytest.mark.parametrize(("name", "make", "params", "pairs"), IN_PLACE_CASES, ids=[c[0] for c in IN_PLACE_CASES])
def test_in_place_options_match_mxnet_and_are_safe(name, make, params, pairs):
    op = mx.operator.get(name)
    assert op.inplace_option(op.parse_attrs(params)) == pairs
    inputs = make(_rng(15))
    expected = _run(name, inputs, params)
    for pair in pairs:  # the output written over its input gives the same numbers
        for got, want in zip(_run(name, inputs, params, alias=pair), expected, strict=True):
            assert_almost_equal(got, want, rtol=1e-12, atol=1e-12)


# ============================================================================ inference
def test_gemm_shape_inference_both_ways():
    assert _infer("_linalg_gemm2", {}, [(2, 3, 4), (2, 4, 5)])[:2] == ([(2, 3, 4), (2, 4, 5)], [(2, 3, 5)])
    ins, outs, done = _infer("_linalg_gemm", {"transpose_a": True}, [(0, 4, 3), None, None], [(2, 3, 5)])
    assert (ins, outs, done) == ([(2, 4, 3), (2, 4, 5), (2, 3, 5)], [(2, 3, 5)], True)
    # only the output and B known: A's inner size comes from B
    ins, _, done = _infer("_linalg_gemm2", {}, [None, (2, 4, 5)], [(2, 3, 5)])
    assert ins[0] == (2, 3, 4) and done
    # rows on axis 0
    ins, outs, _ = _infer("_linalg_gemm2", {"axis": 0}, [(3, 2, 4), (4, 2, 5)])
    assert outs == [(3, 2, 5)]
    assert _infer("_linalg_gemm2", {}, [None, None])[2] is False


def test_other_shape_inference_both_ways():
    assert _infer("_linalg_trsm", {"rightside": True}, [None, (2, 3, 4)])[0][0] == (2, 4, 4)
    assert _infer("_linalg_trmm", {}, [(2, 3, 3), None], [(0, 3, 5)])[:2] == ([(2, 3, 3), (2, 3, 5)], [(2, 3, 5)])
    assert _infer("_linalg_syrk", {"transpose": True}, [(2, 3, 4)])[1] == [(2, 4, 4)]
    assert _infer("_linalg_syrk", {}, [(0, 3, 4)], [(2, 3, 3)])[0] == [(2, 3, 4)]
    assert _infer("_linalg_potrf", {}, [None], [(2, 3, 3)])[0] == [(2, 3, 3)]
    assert _infer("_linalg_det", {}, [(2, 3, 3)])[1] == [(2,), (2, 3, 3), (2, 3)]
    assert _infer("_linalg_det", {}, [(3, 3)])[1] == [(1,), (3, 3), (3,)]
    assert _infer("_linalg_det", {}, [(0, 3, 3)], [(4,), None, None])[0] == [(4, 3, 3)]
    assert _infer("_linalg_slogdet", {}, [(5, 2, 2)])[1] == [(5,), (5,), (5, 2, 2), (5, 2)]
    assert _infer("_linalg_sumlogdiag", {}, [(3, 3)])[1] == [(1,)]
    assert _infer("_linalg_gelqf", {}, [(2, 3, 5)])[1] == [(2, 3, 5), (2, 3, 3)]
    assert _infer("_linalg_gelqf", {}, [None], [(2, 3, 5), None])[0] == [(2, 3, 5)]
    assert _infer("_linalg_syevd", {}, [None], [None, (2, 4)])[0] == [(2, 4, 4)]
    assert _infer("_linalg_extractdiag", {"offset": -1}, [(2, 4, 4)])[1] == [(2, 3)]
    assert _infer("_linalg_extractdiag", {"offset": 1}, [None], [(2, 3)])[0] == [(2, 4, 4)]
    assert _infer("_linalg_makediag", {"offset": 2}, [(2, 3)])[1] == [(2, 5, 5)]
    assert _infer("_linalg_makediag", {"offset": 2}, [None], [(2, 5, 5)])[0] == [(2, 3)]
    assert _infer("_linalg_extracttrian", {"offset": 1}, [(4, 4)])[1] == [(6,)]
    assert _infer("_linalg_extracttrian", {"offset": 1}, [None], [(2, 6)])[0] == [(2, 4, 4)]
    assert _infer("_linalg_maketrian", {"offset": -1}, [(2, 6)])[1] == [(2, 4, 4)]
    assert _infer("_linalg_maketrian", {}, [None], [(3, 3)])[0] == [(6,)]


def test_type_inference_is_float32_or_float64_both_ways():
    assert _infer_type("_linalg_gemm2", {}, ["float32", None]) == (["float32", "float32"], ["float32"])
    assert _infer_type("_linalg_potrf", {}, [None], ["float64"]) == (["float64"], ["float64"])
    assert _infer_type("_linalg_det", {}, ["float64"])[1] == ["float64", "float64", "int32"]
    assert _infer_type("_linalg_slogdet", {}, [None], [None, "float32", None, None])[0] == ["float32"]
    with pytest.raises(InferenceError, match="float32 and float64 only, got float16"):
        _infer_type("_linalg_gemm2", {}, ["float16", None])
    with pytest.raises(InferenceError, match="int32"):
        nd.linalg.inverse(nd.array(np.eye(2), dtype="int32"))
    with pytest.raises(InferenceError, match="type inconsistent"):
        _infer_type("_linalg_gemm2", {}, ["float32", "float64"])


def test_shape_errors_name_the_problem():
    with pytest.raises(InferenceError, match=r"inner dimensions.*\(2, 3, 4\).*\(2, 5, 5\)"):
        _infer("_linalg_gemm2", {}, [(2, 3, 4), (2, 5, 5)])
    with pytest.raises(InferenceError, match="batch"):
        _infer("_linalg_gemm2", {}, [(2, 3, 4), (3, 4, 5)])
    with pytest.raises(InferenceError, match="axis"):
        _infer("_linalg_gemm2", {"axis": -1}, [(2, 3, 4), (2, 4, 5)])
    with pytest.raises(InferenceError, match="same number of dimensions"):
        _infer("_linalg_gemm2", {}, [(3, 4), (2, 4, 5)])
    with pytest.raises(InferenceError, match="square"):
        _infer("_linalg_potrf", {}, [(3, 4)])
    with pytest.raises(InferenceError, match="at least 2 dimensions"):
        _infer("_linalg_inverse", {}, [(3,)])
    with pytest.raises(InferenceError, match="m <= n"):
        _infer("_linalg_gelqf", {}, [(4, 3)])
    with pytest.raises(InferenceError, match="offset 3 leaves nothing"):
        _infer("_linalg_extractdiag", {"offset": 3}, [(3, 3)])
    with pytest.raises(InferenceError, match="triangular number"):
        _infer("_linalg_maketrian", {}, [(4,)])
    with pytest.raises(InferenceError, match="sizes of A"):
        _infer("_linalg_trsm", {}, [(2, 4, 4), (2, 3, 5)])


def test_parameter_errors_name_the_parameter():
    a = _arr(np.eye(2))
    with pytest.raises(OperatorParamError, match="transpose_a"):
        nd.linalg.gemm2(a, a, transpose_a="sideways")
    with pytest.raises(OperatorParamError, match="alpha"):
        nd.linalg.trmm(a, a, alpha="big")
    with pytest.raises(OperatorParamError, match="offset"):
        nd.linalg.extractdiag(a, offset=1.5)
    with pytest.raises(OperatorParamError, match="lower"):
        nd.linalg.maketrian(_arr([1.0]), lower="down")
    with pytest.raises(OperatorParamError, match="unknown parameter.*'lower'"):
        nd.linalg.potri(a, lower=False)  # MXNet 1.9.1's potri has no 'lower'


def test_symbolic_graph_with_gradients_runs_through_the_executor():
    a, b = mx.sym.var("A"), mx.sym.var("B")
    loss = mx.sym.sum(mx.sym.linalg.sumlogdiag(mx.sym.linalg.potrf(mx.sym.linalg.gemm2(a, b, transpose_b=True))))
    rng = _rng(14)
    x = rng.uniform(-1, 1, (2, 3, 4))
    args = {"A": _arr(x), "B": _arr(x)}
    grads = {"A": nd.zeros((2, 3, 4), dtype="float64"), "B": nd.zeros((2, 3, 4), dtype="float64")}
    exe = loss.bind(mx.cpu(), args, args_grad=grads)
    out = exe.forward(is_train=True)[0]
    spd = x @ _t(x)
    assert_almost_equal(out, np.array([0.5 * np.linalg.slogdet(spd)[1].sum()]))
    exe.backward([nd.ones((1,), dtype="float64")])
    # d/dX of 0.5 * logdet(X X^T) = (X X^T)^-1 X, shared between A and B
    expected = 0.5 * np.linalg.inv(spd) @ x
    assert_almost_equal(grads["A"], expected)
    assert_almost_equal(grads["B"], expected)


def test_symbol_json_round_trip_keeps_parameters():
    a, b, c = mx.sym.var("A"), mx.sym.var("B"), mx.sym.var("C")
    out = mx.sym.linalg.gemm(a, b, c, transpose_a=True, alpha=2.5, beta=-1.0, axis=0, name="g")
    loaded = mx.sym.load_json(out.tojson())
    attrs = loaded.outputs[0].node.attrs.parsed
    assert (attrs.transpose_a, attrs.alpha, attrs.beta, attrs.axis) == (True, 2.5, -1.0, 0)
    assert loaded.infer_shape(A=(4, 2, 3), B=(4, 2, 5), C=(3, 2, 5))[1] == [(3, 2, 5)]
    trian = mx.sym.load_json(mx.sym.linalg.maketrian(a, offset=-1, lower=False).tojson())
    assert trian.infer_shape(A=(2, 6))[1] == [(2, 4, 4)]


def test_backend_gives_scipy_linalg_on_cpu():
    assert backend.scipy_linalg(mx.cpu(0)) is scipy.linalg


# ============================================================================ agreement with MXNet 1.9.1
def _compare_with_reference(path: Path) -> list[str]:
    """Run every case of an ops_linalg.npz through MXLab; returns the case names checked."""
    data = np.load(path)
    cases = sorted({key.split("/")[0] for key in data.files})
    for case in cases:
        op, params = str(data[f"{case}/op"]), json.loads(str(data[f"{case}/params"]))
        inputs = [_arr(data[k], data[k].dtype.name) for i in range(4) if (k := f"{case}/in{i}") in data.files]
        for x in inputs:
            x.attach_grad()
        function = getattr(nd.linalg, op[len("_linalg_") :]) if op.startswith("_linalg_") else getattr(nd, op)
        with mx.autograd.record():
            result = function(*inputs, **params)
        outputs = [result] if isinstance(result, mx.nd.NDArray) else list(result)
        heads = [_arr(data[f"{case}/head{i}"], data[f"{case}/head{i}"].dtype.name) for i in range(len(outputs))]
        mx.autograd.backward(outputs, heads)
        tol = {"rtol": 1e-4, "atol": 1e-5} if inputs[0].dtype == np.float32 else {"rtol": 1e-7, "atol": 1e-9}
        for i, out in enumerate(outputs):
            expected = data[f"{case}/out{i}"]
            assert out.dtype == expected.dtype, case
            assert_almost_equal(out, expected, names=(f"MXLab {case} out{i}", "MXNet 1.9.1"), **tol)
        for i, x in enumerate(inputs):
            assert_almost_equal(x.grad, data[f"{case}/grad{i}"], names=(f"MXLab {case} grad{i}", "MXNet 1.9.1"), **tol)
    return cases


def test_agrees_with_mxnet_1_9_1_reference_data():
    cases = _compare_with_reference(DATA / "ops_linalg.npz")
    assert {c.split("_")[0] for c in cases} >= set(OPERATORS) - {"gemm2"}


@pytest.mark.skipif(not os.environ.get("MXNET_PYTHON"), reason="set MXNET_PYTHON to an interpreter with MXNet 1.9.1")
def test_agrees_with_mxnet_1_9_1_live(tmp_path):
    target = tmp_path / "ops_linalg.npz"
    script = DATA / "ops_linalg.py"
    subprocess.run([os.environ["MXNET_PYTHON"], str(script), str(target)], check=True, timeout=600)
    assert len(_compare_with_reference(target)) >= 20


def test_a_matrix_without_an_answer_raises_mxnet_error_naming_the_operator():
    """MXNet raises MXNetError; LAPACK's refusal (numpy's LinAlgError) must not escape as something else."""
    with pytest.raises(mx.MXNetError, match="_linalg_potrf: Matrix is not positive definite") as raised:
        mx.nd.linalg.potrf(mx.nd.array([[1, 2], [2, 1]])).wait_to_read()
    assert isinstance(raised.value, np.linalg.LinAlgError)  # and still what NumPy code expects
    with pytest.raises(mx.MXNetError, match="_linalg_inverse: Singular matrix"):
        mx.nd.linalg.inverse(mx.nd.ones((2, 2))).wait_to_read()
    np.testing.assert_allclose(mx.nd.linalg.inverse(mx.nd.array([[2.0, 0], [0, 4]])).asnumpy(), [[0.5, 0], [0, 0.25]])
