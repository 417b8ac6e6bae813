"""The Python ``Custom`` operator honours req and has correct gradients (coverage of ``Custom``)."""

from __future__ import annotations

import numpy as np

import framework as mx
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req


class Cube(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 3 * in_data[0] * in_data[0])


@mx.operator.register("test_req_cube")
class CubeProp(mx.operator.CustomOpProp):
    def __init__(self) -> None:
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, shapes, dtypes):
        return Cube()


def test_custom_forward_req_and_numeric_gradient():
    x = np.random.default_rng(3).uniform(-1, 1, (3, 4))
    assert_almost_equal(mx.nd.Custom(mx.nd.array(x), op_type="test_req_cube"), x**3)
    check_req("Custom", [x], op_type="test_req_cube")
    check_imperative_gradient(lambda a: mx.nd.Custom(a, op_type="test_req_cube"), [x])
