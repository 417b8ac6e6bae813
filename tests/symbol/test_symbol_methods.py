"""Symbol's MXNet 1.x methods and functions: fluent methods, bind/simple_bind signatures,
NDArray-only methods, JSON attributes, and the hand-written ``mx.sym`` functions."""

from __future__ import annotations

import json

import numpy as np
import pytest

import framework as mx
from framework.errors import SparseStorageError
from framework.executor.arguments import ExecutorError
from framework.operator.fluent import available_fluent_methods
from framework.symbol import NotImplementedForSymbol, SymbolTypeError
from framework.test_utils import assert_almost_equal

X = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], dtype=np.float32)


def _run(sym, **arrays):
    return sym.eval(ctx=mx.cpu(), **{k: mx.nd.array(v) for k, v in arrays.items()})[0].asnumpy()


@pytest.mark.parametrize(
    ("method", "kwargs"),
    [("sum", {"axis": 1}), ("exp", {}), ("clip", {"a_min": 0.0, "a_max": 2.0}), ("transpose", {}), ("relu", {})],
)
def test_fluent_methods_build_the_same_graph_as_the_function(method, kwargs):
    x = mx.sym.Variable("x")
    fluent = getattr(x, method)(**kwargs)
    function = getattr(mx.sym, method)(x, **kwargs)
    assert fluent.list_arguments() == ["x"]
    assert_almost_equal(_run(fluent, x=X), _run(function, x=X))
    assert_almost_equal(_run(fluent, x=X), getattr(mx.nd, method)(mx.nd.array(X), **kwargs).asnumpy())


def test_symbol_and_ndarray_share_the_fluent_table():
    for method, _ in available_fluent_methods():
        assert callable(getattr(mx.sym.Symbol, method)), method
        assert callable(getattr(mx.nd.NDArray, method)), method


def test_shape_methods_accept_inplace_and_ignore_it():
    x = mx.sym.Variable("x")
    assert _run(x.expand_dims(axis=0, inplace=True), x=X).shape == (1, 2, 3)
    assert _run(x.reshape((3, 2)).flatten(inplace=True), x=X).shape == (3, 2)
    assert _run(x.expand_dims(1).squeeze(axis=1, inplace=False), x=X).shape == (2, 3)
    assert _run(x.astype("float64"), x=X).dtype == np.float64


def test_ndarray_only_methods_raise_not_implemented_for_symbol():
    x = mx.sym.Variable("x")
    for call in (
        x.asnumpy,
        x.asscalar,
        x.wait_to_read,
        x.backward,
        x.detach,
        lambda: x.as_in_context(mx.cpu()),
        lambda: x.gradient(["x"]),
    ):
        with pytest.raises(NotImplementedForSymbol, match="only available in NDArray"):
            call()
    with pytest.raises(NotImplementedError):
        x.__nonzero__()
    assert x.as_nd_ndarray() is x and x.handle is None
    y = x + 1
    copy = y.copy()
    assert copy.tojson() == y.tojson() and copy is not y


def test_numpy_scalars_on_either_side_of_a_symbol():
    x = mx.sym.Variable("x")
    left = np.float64(2) * x
    assert isinstance(left, mx.sym.Symbol)
    assert_almost_equal(_run(left, x=X), 2 * X)
    assert_almost_equal(_run(x / np.float32(2), x=X), X / 2)
    assert_almost_equal(_run(x - np.array(1.0), x=X), X - 1)
    assert_almost_equal(_run(mx.sym.maximum(x, np.array(0.0)), x=X), np.maximum(X, 0))
    assert_almost_equal(_run(x.__rdiv__(np.float32(1.0)), x=np.abs(X) + 1), 1 / (np.abs(X) + 1))


def test_bind_takes_mxnets_arguments_by_keyword():
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    net = mx.sym.dot(x, w)
    args = {"x": mx.nd.array(X), "w": mx.nd.ones((3, 2))}
    grads = {"x": mx.nd.zeros((2, 3)), "w": mx.nd.zeros((3, 2))}
    exe = net.bind(ctx=mx.cpu(), args=args, args_grad=grads, grad_req={"x": "null", "w": "write"}, aux_states=None)
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 2)))
    assert_almost_equal(exe.grad_dict["w"], X.T @ np.ones((2, 2)))
    assert exe.grad_req == {"x": "null", "w": "write"}
    shared = net.bind(mx.cpu(), args, shared_exec=exe, group2ctx={"dev": mx.cpu()})
    assert_almost_equal(shared.forward()[0], X @ np.ones((3, 2)))
    with pytest.raises(ExecutorError, match="group2ctx places groups on \\['cpu\\(1\\)'\\]"):
        net.bind(mx.cpu(), args, group2ctx={"dev": mx.cpu(1)})


def test_simple_bind_full_signature_and_shared_buffer():
    x = mx.sym.Variable("x")
    net = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    buffer = {}
    exe = net.simple_bind(
        mx.cpu(),
        grad_req="write",
        type_dict={"x": "float32"},
        stype_dict={"x": "default"},
        group2ctx=None,
        shared_arg_names=None,
        shared_exec=None,
        shared_buffer=buffer,
        x=(2, 3),
    )
    assert exe.arg_dict["fc_weight"].shape == (4, 3)
    assert "fc_weight" in buffer or "x" in buffer  # the allocated arrays are offered for reuse
    with pytest.raises(SparseStorageError, match="simple_bind: argument 'x'"):
        net.simple_bind(mx.cpu(), stype_dict={"x": "csr"}, x=(2, 3))


def test_executor_get_optimized_symbol_is_the_bound_graph():
    x = mx.sym.Variable("x")
    net = mx.sym.relu(x * 2)
    exe = net.simple_bind(mx.cpu(), x=(2,))
    optimized = exe.get_optimized_symbol()
    assert optimized is not net and optimized.tojson() == net.tojson()


def test_tojson_and_save_accept_remove_amp_cast(tmp_path):
    net = mx.sym.Variable("x") + 1
    assert net.tojson(remove_amp_cast=False) == net.tojson()
    path = tmp_path / "net.json"
    net.save(str(path), remove_amp_cast=True)
    assert mx.sym.load(str(path)).tojson() == net.tojson()


def test_json_carries_is_np_shape_only_under_numpy_shape_semantics():
    net = mx.sym.Variable("x")
    assert json.loads(net.tojson())["attrs"] == {"mxnet_version": ["int", 10901]}
    with mx.np_shape(True):
        text = net.tojson()
    assert json.loads(text)["attrs"] == {"is_np_shape": ["int", 1], "mxnet_version": ["int", 10901]}
    # MXNet's layout: a multi-line map, sorted keys.
    assert text.endswith('"attrs": {\n    "is_np_shape": ["int", 1], \n    "mxnet_version": ["int", 10901]\n  }\n}')
    assert mx.sym.load_json(text).list_arguments() == ["x"]


def test_variable_stype_default_only():
    assert mx.sym.Variable("x", stype="default").list_arguments() == ["x"]
    with pytest.raises(SparseStorageError, match="Variable 'x': stype='row_sparse'"):
        mx.sym.Variable("x", stype="row_sparse")


def test_creation_and_helper_functions():
    assert _run(mx.sym.arange(3)).tolist() == [0, 1, 2]
    assert_almost_equal(_run(mx.sym.linspace(0, 1, 5)), np.linspace(0, 1, 5))
    assert _run(mx.sym.eye(2, 3, 1)).tolist() == np.eye(2, 3, 1).tolist()
    x = mx.sym.Variable("x")
    assert _run(mx.sym.pow(base=x, exp=2), x=X).tolist() == (X**2).tolist()
    assert _run(mx.sym.power(2, x), x=np.array([1.0, 3.0])).tolist() == [2, 8]
    counts = _run(mx.sym.histogram(x, bins=3, range=(0, 6)), x=np.array([0.0, 1, 1, 2, 5]))
    assert counts.tolist() == [3, 1, 1]
    with pytest.raises(mx.MXNetError, match="needs range"):
        mx.sym.histogram(x, bins=3)
    parts = mx.sym.split_v2(x, (1,), axis=1)
    outs = parts.eval(x=mx.nd.array(X))
    assert [o.shape for o in outs] == [(2, 1), (2, 2)]
    assert len(mx.sym.split_v2(x, 3, axis=1).list_outputs()) == 3
    assert len(mx.sym.Group([x, x + 1], create_fn=mx.sym.Symbol).list_outputs()) == 2
    with pytest.raises(SymbolTypeError, match="create_fn must be Symbol"):
        mx.sym.Group([x], create_fn=dict)
