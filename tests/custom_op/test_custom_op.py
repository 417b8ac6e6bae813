"""mx.operator.CustomOp / CustomOpProp / register and the ``Custom`` operator (MXNet 1.x semantics)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

import framework as mx
from framework import backend, custom_op
from framework.custom_op import CustomOp, CustomOpError, CustomOpProp
from framework.operator.params import OperatorParamError


class Sigmoid(CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], 1 / (1 + mx.nd.exp(-in_data[0])))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0]
        self.assign(in_grad[0], req[0], out_grad[0] * y * (1 - y))


@custom_op.register("test_sigmoid")
class SigmoidProp(CustomOpProp):
    created = 0

    def __init__(self) -> None:
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, shapes, dtypes):
        SigmoidProp.created += 1
        return Sigmoid()


class WeightedSum(CustomOp):
    """out = scale * (a + b); counts calls in an auxiliary state."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], (in_data[0] + in_data[1]) * self.scale)
        self.assign(out_data[1], req[1], in_data[0] * 0 + is_train)
        self.assign(aux[0], "write", aux[0] + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * self.scale)
        self.assign(in_grad[1], req[1], out_grad[0] * self.scale)


@custom_op.register("test_weighted_sum")
class WeightedSumProp(CustomOpProp):
    def __init__(self, scale: str = "1") -> None:
        super().__init__(need_top_grad=True)
        self.scale = float(scale)  # keywords arrive as strings, as in MXNet

    def list_arguments(self) -> list[str]:
        return ["a", "b"]

    def list_outputs(self) -> list[str]:
        return ["out", "flag"]

    def list_auxiliary_states(self) -> list[str]:
        return ["count"]

    def infer_shape(self, in_shape):
        if in_shape[0] != in_shape[1]:
            raise ValueError(f"a and b must match, got {in_shape[0]} and {in_shape[1]}")
        return in_shape, [in_shape[0], in_shape[0]], [[1]]

    def create_operator(self, ctx, shapes, dtypes):
        return WeightedSum(self.scale)


X = np.array([[-1.0, 0.0, 2.0]], dtype=np.float32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def test_imperative_forward_backward() -> None:
    x = mx.nd.array(X)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="test_sigmoid")
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), _sigmoid(X), rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), _sigmoid(X) * (1 - _sigmoid(X)), rtol=1e-6)


def test_symbolic_names_executor_and_add_request() -> None:
    s = mx.sym.Custom(mx.sym.var("data"), op_type="test_sigmoid", name="sig")
    assert s.list_arguments() == ["data"]
    assert s.list_outputs() == ["sig_output"]
    grad = mx.nd.ones((1, 3))
    ex = s.bind(mx.cpu(), {"data": mx.nd.array(X)}, args_grad={"data": grad}, grad_req="add")
    before = SigmoidProp.created
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward(mx.nd.ones((1, 3)))
    np.testing.assert_allclose(grad.asnumpy(), 1 + 2 * _sigmoid(X) * (1 - _sigmoid(X)), rtol=1e-6)
    assert SigmoidProp.created - before == 1  # one operator for the node, reused
    loaded = mx.sym.load_json(s.tojson())
    out = loaded.bind(mx.cpu(), {"data": mx.nd.array(X)}).forward()[0]
    np.testing.assert_allclose(out.asnumpy(), _sigmoid(X), rtol=1e-6)


def test_arguments_outputs_aux_kwargs_and_is_train() -> None:
    s = mx.sym.Custom(mx.sym.var("a"), mx.sym.var("b"), op_type="test_weighted_sum", scale=3, name="ws")
    assert s.list_arguments() == ["a", "b"]
    assert s.list_outputs() == ["ws_out", "ws_flag"]
    assert s.list_auxiliary_states() == ["ws_count"]
    _, out_shapes, aux_shapes = s.infer_shape(a=(2, 2), b=(2, 2))
    assert out_shapes == [(2, 2), (2, 2)] and aux_shapes == [(1,)]
    a, b = np.ones((2, 2), np.float32), np.full((2, 2), 2, np.float32)
    grads = {"a": mx.nd.zeros((2, 2)), "b": mx.nd.zeros((2, 2))}
    count = mx.nd.zeros((1,))
    ex = s.bind(mx.cpu(), {"a": mx.nd.array(a), "b": mx.nd.array(b)}, args_grad=grads, aux_states={"ws_count": count})
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones((2, 2)), mx.nd.zeros((2, 2))])
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), 9.0)
    np.testing.assert_allclose(ex.outputs[1].asnumpy(), 1.0)  # is_train reached forward
    np.testing.assert_allclose(grads["a"].asnumpy(), 3.0)
    ex.forward(is_train=False)
    np.testing.assert_allclose(ex.outputs[1].asnumpy(), 0.0)
    np.testing.assert_allclose(count.asnumpy(), [2.0])  # the auxiliary state was updated twice


def test_concurrent_custom_nodes_do_not_deadlock() -> None:
    """Several graphs running Custom at once; user code must still finish (any engine type)."""
    s = mx.sym.Custom(mx.sym.var("data"), op_type="test_sigmoid")
    execs = [s.bind(mx.cpu(), {"data": mx.nd.array(X)}) for _ in range(4)]
    for ex in execs:
        ex.forward()
    for ex in execs:
        np.testing.assert_allclose(ex.outputs[0].asnumpy(), _sigmoid(X), rtol=1e-6)


def test_naive_engine_runs_user_code_inline() -> None:
    with mx.engine.use(mx.engine.create("NaiveEngine")):
        out = mx.nd.Custom(mx.nd.array(X), op_type="test_sigmoid")
        np.testing.assert_allclose(out.asnumpy(), _sigmoid(X), rtol=1e-6)


def test_errors_name_the_operator() -> None:
    x = mx.nd.array(X)
    with pytest.raises(OperatorParamError, match="op_type 'nope' is not registered"):
        mx.nd.Custom(x, op_type="nope")
    with pytest.raises(OperatorParamError, match="required parameter 'op_type' is missing"):
        mx.nd.Custom(x)
    with pytest.raises(OperatorParamError, match=r"WeightedSumProp.*unexpected keyword argument 'bogus'"):
        mx.nd.Custom(x, x, op_type="test_weighted_sum", bogus=1)
    with pytest.raises(ValueError, match=r"a and b must match, got \[1, 3\] and \[3\]"):
        mx.nd.Custom(x, mx.nd.ones((3,)), mx.nd.zeros((1,)), op_type="test_weighted_sum")

    class Broken(CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise RuntimeError("boom")

    @custom_op.register("test_broken")
    class BrokenProp(CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Broken()

    with pytest.raises(CustomOpError, match=r"Custom operator 'test_broken' .*forward raised RuntimeError: boom"):
        mx.nd.Custom(x, op_type="test_broken").asnumpy()
    with pytest.raises(CustomOpError, match="expected a CustomOpProp subclass"):
        custom_op.register("bad")(int)
    assert "test_broken" in custom_op.get_all_registered_operators()


def test_assign_requests() -> None:
    op = CustomOp()  # assign is a method, as in MXNet (self.assign inside forward/backward)
    dst = mx.nd.ones((2,))
    op.assign(dst, "add", mx.nd.ones((2,)))
    op.assign(dst, "null", mx.nd.zeros((2,)))
    assert dst.asnumpy().tolist() == [2.0, 2.0]
    op.assign(dst, "write", mx.nd.zeros((2,)))
    assert dst.asnumpy().tolist() == [0.0, 0.0]
    with pytest.raises(CustomOpError, match="unknown req 'sometimes'"):
        op.assign(dst, "sometimes", dst)


# ------------------------------------------------------------------ GPU: a CuPy raw kernel
RELU_KERNEL = r"""
extern "C" __global__ void relu(const float* x, float* y, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0 ? x[i] : 0;
}
"""


class RawKernelReLU(CustomOp):
    """Writes through the raw arrays (``as_array``): a CuPy RawKernel on GPU, NumPy on CPU."""

    def forward(self, is_train, req, in_data, out_data, aux):
        ctx = in_data[0].context
        xp = backend.array_module(ctx)  # cupy on GPU, numpy on CPU: through the backend only
        x, y = self.as_array(in_data[0]), self.as_array(out_data[0])
        if ctx.device_type == "gpu":
            kernel = xp.RawKernel(RELU_KERNEL, "relu")
            kernel(((x.size + 255) // 256,), (256,), (x, y, np.int32(x.size)))
        else:
            xp.maximum(x, 0, out=y)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * (in_data[0] > 0))


@custom_op.register("test_raw_relu")
class RawKernelReLUProp(CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return RawKernelReLU()


def test_raw_kernel_operator_on_cpu() -> None:
    out = mx.nd.Custom(mx.nd.array(X), op_type="test_raw_relu")
    np.testing.assert_allclose(out.asnumpy(), np.maximum(X, 0))


@pytest.mark.gpu
def test_raw_kernel_operator_on_gpu() -> None:
    if backend.num_gpus() == 0:
        pytest.skip("no GPU")
    ctx = mx.gpu(0)
    x = mx.nd.array(X, ctx=ctx)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="test_raw_relu")
    y.backward()
    assert y.context == ctx
    np.testing.assert_allclose(y.asnumpy(), np.maximum(X, 0))
    np.testing.assert_allclose(x.grad.asnumpy(), (X > 0).astype(np.float32))


class SquaredLoss(CustomOp):
    """out = x**2 / 2; a loss layer, so its gradient ignores out_grad (which must be zeros)."""

    seen_out_grad: ClassVar[list] = []

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[0] / 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        SquaredLoss.seen_out_grad.append(out_grad[0].asnumpy())
        self.assign(in_grad[0], req[0], in_data[0])


@custom_op.register("test_squared_loss")
class SquaredLossProp(CustomOpProp):
    def __init__(self) -> None:
        super().__init__(need_top_grad=False)

    def create_operator(self, ctx, shapes, dtypes):
        return SquaredLoss()


def test_loss_layer_without_top_grad_needs_no_head_gradient() -> None:
    SquaredLoss.seen_out_grad.clear()
    s = mx.sym.Custom(mx.sym.var("data"), op_type="test_squared_loss")
    grad = mx.nd.zeros((1, 3))
    ex = s.bind(mx.cpu(), {"data": mx.nd.array(X)}, args_grad={"data": grad})
    ex.forward(is_train=True)
    ex.backward()  # no out_grads: like SoftmaxOutput, the layer is its own loss
    np.testing.assert_allclose(grad.asnumpy(), X)
    np.testing.assert_allclose(SquaredLoss.seen_out_grad[0], np.zeros_like(X))
    with pytest.raises(mx.executor.ExecutorError, match="head gradient is required"):
        mx.sym.Custom(mx.sym.var("data"), op_type="test_sigmoid").bind(
            mx.cpu(), {"data": mx.nd.array(X)}, args_grad={"data": grad}
        ).backward()


def test_an_exception_in_infer_type_names_the_operator_and_keeps_the_cause():
    @mx.operator.register("test_picky_dtype")
    class PickyProp(mx.operator.CustomOpProp):
        def infer_type(self, in_type):
            raise TypeError("only float32, please")

        def create_operator(self, ctx, shapes, dtypes):
            raise AssertionError("never reached")

    with pytest.raises(mx.MXLabError, match=r"'test_picky_dtype'.*infer_type raised TypeError: only float32") as info:
        mx.nd.Custom(mx.nd.ones((2,)), op_type="test_picky_dtype")
    assert isinstance(info.value.__cause__, TypeError)
    assert mx.operator.CustomOpError is CustomOpError


def test_mx_operator_register_is_mxnets_decorator_and_register_op_the_native_chain():
    assert mx.operator.register is custom_op.register
    assert mx.operator.register_op is mx.operator.registry.register

    @mx.operator.register("test_mx_register_identity")
    class IdentityProp(CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            class Identity(CustomOp):
                def forward(self, is_train, req, in_data, out_data, aux):
                    self.assign(out_data[0], req[0], in_data[0])

            return Identity()

    assert "test_mx_register_identity" in mx.operator.get_all_registered_operators()
    out = mx.nd.Custom(mx.nd.array([1.0, 2.0]), op_type="test_mx_register_identity")
    np.testing.assert_allclose(out.asnumpy(), [1, 2])
    with pytest.raises(AttributeError, match=r"native registration chain is mx.operator.register_op\('x'\).set_num"):
        mx.operator.register("x").set_num_inputs(1)
    with pytest.raises(CustomOpError, match="non-empty string"):
        mx.operator.register("")


def test_the_declared_names_are_asked_once_per_parameters_not_per_call() -> None:
    asked = []

    @custom_op.register("test_counted_lists")
    class CountedProp(CustomOpProp):
        def list_arguments(self) -> list[str]:
            asked.append("list_arguments")
            return ["data"]

        def create_operator(self, ctx, shapes, dtypes):
            return Sigmoid()

    x = mx.nd.array([0.0, 1.0])
    for _ in range(5):
        y = mx.nd.Custom(x, op_type="test_counted_lists")
    np.testing.assert_allclose(y.asnumpy(), 1 / (1 + np.exp(-np.array([0.0, 1.0]))), rtol=1e-6)
    assert asked == ["list_arguments"]


def test_a_list_method_that_raises_names_the_operator_and_the_method() -> None:
    @custom_op.register("test_broken_lists")
    class BrokenProp(CustomOpProp):
        def list_outputs(self) -> list[str]:
            raise RuntimeError("no outputs today")

        def create_operator(self, ctx, shapes, dtypes):
            return Sigmoid()

    with pytest.raises(OperatorParamError, match=r"test_broken_lists.*BrokenProp\.list_\* raised RuntimeError"):
        mx.nd.Custom(mx.nd.array([1.0]), op_type="test_broken_lists")
