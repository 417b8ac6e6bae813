"""plot_network and print_summary, compared with MXNet 1.9.1's output on the same networks.

The references (tests/data/mxnet_1_9_1/visualization/reference.json) were written by
``make_reference.py`` there, with real MXNet; the networks are built by ``viz_nets.py``
with MXNet's API, here with MXLab's.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import types
from pathlib import Path

import graphviz
import numpy as np
import pytest
from needs import needs_tool

import framework.symbol as sym
from framework import visualization as viz

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1"
REFERENCE = json.loads((DATA / "visualization" / "reference.json").read_text())
_spec = importlib.util.spec_from_file_location("viz_nets", DATA / "visualization" / "viz_nets.py")
viz_nets = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(viz_nets)
MX = types.SimpleNamespace(sym=sym)  # what viz_nets needs of `mx`

# MXNet 1.9.1's "Total params" for each network (also in the reference texts).
TOTALS = {"mlp": 109386, "lenet": 431060, "branches": 2720, "split": 4, "group": 137, "resnet18_v1": 11689512}


def _network(name: str) -> tuple[sym.Symbol, dict]:
    if name == "resnet18_v1":
        return sym.load(str(DATA / "symbols" / "resnet18_v1-symbol.json")), {"data": (1, 3, 224, 224)}
    return viz_nets.NETS[name](MX)


def _summary(symbol: sym.Symbol, **kwargs) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        viz.print_summary(symbol, **kwargs)
    return buffer.getvalue()


def _source(dot: graphviz.Digraph) -> str:
    return dot.source.rstrip("\n")  # graphviz >= 0.10 ends the source with a newline, 0.8 did not


# ----------------------------------------------------------------------------- print_summary
@pytest.mark.parametrize("name", sorted(TOTALS))
def test_summary_matches_mxnet(name):
    symbol, shape = _network(name)
    reference = REFERENCE[name]
    text = _summary(symbol, shape=shape)
    assert f"Total params: {TOTALS[name]}\n" in text
    assert text == reference["summary"]
    assert _summary(symbol) == reference["summary_noshape"]
    assert _summary(symbol, shape=shape, line_length=80, positions=[30, 50, 60, 80]) == reference["summary_narrow"]


def test_summary_rows_of_a_small_network():
    symbol, shape = _network("branches")
    rows = _summary(symbol, shape=shape).splitlines()
    assert rows[1].startswith("Layer (type)") and len(rows[0]) == 120
    cat = rows.index(next(r for r in rows if r.startswith("cat(Concat)")))
    assert rows[cat].split() == ["cat(Concat)", "16x8x8", "0", "sum"]
    assert rows[cat + 1].split() == ["stem"]  # a second input gets a row of its own
    embed = next(r for r in rows if r.startswith("embed(Embedding)"))
    assert embed.split() == ["embed(Embedding)", "5x16", "1600"]  # 100 x 16; `tokens` is not listed
    without = _summary(symbol).splitlines()  # no shapes: no input features, so (0 + 1) x 16
    assert next(r for r in without if r.startswith("fc(")).split() == ["fc(FullyConnected)", "16", "flat"]


def test_summary_errors():
    symbol, _ = _network("mlp")
    with pytest.raises(TypeError, match="symbol must be a Symbol, got dict"):
        viz.print_summary({"data": 1})
    with pytest.raises(ValueError, match=r"(?s)Input shape is incomplete.*softmax_label"):
        viz.print_summary(symbol, shape={"fc1_weight": (128, 784)})


# ----------------------------------------------------------------------------- plot_network
@pytest.mark.parametrize("name", sorted(TOTALS))
def test_plot_matches_mxnet(name):
    symbol, shape = _network(name)
    reference = REFERENCE[name]
    dot = viz.plot_network(symbol, shape=shape, title="net")
    assert isinstance(dot, graphviz.Digraph)
    assert _source(dot) == reference["plot"]
    typed = viz.plot_network(symbol, shape=shape, dtype=dict.fromkeys(shape, np.float32), hide_weights=False)
    assert _source(typed) == reference["plot_typed"]
    plain = viz.plot_network(symbol, node_attrs={"shape": "oval", "fixedsize": "false"})
    assert _source(plain) == reference["plot_plain"]


def test_plot_labels_colours_and_weights():
    symbol, shape = _network("lenet")
    source = viz.plot_network(symbol, shape=shape, title="lenet", save_format="svg").source
    assert source.startswith("digraph lenet {")
    assert 'conv1 [label="Convolution\n5x5/1, 20" fillcolor="#fb8072"' in source  # kernel/stride, filters
    assert 'pool1 [label="Pooling\nmax, 2x2/2x2" fillcolor="#80b1d3"' in source
    assert 'elu2 [label="LeakyReLU\nelu" fillcolor="#ffffb3"' in source
    assert 'bn1 [label=bn1 fillcolor="#bebada"' in source
    assert 'data [label=data fillcolor="#8dd3c7"' in source and "shape=oval" in source
    assert 'conv2 -> pool1 [label="20x12x12" arrowtail=open dir=back]' in source  # the shape, batch dropped
    assert "conv1_weight" not in source and "bn1_moving_mean" not in source
    shown = viz.plot_network(symbol, hide_weights=False).source
    assert 'conv1 -> conv1_weight [label=""' in shown and "\tconv1_weight [" not in shown  # edge, no styled node


def test_plot_uses_defaults_mxnet_would_crash_on():
    pool = sym.Pooling(data=sym.Variable("data"), kernel=(3, 3), name="p")  # pool_type not given: max
    assert 'p [label="Pooling\nmax, 3x3/1"' in viz.plot_network(pool).source
    parts = sym.split(data=sym.Variable("data"), num_outputs=2, axis=1, name="s")
    two = sym.Concat(parts[0], sym.FullyConnected(data=parts[1], num_hidden=3, name="fc"), dim=1, name="cat")
    source = viz.plot_network(two, shape={"data": (2, 6)}).source
    assert "cat -> s [label=3" in source and "fc -> s [label=3" in source and "cat -> fc [label=3" in source


def test_plot_errors_and_warnings():
    symbol, _ = _network("mlp")
    with pytest.raises(TypeError, match="plot_network: symbol must be a Symbol"):
        viz.plot_network("net")
    with pytest.raises(ValueError, match=r"plot_network: Input shape is incomplete"):
        viz.plot_network(symbol, shape={"softmax_label": (100,)})
    x = sym.Variable("x")
    twice = sym.elemwise_add(x, sym.Variable("x"), name="add")
    with pytest.warns(RuntimeWarning, match="Repeated names: x"):
        viz.plot_network(twice)


def test_plot_renders_when_graphviz_dot_is_installed(tmp_path):
    needs_tool("dot", "Graphviz renders the graph (building the Digraph does not need it)")
    symbol, shape = _network("mlp")
    path = viz.plot_network(symbol, shape=shape, save_format="svg").render(tmp_path / "mlp")
    assert Path(path).read_text().lstrip().startswith("<?xml")
