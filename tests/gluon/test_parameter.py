"""Parameter, Constant and ParameterDict: shapes, deferred init, contexts, gradients, save/load."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.gluon import Constant, DeferredInitializationError, Parameter, ParameterDict
from framework.gluon.parameter import ParameterError


def test_initialize_creates_data_and_marked_gradient():
    p = Parameter("w", shape=(2, 3), init=mx.init.One())
    p.initialize()
    np.testing.assert_array_equal(p.data().asnumpy(), np.ones((2, 3), np.float32))
    assert p.grad().shape == (2, 3)
    with mx.autograd.record():
        y = (p.data() * 3).sum()
    y.backward()
    np.testing.assert_array_equal(p.grad().asnumpy(), np.full((2, 3), 3, np.float32))
    p.zero_grad()
    assert p.grad().asnumpy().sum() == 0
    assert repr(p) == "Parameter w (shape=(2, 3), dtype=float32)"


def test_deferred_initialization_waits_for_the_shape():
    p = Parameter("w", shape=(4, 0), allow_deferred_init=True, init="ones")
    p.initialize()
    with pytest.raises(DeferredInitializationError, match="initialization was deferred"):
        p.data()
    p.shape = (4, 7)
    p._finish_deferred_init()
    assert p.data().shape == (4, 7)
    with pytest.raises(ParameterError, match=r"incompatible with given shape \(5, 7\)"):
        p.shape = (5, 7)


def test_unknown_shape_without_deferral_is_an_error():
    with pytest.raises(ParameterError, match="invalid shape"):
        Parameter("w", shape=(0, 3)).initialize()


def test_not_initialized_and_null_grad_errors():
    p = Parameter("w", shape=(2,))
    with pytest.raises(ParameterError, match="has not been initialized"):
        p.data()
    q = Parameter("q", shape=(2,), grad_req="null")
    q.initialize()
    with pytest.raises(ParameterError, match="grad_req='null'"):
        q.grad()
    with pytest.raises(ParameterError, match="grad_req must be one of"):
        Parameter("r", grad_req="sometimes")


def test_multiple_contexts_set_data_reset_ctx_and_reduce():
    p = Parameter("w", shape=(3,), init="zeros")
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    assert p.list_ctx() == [mx.cpu(0), mx.cpu(1)]
    assert p.data(mx.cpu(1)).context == mx.cpu(1)
    with pytest.raises(ParameterError, match="was not initialized on context cpu\\(2\\)"):
        p.data(mx.cpu(2))
    p.set_data(mx.nd.array([1.0, 2.0, 3.0]))
    for d in p.list_data():
        np.testing.assert_array_equal(d.asnumpy(), [1, 2, 3])
    p.list_data()[1][:] = 3.0
    np.testing.assert_allclose(p._reduce().asnumpy(), [2.0, 2.5, 3.0])  # the average of the replicas
    p.reset_ctx(mx.cpu(0))
    assert p.list_ctx() == [mx.cpu(0)]
    np.testing.assert_allclose(p.data().asnumpy(), [2.0, 2.5, 3.0])


def test_cast_changes_data_and_grad_dtype():
    p = Parameter("w", shape=(2,), init="ones")
    p.initialize()
    p.cast("float64")
    assert p.data().dtype == np.float64 and p.grad().dtype == np.float64


def test_constant_has_no_gradient_and_keeps_its_value():
    c = Constant("c", [[1.0, 2.0]])
    c.initialize()
    np.testing.assert_array_equal(c.data().asnumpy(), [[1, 2]])
    with pytest.warns(UserWarning, match="does not support grad_req"):
        c.grad_req = "write"
    assert c.grad_req == "null"


def test_parameter_dict_prefix_sharing_and_attribute_checks():
    params = ParameterDict("net_")
    w = params.get("weight", shape=(3, 0))
    assert w.name == "net_weight"
    assert params.get("weight", shape=(3, 5)) is w and w.shape == (3, 5)  # the unknown dimension is filled
    with pytest.raises(ParameterError, match="desired attribute does not match"):
        params.get("weight", shape=(4, 5))
    shared = ParameterDict("net_", shared=params)
    assert shared.get("weight") is w
    params.get_constant("scale", [2.0])
    with pytest.raises(KeyError, match="No constant named 'net_other'"):
        params.get_constant("other")
    params.setattr("lr_mult", 0.5)
    assert w.lr_mult == 0.5


def test_parameter_dict_save_load_round_trip_and_errors(tmp_path):
    params = ParameterDict("m_")
    params.get("a", shape=(2,), init="ones")
    params.get("b", shape=(3,), init="zeros")
    params.initialize()
    path = str(tmp_path / "p.params")
    params.save(path, strip_prefix="m_")
    assert sorted(mx.nd.load(path)) == ["a", "b"]
    other = ParameterDict("m_")
    other.get("a", shape=(2,))
    other.get("b", shape=(3,))
    other.load(path, restore_prefix="m_")
    np.testing.assert_array_equal(other["m_a"].data().asnumpy(), [1, 1])
    smaller = ParameterDict("m_")
    smaller.get("a", shape=(2,))
    with pytest.raises(ParameterError, match="Parameter 'b' loaded from file.*is not present"):
        smaller.load(path, restore_prefix="m_")
    bigger = ParameterDict("m_")
    for name in "abc":
        bigger.get(name, shape=(2,))
    with pytest.raises(ParameterError, match="Parameter 'c' is missing"):
        bigger.load(path, restore_prefix="m_", ignore_extra=True)
    with pytest.raises(ParameterError, match="does not start with"):
        params.save(path, strip_prefix="x_")
