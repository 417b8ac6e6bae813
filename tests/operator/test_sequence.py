"""SequenceMask, SequenceLast, SequenceReverse: padded batches of variable-length sequences.

References are written per sequence with plain Python slicing (the obviously correct, slow
way); the operators must agree without looping over the batch.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd
DTYPES = ["float16", "float32", "float64", "int32"]


def _batch_major(x, axis):
    """The data as (N, T, ...) whatever its sequence axis."""
    return x if axis == 1 else np.swapaxes(x, 0, 1)


def _mask_reference(x, lengths, value, axis):
    out = _batch_major(x, axis).copy()
    for b, n in enumerate(lengths):
        out[b, n:] = value
    return _batch_major(out, axis)


def _last_reference(x, lengths, axis):
    xb = _batch_major(x, axis)
    return np.stack([xb[b, n - 1] for b, n in enumerate(lengths)])


def _reverse_reference(x, lengths):
    out = x.copy()
    for b, n in enumerate(lengths):
        out[:n, b] = x[:n, b][::-1]
    return out


def _data(rng, axis, dtype="float64", steps=5, batch=4, features=(3,)):
    shape = (steps, batch, *features) if axis == 0 else (batch, steps, *features)
    lengths = rng.integers(1, steps + 1, batch)
    return rng.uniform(-2, 2, shape).astype(dtype), lengths


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1])
def test_sequence_mask_matches_reference(dtype, axis):
    rng = seeded_rng(axis)
    x, lengths = _data(rng, axis, dtype, features=(2, 3))
    out = nd.SequenceMask(
        nd.array(x, dtype=dtype), nd.array(lengths, dtype="int32"), use_sequence_length=True, value=-7, axis=axis
    )
    assert out.dtype == np.dtype(dtype)
    assert_almost_equal(out.asnumpy(), _mask_reference(x, lengths, -7, axis))
    # without lengths every step is real: the identity
    assert_almost_equal(nd.SequenceMask(nd.array(x, dtype=dtype), axis=axis).asnumpy(), x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1])
def test_sequence_last_matches_reference(dtype, axis):
    rng = seeded_rng(10 + axis)
    x, lengths = _data(rng, axis, dtype)
    out = nd.SequenceLast(nd.array(x, dtype=dtype), nd.array(lengths), use_sequence_length=True, axis=axis)
    assert_almost_equal(out.asnumpy(), _last_reference(x, lengths, axis))
    full = np.full(len(lengths), x.shape[axis])
    assert_almost_equal(nd.SequenceLast(nd.array(x, dtype=dtype), axis=axis).asnumpy(), _last_reference(x, full, axis))


@pytest.mark.parametrize("dtype", DTYPES)
def test_sequence_reverse_matches_reference(dtype):
    rng = seeded_rng(20)
    x, lengths = _data(rng, 0, dtype, features=(2,))
    out = nd.SequenceReverse(nd.array(x, dtype=dtype), nd.array(lengths), use_sequence_length=True)
    assert_almost_equal(out.asnumpy(), _reverse_reference(x, lengths))
    assert_almost_equal(nd.SequenceReverse(nd.array(x, dtype=dtype)).asnumpy(), x[::-1])


@pytest.mark.parametrize("axis", [0, 1])
def test_sequence_gradients(axis):
    rng = seeded_rng(30 + axis)
    x, lengths = _data(rng, axis, steps=4, batch=3, features=(2,))
    seq = nd.array(lengths, dtype="float64")
    check_imperative_gradient(lambda d: nd.SequenceMask(d, seq, use_sequence_length=True, axis=axis, value=3.0), [x])
    check_imperative_gradient(lambda d: nd.SequenceLast(d, seq, use_sequence_length=True, axis=axis), [x])
    if axis == 0:
        check_imperative_gradient(lambda d: nd.SequenceReverse(d, seq, use_sequence_length=True), [x])


def test_sequence_length_gets_a_zero_gradient():
    x, lengths = nd.ones((3, 2, 2)), nd.array([1.0, 3.0])
    for a in (x, lengths):
        a.attach_grad()
    with mx.autograd.record():
        y = nd.SequenceLast(x, lengths, use_sequence_length=True)
    y.backward()
    assert not lengths.grad.asnumpy().any()
    assert x.grad.asnumpy()[:, 0].sum() == 2 and x.grad.asnumpy()[0, 0].sum() == 2


@pytest.mark.parametrize("name", ["SequenceMask", "SequenceLast", "SequenceReverse"])
def test_sequence_ops_honour_req(name):
    rng = seeded_rng(40)
    x, lengths = _data(rng, 0, "float32")
    check_req(name, [x, lengths.astype(np.float32)], use_sequence_length=True)
    check_req(name, [x])
    if name != "SequenceReverse":
        xb, lb = _data(rng, 1, "float32")
        check_req(name, [xb, lb.astype(np.int32)], use_sequence_length=True, axis=1)


def test_sequence_shape_and_type_inference():
    ins, outs, done = infer_shapes("SequenceMask", {"use_sequence_length": True}, [(5, 4, 3), None])
    assert done and ins[1] == (4,) and outs == [(5, 4, 3)]
    ins, outs, done = infer_shapes("SequenceMask", {"use_sequence_length": True, "axis": 1}, [(0, 5, 3), (4,)])
    assert done and ins[0] == (4, 5, 3)
    ins, outs, done = infer_shapes("SequenceLast", {"axis": 1}, [(4, 5, 3)])
    assert done and outs == [(4, 3)]
    ins, outs, done = infer_shapes("SequenceLast", {"use_sequence_length": True}, [None, None], [(4, 3)])
    assert not done and ins[0] == (0, 4, 3) and ins[1] == (4,)
    ins, outs, done = infer_shapes("SequenceReverse", {}, [None], [(5, 4)])
    assert done and ins == [(5, 4)]
    assert infer_types("SequenceMask", {"use_sequence_length": True}, ["float16", "int32"]) == (
        ["float16", "int32"],
        ["float16"],
    )
    assert infer_types("SequenceLast", {"use_sequence_length": True}, [None, None], ["float64"]) == (
        ["float64", "float64"],
        ["float64"],
    )
    with pytest.raises(InferenceError, match="sequence_length must be 1-D"):
        infer_shapes("SequenceMask", {"use_sequence_length": True}, [(5, 4, 3), (4, 1)])
    with pytest.raises(InferenceError, match="shape inconsistent for sequence_length"):
        infer_shapes("SequenceMask", {"use_sequence_length": True}, [(5, 4, 3), (3,)])
    with pytest.raises(InferenceError, match="at least 2 dimensions"):
        infer_shapes("SequenceLast", {}, [(5,)])


def test_sequence_input_names_and_parameter_errors():
    sym = mx.sym.SequenceMask(mx.sym.var("data"), name="m", use_sequence_length=True)
    assert sym.list_arguments() == ["data", "m_sequence_length"]
    assert mx.sym.SequenceLast(mx.sym.var("data")).list_arguments() == ["data"]
    with pytest.raises(OperatorParamError, match="'axis'"):
        nd.SequenceMask(nd.ones((2, 2)), axis=2)
    with pytest.raises(OperatorParamError, match="'axis'"):
        nd.SequenceReverse(nd.ones((2, 2)), axis=1)
    with pytest.raises(OperatorParamError, match="'value'"):
        nd.SequenceMask(nd.ones((2, 2)), value="pad")
