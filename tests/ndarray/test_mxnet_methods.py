"""NDArray's MXNet 1.x methods: fluent operator methods, shape variants, storage type, pickling,
truth value, DLPack, and the NumPy-scalar and legacy-shape rules of the front end."""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest

import framework as mx
from framework.errors import SparseStorageError
from framework.operator.fluent import FLUENT_METHODS, available_fluent_methods
from framework.operator.infer import InferenceError
from framework.test_utils import assert_almost_equal

X = np.array([[1.5, -2.0, 3.0], [0.25, 4.0, -1.0]], dtype=np.float32)


# ---------------------------------------------------------------------- fluent methods
@pytest.mark.parametrize(
    ("method", "args", "kwargs"),
    [
        ("sum", (), {"axis": 1}),
        ("mean", (), {"axis": 0, "keepdims": True}),
        ("max", (), {}),
        ("argmax", (), {"axis": 1}),
        ("abs", (), {}),
        ("clip", (), {"a_min": 0.0, "a_max": 2.0}),
        ("exp", (), {}),
        ("square", (), {}),
        ("relu", (), {}),
        ("sigmoid", (), {}),
        ("softmax", (), {"axis": -1}),
        ("transpose", (), {}),
        ("tile", (), {"reps": (2, 1)}),
        ("repeat", (), {"repeats": 2, "axis": 0}),
        ("swapaxes", (), {"dim1": 0, "dim2": 1}),
        ("slice_axis", (), {"axis": 1, "begin": 0, "end": 2}),
        ("topk", (), {"k": 2}),
        ("sort", (), {}),
        ("norm", (), {}),
        ("round", (), {}),
        ("trunc", (), {}),
        ("zeros_like", (), {}),
        ("one_hot", (), {"depth": 3}),
        ("flip", (), {"axis": 1}),
        ("diag", (), {"k": 1}),
        ("shape_array", (), {}),
        ("slice_like", (mx.nd.zeros((1, 2)),), {}),
        ("reshape_like", (mx.nd.zeros((3, 2)),), {}),
    ],
)
def test_fluent_method_is_the_operator_with_self_first(method, args, kwargs):
    x = mx.nd.array(X)
    got = getattr(x, method)(*args, **kwargs)
    expected = getattr(mx.nd, method)(x, *args, **kwargs)
    assert_almost_equal(got, expected.asnumpy())


def test_every_available_fluent_method_exists_with_mxnets_signature():
    for method, _ in available_fluent_methods():
        member = getattr(mx.nd.NDArray, method)
        assert callable(member), method
    generated = mx.nd.NDArray.exp
    kinds = [p.kind for p in inspect.signature(generated).parameters.values()]
    assert kinds == [
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.VAR_POSITIONAL,
        inspect.Parameter.VAR_KEYWORD,
    ]
    assert "exp" in generated.__doc__
    assert ("flip", "reverse") in FLUENT_METHODS  # MXNet's alias keeps its operator name


def test_fluent_methods_are_recorded_by_autograd():
    x = mx.nd.array(X)
    x.attach_grad()
    with mx.autograd.record():
        y = x.square().sum()
    y.backward()
    assert_almost_equal(x.grad, 2 * X)


def test_an_unknown_method_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_method"):
        mx.nd.ones(2).no_such_method()


# ---------------------------------------------------------------------- shape variants
def test_expand_dims_flatten_squeeze_inplace_views_share_memory():
    x = mx.nd.array(X)
    view = x.expand_dims(axis=0, inplace=True)
    assert view.shape == (1, 2, 3)
    view[0, 0, 0] = 9
    assert x.asnumpy()[0, 0] == 9  # a view: the write shows through
    assert x.expand_dims(-1).shape == (2, 3, 1)
    cube = mx.nd.ones((2, 1, 3))
    assert cube.flatten().shape == (2, 3) and cube.flatten(inplace=True).shape == (2, 3)
    assert cube.squeeze().shape == (2, 3) and cube.squeeze(axis=1, inplace=True).shape == (2, 3)
    assert mx.nd.ones((1, 1)).squeeze(inplace=True).shape == (1,)


def test_broadcast_to_and_like_and_reshape_like():
    x = mx.nd.array([[1.0], [2.0]])
    assert x.broadcast_to((2, 3)).asnumpy().tolist() == [[1, 1, 1], [2, 2, 2]]
    assert x.broadcast_like(mx.nd.zeros((2, 4))).shape == (2, 4)
    # the methods (not the operators) put leading axes of length 1 first, as MXNet's do
    assert mx.nd.array([1.0, 2.0, 3.0]).broadcast_to((2, 3)).asnumpy().tolist() == [[1, 2, 3], [1, 2, 3]]
    assert mx.nd.ones((3,)).broadcast_like(mx.nd.zeros((4, 2, 3))).shape == (4, 2, 3)
    with pytest.raises(mx.MXNetError):
        mx.nd.broadcast_to(mx.nd.ones((3,)), shape=(2, 3))  # the operator does not
    assert mx.nd.arange(6).reshape_like(mx.nd.zeros((3, 2))).shape == (3, 2)
    assert mx.nd.arange(6).reshape_like(rhs=mx.nd.zeros((2, 3))).shape == (2, 3)
    with pytest.raises(mx.MXNetError, match="reshape_like: rhs must be an NDArray"):
        mx.nd.arange(6).reshape_like((3, 2))


def test_slice_assign_and_slice_assign_scalar_write_in_place():
    x = mx.nd.zeros((3, 4))
    assert x.slice_assign(mx.nd.ones((2, 2)), (0, 1), (2, 3), (None, None)) is x
    x.slice_assign_scalar(5, (2, 0), (3, 4), (1, 2))
    expected = np.zeros((3, 4))
    expected[0:2, 1:3] = 1
    expected[2:3, 0:4:2] = 5
    assert x.asnumpy().tolist() == expected.tolist()
    with pytest.raises(mx.MXNetError, match="same length"):
        x.slice_assign_scalar(1, (0,), (1, 2), ())


def test_split_v2_method():
    parts = mx.nd.arange(6).split_v2((2,))
    assert [p.asnumpy().tolist() for p in parts] == [[0, 1], [2, 3, 4, 5]]


# ---------------------------------------------------------------------- storage type, copies, identity
def test_tostype_default_copies_and_sparse_names_absent_storage():
    x = mx.nd.array(X)
    dense = x.tostype("default")
    assert dense is not x and dense.stype == "default"
    assert_almost_equal(dense, X)
    for stype in ("csr", "row_sparse"):
        with pytest.raises(SparseStorageError, match="sparse storage, which MXLab does not have"):
            x.tostype(stype)
    with pytest.raises(SparseStorageError):
        x.attach_grad(stype="row_sparse")


def test_creation_functions_take_stype_and_out():
    assert mx.nd.zeros((2,), stype="default").shape == (2,)
    assert mx.nd.empty((2,), stype="default").dtype == np.float32
    with pytest.raises(SparseStorageError, match="zeros: stype='csr'"):
        mx.nd.zeros((2, 2), stype="csr")
    with pytest.raises(SparseStorageError, match="empty: unknown storage type 'dense'"):
        mx.nd.empty((2,), stype="dense")
    out = mx.nd.empty((2, 2))
    assert mx.nd.full((2, 2), 3.0, out=out) is out and out.asnumpy().tolist() == [[3, 3], [3, 3]]
    assert mx.nd.zeros((2, 2), out=out) is out and out.asnumpy().sum() == 0
    assert mx.nd.ones((2, 2), out=out) is out and out.asnumpy().sum() == 4


def test_astype_copy_false_returns_self_only_when_nothing_changes():
    x = mx.nd.array(X)
    assert x.astype("float32", copy=False) is x
    assert x.astype("float32") is not x
    assert x.astype("float64", copy=False).dtype == np.float64


def test_detach_shares_values_but_not_the_graph():
    x = mx.nd.array(X)
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
        z = y.detach() * x
    z.backward()
    assert_almost_equal(x.grad, 2 * X)  # y's dependence on x is cut: dz/dx = y


def test_handle_writable_and_as_nd_ndarray():
    x = mx.nd.ones(2)
    assert x.handle is None and x.writable is True
    assert x.as_nd_ndarray() is x
    assert x.as_in_context(context=mx.cpu(0)) is x


def test_pickling_goes_through_getstate_and_setstate():
    x = mx.nd.array([[1, 2], [3, 4]], ctx=mx.cpu(1), dtype="int32")
    state = x.__getstate__()
    assert state["values"].tolist() == [[1, 2], [3, 4]] and state["device_id"] == 1
    y = pickle.loads(pickle.dumps(x))
    assert y.context == mx.cpu(1) and y.dtype == np.int32 and y.asnumpy().tolist() == [[1, 2], [3, 4]]
    y[0, 0] = 7
    assert x.asnumpy()[0, 0] == 1  # a separate array


def test_truth_value_of_one_element_arrays_only():
    assert bool(mx.nd.ones((1, 1))) and not bool(mx.nd.zeros(1))
    assert mx.nd.ones(1).__nonzero__() is True
    with pytest.raises(ValueError, match="ambiguous"):
        bool(mx.nd.ones(2))


def test_array_protocol_gives_numpy_the_values():
    x = mx.nd.array(X)
    assert np.asarray(x).tolist() == X.tolist()
    assert np.asarray(x, dtype=np.float64).dtype == np.float64


# ---------------------------------------------------------------------- NumPy scalars in the front end
def test_numpy_scalars_in_arithmetic_on_both_sides():
    x = mx.nd.array([1.0, 2.0])
    for scalar in (np.float32(2), np.float64(2), np.int64(2), np.array(2.0)):
        assert isinstance(x + scalar, mx.nd.NDArray) and (x + scalar).asnumpy().tolist() == [3, 4]
        assert (x * scalar).asnumpy().tolist() == [2, 4]
        assert (x - scalar).asnumpy().tolist() == [-1, 0]
    for scalar in (np.float64(2), np.float32(2), np.int32(2)):  # NumPy on the left defers to NDArray
        left = scalar * x
        assert isinstance(left, mx.nd.NDArray) and left.asnumpy().tolist() == [2, 4]
        assert (scalar - x).asnumpy().tolist() == [1, 0]
        assert (scalar / x).asnumpy().tolist() == [2, 1]
    assert mx.nd.maximum(x, np.array(1.5)).asnumpy().tolist() == [1.5, 2]
    assert mx.nd.power(np.int64(2), x).asnumpy().tolist() == [2, 4]
    y = mx.nd.array([1.0, 2.0])
    y += np.float32(1)
    y *= np.array(2.0)
    assert y.asnumpy().tolist() == [4, 6]


def test_numpy_integers_as_shapes_indices_and_device_ids():
    x = mx.nd.arange(12).reshape((np.int64(3), np.int32(4)))
    assert x.shape == (3, 4)
    assert x[np.int64(1)].asnumpy().tolist() == [4, 5, 6, 7]
    assert x[np.int64(1) : np.int32(3), np.int8(2)].asnumpy().tolist() == [6, 10]
    x[np.int64(0), np.int64(0)] = np.float32(-1)
    x[np.int64(2)] = np.int64(9)
    assert x.asnumpy()[0, 0] == -1 and x.asnumpy()[2].tolist() == [9, 9, 9, 9]
    assert mx.cpu(np.int64(1)) == mx.cpu(1) and type(mx.cpu(np.int64(1)).device_id) is int
    assert mx.nd.ones((2,), ctx=mx.cpu(np.int32(1))).context == mx.cpu(1)
    with pytest.raises(mx.MXNetError, match="device_id must be a non-negative int"):
        mx.cpu(np.bool_(True))
    with pytest.raises(mx.MXNetError, match="device_id"):
        mx.cpu(np.float64(1))


# ---------------------------------------------------------------------- dtype defaults
def test_array_defaults_to_float32_like_mxnet():
    for source in ([1, 2], np.array([1, 2]), np.array([1.0], dtype=np.float64), np.int64(3), 2.5, [[True]]):
        assert mx.nd.array(source).dtype == np.float32, source
    assert mx.nd.array(mx.nd.ones(2, dtype="int32")).dtype == np.int32
    assert mx.nd.array(np.array([1, 2]), dtype="int64").dtype == np.int64
    for create in (mx.nd.zeros, mx.nd.ones, mx.nd.empty):
        assert create((2,)).dtype == np.float32 and create((2,), dtype=None).dtype == np.float32
    assert mx.nd.full((2,), 1).dtype == np.float32


# ---------------------------------------------------------------------- legacy shape semantics
def test_legacy_shapes_refuse_zero_size_and_0d_creation_numpy_shapes_allow_them():
    for shape in ((0, 3), ()):
        with pytest.raises(InferenceError, match="legacy shape semantics"):
            mx.nd.zeros(shape)
        with pytest.raises(InferenceError, match="set_np_shape"):
            mx.nd.ones(shape)
    # As in MXNet, empty() and full() never run shape inference, and array() copies what it is given.
    assert mx.nd.empty((0, 3)).shape == (0, 3)
    assert mx.nd.full((0, 2), 1.0).shape == (0, 2)
    assert mx.nd.array(np.zeros((0, 3))).shape == (0, 3)
    with mx.np_shape(True):
        assert mx.nd.zeros((0, 3)).shape == (0, 3)
        assert mx.nd.ones(()).shape == ()
    assert not mx.is_np_shape()


def test_attach_grad_works_on_zero_size_arrays():
    x = mx.nd.empty((0, 3))
    x.attach_grad()
    assert x.grad.shape == (0, 3)
