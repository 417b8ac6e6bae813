"""The shape/type inference pass (framework/executor/infer.py) on raw graphs of nodes."""

from __future__ import annotations

import pytest

import framework.symbol as sym
from framework.executor import build_gradient
from framework.executor.infer import infer_shapes, infer_types, parse_dtype_hint, parse_shape_hint
from framework.operator import registry
from framework.operator.infer import InferenceError
from framework.operator.node import Entry, Node, NodeAttrs, topo_sort, variable


def op_node(op_name: str, inputs: list[Entry], name: str, **params) -> Node:
    op = registry.get(op_name)
    return Node(op, NodeAttrs(name, op, op.params.parse(op.name, params)), inputs)


def var(name: str, **hidden: str) -> Entry:
    node = variable(name)
    node.attrs.extra.update({f"__{k}__": v for k, v in hidden.items()})
    return Entry(node, 0)


def seed_graph():
    """Seed 004: a (2, 0), b unknown, c (0, 3); d = a * b + b * c."""
    a, b, c = var("a", shape="(2, 0)"), var("b"), var("c", shape="(0, 3)")
    ab = Entry(op_node("elemwise_mul", [a, b], "ab"), 0)
    bc = Entry(op_node("elemwise_mul", [b, c], "bc"), 0)
    d = Entry(op_node("elemwise_add", [ab, bc], "d"), 0)
    return a, b, c, ab, bc, d


def key(entry: Entry) -> tuple[int, int]:
    return entry.node.id, entry.index


def test_seed_004_mutual_inference_fills_every_entry():
    a, b, c, ab, bc, d = seed_graph()
    table = infer_shapes([d])
    for entry in (a, b, c, ab, bc, d):
        assert table[key(entry)] == (2, 3), entry.node.name
    assert len(table) == 6


def test_seed_004_through_the_symbol_api():
    a = sym.Variable("a", shape=(2, 0))
    b = sym.Variable("b")
    c = sym.Variable("c", shape=(0, 3))
    d = a * b + b * c
    assert d.infer_shape() == ([(2, 3), (2, 3), (2, 3)], [(2, 3)], [])


def test_information_flows_upstream_from_an_output_hint():
    """Only the head's consumer side is known: the backward sweep must carry it to the inputs."""
    x, y = var("x"), var("y")
    s = Entry(op_node("elemwise_add", [x, y], "s"), 0)
    r = Entry(op_node("relu", [s], "r"), 0)
    table = infer_shapes([r], {r: (4, 5)})
    assert table[key(x)] == table[key(y)] == table[key(s)] == (4, 5)


def test_known_values_by_node_name_and_entry():
    x, y = var("x"), var("y")
    s = Entry(op_node("elemwise_add", [x, y], "s"), 0)
    assert infer_shapes([s], {"x": (3,)})[key(s)] == (3,)
    assert infer_shapes([s], {y.node: (3,)})[key(x)] == (3,)
    assert infer_shapes([s], {s: (3,)})[key(y)] == (3,)
    assert infer_shapes([s])[key(s)] is None  # nothing known: stays unknown, no error


def test_given_value_replaces_the_hint():
    """MXNet: a shape passed to inference overrides the variable's __shape__ attribute."""
    x = var("x", shape="(2, 2)")
    r = Entry(op_node("relu", [x], "r"), 0)
    assert infer_shapes([r], {"x": (5, 6)})[key(r)] == (5, 6)
    assert infer_shapes([r])[key(r)] == (2, 2)


def test_partial_dimensions_stay_zero_when_nothing_fills_them():
    x = var("x", shape="(2, 0)")
    r = Entry(op_node("relu", [x], "r"), 0)
    assert infer_shapes([r])[key(r)] == (2, 0)


def test_fully_connected_infers_its_parameters_from_data():
    data = var("data")
    fc = op_node("FullyConnected", [data, var("w"), var("b")], "fc1", num_hidden=7)
    table = infer_shapes([Entry(fc, 0)], {"data": (4, 3, 5)})
    assert [table[key(e)] for e in fc.inputs] == [(4, 3, 5), (7, 15), (7,)]
    assert table[(fc.id, 0)] == (4, 7)


def test_hidden_outputs_are_in_the_table():
    data = var("data")
    bn = op_node("BatchNorm", [data, var("g"), var("b"), var("m"), var("v")], "bn")
    table = infer_shapes([Entry(bn, 0)], {"data": (2, 3, 4)})
    assert table[(bn.id, 0)] == (2, 3, 4)
    assert table[(bn.id, 1)] == (3,)  # mean and var outputs exist even if nobody shows them
    assert table[(bn.id, 2)] == (3,)


def test_conflict_names_the_node_and_both_shapes():
    a, b = var("a"), var("b")
    prod = Entry(op_node("elemwise_mul", [a, b], "the_product"), 0)
    with pytest.raises(InferenceError) as info:
        infer_shapes([prod], {"a": (2, 3), "b": (3, 3)})
    message = str(info.value)
    assert "the_product" in message and "elemwise_mul" in message
    assert "(2, 3)" in message and "(3, 3)" in message


def test_conflict_between_operators_names_the_node_and_both_shapes():
    """Each node is consistent alone; they disagree about the shared entry."""
    x = var("x")
    r = Entry(op_node("relu", [x], "r1"), 0)
    fc = op_node("FullyConnected", [r, var("w"), var("b")], "fc", num_hidden=2)
    with pytest.raises(InferenceError) as info:
        infer_shapes([Entry(fc, 0)], {"x": (4, 5), "w": (2, 6)})
    message = str(info.value)
    assert "fc" in message and "(2, 6)" in message and "(2, 5)" in message


def test_types_flow_both_ways_and_conflicts_are_named():
    a, b, c, ab, bc, d = seed_graph()
    table = infer_types([d], {"b": "float16"})
    assert {table[key(e)] for e in (a, b, c, ab, bc, d)} == {"float16"}
    with pytest.raises(InferenceError) as info:
        infer_types([d], {"a": "float32", "c": "float64"})
    assert "float32" in str(info.value) and "float64" in str(info.value)


def test_dtype_hints_are_mxnet_type_flags_or_names():
    x = var("x", dtype="2")  # float16's type flag, as Variable(dtype=...) writes it
    r = Entry(op_node("relu", [x], "r"), 0)
    assert infer_types([r])[key(r)] == "float16"
    assert parse_dtype_hint("0", "v") == "float32"
    assert parse_dtype_hint("int64", "v") == "int64"
    assert parse_dtype_hint("-1", "v") is None
    with pytest.raises(InferenceError, match="type flag 42"):
        parse_dtype_hint("42", "variable 'v'")
    with pytest.raises(InferenceError, match="variable 'v'"):
        parse_dtype_hint("banana", "variable 'v'")


def test_shape_hint_parsing():
    assert parse_shape_hint("(2, 0)", "v") == (2, 0)
    assert parse_shape_hint("[3, 4]", "v") == (3, 4)
    assert parse_shape_hint("5", "v") == (5,)
    assert parse_shape_hint("()", "v") is None
    with pytest.raises(InferenceError, match="variable 'w'.*__shape__"):
        parse_shape_hint("(2, x)", "variable 'w'")
    with pytest.raises(InferenceError, match=">= 0"):
        parse_shape_hint("(-1, 2)", "variable 'w'")


def test_malformed_hint_in_a_graph_names_the_variable():
    x = var("weights", shape="(two, 3)")
    r = Entry(op_node("relu", [x], "r"), 0)
    with pytest.raises(InferenceError, match="'weights'"):
        infer_shapes([r])


def test_bad_known_key_is_refused():
    x = var("x")
    with pytest.raises(TypeError, match="Node, name or Entry"):
        infer_shapes([x], {3: (2,)})


def test_gradient_graph_is_inferred_to_completion():
    """Forward plus backward nodes (gradient pass) get every shape from the data shape."""
    data = sym.Variable("data")
    net = sym.FullyConnected(data, num_hidden=5, name="fc1")
    net = sym.Activation(net, act_type="tanh", name="act")
    net = sym.FullyConnected(net, num_hidden=3, name="fc2")
    order = topo_sort(net.outputs)
    wrt = [Entry(n, 0) for n in order if n.is_variable]
    head_grad = Entry(variable("head_grad"), 0)
    grads = build_gradient(net.outputs, [head_grad], wrt)
    heads = net.outputs + grads
    table = infer_shapes(heads, {"data": (8, 4), head_grad: (8, 3)})
    assert all(shape is not None and 0 not in shape for shape in table.values())
    names = {n.name: n for n in order}
    assert table[key(grads[1])] == (5, 4)  # d fc1_weight
    assert table[key(grads[0])] == table[(names["data"].id, 0)] == (8, 4)
    types = infer_types(heads, {"data": "float64", head_grad: "float64"})
    assert set(types.values()) == {"float64"}


def test_reaches_a_fixed_point_on_a_long_chain_in_both_directions():
    x = var("x")
    entry = x
    for i in range(50):
        entry = Entry(op_node("relu", [entry], f"r{i}"), 0)
    table = infer_shapes([entry], {entry: (9,)})  # only the far end is known
    assert table[key(x)] == (9,)
