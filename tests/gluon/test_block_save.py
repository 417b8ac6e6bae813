"""Block.save / Block.load (MXNet 1.9.1's structure files), register_op_hook, and Block's 1.9.1 extras.

The references in tests/data/mxnet_1_9_1/gluon/saved-* were written by MXNet 1.9.1 with
``make_block_save_files.py`` there; the networks are built here by the same functions. The
live check (MXNet loading files saved here) runs only when MXNET_PYTHON names an interpreter
that can ``import mxnet``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import framework as mx
from framework import gluon
from framework.gluon.block import BlockError

HERE = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "gluon"
MXNET_PYTHON = os.environ.get("MXNET_PYTHON")

_spec = importlib.util.spec_from_file_location("make_block_save_files", HERE / "make_block_save_files.py")
assert _spec is not None and _spec.loader is not None
references = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(references)
gluon_files = references.gluon_files


@pytest.fixture(scope="module")
def saved():
    return mx.nd.load(str(HERE / "saved-reference.nd"))


def _input():
    return mx.nd.array(gluon_files.fixed_input()[0])


def test_mxnet_hybrid_save_loads_here_with_its_graph(saved):
    net = gluon_files.build_net(mx)
    net.load(str(HERE / "saved-hybrid"))
    assert net._active and net._cached_graph  # the saved graph is restored: the block runs hybridized
    np.testing.assert_allclose(net(_input()).asnumpy(), saved["hybrid"].asnumpy(), rtol=1e-4, atol=1e-5)
    saved_graph = json.loads(json.loads((HERE / "saved-hybrid-model.json").read_text())["hybridsequential0"]["symbol"])
    restored = json.loads(net._cached_graph[1].tojson())
    assert [(n["op"], n["name"]) for n in restored["nodes"]] == [(n["op"], n["name"]) for n in saved_graph["nodes"]]


def test_mxnet_plain_save_renames_blocks_and_parameters(saved):
    net = references.build_plain(mx)  # a fresh name (sequential0 or later), not the saved sequential4
    net.load(str(HERE / "saved-plain"))
    assert net.name == "sequential4"
    assert sorted(net.collect_params()) == [
        "sequential4_dense0_bias",
        "sequential4_dense0_weight",
        "sequential4_dense1_bias",
        "sequential4_dense1_weight",
    ]
    assert list(net._children) == ["0", "1", "2"]
    assert net._children["1"]._active  # each Dense traced itself in MXNet (deferred shapes) and runs as a graph
    np.testing.assert_allclose(net(_input()).asnumpy(), saved["plain"].asnumpy(), rtol=1e-4, atol=1e-5)


def test_save_writes_mxnets_structure(tmp_path):
    net = references.build_plain(mx)
    net.initialize()
    net(_input())
    net.save(str(tmp_path / "ours"))
    ours = json.loads((tmp_path / "ours-model.json").read_text())
    theirs = json.loads((HERE / "saved-plain-model.json").read_text())

    def shape(entry):  # the tree's keys and fields, names aside
        return {k: shape(v) if isinstance(v, dict) and k != "children" else type(v).__name__ for k, v in entry.items()}

    assert shape(ours) == shape(theirs)
    top = ours["sequential0"]
    assert top["children"] == {f"{net.name}_flatten0": "0", f"{net.name}_dense0": "1", f"{net.name}_dense1": "2"}
    assert top["dense2"]["hybridized"] is True and top["dense2"]["in_format"] == [0]
    assert top["flatten1"]["hybridized"] is False
    assert sorted(mx.nd.load(str(tmp_path / "ours-model.params"))) == ["1.bias", "1.weight", "2.bias", "2.weight"]


def test_save_then_load_round_trips_a_hybridized_network(tmp_path):
    x = _input()
    net = gluon_files.build_net(mx)
    gluon_files.set_fixed_parameters(mx, net)
    net.hybridize()
    expected = net(x).asnumpy()
    net.save(str(tmp_path / "net"))
    again = gluon_files.build_net(mx)
    again.load(str(tmp_path / "net"))
    np.testing.assert_allclose(again(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_load_into_a_different_network_names_the_missing_block(tmp_path):
    net = references.build_plain(mx)
    net.initialize()
    net(_input())
    net.save(str(tmp_path / "plain"))
    other = gluon.nn.Sequential()
    with other.name_scope():
        other.add(gluon.nn.Flatten(), gluon.nn.Dense(5), gluon.nn.Dense(3))  # no Activation inside Dense
    name = other.name
    with pytest.raises(BlockError, match="gives .*_dense0 1 children, block .*_dense0 has 0"):
        other.load(str(tmp_path / "plain"))
    assert other.name == name  # nothing was renamed: the whole tree is matched first
    swapped = gluon.nn.Sequential()
    with swapped.name_scope():
        swapped.add(gluon.nn.Dense(5, activation="relu"), gluon.nn.Flatten(), gluon.nn.Dense(3))
    with pytest.raises(BlockError, match="has no entry 'dense1' for block .*_dense0 \\(Dense\\).*built exactly as"):
        swapped.load(str(tmp_path / "plain"))


@pytest.mark.skipif(not MXNET_PYTHON, reason="set MXNET_PYTHON to an interpreter with mxnet 1.9.1 to run MXNet")
def test_mxnet_loads_a_save_made_here(tmp_path):
    x = _input()
    net = gluon_files.build_net(mx)
    gluon_files.set_fixed_parameters(mx, net)
    for param in net.collect_params().values():
        param.set_data(param.data() * 1.5)
    net.hybridize()
    expected = net(x).asnumpy()
    net.save(str(tmp_path / "ours"))
    mx.nd.save(str(tmp_path / "input.nd"), {"input": x})
    script = textwrap.dedent(
        """
        import importlib.util, json, os, sys
        import mxnet as mx
        spec = importlib.util.spec_from_file_location("m", sys.argv[1])
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        folder = sys.argv[2]
        net = m.build_net(mx)
        net.load(os.path.join(folder, "ours"))
        x = mx.nd.load(os.path.join(folder, "input.nd"))["input"]
        print(json.dumps(net(x).asnumpy().tolist()))
        """
    )
    result = subprocess.run(
        [MXNET_PYTHON, "-c", script, str(HERE / "make_gluon_files.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_allclose(np.array(json.loads(result.stdout.strip().splitlines()[-1])), expected, rtol=1e-4)


# ---------------------------------------------------------------------- register_op_hook
def _mlp():
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(3, activation="relu", in_units=5), gluon.nn.Dense(2, in_units=3))
    net.initialize()
    return net


def test_op_hook_sees_each_operator_output_of_the_cached_graph():
    net = _mlp()
    x = mx.nd.array(np.random.rand(4, 5))
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op, arr.asnumpy().copy())))
    net(x)
    assert seen == []  # imperative: no graph runs, no hook (as in MXNet)
    net.hybridize()
    out = net(x)
    p = net.prefix
    assert [(n, o) for n, o, _ in seen] == [
        (f"{p}dense0_fwd_output", "FullyConnected"),
        (f"{p}dense0_relu_fwd_output", "Activation"),
        (f"{p}dense1_fwd_output", "FullyConnected"),
    ]
    dense0 = net[0]
    hidden = x.asnumpy() @ dense0.weight.data().asnumpy().T + dense0.bias.data().asnumpy()
    np.testing.assert_allclose(seen[0][2], hidden, rtol=1e-5)
    np.testing.assert_allclose(seen[1][2], np.maximum(hidden, 0), rtol=1e-5)
    np.testing.assert_allclose(seen[2][2], out.asnumpy(), rtol=1e-5)


def test_op_hook_monitor_all_reports_inputs_first_and_can_be_removed():
    net = _mlp()
    net.hybridize()
    x = mx.nd.array(np.random.rand(4, 5))
    net(x)  # the graph exists before the hook: registering later still acts from the next call
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op, arr.shape)), monitor_all=True)
    net(x)
    p = net.prefix
    assert seen[:4] == [
        (f"{p}dense0_fwd_data", "FullyConnected", (4, 5)),
        (f"{p}dense0_fwd_weight", "FullyConnected", (3, 5)),
        (f"{p}dense0_fwd_bias", "FullyConnected", (3,)),
        (f"{p}dense0_fwd_output", "FullyConnected", (4, 3)),
    ]
    assert len(seen) == 10
    net.register_op_hook(None)
    seen.clear()
    net(x)
    assert seen == []
    with pytest.raises(BlockError, match="register_op_hook needs callable"):
        net.register_op_hook("print")


# ---------------------------------------------------------------------- smaller 1.9.1 names
def test_load_params_takes_mxnets_arguments(tmp_path):
    net = _mlp()
    net.save_parameters(str(tmp_path / "mlp.params"))
    bigger = gluon.nn.HybridSequential()
    with bigger.name_scope():
        bigger.add(gluon.nn.Dense(3, activation="relu", in_units=5), gluon.nn.Dense(2, in_units=3))
        bigger.add(gluon.nn.Dense(1, in_units=2))
    with pytest.warns(DeprecationWarning, match="load_params is deprecated"):
        bigger.load_params(str(tmp_path / "mlp.params"), mx.cpu(), True, False)  # allow_missing, ignore_extra
    np.testing.assert_array_equal(bigger[0].weight.data().asnumpy(), net[0].weight.data().asnumpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(BlockError, match="Parameter '2.weight' is missing"):
            bigger.load_params(str(tmp_path / "mlp.params"), allow_missing=False)


def test_symbol_block_reset_ctx_and_tensor_types():
    data = mx.sym.var("data")
    block = gluon.SymbolBlock(mx.sym.FullyConnected(data, num_hidden=2, name="fc"), data)
    block.initialize()
    block.reset_ctx(mx.cpu(1))
    assert all(p.list_ctx() == [mx.cpu(1)] for p in block.collect_params().values())
    assert block(mx.nd.ones((1, 3), ctx=mx.cpu(1))).context == mx.cpu(1)
    assert gluon.tensor_types == (mx.sym.Symbol, mx.nd.NDArray)
    assert gluon.parameter.tensor_types is gluon.tensor_types


def test_parameter_row_sparse_data_names_sparse_storage_as_absent():
    param = gluon.Parameter("w", shape=(2, 3))
    param.initialize()
    with pytest.raises(mx.base.MXNetError, match="Parameter 'w': row_sparse_data needs stype='row_sparse'"):
        param.row_sparse_data(mx.nd.array([0]))
    with pytest.raises(NotImplementedError, match="list_row_sparse_data"):
        param.list_row_sparse_data(mx.nd.array([0]))
