"""One builder for the help of generated mx.nd and mx.sym functions (framework/operator/signature.py)."""

from __future__ import annotations

import inspect

import pytest

import framework as mx
from framework.ndarray.register import ND_FRONT_END
from framework.operator import registry
from framework.operator.signature import FrontEnd, Keyword, default_input_names, make_docstring, make_signature
from framework.symbol.register import SYM_FRONT_END


def test_default_input_names_follow_the_default_switches():
    assert default_input_names(registry.get("FullyConnected")) == ["data", "weight", "bias"]
    assert default_input_names(registry.get("elemwise_add")) == ["lhs", "rhs"]
    assert default_input_names(registry.get("_zeros")) == []


def test_an_operator_that_cannot_name_its_inputs_gets_data():
    def broken(attrs):
        raise ValueError("no names")

    op = registry.OpDef("_test_signature_broken").set_input_names(broken)  # not registered
    assert default_input_names(op) == ["data"]


def test_both_front_ends_list_the_same_inputs_and_parameters_in_order():
    op = registry.get("FullyConnected")
    nd_doc, sym_doc = make_docstring(op, ND_FRONT_END), make_docstring(op, SYM_FRONT_END)
    for doc in (nd_doc, sym_doc):
        positions = [doc.index(f"\n{name} :") for name in ("data", "weight", "bias", "num_hidden", "no_bias")]
        assert positions == sorted(positions)
    assert "weight : NDArray\n" in nd_doc and "\nout : NDArray, optional" in nd_doc
    assert "weight : Symbol, optional\n" in sym_doc and "\nattr : dict of str to str, optional" in sym_doc
    assert nd_doc.endswith("NDArray or list of NDArray") and sym_doc.endswith("Symbol")


def test_generated_functions_carry_the_shared_help():
    assert mx.nd.FullyConnected.__doc__ == make_docstring(registry.get("FullyConnected"), ND_FRONT_END)
    assert mx.sym.FullyConnected.__doc__ == make_docstring(registry.get("FullyConnected"), SYM_FRONT_END)


def test_an_alias_is_named_in_the_symbol_help():
    doc = make_docstring(registry.get("SliceChannel"), SYM_FRONT_END, access_name="split")
    assert "``split`` is another name of ``SliceChannel``." in doc


def test_signatures_differ_only_where_the_front_ends_do():
    op = registry.get("FullyConnected")
    nd_sig, sym_sig = make_signature(op, ND_FRONT_END), make_signature(op, SYM_FRONT_END)
    # Both take parameters positionally after the inputs, as MXNet's generated functions do.
    for sig in (nd_sig, sym_sig):
        assert sig.parameters["num_hidden"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        assert repr(sig.parameters["num_hidden"].default) == "<required>"
    assert list(nd_sig.parameters)[:4] == ["data", "weight", "bias", "num_hidden"]
    assert list(nd_sig.parameters)[-1] == "out"
    assert list(sym_sig.parameters)[-3:] == ["name", "attr", "kwargs"]


def test_a_variadic_operator_takes_data_positionally_and_its_count_is_hidden():
    sig = make_signature(registry.get("add_n"), SYM_FRONT_END)
    assert sig.parameters["data"].kind is inspect.Parameter.VAR_POSITIONAL
    assert "num_args" not in sig.parameters


def test_a_custom_front_end_uses_its_own_words():
    front = FrontEnd("Thing", "A thing called {name}.", "Things.", "Thing", (Keyword("k", "int", "A keyword."),))
    doc = make_docstring(registry.get("elemwise_add"), front)
    assert "lhs : Thing\n    A thing called lhs." in doc and "\nk : int, optional\n    A keyword." in doc


@pytest.mark.parametrize("name", ["_zeros", "_arange"])
def test_creation_operators_have_no_input_arguments(name):
    sig = make_signature(registry.get(name), ND_FRONT_END)
    assert "data" not in sig.parameters
