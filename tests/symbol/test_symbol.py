"""Symbol construction, naming, listing, composition, attributes and inference (mx.sym)."""

from __future__ import annotations

import copy
import inspect
import pickle
import warnings

import numpy as np
import pytest

import framework as mx
import framework.symbol as sym
from framework.errors import SparseStorageError
from framework.operator import registry
from framework.operator.infer import InferenceError
from framework.operator.params import OperatorParamError
from framework.symbol import NameManager, Prefix
from framework.symbol.symbol import NotImplementedForSymbol, SymbolError, SymbolTypeError


@pytest.fixture(autouse=True)
def fresh_names():
    """Automatic names start from 0 in every test."""
    with NameManager():
        yield


# ---------------------------------------------------------------------------- variables and names
def test_variable_and_repr():
    a = sym.Variable("a")
    assert repr(a) == "<Symbol a>" and a.name == "a"
    assert sym.var is sym.Variable
    assert a.list_arguments() == ["a"] and a.list_outputs() == ["a"] and a.list_auxiliary_states() == []
    assert a.get_children() is None


def test_variable_hidden_attributes_match_mxnet():
    v = sym.Variable("v", shape=(2, 0), lr_mult=2, wd_mult=0.5, dtype="float16", init="zeros", __layout__="NC")
    assert v.list_attr() == {
        "__shape__": "(2, 0)",
        "__lr_mult__": "2",
        "lr_mult": "2",
        "__wd_mult__": "0.5",
        "wd_mult": "0.5",
        "__dtype__": "2",  # MXNet's type flag for float16
        "__init__": "zeros",
        "__layout__": "NC",
    }
    assert v.attr("lr_mult") == "2" and v.attr("__lr_mult__") == "2" and v.attr("missing") is None
    w = sym.Variable("w", attr={"mood": "calm", "ctx_group": "dev1"})
    assert w.list_attr() == {"mood": "calm", "__ctx_group__": "dev1", "ctx_group": "dev1"}


class _Init:
    def dumps(self) -> str:
        return '["xavier", {}]'


def test_variable_init_object_and_errors():
    assert sym.Variable("v", init=_Init()).attr("__init__") == '["xavier", {}]'
    with pytest.raises(SymbolError, match="double underscores"):
        sym.Variable("v", foo=1)
    with pytest.raises(SymbolError, match="dtype"):
        sym.Variable("v", dtype="complex64")
    with pytest.raises(SparseStorageError, match="dense"):
        sym.Variable("v", stype="csr")
    with pytest.raises(SymbolTypeError, match="name must be a string"):
        sym.Variable(3)
    with pytest.raises(SymbolError, match="deprecated"):
        sym.Variable("v", attr={"weight_lr_mult": "2"})


def test_automatic_names_count_per_hint_and_prefix():
    x = sym.var("x")
    assert sym.FullyConnected(x, num_hidden=2).name == "fullyconnected0"
    assert sym.FullyConnected(x, num_hidden=2).name == "fullyconnected1"
    assert sym.Activation(x, act_type="relu").name == "activation0"
    assert (x + x).name == "_plus0" and (x * 2).name == "_mulscalar0" and (2 - x).name == "_rminusscalar0"
    assert sym.softmax(x).name == "softmax0"
    with Prefix("net1_"):
        fc = sym.FullyConnected(x, num_hidden=2)
        named = sym.FullyConnected(x, num_hidden=2, name="head")
    assert fc.name == "net1_fullyconnected0" and named.name == "net1_head"
    assert fc.list_arguments() == ["x", "net1_fullyconnected0_weight", "net1_fullyconnected0_bias"]
    assert sym.FullyConnected(x, num_hidden=2).name == "fullyconnected2"  # the outer counter continues
    assert mx.symbol.naming.current() is NameManager.current


# ---------------------------------------------------------------------------- composition
def test_missing_inputs_become_variables_named_after_the_node():
    data = sym.Variable("data")
    fc = sym.FullyConnected(data=data, num_hidden=10, name="fc1")
    assert fc.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert fc.list_outputs() == ["fc1_output"]
    nobias = sym.FullyConnected(data, num_hidden=10, no_bias=True, name="fc2")
    assert nobias.list_arguments() == ["data", "fc2_weight"]
    bn = sym.BatchNorm(name="bn")  # even data
    assert bn.list_inputs() == ["bn_data", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]


def test_auxiliary_states_are_mutated_variables():
    net = sym.BatchNorm(sym.FullyConnected(sym.var("x"), num_hidden=4, name="fc"), name="bn")
    assert net.list_arguments() == ["x", "fc_weight", "fc_bias", "bn_gamma", "bn_beta"]
    assert net.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert net.list_outputs() == ["bn_output"]  # mean and var outputs are hidden
    versions = [e.version for e in net.outputs[0].node.inputs]
    assert versions == [0, 0, 0, 1, 1]
    # MXNet's BatchNorm asks for its statistics to start at zero and one
    internals = net.get_internals()
    assert internals["bn_moving_mean"].attr("__init__") == '["zero", {}]'
    assert internals["bn_moving_var"].attr("__init__") == '["one", {}]'


def test_prelu_gamma_starts_at_a_quarter_as_in_mxnet():
    net = sym.LeakyReLU(sym.FullyConnected(sym.var("data"), num_hidden=3, name="fc"), act_type="prelu", name="prelu")
    assert net.get_internals()["prelu_gamma"].attr("__init__") == '["Constant", {"value": 0.25}]'
    module = mx.mod.Module(net, label_names=None)
    module.bind([("data", (2, 4))])
    module.init_params(mx.init.Uniform(0.1))
    assert module.get_params()[0]["prelu_gamma"].asnumpy().tolist() == [0.25, 0.25, 0.25]
    given = sym.var("g", init=mx.init.One())  # a gamma that says otherwise keeps its own
    assert sym.LeakyReLU(sym.var("x"), gamma=given, act_type="prelu").get_internals()["g"].attr("__init__") == (
        mx.init.One().dumps()
    )
    assert sym.LeakyReLU(sym.var("x"), act_type="leaky").list_arguments() == ["x"]  # no gamma, nothing to set


def test_auxiliary_state_must_be_a_variable():
    x = sym.var("x")
    with pytest.raises(SymbolError, match="moving_mean.*must be a variable"):
        sym.BatchNorm(x, moving_mean=x * 2, name="bn")


def test_inputs_by_position_keyword_and_parameters_positionally():
    x, w = sym.var("x"), sym.var("w")
    assert sym.FullyConnected(x, w, num_hidden=3, name="a").list_arguments() == ["x", "w", "a_bias"]
    assert sym.FullyConnected(x, weight=w, num_hidden=3, name="b").list_arguments() == ["x", "w", "b_bias"]
    # after the inputs come the parameters, as in MXNet's generated functions
    node = sym.FullyConnected(x, w, None, 6, name="c").outputs[0].node
    assert node.attrs.parsed.num_hidden == 6 and node.attrs.extra == {"num_hidden": "6"}
    assert x.reshape((1, -1)).outputs[0].node.attrs.extra == {"shape": "(1, -1)"}
    assert x.astype("int32").outputs[0].node.op.name == "Cast"


def test_composition_errors_name_the_operator_and_argument():
    x = sym.var("x")
    with pytest.raises(OperatorParamError, match="num_hidden"):
        sym.FullyConnected(x)
    with pytest.raises(OperatorParamError, match="unknown parameter 'foo'.*fullyconnected"):
        sym.FullyConnected(x, num_hidden=3, foo=2)
    with pytest.raises(SymbolTypeError, match="'weight' must be a Symbol, got 10"):
        sym.FullyConnected(x, 10)
    with pytest.raises(SymbolTypeError, match="'data' must be a Symbol"):
        sym.FullyConnected(data=2, num_hidden=3)
    with pytest.raises(SymbolTypeError, match="'data' must be a Symbol"):
        sym.FullyConnected(mx.nd.ones((2, 2)), num_hidden=3)
    with pytest.raises(SymbolError, match="'wt' is not an input; candidate inputs: data, weight, bias"):
        sym.FullyConnected(x, num_hidden=3, wt=x)
    with pytest.raises(SymbolError, match="'bias' is not an input"):
        sym.FullyConnected(x, num_hidden=3, no_bias=True, bias=x)
    with pytest.raises(SymbolError, match="multiple values for argument 'data'"):
        sym.FullyConnected(x, data=x, num_hidden=3)
    with pytest.raises(SymbolError, match="group of 2 outputs"):
        sym.FullyConnected(sym.split(x, num_outputs=2), num_hidden=3)
    with pytest.raises(SymbolError, match="at most"):
        sym.relu(x, x, x)


def test_variadic_operators_count_their_inputs():
    a, b = sym.var("a"), sym.var("b")
    cat = sym.Concat(a, b, dim=0)
    assert cat.outputs[0].node.attrs.extra == {"num_args": "2", "dim": "0"}
    assert sym.Concat(a, b, num_args=3, name="c3").list_arguments() == ["a", "b", "c3_arg2"]
    with pytest.raises(SymbolError, match="variable number of inputs"):
        sym.Concat(data=a, dim=0)
    assert sym.add_n(a, b, a).list_arguments() == ["a", "b"]


def test_multi_output_symbols_index_by_position_and_name():
    parts = sym.split(sym.var("x"), num_outputs=3, name="sp")
    assert len(parts) == 3 and parts.name == "sp"
    assert parts.list_outputs() == ["sp_output0", "sp_output1", "sp_output2"]
    assert parts[1].outputs[0].index == 1 and parts[-1].outputs[0].index == 2
    assert parts["sp_output2"].outputs[0].index == 2
    assert [s.outputs[0].index for s in parts] == [0, 1, 2]
    assert parts[1:].list_outputs() == ["sp_output1", "sp_output2"]
    with pytest.raises(IndexError):
        parts[3]
    with pytest.raises(SymbolError, match="Cannot find output"):
        parts["nope"]
    with pytest.raises(SymbolTypeError):
        parts[1.5]


def test_group_internals_and_children():
    x = sym.var("x")
    fc = sym.FullyConnected(x, num_hidden=2, name="fc")
    act = sym.Activation(fc, act_type="relu", name="act")
    group = sym.Group([act, x])
    assert group.name is None and repr(group) == "<Symbol group [act, x]>"
    assert group.list_outputs() == ["act_output", "x"]
    assert act.get_internals().list_outputs() == ["x", "fc_weight", "fc_bias", "fc_output", "act_output"]
    assert act.get_children().list_outputs() == ["fc_output"]
    assert fc.get_children().list_outputs() == ["x", "fc_weight", "fc_bias"]
    assert act.get_internals()["fc_output"].name == "fc"
    with pytest.raises(SymbolTypeError, match="non-empty list"):
        sym.Group([])
    with pytest.raises(SymbolTypeError, match="non-empty list"):
        sym.Group([x, 1])
    with pytest.raises(SymbolTypeError, match="Entry objects"):
        sym.Symbol([])


def test_call_substitutes_variables_in_a_copy():
    data = sym.var("data")
    net = sym.Activation(sym.var("q"), act_type="tanh", name="act")
    composed = net(q=sym.FullyConnected(data, num_hidden=3, name="fc"))
    assert composed.list_arguments() == ["data", "fc_weight", "fc_bias"]
    assert net.list_arguments() == ["q"]  # the original is unchanged
    assert net(q=data, name="renamed").name == "renamed" and net.name == "act"
    with pytest.raises(SymbolError, match="'y' not found; candidate arguments: q"):
        net(y=data)
    with pytest.raises(SymbolError, match="keyword arguments"):
        net(data)
    with pytest.raises(SymbolTypeError, match="Symbols"):
        net(q=1)
    with pytest.raises(SymbolError, match="group of 2 outputs"):
        net(q=sym.split(data, num_outputs=2))


def test_copy_and_pickle_give_independent_equal_graphs():
    net = sym.BatchNorm(sym.FullyConnected(sym.var("x"), num_hidden=3, name="fc"), name="bn")
    for clone in (copy.copy(net), copy.deepcopy(net), pickle.loads(pickle.dumps(net))):
        assert clone.tojson() == net.tojson()
        assert clone.outputs[0].node is not net.outputs[0].node
    clone = copy.copy(net)
    clone._set_attr(eps="0.01")
    assert net.attr("eps") is None and clone.attr("eps") == "0.01"


# ---------------------------------------------------------------------------- arithmetic
@pytest.mark.parametrize(
    ("build", "op_name", "name", "attrs"),
    [
        (lambda a, b: a + b, "elemwise_add", "_plus0", {}),
        (lambda a, b: a - b, "elemwise_sub", "_minus0", {}),
        (lambda a, b: a * b, "elemwise_mul", "_mul0", {}),
        (lambda a, b: a / b, "elemwise_div", "_div0", {}),
        (lambda a, b: a % b, "_mod", "_mod0", {}),
        (lambda a, b: a**b, "_power", "_power0", {}),
        (lambda a, b: a + 2, "_plus_scalar", "_plusscalar0", {"scalar": "2"}),
        (lambda a, b: 2 + a, "_plus_scalar", "_plusscalar0", {"scalar": "2"}),
        (lambda a, b: a - 1.5, "_minus_scalar", "_minusscalar0", {"scalar": "1.5"}),
        (lambda a, b: 2 - a, "_rminus_scalar", "_rminusscalar0", {"scalar": "2"}),
        (lambda a, b: a * 2.0, "_mul_scalar", "_mulscalar0", {"scalar": "2.0"}),
        (lambda a, b: a / 4, "_div_scalar", "_divscalar0", {"scalar": "4"}),
        (lambda a, b: 4 / a, "_rdiv_scalar", "_rdivscalar0", {"scalar": "4"}),
        (lambda a, b: a % 3, "_mod_scalar", "_modscalar0", {"scalar": "3"}),
        (lambda a, b: 3 % a, "_rmod_scalar", "_rmodscalar0", {"scalar": "3"}),
        (lambda a, b: a**2, "_power_scalar", "_powerscalar0", {"scalar": "2"}),
        (lambda a, b: 2**a, "_rpower_scalar", "_rpower_scalar0", {"scalar": "2"}),
        (lambda a, b: -a, "_mul_scalar", "_mulscalar0", {"scalar": "-1.0"}),
        (lambda a, b: abs(a), "abs", "abs0", {}),
        (lambda a, b: a == b, "_equal", "_equal0", {}),
        (lambda a, b: a != 1, "_not_equal_scalar", "_not_equal_scalar0", {"scalar": "1"}),
        (lambda a, b: a > b, "_greater", "_greater0", {}),
        (lambda a, b: a >= 0, "_greater_equal_scalar", "_greater_equal_scalar0", {"scalar": "0"}),
        (lambda a, b: a < b, "_lesser", "_lesser0", {}),
        (lambda a, b: 2 > a, "_lesser_scalar", "_lesser_scalar0", {"scalar": "2"}),
        (lambda a, b: a <= np.float32(1.5), "_lesser_equal_scalar", "_lesser_equal_scalar0", {"scalar": "1.5"}),
    ],
)
def test_operator_overloads_follow_mxnet(build, op_name, name, attrs):
    a, b = sym.var("a"), sym.var("b")
    node = build(a, b).outputs[0].node
    assert (node.op.name, node.name, node.attrs.extra) == (op_name, name, attrs)


def test_arithmetic_with_wrong_types_raises_clearly():
    a = sym.var("a")
    array = mx.nd.ones((2,))
    with pytest.raises(SymbolTypeError, match="Symbol \\+ NDArray is not supported"):
        a + array
    with pytest.raises(SymbolTypeError, match="Symbol \\* NDArray"):
        a * array
    with pytest.raises(TypeError):
        array + a  # NDArray's own operator, or the reflected Symbol one: never silently mixed
    with pytest.raises(SymbolTypeError, match="str"):
        a - "x"
    with pytest.raises(NotImplementedForSymbol, match="bool"):
        bool(a)
    with pytest.raises(NotImplementedForSymbol, match="\\+="):
        a += 1
    with pytest.raises(TypeError):
        hash(a)


def test_module_level_binary_functions():
    a, b = sym.var("a"), sym.var("b")
    assert sym.maximum(a, b).outputs[0].node.op.name == "_maximum"
    assert sym.minimum(a, 1).outputs[0].node.op.name == "_minimum_scalar"
    assert sym.pow(2, a).outputs[0].node.op.name == "_rpower_scalar"
    assert sym.maximum(2, 3) == 3
    with pytest.raises(SymbolTypeError):
        sym.hypot(a, "x")


# ---------------------------------------------------------------------------- attributes
def test_operator_attributes_are_the_given_strings_plus_hidden_ones():
    fc = sym.FullyConnected(sym.var("x"), num_hidden=10, no_bias=False, name="fc", attr={"lr_mult": "3"})
    assert fc.list_attr() == {"num_hidden": "10", "no_bias": "False", "__lr_mult__": "3", "lr_mult": "3"}
    assert fc.attr("num_hidden") == "10" and fc.attr("name") == "fc"
    # variables created for missing inputs get a copy of the node's attributes (NNVM)
    assert fc.attr_dict()["fc_weight"] == fc.list_attr()
    with pytest.raises(OperatorParamError):
        sym.FullyConnected(sym.var("x"), num_hidden=1, attr={"mood": "x"})


def test_set_attr_reparses_parameters_and_validates_first():
    fc = sym.FullyConnected(sym.var("x"), num_hidden=10, name="fc")
    fc._set_attr(num_hidden="20", __mood__="ok")
    assert fc.outputs[0].node.attrs.parsed.num_hidden == 20
    assert fc.infer_shape(x=(2, 3))[1] == [(2, 20)]
    with pytest.raises(OperatorParamError, match="num_hidden"):
        fc._set_attr(num_hidden="many")
    assert fc.attr("num_hidden") == "20"  # unchanged by the failed call
    with pytest.raises(SymbolError, match="string values"):
        fc._set_attr(num_hidden=3)
    with pytest.raises(OperatorParamError, match="unknown parameter"):
        fc._set_attr(colour="red")
    with pytest.raises(SymbolError, match="non-grouped"):
        sym.Group([fc, sym.var("y")])._set_attr(__a__="b")
    with pytest.raises(DeprecationWarning):
        fc.list_attr(recursive=True)


# ---------------------------------------------------------------------------- inference
def test_infer_shape_complete_positional_and_keyword():
    fc = sym.FullyConnected(sym.var("a"), num_hidden=3, name="fc")
    assert fc.infer_shape(a=(2, 5)) == ([(2, 5), (3, 5), (3,)], [(2, 3)], [])
    assert fc.infer_shape((2, 5)) == ([(2, 5), (3, 5), (3,)], [(2, 3)], [])
    assert fc.infer_shape((2, 5), None, None)[1] == [(2, 3)]


def test_infer_shape_incomplete_warns_and_names_unknown_arguments():
    fc = sym.FullyConnected(sym.var("a"), num_hidden=3, name="fc")
    with pytest.warns(UserWarning, match="(?s)Cannot decide shape.*a: \\(\\).*fc_weight: \\(\\)"):
        assert fc.infer_shape() == (None, None, None)
    assert fc.infer_shape_partial() == ([(), (), ()], [()], [])
    assert fc.infer_shape_partial(a=(2, 0)) == ([(2, 0), (), (3,)], [(2, 3)], [])


def test_infer_shape_argument_errors():
    fc = sym.FullyConnected(sym.var("a"), num_hidden=3, name="fc")
    with pytest.raises(SymbolError, match="'zz' not found; candidate arguments: a, fc_weight, fc_bias"):
        fc.infer_shape(zz=(2, 5))
    with pytest.raises(SymbolError, match="either by positional or kwargs"):
        fc.infer_shape((2, 5), a=(2, 5))
    with pytest.raises(SymbolTypeError, match="shapes \\(tuple\\)"):
        fc.infer_shape(a=[2, 5])
    with pytest.raises(SymbolError, match="4 positional shapes for 3 arguments"):
        fc.infer_shape((2, 5), None, None, None)


def test_infer_shape_conflict_names_node_shapes_and_arguments():
    fc = sym.FullyConnected(sym.var("a"), num_hidden=3, name="fc")
    with pytest.raises(InferenceError) as info:
        fc.infer_shape(a=(2, 5), fc_weight=(4, 5))
    message = str(info.value)
    assert "'fc' (FullyConnected)" in message and "(3, 5)" in message and "(4, 5)" in message
    assert "infer_shape arguments: a: (2, 5), fc_weight: (4, 5)" in message


def test_infer_shape_with_auxiliary_states():
    net = sym.BatchNorm(sym.var("x"), name="bn")
    assert net.infer_shape(x=(2, 3, 4)) == ([(2, 3, 4), (3,), (3,)], [(2, 3, 4)], [(3,), (3,)])
    assert net.infer_shape(bn_moving_var=(3,), x=(2, 3, 4))[2] == [(3,), (3,)]


def test_infer_type_returns_numpy_types():
    fc = sym.FullyConnected(sym.var("a"), num_hidden=3, name="fc")
    assert fc.infer_type(a="float16") == ([np.float16] * 3, [np.float16], [])
    assert fc.infer_type(np.float64)[1] == [np.float64]
    with pytest.warns(UserWarning, match="(?s)Cannot decide type.*a: None"):
        assert fc.infer_type() == (None, None, None)
    assert fc.infer_type_partial() == ([None] * 3, [None], [])
    typed = sym.Variable("t", dtype="float64") * sym.var("u")
    assert typed.infer_type() == ([np.float64, np.float64], [np.float64], [])
    with pytest.raises(InferenceError, match="(?s)float64.*float32"):
        typed.infer_type(u="float32")
    with pytest.raises(SymbolTypeError, match="dtypes"):
        fc.infer_type(a="banana")


def test_seed_004_partial_hints_warn_with_their_zeros():
    a = sym.Variable("a", shape=(2, 0))
    b = sym.Variable("b")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert (a * b).infer_shape() == (None, None, None)
    assert "a: (2, 0)" in str(caught[0].message) and "b: (2, 0)" in str(caught[0].message)


# ---------------------------------------------------------------------------- generated functions
def test_generated_functions_signature_and_docstring():
    signature = str(inspect.signature(sym.FullyConnected))
    assert signature.startswith("(data=None, weight=None, bias=None, num_hidden=<required>, no_bias=False")
    assert "name=None, attr=None" in signature
    assert str(inspect.signature(sym.Concat)).startswith("(*data, dim=1")
    assert "num_hidden : int, required" in sym.FullyConnected.__doc__
    assert "fc1" not in dir(sym) and "FullyConnected" in dir(sym)


def test_namespaces_and_lazy_lookup():
    x = sym.var("x")
    assert sym._internal._Plus(x, x).name == "_plus0"
    assert sym.op.FullyConnected(x, num_hidden=1).name == "fullyconnected0"
    assert sym.contrib.quadratic(x, a=1).outputs[0].node.op.name == "_contrib_quadratic"
    assert sym.contrib.quadratic(x).name == "quadratic1"
    assert "quadratic" in dir(sym.contrib)
    with pytest.raises(AttributeError):
        sym._Plus  # noqa: B018 - underscore operators are in mx.sym._internal
    with pytest.raises(AttributeError, match="no_such_op"):
        sym.no_such_op  # noqa: B018
    with pytest.raises(AttributeError):
        sym.contrib.nothing  # noqa: B018
    assert sym.linalg.gemm2(x, x).outputs[0].node.op.name == "_linalg_gemm2"
    with pytest.raises(AttributeError):
        sym.linalg.nothing  # noqa: B018


def test_operators_registered_later_get_functions():
    name = "_test_symbol_late_op"
    if not registry.exists(name):
        source = registry.get("relu")
        op = registry.register(name).set_infer_shape(source.infer_shape).set_infer_type(source.infer_type)
        op.set_input_names(["data"])
    s = sym._internal._test_symbol_late_op(sym.var("x"))
    assert s.name == "_test_symbol_late_op0" and s.infer_shape(x=(3,))[1] == [(3,)]


def test_random_symbols_dispatch_on_parameter_types():
    x, y = sym.var("x"), sym.var("y")
    node = sym.random.uniform(0, 2, shape=(3,)).outputs[0].node
    assert (node.op.name, node.name) == ("_random_uniform", "_random_uniform0")
    assert node.attrs.extra == {"low": "0", "high": "2", "shape": "(3,)"}
    assert sym.random.normal(x, y, shape=2).outputs[0].node.op.name == "_sample_normal"
    assert sym.random.exponential(2.0).outputs[0].node.attrs.extra["lam"] == "0.5"
    assert sym.random.uniform(shape=(2, 2)).infer_shape()[1] == [(2, 2)]
    with pytest.raises(SymbolTypeError, match="all be Symbols or all numbers"):
        sym.random.normal(x, 1.0)
    with pytest.raises(SymbolTypeError):
        sym.random.randint(0.5, 2)
    assert sym.random.uniform_like(x).outputs[0].node.op.name == "_random_uniform_like"


def test_random_randn_and_multinomial_take_mxnets_defaults():
    normal = sym.random.randn(2, 3, loc=1.0, scale=2.0)
    node = normal.outputs[0].node
    assert node.op.name == "_random_normal" and node.attrs.extra["loc"] == "1.0"
    assert normal.infer_shape()[1] == [(2, 3)]
    # The symbolic multinomial also returns the draws' log-probabilities unless told otherwise.
    assert len(sym.random.multinomial(sym.var("p")).list_outputs()) == 2
    assert len(sym.random.multinomial(sym.var("p"), get_prob=False).list_outputs()) == 1


def test_creation_and_fluent_helpers():
    assert sym.zeros((2, 3)).infer_shape() == ([], [(2, 3)], [])
    assert sym.ones((2,), dtype="int32").infer_type()[1] == [np.int32]
    assert sym.full((2,), 7).outputs[0].node.attrs.extra == {"shape": "(2,)", "dtype": "float32", "value": "7"}
    x = sym.var("x")
    assert x.sum(axis=1).infer_shape(x=(2, 3))[1] == [(2,)]
    assert x.exp().name == "exp0" and x.relu().name == "relu0"


def test_debug_str_lists_outputs_variables_and_operators():
    net = sym.BatchNorm(sym.FullyConnected(sym.var("x"), num_hidden=3, name="fc"), name="bn")
    text = net.debug_str()
    assert text.startswith("Symbol Outputs:\n\toutput[0]=bn(0)\nVariable:x\n")
    assert "Op:FullyConnected, Name=fc\nInputs:\n\targ[0]=x(0) version=0\n" in text
    assert "\targ[0]=fc(0)\n" in text and "\targ[3]=bn_moving_mean(0) version=1\n" in text
    assert "Attrs:\n\tnum_hidden=3\n" in text


def test_bind_and_eval_delegate_to_the_executor():
    a, b = sym.var("a"), sym.var("b")
    out = (a * b + 1).eval(ctx=mx.cpu(), a=mx.nd.array([1.0, 2.0]), b=mx.nd.array([3.0, 4.0]))
    np.testing.assert_allclose(out[0].asnumpy(), [4.0, 9.0])


def test_an_operator_without_parameters_keeps_any_attribute_as_mxnet_does():
    relu = sym.relu(sym.var("d"), name="r", attr={"foo": "bar"})
    assert relu.list_attr() == {"foo": "bar"} and relu.attr("foo") == "bar"
    assert sym.load_json(relu.tojson()).list_attr() == {"foo": "bar"}  # and reads it back from JSON
    other = sym.relu(sym.var("d"), name="y")
    other._set_attr(baz="1")
    assert other.list_attr() == {"baz": "1"}
    with pytest.raises(mx.MXNetError, match="unknown parameter 'foo'"):  # one with parameters parses them
        sym.FullyConnected(sym.var("d"), num_hidden=2, attr={"foo": "bar"})
