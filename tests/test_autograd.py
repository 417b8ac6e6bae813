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


@pytest.mark.parametrize(
    "copy",
    [
        lambda y: y.copy(),
        lambda y: y.copyto(mx.cpu()),
        lambda y: y.copyto(mx.nd.zeros(y.shape)),
        lambda y: y.as_in_context(mx.cpu(1)),
        mx.nd.array,
    ],
    ids=["copy", "copyto_context", "copyto_array", "as_in_context_other", "nd_array"],
)
def test_copies_stay_on_the_tape(copy):
    """MXNet records NDArray copies as _copyto: the copy's gradient flows back to the source."""
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        z = copy(x * x) * 3
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [6.0, 12.0, 18.0])
    assert x.grad.context == x.context  # a gradient that crossed contexts comes home
    outside = copy(x * x)
    assert outside._entry is None  # not recording: nothing on the tape
    with pytest.raises(AutogradError, match="not computed inside autograd.record"):
        outside.backward()


def test_gradients_from_two_contexts_meet_on_one():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        across = (x.as_in_context(mx.cpu(1)) * 2).sum()  # its gradient comes back from cpu(1)
        here = (x * x * 3).sum()  # the backward of x * x reads x on cpu(0) and the gradient from cpu(1)
    assert across.context == mx.cpu(1)
    autograd.backward([across, here])
    np.testing.assert_allclose(x.grad.asnumpy(), [2 + 6 * 1.0, 2 + 6 * 2.0])
    assert x.grad.context == mx.cpu(0)


def test_mark_variables_takes_one_array_without_a_list():
    a, grad = mx.nd.array([1.0, 2.0]), mx.nd.ones(2) * 100
    autograd.mark_variables(a, grad, grad_reqs="add")
    with autograd.record():
        b = a * 5
    b.backward()
    assert grad.asnumpy().tolist() == [105, 105]  # MXNet: the one array marked, its gradient added
    with pytest.raises(AutogradError, match="one variable needs one gradient array"):
        autograd.mark_variables(a, [grad])


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


# ---------------------------------------------------------------------- mx.autograd.Function
class _StableSigmoid(autograd.Function):
    """The sigmoid with its gradient written from the output, as MXNet's Function example does."""

    def forward(self, x):
        y = 1 / (1 + mx.nd.exp(-x))
        self.save_for_backward(y)
        return y

    def backward(self, dy):
        (y,) = self.saved_tensors
        return dy * y * (1 - y)


def test_function_is_one_node_whose_backward_is_the_users():
    x = mx.nd.array([[1.0, -2.0], [0.5, 3.0]])
    x.attach_grad()
    with autograd.record():
        z = _StableSigmoid()(x * 2) * 3
    assert z._entry.node.inputs[0].node.op.name == "_CustomFunction"  # the whole forward is one node
    z.backward()
    s = 1 / (1 + np.exp(-2 * x.asnumpy()))
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * s * (1 - s), rtol=1e-5)


def test_function_with_two_inputs_and_two_outputs():
    class SumAndProduct(autograd.Function):
        def forward(self, a, b):
            self.save_for_backward(a, b)
            return a + b, a * b

        def backward(self, d_sum, d_product):
            a, b = self.saved_tensors
            return d_sum + d_product * b, d_sum + d_product * a

    a, b = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0, 5.0])
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        total, product = SumAndProduct()(a, b)
        loss = total * 2 + product
    loss.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), 2 + b.asnumpy())
    np.testing.assert_allclose(b.grad.asnumpy(), 2 + a.asnumpy())


def test_function_outside_record_only_runs_forward():
    y = _StableSigmoid()(mx.nd.array([0.0]))
    assert y._entry is None
    np.testing.assert_allclose(y.asnumpy(), [0.5])


def test_function_errors_name_the_mistake():
    class WrongCount(autograd.Function):
        def forward(self, a, b):
            return a + b

        def backward(self, dy):
            return dy

    a, b = mx.nd.ones((2,)), mx.nd.ones((2,))
    a.attach_grad()
    with autograd.record():
        y = WrongCount()(a, b)
    with pytest.raises(AutogradError, match="must return 2 NDArray"):
        y.backward()
    function = _StableSigmoid()
    with autograd.record():
        function(a)
        with pytest.raises(AutogradError, match="already recorded once"):
            function(a)
    with pytest.raises(AutogradError, match="not an NDArray"):
        _StableSigmoid()(np.ones(2))

    class Identity(autograd.Function):
        def forward(self, x):
            return x

    with autograd.record(), pytest.raises(AutogradError, match="new arrays"):
        Identity()(a)
    with pytest.raises(NotImplementedError, match="must define forward"):
        autograd.Function()(a)


def test_get_symbol_returns_the_recorded_graph():
    x = mx.nd.array([[1.0, -2.0]])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.relu(x) * 2
    symbol = autograd.get_symbol(y)
    assert isinstance(symbol, mx.sym.Symbol)
    (argument,) = symbol.list_arguments()
    out = symbol.eval(ctx=mx.cpu(), **{argument: x})[0]
    np.testing.assert_allclose(out.asnumpy(), y.asnumpy())
    with pytest.raises(AutogradError, match="not computed inside"):
        autograd.get_symbol(mx.nd.ones((1,)))
    with autograd.record():
        z = _StableSigmoid()(x)
    with pytest.raises(AutogradError, match="no symbol form"):
        autograd.get_symbol(z)


def test_set_recording_and_set_training_take_mxnets_keywords():
    assert autograd.set_recording(is_recording=True) is False
    assert autograd.set_recording(is_recording=False) is True
    previous = autograd.set_training(train_mode=True)
    assert autograd.is_training()
    autograd.set_training(previous)
