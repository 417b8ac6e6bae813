"""Custom operators take keyword inputs and infer shapes from what is known so far (MXNet 1.9.1).

The softmax loss below has the shape of MXNet's own custom-op example: two arguments, and a
``label`` whose shape the property derives from the data's. MXNet 1.9.1 calls ``infer_shape``
with ``[[4, 3], []]`` for ``infer_shape(data=(4, 3))`` (an unknown shape is ``[]``), names a
missing label ``<node>_label`` and binds ``softmax_label`` by keyword: checked here the same way.
"""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.custom_op import CustomOp, CustomOpProp, register
from framework.operator.infer import InferenceError
from framework.symbol.errors import SymbolError

SEEN_SHAPES: list[list[list[int]]] = []


class SoftmaxLoss(CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        y = np.exp(x - x.max(axis=1, keepdims=True))
        self.assign(out_data[0], req[0], mx.nd.array(y / y.sum(axis=1, keepdims=True)))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label = in_data[1].asnumpy().astype(int)
        grad = out_data[0].asnumpy()
        grad[np.arange(label.shape[0]), label] -= 1.0
        self.assign(in_grad[0], req[0], mx.nd.array(grad))
        self.assign(in_grad[1], req[1], mx.nd.zeros(in_data[1].shape))


@register("test_kw_softmax")
class SoftmaxLossProp(CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ["data", "label"]

    def infer_shape(self, in_shape):
        SEEN_SHAPES.append([list(s) for s in in_shape])
        data_shape = in_shape[0]
        return [data_shape, (data_shape[0],)], [data_shape], []

    def create_operator(self, ctx, shapes, dtypes):
        return SoftmaxLoss()


X = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]], np.float32)
LABEL = np.array([2, 0], np.float32)


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize(
    "call",
    [
        lambda x, y: mx.nd.Custom(data=x, label=y, op_type="test_kw_softmax"),
        lambda x, y: mx.nd.Custom(label=y, data=x, op_type="test_kw_softmax"),
        lambda x, y: mx.nd.Custom(x, label=y, op_type="test_kw_softmax"),
        lambda x, y: mx.nd.Custom(x, y, op_type="test_kw_softmax"),
    ],
)
def test_ndarray_inputs_by_keyword_follow_list_arguments(call):
    out = call(mx.nd.array(X), mx.nd.array(LABEL))
    np.testing.assert_allclose(out.asnumpy(), softmax(X), rtol=1e-6)


def test_ndarray_keyword_mistakes_are_named():
    x = mx.nd.array(X)
    with pytest.raises(mx.MXNetError, match=r"Custom: missing input 'label' \(inputs: data, label\)"):
        mx.nd.Custom(data=x, op_type="test_kw_softmax")
    with pytest.raises(mx.MXNetError, match=r"unexpected array argument\(s\) \['lbl'\]; inputs are data, label"):
        mx.nd.Custom(data=x, lbl=mx.nd.array(LABEL), op_type="test_kw_softmax")


def test_symbol_inputs_by_keyword_and_label_shape_from_data():
    data, label = mx.sym.var("data"), mx.sym.var("softmax_label")
    net = mx.sym.Custom(data=data, label=label, op_type="test_kw_softmax", name="sm")
    assert net.list_arguments() == ["data", "softmax_label"]
    SEEN_SHAPES.clear()
    assert net.infer_shape(data=(4, 3)) == ([(4, 3), (4,)], [(4, 3)], [])
    assert SEEN_SHAPES[0] == [[4, 3], []]  # the label's shape was unknown: MXNet passes []
    reordered = mx.sym.Custom(label=label, data=data, op_type="test_kw_softmax", name="sm_r")
    assert reordered.list_arguments() == ["data", "softmax_label"]


def test_simple_bind_infers_the_label_and_trains_like_mxnet():
    net = mx.sym.Custom(data=mx.sym.var("data"), label=mx.sym.var("softmax_label"), op_type="test_kw_softmax")
    ex = net.simple_bind(mx.cpu(), data=X.shape)
    assert {k: v.shape for k, v in ex.arg_dict.items()} == {"data": (2, 3), "softmax_label": (2,)}
    ex.arg_dict["data"][:] = X
    ex.arg_dict["softmax_label"][:] = LABEL
    np.testing.assert_allclose(ex.forward(is_train=True)[0].asnumpy(), softmax(X), rtol=1e-6)
    ex.backward()
    want = softmax(X)
    want[np.arange(2), LABEL.astype(int)] -= 1.0
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), want, rtol=1e-6, atol=1e-7)


def test_missing_symbol_inputs_become_variables_named_as_in_mxnet():
    data, label = mx.sym.var("data"), mx.sym.var("softmax_label")
    assert mx.sym.Custom(data, op_type="test_kw_softmax", name="sm2").list_arguments() == ["data", "sm2_label"]
    assert mx.sym.Custom(data=data, op_type="test_kw_softmax", name="sm3").list_arguments() == ["data", "sm3_label"]
    only_label = mx.sym.Custom(label=label, op_type="test_kw_softmax", name="sm4")
    assert only_label.list_arguments() == ["sm4_data", "softmax_label"]


def test_symbol_keyword_mistakes_are_named():
    data, label = mx.sym.var("data"), mx.sym.var("softmax_label")
    with pytest.raises(
        SymbolError,
        match=r"Custom takes a variable number of inputs.*keyword input 'lbl' "
        r"\(its inputs here: data, label\)",
    ):
        mx.sym.Custom(data=data, lbl=label, op_type="test_kw_softmax")
    with pytest.raises(SymbolError, match=r"multiple values for input 'data'"):
        mx.sym.Custom(data, data=data, op_type="test_kw_softmax")
    with pytest.raises(SymbolError, match=r"Concat takes a variable number of inputs.*keyword input 'extra'"):
        mx.sym.Concat(data, extra=label)


def test_infer_shape_waits_until_some_argument_shape_is_known():
    net = mx.sym.Custom(data=mx.sym.var("data"), label=mx.sym.var("softmax_label"), op_type="test_kw_softmax")
    SEEN_SHAPES.clear()
    assert net.infer_shape_partial() == ([(), ()], [()], [])
    assert SEEN_SHAPES == []  # nothing known: the property is not asked
    # Only the label known: the property is asked, with the data unknown, and this one fails on it.
    with pytest.raises(InferenceError, match=r"'test_kw_softmax'.*infer_shape raised IndexError"):
        net.infer_shape(softmax_label=(2,))
    assert SEEN_SHAPES == [[[], [2]]]
