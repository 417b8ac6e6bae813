"""Autograd: recording, backward through the gradient pass, grad_req, scopes, errors."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework import autograd
from framework.autograd import AutogradError
from framework.operator import elemwise_shape, elemwise_type, register_op
from framework.test_utils import check_imperative_gradient, check_req


def test_backward_through_reshape_and_slicing():
    x = mx.nd.array(np.arange(6, dtype=np.float64).reshape(2, 3))
    x.attach_grad()
    with autograd.record():
        y = mx.nd.reshape(x, shape=(3, 2))[1:]
    y.backward(mx.nd.array(np.ones((2, 2))))
    assert x.grad.asnumpy().tolist() == [[0, 0, 1], [1, 1, 1]]


def test_grad_req_add_accumulates_and_null_skips():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad(grad_req="add")
    for _ in range(3):
        with autograd.record():
            y = mx.nd.reshape(x, shape=(2,))
        y.backward()
    assert x.grad.asnumpy().tolist() == [3.0, 3.0]
    z = mx.nd.array([1.0])
    z.attach_grad(grad_req="null")
    w = mx.nd.array([1.0])
    w.attach_grad()
    with autograd.record():
        out = mx.nd.reshape(z, shape=(1,))
        out2 = mx.nd.reshape(w, shape=(1,))
    autograd.backward([out, out2])
    assert z.grad.asnumpy().tolist() == [0.0]
    assert w.grad.asnumpy().tolist() == [1.0]


def test_scopes_set_recording_and_training_flags():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
        with autograd.predict_mode():
            assert autograd.is_recording() and not autograd.is_training()
    with autograd.train_mode():
        assert autograd.is_training() and not autograd.is_recording()
    assert not autograd.is_recording()


def test_paused_operations_are_not_differentiated():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        with autograd.pause():
            y = mx.nd.reshape(x, shape=(2,))
    with pytest.raises(AutogradError, match="not computed inside autograd.record"):
        y.backward()


def test_backward_twice_needs_retain_graph():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.reshape(x, shape=(2,))
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(AutogradError, match="retain_graph=True"):
        y.backward()


def test_grad_returns_gradients_without_touching_dot_grad():
    x = mx.nd.array([[1.0, 2.0]])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.cast(mx.nd.reshape(x, shape=(2,)), dtype="float64")
    (gx,) = autograd.grad(y, [x])
    assert gx.asnumpy().tolist() == [[1.0, 1.0]] and gx.dtype == np.float32
    assert x.grad.asnumpy().tolist() == [[0.0, 0.0]]


def test_errors_for_bad_heads_and_gradients():
    x = mx.nd.array([1.0])
    with pytest.raises(AutogradError, match="not computed inside autograd.record"):
        autograd.backward([x])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.reshape(x, shape=(1,))
    with pytest.raises(AutogradError, match="head gradient shape \\(2,\\) differs"):
        y.backward(mx.nd.zeros((2,)))
    with pytest.raises(ValueError, match="grad_req/req must be one of"):
        mx.nd.zeros((1,)).attach_grad(grad_req="sometimes")


def test_numeric_gradient_checker_reports_in_the_learners_terms():
    check_imperative_gradient(lambda x: mx.nd.reshape(x, shape=(-1,))[1:3], [np.random.rand(2, 3)])

    def wrong(x):  # casts to float64 but pretends the gradient is zero
        with autograd.pause():
            return mx.nd.reshape(x, shape=(-1,))

    with pytest.raises(AutogradError):
        check_imperative_gradient(wrong, [np.random.rand(2)])


def test_check_req_catches_an_operator_that_ignores_add():
    check_req("Reshape", [np.random.rand(2, 3)], shape=(3, 2))

    def sloppy(attrs, op_ctx, inputs, req, outputs):
        outputs[0][...] = inputs[0]  # ignores req

    register_op("_test_sloppy_copy", override=True).set_num_inputs(1).set_infer_shape(elemwise_shape).set_infer_type(
        elemwise_type
    ).set_compute(sloppy)
    with pytest.raises(AssertionError, match="_test_sloppy_copy output 0 does not honour req='add'"):
        check_req("_test_sloppy_copy", [np.random.rand(3)])
