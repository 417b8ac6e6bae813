"""Matrix and shape operators (dot, batch_dot, transpose, swapaxes, Flatten, expand_dims,
squeeze, Concat, stack, split, slice, slice_axis, tile, repeat) against NumPy.

Expectations marked "MXNet 1.9.1" were read off the real MXNet (pip ``mxnet==1.9.1``) and
are written here as plain values; the tests never import MXNet.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, seeded_rng, to_nd

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req, rand_shape_nd

FLOATS = ["float16", "float32", "float64"]
nd = mx.nd


# ----------------------------------------------------------------------------- dot, batch_dot


def _dot_reference(lhs: np.ndarray, rhs: np.ndarray, ta: bool, tb: bool) -> np.ndarray:
    if lhs.ndim == 1 and rhs.ndim == 1:
        return np.array([np.dot(lhs, rhs)])
    return np.tensordot(lhs, rhs, axes=([0 if ta else lhs.ndim - 1], [rhs.ndim - 1 if tb else 0]))


def _dot_cases(rng: np.random.Generator):
    """(lhs shape, rhs shape, transpose_a, transpose_b) over 1-D to 4-D operands."""
    for lnd in range(1, 4):
        for rnd in range(1, 4):
            for ta in (False, True):
                for tb in (False, True):
                    if lnd == rnd == 1 and (ta or tb):
                        continue
                    k = int(rng.integers(1, 4))
                    lrest = rand_shape_nd(lnd - 1, 3, rng=rng)
                    rrest = rand_shape_nd(rnd - 1, 3, rng=rng)
                    lshape = (k, *lrest) if ta else (*lrest, k)
                    rshape = (*rrest, k) if tb else (k, *rrest)
                    yield lshape, rshape, ta, tb


@pytest.mark.parametrize("dtype", FLOATS)
def test_dot_forward(dtype):
    rng = seeded_rng(1)
    for lshape, rshape, ta, tb in _dot_cases(rng):
        lhs, rhs = rng.uniform(-1, 1, lshape).astype(dtype), rng.uniform(-1, 1, rshape).astype(dtype)
        got = nd.dot(to_nd(lhs, dtype), to_nd(rhs, dtype), transpose_a=ta, transpose_b=tb)
        expected = _dot_reference(lhs.astype(np.float64), rhs.astype(np.float64), ta, tb)
        assert got.dtype == np.dtype(dtype)
        assert_almost_equal(got, expected.astype(dtype))
    # MXNet 1.9.1 shapes
    assert nd.dot(nd.ones(3), nd.ones(3)).shape == (1,)
    assert nd.dot(nd.ones((2, 3, 4)), nd.ones((2, 5)), transpose_a=True).shape == (3, 4, 5)


def test_dot_gradient_and_req():
    rng = seeded_rng(2)
    for lshape, rshape, ta, tb in list(_dot_cases(rng))[::3]:
        check_imperative_gradient(
            lambda a, b: nd.dot(a, b, transpose_a=ta, transpose_b=tb),
            [rng.uniform(-1, 1, lshape), rng.uniform(-1, 1, rshape)],
        )
    check_req("dot", [rng.uniform(-1, 1, (2, 3)).astype(np.float32), rng.uniform(-1, 1, (3, 4)).astype(np.float32)])
    check_req("dot", [rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (4, 3))], transpose_a=True, transpose_b=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_batch_dot_forward(dtype):
    rng = seeded_rng(3)
    for ndim in (3, 4):
        batch = rand_shape_nd(ndim - 2, 3, rng=rng)
        for ta in (False, True):
            for tb in (False, True):
                m, k, n = (int(v) for v in rng.integers(1, 4, size=3))
                lhs = rng.uniform(-1, 1, (*batch, k, m) if ta else (*batch, m, k)).astype(dtype)
                rhs = rng.uniform(-1, 1, (*batch, n, k) if tb else (*batch, k, n)).astype(dtype)
                got = nd.batch_dot(to_nd(lhs, dtype), to_nd(rhs, dtype), transpose_a=ta, transpose_b=tb)
                a = lhs.swapaxes(-1, -2) if ta else lhs
                b = rhs.swapaxes(-1, -2) if tb else rhs
                assert_almost_equal(got, np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(dtype))


def test_batch_dot_gradient_req_and_inference():
    rng = seeded_rng(4)
    for ta, tb in ((False, False), (True, False), (False, True), (True, True)):
        lhs = rng.uniform(-1, 1, (2, 3, 2))
        rhs = rng.uniform(-1, 1, (2, 3, 4) if not tb else (2, 4, 3))
        if not ta:
            lhs = lhs.swapaxes(-1, -2).copy()
        check_imperative_gradient(lambda a, b: nd.batch_dot(a, b, transpose_a=ta, transpose_b=tb), [lhs, rhs])
    check_req("batch_dot", [rng.uniform(-1, 1, (2, 2, 3)), rng.uniform(-1, 1, (2, 3, 4))])
    ins, outs, done = infer_shapes("batch_dot", {}, [(2, 0, 3), (0, 3, 4)], [None])
    assert not done
    assert ins == [(2, 0, 3), (2, 3, 4)] and outs == [(2, 0, 4)]  # batch dims flow between operands
    with pytest.raises(InferenceError, match=r"batch_dot: batch_dot needs N-D x N-D inputs.*\(2, 3\) X \(3, 4\)"):
        nd.batch_dot(nd.ones((2, 3)), nd.ones((3, 4)))
    with pytest.raises(InferenceError, match=r"batch_dot: shape inconsistent for the leading batch dimensions"):
        nd.batch_dot(nd.ones((2, 3, 4)), nd.ones((3, 4, 5)))
    with pytest.raises(InferenceError, match=r"batch_dot: shape error.*contracted lengths 4 and 3 differ"):
        nd.batch_dot(nd.ones((2, 3, 4)), nd.ones((2, 3, 4)))


def test_dot_inference_and_errors():
    _, outs, done = infer_shapes("dot", {"transpose_b": "True"}, [(2, 0), (5, 3)], [None])
    assert not done and outs == [(2, 5)]
    _, outs, done = infer_shapes("dot", {}, [None, (5, 3)], [None])
    assert not done and outs == [None]
    with pytest.raises(InferenceError, match=r"dot: shape error: \(2, 3\) X \(4, 5\).*contracted lengths 3 and 4"):
        nd.dot(nd.ones((2, 3)), nd.ones((4, 5)))
    with pytest.raises(InferenceError, match=r"dot: cannot transpose vectors"):
        nd.dot(nd.ones(3), nd.ones(3), transpose_a=True)
    with pytest.raises(OperatorParamError, match=r"dot: parameter 'transpose_a'"):
        nd.dot(nd.ones(3), nd.ones(3), transpose_a="yes")


# ----------------------------------------------------------------------------- transpose, swapaxes, reshapes


@pytest.mark.parametrize("dtype", FLOATS)
def test_transpose_swapaxes_flatten_expand_squeeze_forward(dtype):
    rng = seeded_rng(5)
    for ndim in range(1, 6):
        shape = rand_shape_nd(ndim, 3, rng=rng)
        x = rng.uniform(-1, 1, shape).astype(dtype)
        a = to_nd(x, dtype)
        perm = tuple(int(v) for v in rng.permutation(ndim))
        assert_almost_equal(nd.transpose(a, axes=perm), x.transpose(perm))
        assert_almost_equal(nd.transpose(a), x.transpose())
        d1, d2 = (int(v) for v in rng.integers(-ndim, ndim, size=2))
        assert_almost_equal(nd.swapaxes(a, dim1=d1, dim2=d2), np.swapaxes(x, d1, d2))
        assert_almost_equal(nd.SwapAxis(a, dim1=d1, dim2=d2), np.swapaxes(x, d1, d2))
        assert_almost_equal(nd.Flatten(a), x.reshape(shape[0], -1))
        assert_almost_equal(nd.flatten(a), x.reshape(shape[0], -1))
        axis = int(rng.integers(-ndim - 1, ndim + 1))
        assert_almost_equal(nd.expand_dims(a, axis=axis), np.expand_dims(x, axis))
        ones = tuple(i for i, d in enumerate(shape) if d == 1)
        squeezed = np.squeeze(x)
        assert_almost_equal(nd.squeeze(a), squeezed.reshape(squeezed.shape or (1,)))
        if ones:
            expected = np.squeeze(x, axis=ones[-1])
            assert_almost_equal(nd.squeeze(a, axis=ones[-1]), expected.reshape(expected.shape or (1,)))
    # MXNet 1.9.1
    assert nd.flatten(nd.ones(3)).shape == (3, 1)
    assert nd.squeeze(nd.ones((1, 1))).shape == (1,)
    assert nd.squeeze(nd.ones((2, 1, 3)), axis=()).shape == (2, 1, 3)


def test_layout_gradients_and_req():
    rng = seeded_rng(6)
    x = rng.uniform(-1, 1, (2, 3, 1, 2))
    cases = [
        ("transpose", {"axes": (2, 0, 3, 1)}),
        ("transpose", {}),
        ("SwapAxis", {"dim1": 0, "dim2": -1}),
        ("Flatten", {}),
        ("expand_dims", {"axis": -2}),
        ("squeeze", {}),
        ("squeeze", {"axis": 2}),
    ]
    for name, params in cases:
        fn = getattr(nd, name)
        check_imperative_gradient(lambda a: fn(a, **params), [x])
        check_req(name, [x.astype(np.float32)], **params)


def test_layout_inference_both_ways():
    ins, outs, done = infer_shapes("transpose", {"axes": (1, 2, 0)}, [None], [(4, 5, 3)])
    assert done and ins == [(3, 4, 5)]
    ins, outs, done = infer_shapes("transpose", {"axes": (1, 2, 0)}, [(3, 0, 5)], [(0, 5, 0)])
    assert ins == [(3, 0, 5)] and outs == [(0, 5, 3)]
    ins, outs, done = infer_shapes("swapaxes", {"dim1": 0, "dim2": 2}, [None], [(4, 5, 3)])
    assert done and ins == [(3, 5, 4)]
    ins, outs, done = infer_shapes("expand_dims", {"axis": 1}, [None], [(2, 1, 0)])
    assert ins == [(2, 0)] and not done
    ins, outs, done = infer_shapes("Flatten", {}, [(2, 0, 3)], [None])
    assert outs == [(2, 0)] and not done
    ins, outs, done = infer_shapes("squeeze", {}, [(2, 0, 1)], [None])
    assert not done and outs == [None]  # an unknown length might be 1
    ins, outs, done = infer_shapes("squeeze", {"axis": (2,)}, [(2, 0, 1)], [None])
    assert outs == [(2, 0)]


def test_layout_errors():
    a = nd.ones((2, 3, 4))
    with pytest.raises(InferenceError, match=r"transpose: axes=\(0, 1\) must be a permutation of 0..2"):
        nd.transpose(a, axes=(0, 1))
    with pytest.raises(InferenceError, match=r"transpose: axes=\(0, -1, 1\) must be a permutation"):
        nd.transpose(a, axes=(0, -1, 1))  # MXNet 1.9.1 rejects negative axes here too
    with pytest.raises(InferenceError, match=r"SwapAxis: dim2=3 is out of range"):
        nd.swapaxes(a, dim1=0, dim2=3)
    with pytest.raises(InferenceError, match=r"expand_dims: axis must be in the range \[-4, 3\] \(4 provided\)"):
        nd.expand_dims(a, axis=4)
    with pytest.raises(InferenceError, match=r"squeeze: cannot squeeze axis 1 of shape \(2, 3, 4\)"):
        nd.squeeze(a, axis=1)
    with pytest.raises(OperatorParamError, match=r"expand_dims: required parameter 'axis' is missing"):
        nd.expand_dims(a)


# ----------------------------------------------------------------------------- Concat, stack, split


@pytest.mark.parametrize("dtype", FLOATS)
def test_concat_stack_split_forward(dtype):
    rng = seeded_rng(7)
    for ndim in range(1, 6):
        shape = rand_shape_nd(ndim, 3, rng=rng)
        dim = int(rng.integers(-ndim, ndim))
        count = int(rng.integers(1, 4))
        parts = []
        for _ in range(count):
            part_shape = list(shape)
            part_shape[dim] = int(rng.integers(1, 4))
            parts.append(rng.uniform(-1, 1, part_shape).astype(dtype))
        got = nd.Concat(*[to_nd(p, dtype) for p in parts], dim=dim)
        assert_almost_equal(got, np.concatenate(parts, axis=dim))
        assert_almost_equal(nd.concat(*[to_nd(p, dtype) for p in parts], dim=dim), np.concatenate(parts, axis=dim))
        same = [rng.uniform(-1, 1, shape).astype(dtype) for _ in range(count)]
        axis = int(rng.integers(-ndim - 1, ndim + 1))
        assert_almost_equal(nd.stack(*[to_nd(p, dtype) for p in same], axis=axis), np.stack(same, axis=axis))
        whole = np.concatenate(same, axis=dim)
        pieces = nd.split(to_nd(whole, dtype), num_outputs=count, axis=dim)
        pieces = [pieces] if count == 1 else pieces
        for got_piece, expected in zip(pieces, np.split(whole, count, axis=dim), strict=True):
            assert_almost_equal(got_piece, expected)
        stacked = np.stack(same, axis=dim)
        squeezed = nd.SliceChannel(to_nd(stacked, dtype), num_outputs=count, axis=dim, squeeze_axis=True)
        squeezed = [squeezed] if count == 1 else squeezed
        for got_piece, expected in zip(squeezed, same, strict=True):
            assert_almost_equal(got_piece, expected.reshape(got_piece.shape))
    assert nd.Concat(nd.ones((2, 3)), nd.ones((2, 3))).shape == (2, 6)  # dim defaults to 1
    assert len(nd.split(nd.ones((2, 6)), num_outputs=3)) == 3  # axis defaults to 1


def test_concat_stack_split_gradients_and_req():
    rng = seeded_rng(8)
    a, b, c = rng.uniform(-1, 1, (2, 1, 3)), rng.uniform(-1, 1, (2, 2, 3)), rng.uniform(-1, 1, (2, 3, 3))
    check_imperative_gradient(lambda x, y, z: nd.Concat(x, y, z, dim=1), [a, b, c])
    check_imperative_gradient(lambda x, y: nd.stack(x, y, axis=-1), [a, a * 2])
    check_imperative_gradient(lambda x: nd.split(x, num_outputs=3, axis=1), [c])
    check_imperative_gradient(lambda x: nd.split(x, num_outputs=2, axis=0, squeeze_axis=True), [c])
    f32 = np.float32
    check_req("Concat", [a.astype(f32), b.astype(f32)], num_args=2, dim=1)
    check_req("stack", [a.astype(f32), a.astype(f32)], num_args=2, axis=1)
    check_req("split", [c.astype(f32)], num_outputs=3, axis=1)
    check_req("split", [c.astype(f32)], num_outputs=3, axis=-1, squeeze_axis=True)


def test_concat_stack_split_inference():
    # Concat: one unknown input length comes from the output; other dims flow everywhere
    ins, outs, done = infer_shapes("Concat", {"num_args": 3, "dim": 1}, [(2, 3), (0, 0), None], [(0, 10)])
    assert not done and ins == [(2, 3), (2, 0), (2, 0)] and outs == [(2, 10)]
    ins, outs, done = infer_shapes("Concat", {"num_args": 2, "dim": 1}, [(2, 3), (0, 0)], [(0, 10)])
    assert done and ins == [(2, 3), (2, 7)] and outs == [(2, 10)]
    ins, outs, done = infer_shapes("Concat", {"num_args": 2, "dim": -1}, [(2, 3), (2, 4)], [None])
    assert done and outs == [(2, 7)]
    ins, outs, done = infer_shapes("stack", {"num_args": 2, "axis": 1}, [None, None], [(4, 2, 3)])
    assert done and ins == [(4, 3), (4, 3)]
    ins, outs, done = infer_shapes("split", {"num_outputs": 2, "axis": 1}, [None], [None, (3, 2)])
    assert done and ins == [(3, 4)] and outs == [(3, 2), (3, 2)]
    ins, outs, done = infer_shapes("split", {"num_outputs": 2, "axis": 1, "squeeze_axis": True}, [None], [(3, 5), None])
    assert done and ins == [(3, 2, 5)]
    assert mx.operator.get("Concat").list_input_names(mx.operator.get("Concat").parse_attrs({"num_args": 2})) == [
        "arg0",
        "arg1",
    ]


def test_concat_stack_split_errors():
    with pytest.raises(InferenceError, match=r"Concat: incompatible shapes: input 1 has shape \(2, 3, 5\)"):
        nd.Concat(nd.ones((2, 3, 4)), nd.ones((2, 3, 5)), dim=1)
    with pytest.raises(InferenceError, match=r"Concat: all inputs must have the same number of dimensions"):
        nd.Concat(nd.ones((2, 3)), nd.ones((2, 3, 1)))
    with pytest.raises(InferenceError, match=r"Concat: dim=2 is out of range"):
        nd.Concat(nd.ones((2, 3)), nd.ones((2, 3)), dim=2)
    with pytest.raises(InferenceError, match=r"Concat: output length 3 is too short"):
        infer_shapes("Concat", {"num_args": 2}, [(2, 3), (2, 0)], [(2, 3)])
    with pytest.raises(InferenceError, match=r"stack: shape inconsistent for input 1"):
        nd.stack(nd.ones((2, 3)), nd.ones((3, 2)))
    with pytest.raises(InferenceError, match=r"stack: axis 3 is out of range"):
        nd.stack(nd.ones((2, 3)), nd.ones((2, 3)), axis=3)
    with pytest.raises(InferenceError, match=r"SliceChannel: cannot split input shape \(2, 5\) into 2 equal pieces"):
        nd.split(nd.ones((2, 5)), num_outputs=2)
    with pytest.raises(InferenceError, match=r"SliceChannel: with squeeze_axis=True .* must equal num_outputs"):
        nd.split(nd.ones((2, 6)), num_outputs=3, squeeze_axis=True)
    with pytest.raises(OperatorParamError, match=r"SliceChannel: parameter 'num_outputs' expects a value >= 1"):
        nd.split(nd.ones((2, 6)), num_outputs=0)


# ----------------------------------------------------------------------------- slice, slice_axis


def _random_slice(rng: np.random.Generator, shape: tuple[int, ...]):
    """begin/end/step tuples (with None entries) that select at least one element per axis."""
    while True:
        count = int(rng.integers(1, len(shape) + 1))
        begin, end, step = [], [], []
        for d in shape[:count]:
            b = None if rng.random() < 0.3 else int(rng.integers(-d - 1, d + 1))
            e = None if rng.random() < 0.3 else int(rng.integers(-d - 1, d + 2))
            s = None if rng.random() < 0.3 else int(rng.choice([-2, -1, 1, 2]))
            begin.append(b)
            end.append(e)
            step.append(s)
        key = tuple(slice(b, e, s) for b, e, s in zip(begin, end, step, strict=True))
        if np.empty(shape)[key].size:
            return tuple(begin), tuple(end), tuple(step), key


@pytest.mark.parametrize("dtype", FLOATS)
def test_slice_forward(dtype):
    rng = seeded_rng(9)
    for _ in range(3):
        for ndim in range(1, 6):
            shape = rand_shape_nd(ndim, 4, rng=rng)
            x = rng.uniform(-1, 1, shape).astype(dtype)
            begin, end, step, key = _random_slice(rng, shape)
            assert_almost_equal(nd.slice(to_nd(x, dtype), begin=begin, end=end, step=step), x[key])
            axis = int(rng.integers(-ndim, ndim))
            length = shape[axis]
            b = int(rng.integers(-length, length))
            b_pos = b % length
            e = int(rng.integers(b_pos + 1, length + 1))
            expected = np.take(x, np.arange(b_pos, e), axis=axis)
            assert_almost_equal(nd.slice_axis(to_nd(x, dtype), axis=axis, begin=b, end=e), expected)
            if e == length:
                assert_almost_equal(nd.slice_axis(to_nd(x, dtype), axis=axis, begin=b, end=None), expected)
    # MXNet 1.9.1 semantics: Python's slice rules, None entries, negative steps, clipping
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = nd.array(x)
    assert_almost_equal(nd.slice(a, begin=(0, None), end=(1, None), step=(1, -1)), x[0:1, ::-1])
    assert_almost_equal(nd.slice(a, begin=(1,), end=(None,), step=(-1,)), x[1::-1])
    assert_almost_equal(nd.slice(a, begin=(0,), end=(10,)), x)
    assert_almost_equal(nd.slice(a, begin="(None, 1)", end="(2, None)"), x[:2, 1:])  # strings from symbol JSON
    assert_almost_equal(nd.crop(a, begin=(0, 1), end=(1, 3)), x[0:1, 1:3])


def test_slice_params_round_trip_through_strings():
    op = mx.operator.get("slice")
    attrs = op.parse_attrs({"begin": "(None, 1)", "end": "(2, None)", "step": "()"})
    assert attrs.parsed.begin == (None, 1) and attrs.parsed.end == (2, None) and attrs.parsed.step == ()
    strings = attrs.parsed.to_strings()
    assert strings["begin"] == "(None, 1)" and strings["end"] == "(2, None)"  # MXNet 1.9.1 writes this form
    assert op.parse_attrs(strings).parsed == attrs.parsed
    assert op.parse_attrs({"begin": 1, "end": [3], "step": None}).parsed.begin == (1,)
    assert op.params.fields["begin"].format((2,)) == "(2,)"
    with pytest.raises(OperatorParamError, match=r"slice: parameter 'begin' expects a tuple of integers or None"):
        op.parse_attrs({"begin": "(1.5,)", "end": "(2,)"})
    with pytest.raises(OperatorParamError, match=r"slice: required parameter 'end' is missing"):
        op.parse_attrs({"begin": (1,)})


def test_slice_gradients_req_and_inference():
    rng = seeded_rng(10)
    x = rng.uniform(-1, 1, (3, 4, 2))
    for params in ({"begin": (None, 3), "end": (2, 0), "step": (1, -2)}, {"begin": (1,), "end": (None,)}):
        check_imperative_gradient(lambda a: nd.slice(a, **params), [x])
        check_req("slice", [x.astype(np.float32)], **params)
    check_imperative_gradient(lambda a: nd.slice_axis(a, axis=1, begin=-3, end=None), [x])
    check_req("slice_axis", [x.astype(np.float32)], axis=1, begin=1, end=3)
    _, outs, done = infer_shapes("slice", {"begin": (0, 1), "end": (None, 3)}, [(0, 4, 2)], [None])
    assert not done and outs == [(0, 2, 2)]
    _, outs, done = infer_shapes("slice_axis", {"axis": 0, "begin": 1, "end": None}, [(3, 0)], [None])
    assert not done and outs == [(2, 0)]


def test_slice_errors():
    a = nd.ones((2, 3, 4))
    with pytest.raises(InferenceError, match=r"slice: begin and end must have the same length"):
        nd.slice(a, begin=(0, 0), end=(1,))
    with pytest.raises(InferenceError, match=r"slice: step\[0\] cannot be 0"):
        nd.slice(a, begin=(0,), end=(1,), step=(0,))
    with pytest.raises(InferenceError, match=r"slice: slicing 4 axes exceeds the data dimensions \(3\)"):
        nd.slice(a, begin=(0, 0, 0, 0), end=(1, 1, 1, 1))
    with pytest.raises(InferenceError, match=r"slice: step must be empty or as long as begin"):
        nd.slice(a, begin=(0, 0), end=(1, 1), step=(1,))
    with pytest.raises(InferenceError, match=r"slice: slice \[1:1:1\] of axis 0 \(length 2\) is empty"):
        nd.slice(a, begin=(1,), end=(1,))
    with pytest.raises(InferenceError, match=r"slice_axis: invalid begin, end: begin=2 must come before end=1"):
        nd.slice_axis(a, axis=1, begin=2, end=1)
    with pytest.raises(InferenceError, match=r"slice_axis: invalid end=9 for axis 1 of length 3"):
        nd.slice_axis(a, axis=1, begin=0, end=9)
    with pytest.raises(InferenceError, match=r"slice_axis: invalid begin=-9"):
        nd.slice_axis(a, axis=1, begin=-9, end=2)
    with pytest.raises(InferenceError, match=r"slice_axis: axis=3 is out of range"):
        nd.slice_axis(a, axis=3, begin=0, end=1)


# ----------------------------------------------------------------------------- tile, repeat


@pytest.mark.parametrize("dtype", FLOATS)
def test_tile_repeat_forward(dtype):
    rng = seeded_rng(11)
    for ndim in range(1, 6):
        shape = rand_shape_nd(ndim, 3, rng=rng)
        x = rng.uniform(-1, 1, shape).astype(dtype)
        a = to_nd(x, dtype)
        reps = tuple(int(v) for v in rng.integers(1, 3, size=int(rng.integers(0, ndim + 2))))
        assert_almost_equal(nd.tile(a, reps=reps), np.tile(x, reps))
        repeats = int(rng.integers(1, 4))
        axis = int(rng.integers(-ndim, ndim))
        assert_almost_equal(nd.repeat(a, repeats=repeats, axis=axis), np.repeat(x, repeats, axis=axis))
        assert_almost_equal(nd.repeat(a, repeats=repeats), np.repeat(x, repeats))
    assert nd.repeat(nd.ones((2, 3, 4)), repeats=2).shape == (48,)  # MXNet 1.9.1: axis=None flattens


def test_tile_repeat_gradients_req_inference_and_errors():
    rng = seeded_rng(12)
    x = rng.uniform(-1, 1, (2, 3))
    for reps in ((2,), (2, 1, 3), (3, 2)):
        check_imperative_gradient(lambda a: nd.tile(a, reps=reps), [x])
    for axis in (None, 0, -1):
        check_imperative_gradient(lambda a: nd.repeat(a, repeats=3, axis=axis), [x])
    check_req("tile", [x.astype(np.float32)], reps=(2, 2))
    check_req("repeat", [x.astype(np.float32)], repeats=2, axis=1)
    ins, outs, done = infer_shapes("tile", {"reps": (3,)}, [None], [(4, 9)])
    assert done and ins == [(4, 3)]
    ins, outs, done = infer_shapes("tile", {"reps": (2, 3)}, [None], [(4, 9)])
    assert not done and ins == [None]  # the input may have had fewer axes than reps: ambiguous
    ins, outs, done = infer_shapes("tile", {"reps": (2,)}, [(0, 3)], [None])
    assert not done and outs == [(0, 6)]
    ins, outs, done = infer_shapes("repeat", {"repeats": 2, "axis": 0}, [(2, 0, 3)], [None])
    assert not done and outs == [(4, 0, 3)]
    with pytest.raises(InferenceError, match=r"tile: reps=\(0, 1\) must be positive"):
        nd.tile(nd.ones((2, 3)), reps=(0, 1))
    with pytest.raises(InferenceError, match=r"tile: output shape \(1, 5, 9\) is not a multiple of reps"):
        infer_shapes("tile", {"reps": (2, 3)}, [None], [(1, 5, 9)])
    with pytest.raises(OperatorParamError, match=r"repeat: parameter 'repeats' expects a value >= 1"):
        nd.repeat(nd.ones((2, 3)), repeats=0)
    with pytest.raises(InferenceError, match=r"repeat: axis=2 is out of range"):
        nd.repeat(nd.ones((2, 3)), repeats=2, axis=2)
