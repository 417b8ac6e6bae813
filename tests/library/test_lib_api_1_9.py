"""Libraries written for MXNet 1.9.1's extension API (mxnet/lib_api.h + lib_api.cc), built with g++ and loaded.

The three examples of examples/lib_api_1_9 are compiled with the documented one-line command
(framework.library.build) into a cache folder: a custom-operator library (my_gemm, state_gemm,
noisy_scale), a graph-pass library and a partitioner library. The gemm operators are renamed
with -D at compile time, because examples/custom_op's older library (tests/custom_op) registers
the same names in the same test process.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from needs import needs_tool

import framework as mx
from framework import library
from framework.gluon import nn
from framework.library import LibraryError, LibraryMetadataError
from framework.library.build import build
from framework.operator.params import OperatorParamError
from framework.symbol.backends import SymbolBackendError

pytestmark = pytest.mark.slow  # compiles four libraries with g++ on first use: several seconds

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "lib_api_1_9"
RENAME = ["-Dmy_gemm=my_gemm_v19", "-Dstate_gemm=state_gemm_v19"]


def _nodes(symbol: mx.sym.Symbol) -> list[dict]:
    return json.loads(symbol.tojson())["nodes"]


def _inner_ops(symbol: mx.sym.Symbol) -> list[list[str]]:
    """The operators of each subgraph node's subgraph (held in the node's ``subgraphs``, as in MXNet)."""
    return [[m["op"] for m in n["subgraphs"][0]["nodes"]] for n in _nodes(symbol) if "subgraphs" in n]


@pytest.fixture(scope="module")
def libs() -> dict[str, library.Library]:
    needs_tool("g++", "builds the MXNet 1.9.1-style extension libraries")
    return {
        "gemm": library.load(str(build(EXAMPLES / "gemm_lib.cc", RENAME)), verbose=False),
        "pass": library.load(str(build(EXAMPLES / "pass_lib.cc")), verbose=False),
        "subgraph": library.load(str(build(EXAMPLES / "subgraph_lib.cc")), verbose=False),
    }


def _write(tmp_path: Path, name: str, text: str) -> Path:
    src = tmp_path / f"{name}.cc"
    src.write_text(text)
    return src


# ------------------------------------------------------------------ loading
def test_each_library_reports_only_its_own_components(libs):
    assert libs["gemm"].api_1_9 and libs["gemm"].version == library.abi.LIBRARY_VERSION_1_9
    assert libs["gemm"].operators == ["my_gemm_v19", "state_gemm_v19", "noisy_scale"]
    assert libs["gemm"].passes == [] and libs["gemm"].partitioners == []
    assert libs["pass"].operators == [] and libs["pass"].passes == ["myPass", "annotatePass", "foldExpLog"]
    assert libs["subgraph"].operators == ["_custom_subgraph_op"]
    assert libs["subgraph"].partitioners == ["myProp", "mySelect"]
    assert libs["subgraph"].passes == ["addInputPass"]


def test_loading_logs_operators_passes_and_partitioners(libs, capfd):
    library.load(str(build(EXAMPLES / "subgraph_lib.cc")), verbose=True)  # already loaded: same object
    assert "already loaded" in capfd.readouterr().err


def test_initialize_receives_mxnet_version_10901(tmp_path):
    needs_tool("g++", "builds a test library")
    src = _write(
        tmp_path,
        "version_check",
        '#include "mxnet/lib_api.h"\nusing namespace mxnet::ext;\n'
        "MXReturnValue initialize(int version) {\n"
        '  if (version != 10901) { MX_ERROR_MSG << "got " << version; return MX_FAIL; }\n'
        "  return MX_SUCCESS;\n}\n",
    )
    lib = library.load(str(build(src)), verbose=False)
    assert lib.api_1_9 and lib.operators == []


def test_a_library_refusing_the_version_fails_to_load(tmp_path):
    needs_tool("g++", "builds a test library")
    src = _write(
        tmp_path,
        "too_new",
        '#include "mxnet/lib_api.h"\nusing namespace mxnet::ext;\n'
        "MXReturnValue initialize(int version) {\n"
        '  if (version < 20000) { MX_ERROR_MSG << "needs MXNet 2.0, got " << version; return MX_FAIL; }\n'
        "  return MX_SUCCESS;\n}\n",
    )
    with pytest.raises(LibraryError, match=r"initialize\(10901\) failed: needs MXNet 2\.0, got 10901"):
        library.load(str(build(src)), verbose=False)


def test_a_library_without_lib_api_cc_is_refused_naming_the_missing_function(tmp_path):
    needs_tool("g++", "builds a test library")
    src = _write(tmp_path, "half", 'extern "C" int _opVersion() { return 2; }\n')
    out = tmp_path / "libhalf.so"
    subprocess.run(["g++", "-shared", "-fPIC", str(src), "-o", str(out)], check=True)
    with pytest.raises(
        LibraryError, match=r"missing exported function _opLastError; compile framework/include/lib_api\.cc"
    ):
        library.load(str(out), verbose=False)


def test_build_reports_compile_errors(tmp_path):
    needs_tool("g++", "builds a test library")
    src = _write(tmp_path, "broken", '#include "mxnet/lib_api.h"\nthis is not C++\n')
    with pytest.raises(LibraryError, match=r"build: g\+\+ failed for broken\.cc"):
        build(src)


# ------------------------------------------------------------------ custom operators
def test_gemm_forward_and_backward_match_numpy(libs):
    rng = np.random.default_rng(0)
    a_np, b_np = rng.standard_normal((3, 4)).astype("float32"), rng.standard_normal((4, 5)).astype("float32")
    a, b = mx.nd.array(a_np), mx.nd.array(b_np)
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        c = mx.nd.my_gemm_v19(a, b)
    np.testing.assert_allclose(c.asnumpy(), a_np @ b_np, rtol=1e-4, atol=1e-5)
    dc = rng.standard_normal((3, 5)).astype("float32")
    c.backward(mx.nd.array(dc))
    np.testing.assert_allclose(a.grad.asnumpy(), dc @ b_np.T, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b.grad.asnumpy(), a_np.T @ dc, rtol=1e-4, atol=1e-5)


def test_gemm_errors_come_from_the_library(libs):
    with pytest.raises(LibraryError, match=r"inner dimensions differ: 4 vs 3"):
        mx.nd.my_gemm_v19(mx.nd.ones((2, 4)), mx.nd.ones((3, 2)))
    with pytest.raises(LibraryError, match=r"input 0 must be float32"):
        mx.nd.my_gemm_v19(mx.nd.ones((2, 4), dtype="float64"), mx.nd.ones((4, 2), dtype="float64"))


def test_stateful_gemm_is_created_once_per_node_with_its_input_shapes(libs):
    op = libs["gemm"].ops["state_gemm_v19"]
    a, b = mx.sym.var("a"), mx.sym.var("b")
    out = mx.sym.state_gemm_v19(a, b, test_kw=5, name="sg")
    before = op.num_states_created
    exe = out.simple_bind(mx.cpu(), a=(2, 3), b=(3, 4), grad_req="null")
    a_np = np.arange(6, dtype="float32").reshape(2, 3)
    b_np = np.ones((3, 4), dtype="float32")
    assert out.list_auxiliary_states() == ["b"]  # mutateInputs made the second input a state
    exe.aux_dict["b"][:] = b_np
    for _ in range(3):
        (y,) = exe.forward(a=mx.nd.array(a_np))
        np.testing.assert_allclose(y.asnumpy(), a_np @ b_np)
    assert op.num_states_created == before + 1  # createOpState (five arguments) ran once for the node


def test_cpu_random_states_follow_mx_random_seed(libs):
    x = mx.nd.zeros((64,))
    mx.random.seed(7)
    first = mx.nd.noisy_scale(x, scale=3).asnumpy()
    mx.random.seed(7)
    again = mx.nd.noisy_scale(x, scale=3).asnumpy()
    mx.random.seed(8)
    other = mx.nd.noisy_scale(x, scale=3).asnumpy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    assert 0.0 <= first.min() and first.max() < 1.0 and first.std() > 0.1  # uniform(0, 1) noise
    with pytest.raises(LibraryError, match="noisy_scale needs the attribute scale"):
        mx.nd.noisy_scale(x)


# ------------------------------------------------------------------ graph passes
def _exp_log_graph() -> mx.sym.Symbol:
    """exp(log(x)) * 2 + sqrt(y), with the same node names every time (a fresh name manager)."""
    with mx.name.NameManager():
        x, y = mx.sym.var("x"), mx.sym.var("y")
        return mx.sym.exp(mx.sym.log(x)) * 2 + mx.sym.sqrt(y)


def _args() -> dict[str, mx.nd.NDArray]:
    rng = np.random.default_rng(1)
    return {"x": mx.nd.array(rng.random((2, 3)) + 0.5), "y": mx.nd.array(rng.random((2, 3)))}


def test_fold_pass_removes_exp_log_and_keeps_the_values(libs, capfd):
    sym = _exp_log_graph()
    folded = sym.optimize_for("foldExpLog", verbose=True)
    assert "foldExpLog: exp0(log0(x)) -> x" in capfd.readouterr().out  # the option reached the pass
    ops = [n["op"] for n in _nodes(folded)]
    assert "exp" not in ops and "log" not in ops and len(ops) == len(_nodes(sym)) - 2
    args = _args()
    np.testing.assert_allclose(folded.eval(**args)[0].asnumpy(), sym.eval(**args)[0].asnumpy(), rtol=1e-5)


def test_annotate_pass_is_visible_in_the_json(libs):
    annotated = _exp_log_graph().optimize_for("annotatePass")
    doc = json.loads(annotated.tojson())
    visited = [n["name"] for n in doc["nodes"] if n.get("attrs", {}).get("__visited_by__") == "annotatePass"]
    assert visited == ["log0", "exp0", "_mulscalar0", "sqrt0", "_plus0"]
    assert annotated.attr_dict()["exp0"]["__visited_by__"] == "annotatePass"


def test_pass_sees_shapes_when_args_are_given(libs, capfd):
    _exp_log_graph().optimize_for("myPass", args=_args(), note="hello")
    out = capfd.readouterr().out
    assert "option: note ==> hello" in out
    assert "attr: __ext_shape__ = [[2,3]]" in out and "attr: __ext_dtype__ = [0]" in out


def test_unknown_backend_names_the_registered_ones(libs):
    with pytest.raises(SymbolBackendError, match=r"unknown backend 'noSuchPass'; .*foldExpLog.*myProp"):
        _exp_log_graph().optimize_for("noSuchPass")


# ------------------------------------------------------------------ partitioners
@pytest.mark.parametrize("backend", ["myProp", "mySelect"])
def test_partitioned_graph_gives_the_same_outputs(libs, backend):
    sym = _exp_log_graph()
    args = _args()
    part = sym.optimize_for(backend, args=dict(args))
    nodes = _nodes(part)
    subgraph_nodes = [n for n in nodes if n["op"] == "_custom_subgraph_op"]
    assert len(subgraph_nodes) == 2  # exp(log(x)) and sqrt(y): two groups, not connected
    assert _inner_ops(part) == [["null", "log", "exp"], ["null", "sqrt"]]
    assert all(n["attrs"]["myKey"] == "myVal" for n in subgraph_nodes)  # added by reviewSubgraph
    np.testing.assert_allclose(part.eval(**args)[0].asnumpy(), sym.eval(**args)[0].asnumpy(), rtol=1e-5)
    assert part.get_backend_symbol(backend).tojson() == part.tojson()  # nothing left to partition


def test_partitioned_json_keeps_each_subgraph_in_the_nodes_subgraphs_field(libs):
    part = _exp_log_graph().optimize_for("myProp", args=_args())
    subgraph_nodes = [n for n in _nodes(part) if n["op"] == "_custom_subgraph_op"]
    assert len(subgraph_nodes) == 2
    for node in subgraph_nodes:
        assert "subgraph_sym_json" not in node["attrs"]  # MXNet 1.9.1's layout: not an attribute
        (graph,) = node["subgraphs"]  # one graph object, with the keys of the document itself
        assert sorted(graph) == ["arg_nodes", "heads", "node_row_ptr", "nodes"]
        assert len(node["inputs"]) == len(graph["arg_nodes"])  # one node input per subgraph input
        assert [graph["nodes"][i]["op"] for i in graph["arg_nodes"]] == ["null"]
        assert len(graph["heads"]) == 1
    assert [n["name"] for n in subgraph_nodes[0]["subgraphs"][0]["nodes"]] == ["x", "log0", "exp0"]


def test_partitioned_symbol_round_trips_through_save_and_load(libs, tmp_path):
    sym, args = _exp_log_graph(), _args()
    part = sym.optimize_for("mySelect", args=dict(args))
    path = tmp_path / "part-symbol.json"
    part.save(str(path))
    loaded = mx.sym.load(str(path))
    assert loaded.tojson() == part.tojson() == path.read_text()  # exact: the subgraphs come back as they went
    expected = sym.eval(**args)[0].asnumpy()
    np.testing.assert_allclose(loaded.eval(**args)[0].asnumpy(), expected, rtol=1e-5)
    dot = mx.viz.plot_network(loaded, title="loaded").source  # drawn from the field: a group per subgraph node
    assert dot.count("subgraph cluster_custom_subgraph_op") == 2 and '"custom_subgraph_op0/1" [label="log\nlog0"' in dot


def test_the_operator_receives_the_subgraph_as_attribute_subgraph_sym_json(libs, tmp_path, capfd):
    src = _write(
        tmp_path,
        "peek",
        '#include <iostream>\n#include "mxnet/lib_api.h"\nusing namespace mxnet::ext;\n'
        "class Copy : public CustomStatefulOp {\n public:\n"
        "  MXReturnValue Forward(std::vector<MXTensor>* in, std::vector<MXTensor>* out,\n"
        "                        const OpResource& r) override {\n"
        "    for (int64_t k = 0; k < in->at(0).size(); k++) out->at(0).data<float>()[k] = in->at(0).data<float>()[k];\n"
        "    return MX_SUCCESS;\n  }\n};\n"
        "MXReturnValue create(const std::unordered_map<std::string, std::string>& attrs, const MXContext& ctx,\n"
        "    const std::vector<std::vector<unsigned int>>& s, const std::vector<int> t, CustomStatefulOp** op) {\n"
        '  std::cout << "got " << attrs.count(MX_STR_SUBGRAPH_SYM_JSON) << ": " << attrs.at(MX_STR_SUBGRAPH_SYM_JSON)\n'
        "            << std::endl;\n"
        "  *op = new Copy();\n  return MX_SUCCESS;\n}\n"
        'REGISTER_OP(_peek_subgraph_op).setIsSubgraphOp().setCreateOpState(create, "cpu");\n'
        "MXReturnValue pick(const Graph* g, std::vector<int>* ids, const std::unordered_map<std::string, "
        "std::string>& o) {\n"
        '  for (size_t i = 0; i < g->size(); i++) if (g->getNode(i)->op == "relu") ids->at(i) = -1;\n'
        "  return MX_SUCCESS;\n}\n"
        'REGISTER_PARTITIONER(peekProp).addStrategy("s", "_peek_subgraph_op").setSupportedOps("s", pick);\n'
        "MXReturnValue initialize(int version) { return MX_SUCCESS; }\n",
    )
    library.load(str(build(src)), verbose=False)
    part = mx.sym.relu(mx.sym.var("x"), name="r").optimize_for("peekProp")
    x = mx.nd.array([[1.0, -2.0, 3.0]])
    capfd.readouterr()
    out = part.eval(x=x)[0].asnumpy()
    np.testing.assert_array_equal(out, x.asnumpy())  # the copy operator ran in relu's place
    printed = capfd.readouterr().out
    assert printed.startswith("got 1: ")
    received = json.loads(printed[len("got 1: ") :])
    assert received == _nodes(part)[1]["subgraphs"][0] | {"attrs": received["attrs"]}  # the node's own subgraph
    assert [n["op"] for n in received["nodes"]] == ["null", "relu"]


def test_a_subgraph_operator_without_its_subgraph_fails_clearly(libs):
    x, make = mx.sym.var("x"), mx.sym._internal._custom_subgraph_op
    with pytest.raises(OperatorParamError, match=r"'_custom_subgraph_op' has no parseAttrs, so it needs a subgraph"):
        make(x)
    with pytest.raises(OperatorParamError, match=r"attribute 'subgraph_sym_json' is not a symbol's JSON"):
        make(x, subgraph_sym_json="{not json")
    # b + a: read depth first the subgraph's inputs are b, a, while arg_nodes lists a, b
    swapped = {
        "nodes": [
            {"op": "null", "name": "a", "inputs": []},
            {"op": "null", "name": "b", "inputs": []},
            {"op": "elemwise_add", "name": "add", "inputs": [[1, 0, 0], [0, 0, 0]]},
        ],
        "arg_nodes": [0, 1],
        "heads": [[2, 0, 0]],
    }
    with pytest.raises(OperatorParamError, match=r"lists its inputs as \['a', 'b'\].*as \['b', 'a'\]"):
        make(x, mx.sym.var("y"), subgraph_sym_json=json.dumps(swapped))
    swapped["arg_nodes"] = [1, 0]
    node = make(x, mx.sym.var("y"), subgraph_sym_json=json.dumps(swapped))
    assert [n["op"] for n in json.loads(node.tojson())["nodes"][2]["subgraphs"][0]["nodes"]] == [
        "null",
        "null",
        "elemwise_add",
    ]


def test_a_file_with_the_subgraph_as_an_attribute_still_loads(libs):
    """Files MXLab wrote before it used MXNet's layout: the attribute moves into ``subgraphs``."""
    sym, args = _exp_log_graph(), _args()
    doc = json.loads(sym.optimize_for("myProp").tojson())
    for node in doc["nodes"]:
        if "subgraphs" in node:
            node["attrs"]["subgraph_sym_json"] = json.dumps(node.pop("subgraphs")[0])
    loaded = mx.sym.load_json(json.dumps(doc))
    assert _nodes(loaded) == _nodes(sym.optimize_for("myProp"))
    np.testing.assert_allclose(loaded.eval(**args)[0].asnumpy(), sym.eval(**args)[0].asnumpy(), rtol=1e-5)
    both = json.loads(sym.optimize_for("myProp").tojson())
    node = next(n for n in both["nodes"] if "subgraphs" in n)
    node["attrs"]["subgraph_sym_json"] = json.dumps(node["subgraphs"][0])
    with pytest.raises(mx.base.MXLabError, match=r"give its subgraph once"):
        mx.sym.load_json(json.dumps(both))


def test_an_exported_partitioned_gluon_block_keeps_its_subgraphs(libs, tmp_path):
    net = nn.HybridLambda(lambda F, x: F.sqrt(F.exp(F.log(x))) * 2)
    x = mx.nd.array(np.random.default_rng(2).random((2, 3)) + 0.5)
    expected = net(x).asnumpy()
    net.optimize_for(x, backend="myProp")
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5)
    symbol_file, _ = net.export(str(tmp_path / "net"))
    doc = json.loads(Path(symbol_file).read_text())
    (node,) = [n for n in doc["nodes"] if n["op"] == "_custom_subgraph_op"]
    assert [m["op"] for m in node["subgraphs"][0]["nodes"]] == ["null", "log", "exp", "sqrt"]
    assert "subgraph_sym_json" not in node.get("attrs", {})
    loaded = mx.sym.load(symbol_file)
    (data_name,) = loaded.list_arguments()
    np.testing.assert_allclose(loaded.eval(**{data_name: x})[0].asnumpy(), expected, rtol=1e-5)


def test_selector_filter_limits_each_subgraph(libs):
    sym = _exp_log_graph()
    part = sym.optimize_for("mySelect", maxNodes=1)
    assert _inner_ops(part) == [
        ["null", "log"],
        ["null", "exp"],
        ["null", "sqrt"],
    ]  # log's group kept one node; exp started another
    args = _args()
    np.testing.assert_allclose(part.eval(**args)[0].asnumpy(), sym.eval(**args)[0].asnumpy(), rtol=1e-5)


def test_a_pass_can_add_parameters_with_alloc_arg(libs):
    sym = _exp_log_graph()
    args = _args()
    part = sym.optimize_for("myProp")
    grown_args = dict(args)
    grown = part.optimize_for("addInputPass", args=grown_args)
    assert sorted(set(grown_args) - set(args)) == ["custom_subgraph_op0_extra", "custom_subgraph_op1_extra"]
    assert grown_args["custom_subgraph_op0_extra"].asnumpy().tolist() == [42.0]  # written by the pass
    assert set(grown.list_arguments()) == set(grown_args)
    subgraph_nodes = [n for n in _nodes(grown) if n["op"] == "_custom_subgraph_op"]
    assert all(n["attrs"]["__ext_extra_inputs__"] == "1" and len(n["inputs"]) == 2 for n in subgraph_nodes)
    expected = sym.eval(**args)[0].asnumpy()
    np.testing.assert_allclose(grown.eval(**grown_args)[0].asnumpy(), expected, rtol=1e-5)
    with pytest.warns(UserWarning, match=r"created new args"):
        part.optimize_for("addInputPass", args=list(args.values()))


def test_review_can_reject_every_subgraph(libs):
    sym = _exp_log_graph()
    assert _nodes(sym.optimize_for("myProp", reject=True)) == _nodes(sym)


def test_req_float_option_needs_known_dtypes(libs):
    sym = _exp_log_graph()
    without_types = sym.optimize_for("myProp", reqFloat=True)
    assert "_custom_subgraph_op" not in {n["op"] for n in _nodes(without_types)}
    with_types = sym.optimize_for("myProp", args=_args(), reqFloat=True)
    assert "_custom_subgraph_op" in {n["op"] for n in _nodes(with_types)}


def test_subgraphs_never_form_a_cycle(libs, tmp_path):
    """exp and elemwise_add are both chosen, but add also reads exp through relu (outside): they stay apart."""
    src = _write(
        tmp_path,
        "convex",
        '#include "mxnet/lib_api.h"\nusing namespace mxnet::ext;\n'
        "MXReturnValue pick(const Graph* g, std::vector<int>* ids, const std::unordered_map<std::string, "
        "std::string>& o) {\n"
        '  for (size_t i = 0; i < g->size(); i++) if (g->getNode(i)->op == "exp" || '
        'g->getNode(i)->op == "elemwise_add") ids->at(i) = -1;\n'
        "  return MX_SUCCESS;\n}\n"
        'REGISTER_PARTITIONER(convexProp).addStrategy("s", "_custom_subgraph_op").setSupportedOps("s", pick);\n'
        "MXReturnValue initialize(int version) { return MX_SUCCESS; }\n",
    )
    library.load(str(build(src)), verbose=False)
    x = mx.sym.var("x")
    a = mx.sym.exp(x)
    sym = a + mx.sym.relu(a)
    part = sym.optimize_for("convexProp")
    nodes = _nodes(part)
    assert [n["op"] for n in nodes] == ["null", "_custom_subgraph_op", "relu", "_custom_subgraph_op"]
    assert _inner_ops(part) == [["null", "exp"], ["null", "null", "elemwise_add"]]  # add became a group of its own
    assert nodes[3]["inputs"] == [[1, 0, 0], [2, 0, 0]]  # reads exp's group and relu: no cycle


def test_a_partitioner_without_strategies_is_refused_at_load(tmp_path):
    needs_tool("g++", "builds a test library")
    src = _write(
        tmp_path,
        "no_strategy",
        '#include "mxnet/lib_api.h"\nusing namespace mxnet::ext;\n'
        "REGISTER_PARTITIONER(emptyProp);\n"
        "MXReturnValue initialize(int version) { return MX_SUCCESS; }\n",
    )
    with pytest.raises(LibraryMetadataError, match=r"partitioner 'emptyProp' has 0 strategies"):
        library.load(str(build(src)), verbose=False)
    with pytest.raises(SymbolBackendError, match="unknown backend 'emptyProp'"):
        _exp_log_graph().optimize_for("emptyProp")  # nothing was registered


def test_a_strategy_naming_an_unregistered_operator_fails_clearly(libs, tmp_path):
    src = _write(
        tmp_path,
        "noop",
        '#include "mxnet/lib_api.h"\nusing namespace mxnet::ext;\n'
        "MXReturnValue pick(const Graph* g, std::vector<int>* ids, const std::unordered_map<std::string, "
        "std::string>& o) { return MX_SUCCESS; }\n"
        'REGISTER_PARTITIONER(ghostProp).addStrategy("s", "_no_such_subgraph_op").setSupportedOps("s", pick);\n'
        "MXReturnValue initialize(int version) { return MX_SUCCESS; }\n",
    )
    library.load(str(build(src)), verbose=False)
    with pytest.raises(LibraryError, match=r"subgraph operator '_no_such_subgraph_op' is not registered"):
        _exp_log_graph().optimize_for("ghostProp")


# ------------------------------------------------------------------ Gluon and the graph view
class _ExpLogNet(nn.HybridBlock):
    def __init__(self) -> None:
        super().__init__()
        with self.name_scope():
            self.fc = nn.Dense(4)

    def hybrid_forward(self, F, x):
        return F.sqrt(F.exp(F.log(F.abs(self.fc(x)) + 1)))


def test_hybrid_block_optimize_for_partitions_and_runs(libs, tmp_path):
    net = _ExpLogNet()
    net.initialize()
    x = mx.nd.array(np.random.default_rng(2).random((2, 3)))
    expected = net(x).asnumpy()
    net.optimize_for(x, backend="myProp")
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5)
    symbol_file, _ = net.export(str(tmp_path / "net"))
    ops = [n["op"] for n in json.loads(Path(symbol_file).read_text())["nodes"]]
    assert ops.count("_custom_subgraph_op") == 1 and "exp" not in ops


def test_hybridize_with_a_pass_backend(libs):
    net = _ExpLogNet()
    net.initialize()
    x = mx.nd.array(np.random.default_rng(3).random((2, 3)))
    expected = net(x).asnumpy()
    net.hybridize(backend="foldExpLog")
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5)
    assert "exp" not in [n["op"] for n in _nodes(net._cached_graph[1])]


def test_plot_network_draws_subgraph_nodes_as_groups(libs):
    part = _exp_log_graph().optimize_for("myProp")
    source = mx.viz.plot_network(part).source
    assert "subgraph cluster_custom_subgraph_op0" in source and "subgraph cluster_custom_subgraph_op1" in source
    assert '"custom_subgraph_op0/2" -> "custom_subgraph_op0/1"' in source  # exp reads log inside the group


def test_optimize_for_without_clear_applies_a_backend_on_top_of_the_previous_one(libs):
    net = _ExpLogNet()
    net.initialize()
    x = mx.nd.array(np.random.default_rng(4).random((2, 3)))
    expected = net(x).asnumpy()
    net.optimize_for(x, backend="foldExpLog")
    net.optimize_for(x, backend="annotatePass")  # clear=False, MXNet's default: on top of the fold
    nodes = _nodes(net._cached_graph[1])
    assert "exp" not in [n["op"] for n in nodes]
    assert {n.get("attrs", {}).get("__visited_by__") for n in nodes if n["op"] != "null"} == {"annotatePass"}
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5)
    net.optimize_for(x, backend="annotatePass", clear=True)  # from the traced graph again: exp is back
    assert "exp" in [n["op"] for n in _nodes(net._cached_graph[1])]
