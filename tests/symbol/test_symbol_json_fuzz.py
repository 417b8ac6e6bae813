"""Fuzzing ``mx.sym.load`` / ``load_json``: a damaged document raises SymbolJSONError naming where."""

from __future__ import annotations

import copy
import json
import random

import pytest
from fuzz_helpers import mutants, only_raises

import framework as mx
from framework.symbol import SymbolJSONError


def _net() -> mx.sym.Symbol:
    x = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=4, name="conv")
    x = mx.sym.BatchNorm(x, name="bn")
    x = mx.sym.Activation(x, act_type="relu", name="relu")
    x = mx.sym.Concat(x, x, dim=1, name="cat")
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(x, name="softmax")


JUNK = [None, True, -1, 0, 2**31, 2**64, 1e308, "", "x" * 50, "\ud800", [], {}, [[-1, 0, 0]], [0, 99, 0], {"a": [1]}]


def _json_mutants(doc: dict, seed: int, count: int):
    """Documents with one value (anywhere in the tree) replaced by junk."""
    rng = random.Random(seed)
    for _ in range(count):
        mutated = copy.deepcopy(doc)
        node, path = mutated, []
        while isinstance(node, dict | list) and node:
            key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
            path.append(key)
            if rng.random() < 0.3 or not isinstance(node[key], dict | list) or not node[key]:
                node[key] = rng.choice(JUNK)
                break
            node = node[key]
        yield f"value at {path} replaced", json.dumps(mutated)


def test_byte_level_damage_to_a_file_gives_only_symbol_json_errors(tmp_path):
    data = _net().tojson().encode("utf-8")
    path = tmp_path / "net-symbol.json"
    for what, damaged in mutants(data, seed=2, count=120):
        path.write_bytes(damaged)
        err = only_raises(SymbolJSONError, lambda: mx.sym.load(str(path)), what)
        if err is not None:
            assert "net-symbol.json" in str(err), (what, str(err))


def test_value_level_damage_gives_only_symbol_json_errors_with_a_json_path():
    doc = json.loads(_net().tojson())
    for what, text in _json_mutants(doc, seed=3, count=400):
        err = only_raises(SymbolJSONError, lambda t=text: mx.sym.load_json(t), what)
        if err is not None and "not valid JSON" not in str(err):
            assert any(key in str(err) for key in ("nodes", "heads", "'nodes' list")), (what, str(err))


def test_non_utf8_file_names_the_file_and_byte(tmp_path):
    path = tmp_path / "latin1-symbol.json"
    path.write_bytes(b'{"nodes": [{"op": "null", "name": "caf\xe9", "inputs": []}], "heads": [[0, 0, 0]]}')
    with pytest.raises(SymbolJSONError, match=r"latin1-symbol\.json.*byte 38: not UTF-8"):
        mx.sym.load(str(path))


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        json.dumps({"nodes": [], "heads": []})[:-1] + ', "x": ' + "[" * 50_000 + "]" * 50_000 + "}",
    ],
)
def test_deep_nesting_is_a_symbol_json_error(text):
    with pytest.raises(SymbolJSONError, match="nested too deeply"):
        mx.sym.load_json(text)


def test_moderately_nested_attribute_values_are_refused_by_path():
    doc = {
        "nodes": [{"op": "null", "name": "x", "attrs": {"deep": [[[[[1]]]]]}, "inputs": []}],
        "heads": [[0, 0, 0]],
    }
    with pytest.raises(SymbolJSONError, match=r"nodes\[0\]\.attrs\.deep: attribute values are strings"):
        mx.sym.load_json(json.dumps(doc))


def test_an_input_naming_a_missing_output_is_refused_at_load_not_at_infer_shape(tmp_path):
    doc = {
        "nodes": [
            {"op": "null", "name": "x", "inputs": []},
            {"op": "relu", "name": "r", "inputs": [[0, 5, 0]]},
        ],
        "heads": [[1, 0, 0]],
        "attrs": {"mxnet_version": ["int", 10901]},
    }
    path = tmp_path / "bad-symbol.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(
        SymbolJSONError, match=r"bad-symbol\.json.*nodes\[1\]\.inputs\[0\].*output 5 of 'x', which has 1 output"
    ):
        mx.sym.load(str(path))
    doc["heads"] = [[1, -1, 0]]
    doc["nodes"][1]["inputs"] = [[0, 0, 0]]
    with pytest.raises(SymbolJSONError, match=r"heads\[0\].*output -1 of 'r'"):
        mx.sym.load_json(json.dumps(doc))


def test_an_absurd_input_count_is_refused_before_listing_input_names():
    doc = {
        "nodes": [
            {"op": "null", "name": "x", "inputs": []},
            {"op": "Concat", "name": "c", "attrs": {"num_args": str(10**9)}, "inputs": [[0, 0, 0]]},
        ],
        "heads": [[1, 0, 0]],
        "attrs": {"mxnet_version": ["int", 10901]},
    }
    with pytest.raises(SymbolJSONError, match=r"nodes\[1\]\.inputs.*takes 1000000000 inputs, the file gives 1"):
        mx.sym.load_json(json.dumps(doc))
