"""make_loss: MakeLoss's parameterless twin (identity forward, a gradient of ones)."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng

import framework as mx
from framework.operator import OperatorParamError
from framework.test_utils import assert_almost_equal, check_numeric_gradient, check_req

nd = mx.nd


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
def test_make_loss_forward_is_identity_and_gradient_is_ones(dtype):
    rng = seeded_rng(1)
    x = (rng.uniform(-3, 3, (2, 3, 4)) * 4).astype(dtype)
    a = nd.array(x, dtype=dtype)
    a.attach_grad()
    with mx.autograd.record():
        loss = nd.make_loss(a * 2)
    loss.backward(nd.ones(loss.shape, dtype=dtype) * 5)  # the head gradient is ignored
    np.testing.assert_array_equal(loss.asnumpy(), x * 2)
    np.testing.assert_array_equal(a.grad.asnumpy(), np.full(x.shape, 2, dtype))


def test_make_loss_in_a_symbol_ends_the_graph():
    x = mx.sym.var("x")
    loss = mx.sym.make_loss(mx.sym.square(x), name="l")
    assert loss.list_outputs() == ["l_loss"]
    ex = loss.simple_bind(mx.cpu(), x=(2, 3))
    values = seeded_rng(2).uniform(-1, 1, (2, 3)).astype(np.float32)
    ex.arg_dict["x"][:] = values
    ex.forward(is_train=True)
    ex.backward()
    assert_almost_equal(ex.outputs[0].asnumpy(), values**2)
    assert_almost_equal(ex.grad_dict["x"].asnumpy(), 2 * values)
    assert mx.sym.load_json(loss.tojson()).tojson() == loss.tojson()


def test_make_loss_backpropagates_like_the_sum_of_its_loss():
    # make_loss(L) starts backward with ones, which is the gradient of sum(L) with a head of 1:
    # the gradient below make_loss is that of sum(L), checked here by finite differences.
    rng = seeded_rng(3)
    values = rng.uniform(-1, 1, (3, 2))
    x = mx.sym.var("x")
    per_element = mx.sym.tanh(x) * x
    check_numeric_gradient(mx.sym.sum(per_element), [values], dtype=np.float64)
    grads = []
    for sym in (mx.sym.make_loss(per_element), mx.sym.sum(per_element)):
        ex = sym.simple_bind(mx.cpu(), x=values.shape, type_dict={"x": "float64"})
        ex.arg_dict["x"][:] = values
        ex.forward(is_train=True)
        ex.backward(mx.nd.array(np.full(ex.outputs[0].shape, 7.0), dtype="float64"))  # make_loss ignores it
        grads.append(ex.grad_dict["x"].asnumpy())
    assert_almost_equal(grads[0] * 7, grads[1])


def test_make_loss_inference_params_and_req():
    ins, outs, done = infer_shapes("make_loss", {}, [None], [(2, 5)])
    assert done and ins == [(2, 5)]
    _, outs = infer_types("make_loss", {}, ["float16"])
    assert outs == ["float16"]
    with pytest.raises(OperatorParamError, match="grad_scale"):
        nd.make_loss(nd.ones(2), grad_scale=2)  # MakeLoss has the parameters; make_loss has none
    check_req("make_loss", [seeded_rng(4).uniform(-1, 1, (3, 2)).astype(np.float32)])
    assert mx.operator.get("make_loss").inplace_option(mx.operator.get("make_loss").parse_attrs({})) == [(0, 0)]
