"""Symbol JSON: files written by real MXNet 1.9.1 load, and MXLab writes the same text.

The reference files in tests/data/mxnet_1_9_1/symbols/ come from make_symbols.py (run with
MXNet). ``composed_nets.py`` builds the same symbols with either library, so MXLab's output
is compared byte for byte with MXNet's.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from needs import needs_env_path

import framework as mx
import framework.symbol as sym
from framework.operator.params import OperatorParamError
from framework.symbol import NameManager, SymbolJSONError

DATA = Path(__file__).resolve().parent.parent / "data" / "mxnet_1_9_1" / "symbols"
EXPECTED = json.loads((DATA / "expected.json").read_text())
COMPOSED = json.loads((DATA / "composed.json").read_text())
NETWORKS = ["mlp", "lenet", "resnet18_v1"]


def composed_symbols() -> dict:
    spec = importlib.util.spec_from_file_location("composed_nets", DATA / "composed_nets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(sym, NameManager)


def shapes_of(values) -> list[list[int]]:
    return [list(v) for v in values]


# ---------------------------------------------------------------------------- MXNet's files
@pytest.mark.parametrize("network", NETWORKS)
def test_mxnet_files_load_with_the_same_names_shapes_and_types(network):
    net = sym.load(str(DATA / f"{network}-symbol.json"))
    expected = EXPECTED[network]
    assert net.list_arguments() == expected["arguments"]
    assert net.list_outputs() == expected["outputs"]
    assert net.list_auxiliary_states() == expected["auxiliary_states"]
    assert net.list_inputs() == expected["inputs"]
    assert len(net.get_internals().list_outputs()) == expected["num_internals"]
    args, outs, aux = net.infer_shape(**{k: tuple(v) for k, v in expected["input_shapes"].items()})
    assert (shapes_of(args), shapes_of(outs), shapes_of(aux)) == (
        expected["arg_shapes"],
        expected["out_shapes"],
        expected["aux_shapes"],
    )
    args, outs, aux = net.infer_type(data="float32")
    names = [[np.dtype(t).name for t in group] for group in (args, outs, aux)]
    assert names == [expected["arg_types"], expected["out_types"], expected["aux_types"]]


def test_mlp_is_written_back_byte_for_byte():
    text = (DATA / "mlp-symbol.json").read_text()
    assert sym.load_json(text).tojson() == text


@pytest.mark.parametrize("network", ["lenet", "resnet18_v1"])
def test_convolutional_networks_are_written_back_alike(network):
    """Identical except node_row_ptr: MXNet's MKL-DNN build gives max Pooling a workspace output."""
    text = (DATA / f"{network}-symbol.json").read_text()
    ours = sym.load_json(text).tojson()
    theirs, mine = json.loads(text), json.loads(ours)
    assert [k for k in theirs if theirs[k] != mine[k]] == ["node_row_ptr"]
    pooling = {i for i, node in enumerate(theirs["nodes"]) if node["op"] == "Pooling"}
    for i, node in enumerate(theirs["nodes"]):
        theirs_count = theirs["node_row_ptr"][i + 1] - theirs["node_row_ptr"][i]
        mine_count = mine["node_row_ptr"][i + 1] - mine["node_row_ptr"][i]
        assert mine_count == (1 if i in pooling else theirs_count), node["name"]


def test_resnet_keeps_versions_and_hidden_attributes():
    net = sym.load(str(DATA / "resnet18_v1-symbol.json"))
    bn = net.get_internals()["resnetv10_batchnorm0_fwd_output"].outputs[0].node
    assert [e.version for e in bn.inputs] == [0, 0, 0, 1, 1]
    gamma = bn.inputs[1].node
    assert gamma.attrs.extra["__init__"] == "ones" and gamma.attrs.extra["__shape__"] == "(0,)"
    assert bn.attrs.parsed.fix_gamma is False and bn.attrs.parsed.eps == 1e-5


# ---------------------------------------------------------------------------- same text as MXNet
@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_symbols_built_here_match_mxnet(name):
    symbol, shapes = composed_symbols()[name]
    expected = COMPOSED[name]
    assert symbol.tojson() == expected["json"]
    assert symbol.list_arguments() == expected["arguments"]
    assert symbol.list_outputs() == expected["outputs"]
    assert symbol.list_auxiliary_states() == expected["auxiliary_states"]
    assert symbol.attr_dict() == expected["attr_dict"]
    assert symbol.debug_str() == expected["debug_str"]
    if shapes is not None:
        args, outs, aux = symbol.infer_shape_partial(**shapes)
        inferred = expected["infer_shape"]
        assert (shapes_of(args), shapes_of(outs), shapes_of(aux)) == (
            inferred["args"],
            inferred["outs"],
            inferred["aux"],
        )


def test_round_trip_through_text_and_file(tmp_path):
    for name, (symbol, _) in composed_symbols().items():
        text = symbol.tojson()
        assert sym.load_json(text).tojson() == text, name
    net = sym.load(str(DATA / "resnet18_v1-symbol.json"))
    path = tmp_path / "net-symbol.json"
    net.save(str(path))
    assert sym.load(str(path)).tojson() == net.tojson()


# ---------------------------------------------------------------------------- old files
LEGACY = {
    "nodes": [
        {"op": "null", "param": {}, "name": "data", "inputs": [], "backward_source_id": -1},
        {"op": "null", "param": {}, "name": "conv_weight", "inputs": [], "backward_source_id": -1,
         "attr": {"lr_mult": "0.5", "ctx_group": "stage1"}},
        {"op": "null", "param": {}, "name": "conv_bias", "inputs": [], "backward_source_id": -1},
        {"op": "Convolution", "name": "conv",
         "param": {"kernel": "(3, 3)", "num_filter": "4", "no_bias": "False", "pad": "(1, 1)"},
         "attr": {"bias_wd_mult": "0"},
         "inputs": [[0, 0], [1, 0], [2, 0]], "backward_source_id": -1},
        {"op": "null", "param": {}, "name": "bn_gamma", "inputs": [], "backward_source_id": -1},
        {"op": "null", "param": {}, "name": "bn_beta", "inputs": [], "backward_source_id": -1},
        {"op": "BatchNorm", "name": "bn", "param": {"eps": "0.001", "fix_gamma": "True"},
         "inputs": [[3, 0], [4, 0], [5, 0]], "backward_source_id": -1},
        {"op": "Flatten", "param": {}, "name": "flat", "inputs": [[6, 0]], "backward_source_id": -1},
        {"op": "null", "param": {}, "name": "softmax_label", "inputs": [], "backward_source_id": -1},
        {"op": "Softmax", "param": {}, "name": "softmax", "inputs": [[7, 0], [8, 0]], "backward_source_id": -1},
    ],
    "arg_nodes": [0, 1, 2, 4, 5, 8],
    "heads": [[9, 0]],
}  # fmt: skip


def test_files_older_than_0_9_are_upgraded():
    net = sym.load_json(json.dumps(LEGACY))
    assert net.list_arguments() == ["data", "conv_weight", "conv_bias", "bn_gamma", "bn_beta", "softmax_label"]
    assert net.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]  # added, as MXNet does
    # what MXNet 1.9.1 reports for this file: hidden keys renamed, "bias_wd_mult" moved
    # onto conv_bias, the added statistics copy bn's attributes and get initializers
    assert net.attr_dict() == {
        "conv_weight": {"__lr_mult__": "0.5", "lr_mult": "0.5", "__ctx_group__": "stage1", "ctx_group": "stage1"},
        "conv_bias": {"__wd_mult__": "0", "wd_mult": "0"},
        "conv": {"kernel": "(3, 3)", "no_bias": "False", "num_filter": "4", "pad": "(1, 1)"},
        "bn_moving_mean": {"__init__": '["zero", {}]', "eps": "0.001", "fix_gamma": "True"},
        "bn_moving_var": {"__init__": '["one", {}]', "eps": "0.001", "fix_gamma": "True"},
        "bn": {"eps": "0.001", "fix_gamma": "True"},
    }
    assert net.outputs[0].node.op.name == "SoftmaxOutput"  # "Softmax" is an alias
    assert net.infer_shape(data=(2, 1, 5, 5))[1] == [(2, 100)]
    text = net.tojson()
    assert '"mxnet_version": ["int", 10901]' in text and '"param"' not in text
    assert sym.load_json(text).tojson() == text


def test_argmax_axis_minus_one_meant_no_axis_before_0_9_5():
    doc = {
        "nodes": [
            {"op": "null", "name": "x", "inputs": []},
            {"op": "argmax", "name": "am", "attrs": {"axis": "-1"}, "inputs": [[0, 0, 0]]},
        ],
        "heads": [[1, 0, 0]],
        "attrs": {"mxnet_version": ["int", 904]},
    }
    node = sym.load_json(json.dumps(doc)).outputs[0].node
    assert node.attrs.parsed.axis is None
    doc["attrs"]["mxnet_version"] = ["int", 10901]
    assert sym.load_json(json.dumps(doc)).outputs[0].node.attrs.parsed.axis == -1


# ---------------------------------------------------------------------------- bad files
def graph(*nodes, heads=None) -> str:
    """A current-version document (older ones get missing inputs added)."""
    heads = [[len(nodes) - 1, 0, 0]] if heads is None else heads
    return json.dumps({"nodes": list(nodes), "heads": heads, "attrs": {"mxnet_version": ["int", 10901]}})


X = {"op": "null", "name": "x", "inputs": []}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (graph(X, {"op": "MadeUpOp", "name": "m", "inputs": [[0, 0, 0]]}), "node #1 \\('m'\\).*'MadeUpOp'"),
        ("{not json", "not valid JSON"),
        (json.dumps([1, 2]), "'nodes' list"),
        (graph(X, heads=[]), "non-empty 'heads'"),
        (graph({"op": "relu", "name": "r", "inputs": [[1, 0, 0]]}, X), "'r'.*not an earlier node"),
        (graph(X, {"op": "relu", "name": "r", "inputs": [[0, 0]], "control_deps": [5]}), "control dependency 5"),
        (graph(X, {"op": "relu", "name": "r", "inputs": [["a", 0, 0]]}), "\\[node, index, version\\]"),
        (graph(X, {"op": "null", "name": "v", "inputs": [[0, 0, 0]]}), "\\('v'\\) is a variable but has inputs"),
        (graph(X, {"op": "elemwise_add", "name": "s", "inputs": [[0, 0, 0]]}), "'s'.*takes 2 input.*gives 1"),
        (graph(X, heads=[[0, 3, 0]]), "head 0 is output 3 of 'x'"),
        (graph({"op": 3, "name": "x"}), "node #0 must be an object"),
        (graph(X, {"op": "relu", "name": "r", "attrs": [1], "inputs": [[0, 0, 0]]}), "'attrs' must be an object"),
        (graph(X, {"op": "relu", "name": "r", "inputs": [], "subgraphs": [{}]}), "subgraphs"),
    ],
)
def test_malformed_files_are_refused_with_the_reason(text, message):
    with pytest.raises(SymbolJSONError, match=message):
        sym.load_json(text)


def test_bad_parameter_in_a_file_names_the_node():
    text = graph(X, {"op": "FullyConnected", "name": "fc9", "attrs": {"num_hidden": "ten"}, "inputs": [[0, 0, 0]]})
    with pytest.raises(OperatorParamError, match="node #1 \\('fc9'\\).*num_hidden"):
        sym.load_json(text)
    with pytest.raises(TypeError):
        sym.load_json(b"{}")


# ---------------------------------------------------------------------------- MXNet loads ours
MXNET_SCRIPT = """
import json, sys
import mxnet as mx
cases = json.load(sys.stdin)
result = {}
for name, text in cases.items():
    s = mx.sym.load_json(text)
    result[name] = [s.tojson() == text, s.list_arguments(), s.list_outputs(), s.list_auxiliary_states()]
print(json.dumps(result))
"""


def test_real_mxnet_loads_our_json():
    mxnet_python = needs_env_path("MXNET_PYTHON", "it names an interpreter with mxnet 1.9.1 installed")
    cases = {name: s.tojson() for name, (s, _) in composed_symbols().items()}
    cases["legacy"] = sym.load_json(json.dumps(LEGACY)).tojson()
    done = subprocess.run(
        [mxnet_python, "-c", MXNET_SCRIPT], input=json.dumps(cases), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for name, text in cases.items():
        same_text, args, outs, aux = result[name]
        symbol = sym.load_json(text)
        assert (args, outs, aux) == (
            symbol.list_arguments(),
            symbol.list_outputs(),
            symbol.list_auxiliary_states(),
        ), name
        assert same_text or '"op": "Pooling"' in text, name


# ---------------------------------------------------------------------------- same outputs as MXNet
@pytest.mark.parametrize("network", ["mlp", "lenet"])
def test_executor_reproduces_mxnet_outputs_and_gradients(network):
    """Bound to the .params file, the executor must give MXNet's outputs and gradients."""
    net = sym.load(str(DATA / f"{network}-symbol.json"))
    params = mx.nd.load(str(DATA / f"{network}-0000.params"))
    reference = mx.nd.load(str(DATA / f"{network}-reference.nd"))
    args = {k[4:]: v for k, v in params.items() if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in params.items() if k.startswith("aux:")}
    args["data"], args["softmax_label"] = reference["data"], reference["softmax_label"]
    grads = {name: mx.nd.zeros(array.shape) for name, array in args.items()}
    exe = net.bind(mx.cpu(), args, args_grad=grads, aux_states=aux)
    out = exe.forward(is_train=False)[0].asnumpy()
    np.testing.assert_allclose(out, reference["output"].asnumpy(), rtol=1e-4, atol=1e-5)
    out = exe.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out, reference["train_output"].asnumpy(), rtol=1e-4, atol=1e-5)
    exe.backward()
    for name in args:
        np.testing.assert_allclose(
            exe.grad_dict[name].asnumpy(), reference[f"grad:{name}"].asnumpy(), rtol=1e-4, atol=1e-5, err_msg=name
        )
