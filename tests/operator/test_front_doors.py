"""The three front doors onto one registry, and the reference operators of the tutorials.

* ``_contrib_quadratic`` (seed 004), written with ``register``;
* the OperatorProperty adapter (``framework.operator.legacy``), shown with test operators;
* the SimpleOp adapter (``framework.operator.simple_op``) and ``smooth_l1`` (seed 000).
"""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework import autograd
from framework.operator import (
    Entry,
    InferenceError,
    Node,
    NodeAttrs,
    OperatorError,
    OperatorParamError,
    Param,
    ParamSet,
    assign,
    assign_ufunc,
    registry,
)
from framework.operator.legacy import Operator, OperatorProperty, register_legacy
from framework.operator.node import variable
from framework.operator.simple_op import (
    EnvArguments,
    GradKind,
    kInplaceInOut,
    kInplaceLhsOut,
    kInplaceOutIn,
    kInplaceOutLhs,
    kNoInplace,
    register_simple_op,
)
from framework.resource import RandomResource, ResourceRequest, TempSpace
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req, rand_shape_nd

RNG = np.random.default_rng(42)
DTYPES = [np.float16, np.float32, np.float64]


def _grad_node(op_name: str, num_inputs: int, **params):
    """A forward node on fresh variables plus its gradient entries (for dependency checks)."""
    op = registry.get(op_name)
    attrs = op.parse_attrs(params)
    leaves = [variable(f"in{i}") for i in range(num_inputs)]
    node = Node(op, NodeAttrs(op_name, op, attrs.parsed), [Entry(leaf, 0) for leaf in leaves])
    out_grads = [Entry(variable(f"ograd{i}"), 0) for i in range(node.num_outputs())]
    return node, out_grads, op.gradient(node, out_grads)


# ====================================================================== _contrib_quadratic (seed 004)
def _quadratic(x, a, b, c):
    return a * x**2 + b * x + c


def test_quadratic_example_and_namespace():
    x = mx.nd.array([[1, 2], [3, 4]])
    y = mx.nd.contrib.quadratic(x, a=1, b=2, c=3)
    assert y.asnumpy().tolist() == [[6, 11], [18, 27]]
    assert y.dtype == np.float32
    assert registry.get("_contrib_quadratic").list_input_names(registry.get("_contrib_quadratic").parse_attrs({})) == [
        "data"
    ]


@pytest.mark.parametrize("dtype", DTYPES)
def test_quadratic_forward_matches_numpy(dtype):
    a, b, c = RNG.random(3)
    for ndim in range(1, 6):
        data = RNG.standard_normal(rand_shape_nd(ndim, 4, rng=RNG)).astype(dtype)
        out = mx.nd.contrib.quadratic(mx.nd.array(data, dtype=data.dtype), a=a, b=b, c=c)
        assert out.dtype == dtype
        assert_almost_equal(out, _quadratic(data.astype(np.float64), a, b, c).astype(dtype))


def test_quadratic_defaults_and_out():
    data = RNG.standard_normal((2, 3))
    assert np.all(mx.nd.contrib.quadratic(mx.nd.array(data, dtype=data.dtype)).asnumpy() == 0)  # a = b = c = 0
    out = mx.nd.zeros((2, 3), dtype="float64")
    mx.nd.contrib.quadratic(mx.nd.array(data, dtype=data.dtype), a=2, out=out)
    assert_almost_equal(out, 2 * data**2)


def test_quadratic_gradient():
    a, b, c = 0.7, -1.3, 0.4
    for shape in [(5,), (2, 3), (2, 1, 3)]:
        data = RNG.standard_normal(shape)
        check_imperative_gradient(lambda x: mx.nd.contrib.quadratic(x, a=a, b=b, c=c), [data])
    x = mx.nd.array(RNG.standard_normal((3, 4)))
    x.attach_grad()
    with autograd.record():
        y = mx.nd.contrib.quadratic(x, a=a, b=b, c=c)
    y.backward()
    assert_almost_equal(x.grad, 2 * a * x.asnumpy() + b)


def test_quadratic_req_and_graph_attributes():
    data = RNG.standard_normal((3, 4))
    check_req("_contrib_quadratic", [data], a=0.5, b=2.0, c=-1.0)
    op = registry.get("_contrib_quadratic")
    assert op.inplace_option(op.parse_attrs({})) == [(0, 0)]
    node, out_grads, grads = _grad_node("_contrib_quadratic", 1, a=1.0)
    backward = grads[0].node
    assert backward.op.name == "_backward_contrib_quadratic" and backward.op.is_backward
    assert backward.inputs == [out_grads[0], node.inputs[0]]  # ElemwiseGradUseIn: (out_grad, data)


def test_quadratic_shape_and_type_inference_is_mutual():
    op = registry.get("_contrib_quadratic")
    attrs = op.parse_attrs({"a": 1})
    in_shapes, out_shapes = [None], [(2, 3)]
    assert op.run_infer_shape(attrs, in_shapes, out_shapes)
    assert in_shapes == [(2, 3)]
    in_shapes, out_shapes = [(2, 0)], [(0, 3)]
    assert op.run_infer_shape(attrs, in_shapes, out_shapes)
    assert in_shapes == out_shapes == [(2, 3)]
    in_shapes, out_shapes = [(2, 0)], [None]
    assert not op.run_infer_shape(attrs, in_shapes, out_shapes)
    in_types, out_types = [None], ["float16"]
    assert op.run_infer_type(attrs, in_types, out_types) and in_types == ["float16"]
    with pytest.raises(InferenceError, match=r"_contrib_quadratic.*\(2, 3\).*\(3, 3\)|_contrib_quadratic.*\(3, 3\)"):
        op.run_infer_shape(attrs, [(2, 3)], [(3, 3)])
    backward = registry.get("_backward_contrib_quadratic")
    in_shapes, out_shapes = [(4, 5), None], [None]
    assert backward.run_infer_shape(attrs, in_shapes, out_shapes) and out_shapes == [(4, 5)]


def test_quadratic_bad_parameters():
    x = mx.nd.ones((2,))
    with pytest.raises(OperatorParamError, match=r"_contrib_quadratic: parameter 'a' expects a number"):
        mx.nd.contrib.quadratic(x, a="one")
    with pytest.raises(OperatorParamError, match=r"_contrib_quadratic: unknown parameter.*'d'"):
        mx.nd.contrib.quadratic(x, d=1)


# ====================================================================== OperatorProperty front door
class ScaledReLUParam(ParamSet):
    scale = Param(float, 1.0, "Multiplier of the positive part.", low=0.0)
    use_input = Param(bool, False, "Backward reads the input (else the output).")


BACKWARD_SAW: list[tuple[bool, bool, bool]] = []  # (out_grad given, in_data given, out_data given)
CREATED: list[tuple] = []


class ScaledReLU(Operator):
    """out = scale * max(x, 0); counts training-mode forward passes in the ``count`` aux state."""

    def __init__(self, param: ScaledReLUParam) -> None:
        self.param = param

    def forward(self, is_train, req, in_data, out_data, aux):
        xp = self.xp
        self.assign(out_data[0], req[0], self.param.scale * xp.maximum(in_data[0], 0))
        if is_train:
            aux[0] += 1  # in place: the engine knows aux states are written

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        BACKWARD_SAW.append((out_grad[0] is not None, in_data[0] is not None, out_data[0] is not None))
        source = in_data[0] if self.param.use_input else out_data[0]
        self.assign(in_grad[0], req[0], out_grad[0] * self.param.scale * (source > 0))


class ScaledReLUProp(OperatorProperty):
    """Scaled ReLU written as an MXNet OperatorProperty (test operator)."""

    params = ScaledReLUParam

    def list_arguments(self):
        return ["data"]

    def list_auxiliary_states(self):
        return ["count"]

    def infer_shape(self, in_shape, out_shape, aux_shape):  # mutual: shapes flow both ways
        shape = in_shape[0] if in_shape[0] is not None else out_shape[0]
        return [shape], [shape], [(1,)]

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0], in_data[0] if self.param.use_input else out_data[0]]

    def forward_inplace_option(self, in_data, out_data):
        return [(in_data[0], out_data[0])]

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        return [(out_grad[0], in_grad[0])]

    def create_operator(self, ctx, in_shapes, in_types):
        CREATED.append((ctx, tuple(in_shapes), tuple(in_types)))
        return ScaledReLU(self.param)


RESOURCES_SEEN: list[str] = []


class AddNoise(Operator):
    """out = x + std * N(0, 1) using the requested random generator; backward copies via temp space."""

    def __init__(self, std: float) -> None:
        self.std = std

    def forward(self, is_train, req, in_data, out_data, aux):
        random = self.op_ctx.requested[0]
        RESOURCES_SEEN.append(type(random).__name__)
        noise = random.generator.standard_normal(in_data[0].shape)
        self.assign(out_data[0], req[0], in_data[0] + (self.std * noise).astype(in_data[0].dtype))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        assert in_data == [None] and out_data == [None]
        space = self.op_ctx.requested[0]
        RESOURCES_SEEN.append(type(space).__name__)
        scratch = space.get_space(out_grad[0].shape, out_grad[0].dtype)
        scratch[...] = out_grad[0]
        self.assign(in_grad[0], req[0], scratch)


class NoiseParam(ParamSet):
    std = Param(float, 0.0, "Standard deviation of the noise.", low=0.0)


class AddNoiseProp(OperatorProperty):
    """Adds Gaussian noise (test operator; default names and mutual default inference)."""

    params = NoiseParam

    def forward_resource(self, in_shape):
        return [ResourceRequest.RANDOM]

    def backward_resource(self, in_shape):
        return ["kTempSpace"]  # MXNet's name is accepted too

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0]]

    def create_operator(self, ctx, in_shapes, in_types):
        return AddNoise(self.param.std)


class Twice(Operator):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], 2 * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        assert in_data[0] is not None and out_data[0] is not None  # the default keeps all
        self.assign(in_grad[0], req[0], 2 * out_grad[0])


class TwiceProp(OperatorProperty):
    """out = 2 * x with a one-argument (non-mutual) infer_shape, like MXNet's CustomOpProp."""

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, in_shapes, in_types):
        return Twice()


RELU, NOISE, TWICE = "_test_legacy_scaled_relu", "_test_legacy_add_noise", "_test_legacy_twice"
register_legacy(RELU, ScaledReLUProp, override=True)
register_legacy(NOISE, AddNoiseProp, override=True)
register_legacy(TWICE, override=True)(TwiceProp)


def _relu(x, count, **params):
    return getattr(mx.nd.op, RELU)(x, count, **params)


def test_legacy_registry_record_is_derived_from_the_property():
    op = registry.get(RELU)
    attrs = op.parse_attrs({"scale": 2.0})
    assert op.front_door == "OperatorProperty" and op.create_state is not None
    assert op.list_input_names(attrs) == ["data", "count"]  # arguments + auxiliary states
    assert op.list_output_names(attrs) == ["output"]
    assert op.get_num_inputs(attrs) == 2 and op.get_num_outputs(attrs) == 1
    assert op.mutate_inputs(attrs) == [1]  # aux states are written by the operator
    assert op.inplace_option(attrs) == [(0, 0)]
    assert "OperatorProperty" in op.description
    backward = registry.get(f"_backward_{RELU}")
    assert backward.is_backward
    assert backward.list_input_names(attrs) == ["out_grad_output", "out_data_output", "count"]
    assert backward.inplace_option(attrs) == [(0, 0)]  # out_grad (position 0) -> in_grad 0


def test_legacy_forward_backward_and_aux_state():
    data = RNG.standard_normal((3, 4))
    x, count = mx.nd.array(data, dtype=data.dtype), mx.nd.zeros((1,), dtype="float64")
    y = _relu(x, count, scale=2.0)
    assert_almost_equal(y, 2.0 * np.maximum(data, 0))
    assert count.asnumpy().tolist() == [0.0]  # not training: aux untouched
    x.attach_grad()
    head = RNG.standard_normal((3, 4))
    with autograd.record():
        y = _relu(x, count, scale=2.0)
    y.backward(mx.nd.array(head, dtype=head.dtype))
    assert count.asnumpy().tolist() == [1.0]  # training forward mutated the aux state in place
    assert_almost_equal(x.grad, head * 2.0 * (data > 0))


@pytest.mark.parametrize("use_input", [False, True])
def test_legacy_declare_backward_dependency_controls_backward_inputs(use_input):
    node, out_grads, grads = _grad_node(RELU, 2, use_input=use_input)
    backward = grads[0].node
    assert backward.op.name == f"_backward_{RELU}"
    middle = node.inputs[0] if use_input else Entry(node, 0)  # in_data[0] or out_data[0]
    assert backward.inputs == [out_grads[0], middle, node.inputs[1]]  # + the aux state
    assert grads[1] is None  # auxiliary states get no gradient
    # ...and the operator's backward receives exactly those, None elsewhere.
    mx.nd.waitall()  # earlier tests' backward passes must not land in the log below
    BACKWARD_SAW.clear()
    x, count = mx.nd.array(RNG.standard_normal((2, 3)), dtype="float64"), mx.nd.zeros((1,), dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = _relu(x, count, use_input=use_input)
    y.backward()
    mx.nd.waitall()  # compute runs on the engine
    assert BACKWARD_SAW == [(True, use_input, not use_input)]


@pytest.mark.parametrize("use_input", [False, True])
def test_legacy_numeric_gradient_and_req(use_input):
    data = RNG.uniform(0.1, 1.0, (3, 4)) * RNG.choice([-1, 1], (3, 4))  # away from the kink at 0
    check_imperative_gradient(
        lambda x, c: _relu(x, c, scale=1.5, use_input=use_input), [data, np.zeros(1)], grad_nodes=[0]
    )
    check_req(RELU, [data, np.zeros(1)], scale=1.5, use_input=use_input)


@pytest.mark.parametrize("dtype", DTYPES)
def test_legacy_forward_dtypes(dtype):
    for ndim in range(1, 6):
        data = RNG.standard_normal(rand_shape_nd(ndim, 4, rng=RNG)).astype(dtype)
        out = _relu(mx.nd.array(data, dtype=data.dtype), mx.nd.zeros((1,), dtype=dtype), scale=0.5)
        assert out.dtype == dtype
        assert_almost_equal(out, (0.5 * np.maximum(data.astype(np.float64), 0)).astype(dtype))


def test_legacy_operator_instances_are_cached_per_params_context_and_shape():
    CREATED.clear()
    count = mx.nd.zeros((1,))
    for _ in range(3):
        _relu(mx.nd.ones((2, 2)), count, scale=3.0).wait_to_read()
    assert len(CREATED) == 1
    _relu(mx.nd.ones((2, 5)), count, scale=3.0).wait_to_read()  # another shape: another "node"
    _relu(mx.nd.ones((2, 2)), count, scale=4.0).wait_to_read()  # other parameters
    assert len(CREATED) == 3
    assert CREATED[0] == (mx.cpu(0), ((2, 2),), ("float32",))


def test_legacy_shape_and_type_inference():
    op = registry.get(RELU)
    attrs = op.parse_attrs({})
    in_shapes, out_shapes = [None, None], [(2, 3)]
    assert op.run_infer_shape(attrs, in_shapes, out_shapes)  # mutual: from the output
    assert in_shapes == [(2, 3), (1,)]
    with pytest.raises(InferenceError, match=rf"{RELU}.*auxiliary state 'count'"):
        op.run_infer_shape(attrs, [(2, 3), (2,)], [None])
    with pytest.raises(InferenceError, match=rf"{RELU}.*output 0"):
        op.run_infer_shape(attrs, [(2, 3), None], [(3, 3)])
    in_types, out_types = [None, None], ["float64"]
    assert op.run_infer_type(attrs, in_types, out_types) and in_types == ["float64", "float64"]
    # Backward infers the argument gradient's shape from the entries it receives.
    backward = registry.get(f"_backward_{RELU}")
    in_shapes, out_shapes = [(4, 5), None, None], [None]
    assert backward.run_infer_shape(attrs, in_shapes, out_shapes)
    assert out_shapes == [(4, 5)] and in_shapes == [(4, 5), (4, 5), (1,)]
    # A one-argument infer_shape is called only once the arguments are known (not mutual).
    twice = registry.get(TWICE)
    in_shapes, out_shapes = [None], [(2, 3)]
    assert not twice.run_infer_shape(twice.parse_attrs({}), in_shapes, out_shapes) and in_shapes == [None]
    in_shapes, out_shapes = [(2, 3)], [None]
    assert twice.run_infer_shape(twice.parse_attrs({}), in_shapes, out_shapes) and out_shapes == [(2, 3)]


def test_legacy_bad_inputs_and_parameters():
    with pytest.raises(OperatorParamError, match=rf"{RELU}: parameter 'scale' expects a value >= 0"):
        _relu(mx.nd.ones((2,)), mx.nd.zeros((1,)), scale=-1.0)
    with pytest.raises(OperatorParamError, match=rf"{RELU}: unknown parameter"):
        _relu(mx.nd.ones((2,)), mx.nd.zeros((1,)), alpha=1.0)
    with pytest.raises(InferenceError, match=rf"{RELU}.*count"):
        _relu(mx.nd.ones((2,)), mx.nd.zeros((3,)))
    with pytest.raises(OperatorError, match="OperatorProperty subclass"):
        register_legacy("_test_legacy_bad", object)
    with pytest.raises(Exception, match="only available inside"):
        _ = Twice().op_ctx


def test_legacy_bad_backward_dependency_is_reported():
    class BadProp(TwiceProp):
        def declare_backward_dependency(self, out_grad, in_data, out_data):
            return [99]

    register_legacy("_test_legacy_bad_deps", BadProp, override=True)
    with pytest.raises(OperatorError, match=r"_test_legacy_bad_deps: declare_backward_dependency returned id 99"):
        _grad_node("_test_legacy_bad_deps", 1)


def test_legacy_default_dependency_and_non_mutual_backward():
    node, out_grads, grads = _grad_node(TWICE, 1)
    assert grads[0].node.inputs == [out_grads[0], node.inputs[0], Entry(node, 0)]  # all three by default
    check_imperative_gradient(getattr(mx.nd.op, TWICE), [RNG.standard_normal((2, 3))])
    check_req(TWICE, [RNG.standard_normal((2, 3))])


def test_legacy_resource_requests_reach_forward_and_backward():
    op, backward = registry.get(NOISE), registry.get(f"_backward_{NOISE}")
    attrs = op.parse_attrs({"std": 0.5})
    assert op.resource_request(attrs) == [ResourceRequest.RANDOM]
    assert backward.resource_request(attrs) == [ResourceRequest.TEMP_SPACE]
    assert backward.list_input_names(attrs) == ["out_grad_output"]  # only out_grad declared
    RESOURCES_SEEN.clear()
    data = RNG.standard_normal((3, 4)).astype(np.float32)
    x = mx.nd.array(data, dtype=data.dtype)
    x.attach_grad()
    with autograd.record():
        y = getattr(mx.nd.op, NOISE)(x, std=0.5)
    head = RNG.standard_normal((3, 4)).astype(np.float32)
    y.backward(mx.nd.array(head, dtype=head.dtype))
    mx.nd.waitall()
    assert RESOURCES_SEEN == [RandomResource.__name__, TempSpace.__name__]
    assert not np.allclose(y.asnumpy(), data)  # noise was drawn
    assert_almost_equal(x.grad, head)
    assert_almost_equal(getattr(mx.nd.op, NOISE)(x, std=0.0), data)


# ====================================================================== SimpleOp front door
def _add(lhs, rhs, env, ret, req, op_ctx):
    assign_ufunc(ret, req, op_ctx.xp.add, lhs, rhs)


def _add_grad(out_grad, env, lhs_grad, rhs_grad, req_lhs, req_rhs, op_ctx):  # T0
    assign(rhs_grad, req_rhs, out_grad)
    assign(lhs_grad, req_lhs, out_grad)  # last: lhs_grad may share out_grad's memory


def _exp(src, env, ret, req, op_ctx):
    assign(ret, req, op_ctx.xp.exp(src))


def _exp_grad(out_grad, out_value, env, in_grad, req, op_ctx):  # T1
    assign(in_grad, req, out_grad * out_value)


def _mul(lhs, rhs, env, ret, req, op_ctx):
    assign(ret, req, lhs * rhs)


def _mul_grad(out_grad, lhs, rhs, env, lhs_grad, rhs_grad, req_lhs, req_rhs, op_ctx):  # T2
    assign(lhs_grad, req_lhs, out_grad * rhs)
    assign(rhs_grad, req_rhs, out_grad * lhs)


class PowParam(ParamSet):
    exponent = Param(int, 2, "Integer exponent.", low=1)


ENVS: list[EnvArguments] = []


def _pow(src, env, ret, req, op_ctx):
    ENVS.append(env)
    assign(ret, req, src**env.params.exponent)


def _pow_grad(out_grad, src, env, in_grad, req, op_ctx):
    k = int(env.kwargs["exponent"])  # kwargs arrive as MXNet's strings
    assign(in_grad, req, out_grad * k * src ** (k - 1))


def _noisy(src, env, ret, req, op_ctx):
    ENVS.append(env)
    assign(ret, req, src + 0 * env.resource[0].generator.standard_normal(src.shape))


def _rowsum(src, env, ret, req, op_ctx):
    assign(ret, req, src.sum(axis=-1))


def _rowsum_shape(src_shape, env):
    if len(src_shape) < 2:
        raise ValueError(f"needs at least 2 dimensions, got {src_shape}")
    return src_shape[:-1]


def _rowsum_grad(out_grad, env, in_grad, req, op_ctx):  # T0: shape of in_grad from the carried input
    assign(in_grad, req, op_ctx.xp.broadcast_to(out_grad[..., None], in_grad.shape))


ADD_OP, EXP_OP, MUL_OP, POW_OP = "_test_simple_add", "_test_simple_exp", "_test_simple_mul", "_test_simple_pow"
FREE_OP, NOISY_OP, ROWSUM_OP = "_test_simple_free_kwargs", "_test_simple_noisy", "_test_simple_rowsum"
(
    register_simple_op(ADD_OP, override=True)
    .set_function(_add, kInplaceLhsOut)
    .set_gradient(_add_grad, GradKind.OUT_GRAD, kInplaceOutLhs)
    .describe("lhs + rhs (test operator).")
)
register_simple_op(EXP_OP, override=True).set_gradient(_exp_grad, "out_grad_output", kInplaceOutIn).set_function(
    _exp, kInplaceInOut
)
register_simple_op(MUL_OP, override=True).set_function(_mul).set_gradient(_mul_grad, GradKind.OUT_GRAD_INPUTS)
(
    register_simple_op(POW_OP, override=True)
    .set_function(_pow)
    .set_gradient(_pow_grad, GradKind.OUT_GRAD_INPUTS)
    .set_enable_kwargs(True, PowParam)
)
register_simple_op(FREE_OP, override=True).set_function(_exp).set_enable_kwargs(True)
register_simple_op(NOISY_OP, override=True).set_function(_noisy).set_resource_request(ResourceRequest.RANDOM)
(
    register_simple_op(ROWSUM_OP, override=True)
    .set_function(_rowsum)
    .set_shape_function(_rowsum_shape)
    .set_gradient(_rowsum_grad, GradKind.OUT_GRAD)
)


def _nd(name):
    return getattr(mx.nd.op, name)


def test_simple_op_records_and_names():
    add, exp, mul = registry.get(ADD_OP), registry.get(EXP_OP), registry.get(MUL_OP)
    attrs = add.parse_attrs({})
    assert add.front_door == exp.front_door == "SimpleOp"
    assert add.list_input_names(attrs) == ["lhs", "rhs"] and exp.list_input_names(attrs) == ["data"]
    assert add.inplace_option(attrs) == [(0, 0)] and mul.inplace_option(attrs) == []
    assert exp.inplace_option(attrs) == [(0, 0)]
    assert registry.get(f"_backward_{ADD_OP}").inplace_option(attrs) == [(0, 0)]
    assert registry.get(f"_backward_{EXP_OP}").inplace_option(attrs) == [(0, 0)]
    assert registry.get(f"_backward_{MUL_OP}").inplace_option(attrs) == []
    assert registry.get(f"_backward_{MUL_OP}").is_backward
    assert registry.get(FREE_OP).gradient is None  # no gradient set: no backward operator
    assert not registry.exists(f"_backward_{FREE_OP}")


def test_simple_op_gradient_kinds_decide_backward_inputs():
    node, og, grads = _grad_node(ADD_OP, 2)
    assert grads[0].node.inputs == [og[0]] and len(grads) == 2  # T0: out_grad only
    node, og, grads = _grad_node(EXP_OP, 1)
    assert grads[0].node.inputs == [og[0], Entry(node, 0)]  # T1: out_grad + output
    node, og, grads = _grad_node(MUL_OP, 2)
    assert grads[0].node.inputs == [og[0], *node.inputs]  # T2: out_grad + inputs
    node, og, grads = _grad_node(ROWSUM_OP, 1)
    assert grads[0].node.inputs == [og[0], node.inputs[0]]  # custom shape fn: inputs carried for shapes


@pytest.mark.parametrize("dtype", DTYPES)
def test_simple_op_forward_matches_numpy(dtype):
    for ndim in range(1, 6):
        shape = rand_shape_nd(ndim, 4, rng=RNG)
        a, b = RNG.standard_normal(shape).astype(dtype), RNG.standard_normal(shape).astype(dtype)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        assert_almost_equal(
            _nd(ADD_OP)(mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype)), (a64 + b64).astype(dtype)
        )
        assert_almost_equal(
            _nd(MUL_OP)(mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype)), (a64 * b64).astype(dtype)
        )
        assert_almost_equal(_nd(EXP_OP)(mx.nd.array(a, dtype=a.dtype)), np.exp(a64).astype(dtype))
        assert_almost_equal(_nd(POW_OP)(mx.nd.array(a, dtype=a.dtype), exponent=3), (a64**3).astype(dtype))


def test_simple_op_gradients_and_req():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    check_imperative_gradient(_nd(ADD_OP), [a, b])
    check_imperative_gradient(_nd(EXP_OP), [a])
    check_imperative_gradient(_nd(MUL_OP), [a, b])
    check_imperative_gradient(lambda x: _nd(POW_OP)(x, exponent=3), [a])
    check_imperative_gradient(_nd(ROWSUM_OP), [RNG.standard_normal((2, 3, 4))])
    for name, inputs, params in [
        (ADD_OP, [a, b], {}),
        (EXP_OP, [a], {}),
        (MUL_OP, [a, b], {}),
        (POW_OP, [a], {"exponent": 3}),
        (ROWSUM_OP, [RNG.standard_normal((3, 4))], {}),
    ]:
        check_req(name, inputs, **params)


def test_simple_op_env_arguments():
    ENVS.clear()
    _nd(POW_OP)(mx.nd.ones((2,)), exponent=4).wait_to_read()
    env = ENVS[-1]
    assert env.kwargs == {"exponent": "4"} and env.params.exponent == 4 and env.scalar is None
    assert_almost_equal(_nd(FREE_OP)(mx.nd.zeros((2,)), anything="x", k=3), np.ones(2, np.float32))
    assert registry.get(FREE_OP).parse_attrs({"k": 3}).parsed.to_strings() == {"k": "3"}
    _nd(NOISY_OP)(mx.nd.ones((2,))).wait_to_read()
    assert isinstance(ENVS[-1].resource[0], RandomResource) and ENVS[-1].resources is ENVS[-1].resource
    assert registry.get(NOISY_OP).resource_request(registry.get(NOISY_OP).parse_attrs({})) == [ResourceRequest.RANDOM]


def test_simple_op_shape_inference_and_errors():
    add = registry.get(ADD_OP)
    attrs = add.parse_attrs({})
    in_shapes, out_shapes = [(2, 0), None], [(0, 3)]
    assert add.run_infer_shape(attrs, in_shapes, out_shapes)  # default: mutual, all equal
    assert in_shapes == [(2, 3), (2, 3)] and out_shapes == [(2, 3)]
    with pytest.raises(InferenceError, match=rf"{ADD_OP}.*\(3, 2\)"):
        _nd(ADD_OP)(mx.nd.ones((2, 3)), mx.nd.ones((3, 2)))
    rowsum = registry.get(ROWSUM_OP)
    in_shapes, out_shapes = [(4, 5)], [None]
    assert rowsum.run_infer_shape(rowsum.parse_attrs({}), in_shapes, out_shapes) and out_shapes == [(4,)]
    assert not rowsum.run_infer_shape(rowsum.parse_attrs({}), [None], [(4,)])  # a shape function is one-way
    with pytest.raises(InferenceError, match=rf"{ROWSUM_OP}: shape function failed.*at least 2 dimensions"):
        _nd(ROWSUM_OP)(mx.nd.ones((3,)))
    backward = registry.get(f"_backward_{ROWSUM_OP}")
    in_shapes, out_shapes = [None, (4, 5)], [None]
    assert backward.run_infer_shape(rowsum.parse_attrs({}), in_shapes, out_shapes)
    assert in_shapes == [(4,), (4, 5)] and out_shapes == [(4, 5)]
    with pytest.raises(OperatorParamError, match=rf"{POW_OP}: parameter 'exponent' expects a value >= 1"):
        _nd(POW_OP)(mx.nd.ones((2,)), exponent=0)


def test_simple_op_registration_errors():
    def unary(src, env, ret, req, op_ctx):
        assign(ret, req, src)

    with pytest.raises(OperatorError, match="scalar and kwargs cannot be enabled at the same time"):
        register_simple_op("_test_simple_bad1", override=True).set_enable_scalar(True).set_enable_kwargs(True)
    with pytest.raises(OperatorError, match="_test_simple_bad2: set_function needs"):
        register_simple_op("_test_simple_bad2", override=True).set_function(lambda a, b: None)
    with pytest.raises(OperatorError, match="does not apply to a unary function"):
        register_simple_op("_test_simple_bad3", override=True).set_function(unary, kInplaceLhsOut)
    with pytest.raises(OperatorError, match="unary gradient of kind OUT_GRAD_INPUTS takes 6 parameters"):
        register_simple_op("_test_simple_bad4", override=True).set_function(unary).set_gradient(
            _add_grad, GradKind.OUT_GRAD_INPUTS
        )
    with pytest.raises(OperatorError, match="the gradient kind must be one of"):
        register_simple_op("_test_simple_bad5", override=True).set_function(unary).set_gradient(_exp_grad, "output")
    with pytest.raises(OperatorError, match="kInplaceOutIn is for unary gradients"):
        register_simple_op("_test_simple_bad6", override=True).set_function(_mul).set_gradient(
            _mul_grad, GradKind.OUT_GRAD_INPUTS, kInplaceOutIn
        )
    assert kNoInplace.value == "kNoInplace"


# ====================================================================== smooth_l1 (seed 000)
def _smooth_l1(x, sigma):
    s2 = sigma * sigma
    return np.where(np.abs(x) < 1 / s2, 0.5 * s2 * x * x, np.abs(x) - 0.5 / s2)


def _smooth_l1_grad(x, sigma):
    s2 = sigma * sigma
    return np.where(np.abs(x) < 1 / s2, s2 * x, np.sign(x))


def test_smooth_l1_example_and_registration():
    y = mx.nd.smooth_l1(mx.nd.array([1, 2, 3, 4]), scalar=1.0)
    assert y.asnumpy().tolist() == [0.5, 1.5, 2.5, 3.5]
    op = registry.get("smooth_l1")
    attrs = op.parse_attrs({"scalar": 1.0})
    assert op.front_door == "SimpleOp" and op.list_input_names(attrs) == ["data"]
    assert op.inplace_option(attrs) == []  # kNoInplace: backward reads the input
    assert registry.get("_backward_smooth_l1").inplace_option(attrs) == [(0, 0)]  # kInplaceOutIn
    node, og, grads = _grad_node("smooth_l1", 1, scalar=2.0)
    assert grads[0].node.op.name == "_backward_smooth_l1" and grads[0].node.inputs == [og[0], node.inputs[0]]


@pytest.mark.parametrize("dtype", DTYPES)
def test_smooth_l1_forward_matches_numpy(dtype):
    for ndim, sigma in zip(range(1, 6), [0.5, 1.0, 2.0, 3.0, 1.0], strict=True):
        data = (2 * RNG.standard_normal(rand_shape_nd(ndim, 4, rng=RNG))).astype(dtype)
        out = mx.nd.smooth_l1(mx.nd.array(data, dtype=data.dtype), scalar=sigma)
        assert out.dtype == dtype
        assert_almost_equal(out, _smooth_l1(data.astype(np.float64), sigma).astype(dtype))
    assert np.all(mx.nd.smooth_l1(mx.nd.array(np.ones(3, dtype)), scalar=0.0).asnumpy() == 0)


@pytest.mark.parametrize("sigma", [0.7, 1.0, 2.0])
def test_smooth_l1_gradient_and_req(sigma):
    data = 2 * RNG.standard_normal((3, 4))
    check_imperative_gradient(lambda x: mx.nd.smooth_l1(x, scalar=sigma), [data])
    x = mx.nd.array(data, dtype=data.dtype)
    x.attach_grad()
    with autograd.record():
        y = mx.nd.smooth_l1(x, scalar=sigma)
    y.backward()
    assert_almost_equal(x.grad, _smooth_l1_grad(data, sigma))
    check_req("smooth_l1", [data], scalar=sigma)


def test_smooth_l1_inference_and_bad_parameters():
    op = registry.get("smooth_l1")
    attrs = op.parse_attrs({"scalar": "2.5"})  # MXNet's attribute strings parse too
    assert attrs.parsed.scalar == 2.5
    in_shapes, out_shapes = [None], [(3, 0)]
    assert not op.run_infer_shape(attrs, in_shapes, out_shapes) and in_shapes == [(3, 0)]
    in_types, out_types = [None], ["float64"]
    assert op.run_infer_type(attrs, in_types, out_types) and in_types == ["float64"]
    with pytest.raises(OperatorParamError, match=r"smooth_l1: required parameter 'scalar' is missing"):
        mx.nd.smooth_l1(mx.nd.ones((2,)))
    with pytest.raises(OperatorParamError, match=r"smooth_l1: parameter 'scalar' expects a number"):
        mx.nd.smooth_l1(mx.nd.ones((2,)), scalar="sigma")
    with pytest.raises(Exception, match=r"smooth_l1: takes 1 input array"):
        mx.nd.smooth_l1(mx.nd.ones((2,)), mx.nd.ones((2,)), scalar=1.0)
