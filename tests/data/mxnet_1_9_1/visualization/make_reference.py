"""Write reference.json: MXNet 1.9.1's print_summary text and plot_network DOT source.

Run with an interpreter that has ``mxnet==1.9.1`` and ``graphviz`` (the Python package)::

    /work/mxvenv/bin/python tests/data/mxnet_1_9_1/visualization/make_reference.py

For every network of ``viz_nets.py``, and for ``../symbols/resnet18_v1-symbol.json``, it
records ``print_summary`` with and without input shapes, with absolute column positions,
and ``plot_network`` sources (with shapes; with shapes, types and weights shown; with
custom node attributes). tests/symbol/test_visualization.py compares MXLab's output with
them; it never imports this script.
"""

import contextlib
import io
import json
import os
import sys

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from viz_nets import NETS  # noqa: E402


def summary(symbol, **kwargs):
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        mx.viz.print_summary(symbol, **kwargs)
    return buffer.getvalue()


def record(symbol, shape):
    types = {k: np.float32 for k in shape}
    return {
        "shape": {k: list(v) for k, v in shape.items()},
        "summary": summary(symbol, shape=shape),
        "summary_noshape": summary(symbol),
        "summary_narrow": summary(symbol, shape=shape, line_length=80, positions=[30, 50, 60, 80]),
        "plot": mx.viz.plot_network(symbol, shape=shape, title="net").source,
        "plot_typed": mx.viz.plot_network(symbol, shape=shape, dtype=types, hide_weights=False).source,
        "plot_plain": mx.viz.plot_network(symbol, node_attrs={"shape": "oval", "fixedsize": "false"}).source,
    }


def main():
    out = {}
    for name, build in NETS.items():
        symbol, shape = build(mx)
        out[name] = record(symbol, shape)
    resnet = mx.sym.load(os.path.join(HERE, "..", "symbols", "resnet18_v1-symbol.json"))
    out["resnet18_v1"] = record(resnet, {"data": (1, 3, 224, 224)})
    with open(os.path.join(HERE, "reference.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
