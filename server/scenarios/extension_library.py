"""Scenario "extension_library": a C++ library's graph pass or partitioner rewrites a symbol, drawn as the graph.

The scenario compiles MXLab's MXNet 1.9.1-style example libraries (examples/lib_api_1_9:
``pass_lib.cc`` and ``subgraph_lib.cc``) with g++, the one-line command of
docs/custom-operators.md, loads them with ``mx.library.load`` and runs
``sym.optimize_for(backend)`` on a small network (FullyConnected, then log/exp/sqrt, which
the partitioners take). The graph panel shows the *optimized* symbol: a partitioner's
subgraph nodes are drawn as dashed groups around the operators they run, a pass's rewrite
shows as the nodes it removed or annotated. The result compares the outputs of the original
and the optimized symbol on the same inputs.

It needs g++ on the server's machine (scripts/setup.sh installs it); without it the run
fails with the build error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

import framework as mx
from framework import library
from framework.library.build import build

from .base import RunContext, Scenario, ScenarioParams, register

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "lib_api_1_9"
#: backend -> the example library that provides it
BACKENDS = {"myProp": "subgraph_lib", "mySelect": "subgraph_lib", "foldExpLog": "pass_lib", "annotatePass": "pass_lib"}


class ExtensionLibraryParams(ScenarioParams):
    """Parameters of the extension-library scenario."""

    backend: Literal["myProp", "mySelect", "foldExpLog", "annotatePass"] = Field(
        "myProp", description="partitioner (myProp, mySelect) or graph pass (foldExpLog, annotatePass) to apply"
    )
    batch_size: int = Field(4, ge=1, le=256, description="rows of the input the two symbols are compared on")
    hidden: int = Field(8, ge=1, le=256, description="units of the FullyConnected layer")


def build_symbol(hidden: int) -> mx.sym.Symbol:
    """data -> FullyConnected -> abs + 1 -> log -> exp -> sqrt, plus a second branch sqrt(exp(data)) summed."""
    with mx.name.NameManager():
        data = mx.sym.var("data")
        fc = mx.sym.FullyConnected(data, num_hidden=hidden, name="fc")
        body = mx.sym.sqrt(mx.sym.exp(mx.sym.log(mx.sym.abs(fc) + 1)))
        side = mx.sym.sum(mx.sym.sqrt(mx.sym.exp(data)), axis=1, keepdims=True)
        return mx.sym.broadcast_add(body, side, name="out")


def run(params: ExtensionLibraryParams, ctx: RunContext) -> dict[str, Any]:
    source = EXAMPLES / f"{BACKENDS[params.backend]}.cc"
    ctx.log(f"building {source.name} with g++ (framework/include/lib_api.cc alongside)")
    lib = library.load(str(build(source)), verbose=False)
    ctx.log(f"loaded {lib.name}: passes {lib.passes}, partitioners {lib.partitioners}, operators {lib.operators}")
    sym = build_symbol(params.hidden)
    rng = np.random.default_rng(0)
    num_features = 5
    args = {
        "data": mx.nd.array(rng.random((params.batch_size, num_features))),
        "fc_weight": mx.nd.array(rng.standard_normal((params.hidden, num_features)) * 0.5),
        "fc_bias": mx.nd.zeros((params.hidden,)),
    }
    optimized = sym.optimize_for(params.backend, args=dict(args))
    ctx.set_graph(mx.viz.plot_network(optimized, title=params.backend).source)
    expected = sym.eval(**args)[0].asnumpy()
    got = optimized.eval(**args)[0].asnumpy()
    before, after = json.loads(sym.tojson())["nodes"], json.loads(optimized.tojson())["nodes"]
    groups = [n for n in after if n.get("subgraphs")]  # a partitioner's node holds its subgraph there
    ctx.log(f"{params.backend}: {len(before)} nodes -> {len(after)} nodes, {len(groups)} subgraph nodes")
    return {
        "backend": params.backend,
        "library": lib.name,
        "nodes_before": len(before),
        "nodes_after": len(after),
        "subgraph_nodes": [{"name": n["name"], "ops": [m["op"] for m in n["subgraphs"][0]["nodes"]]} for n in groups],
        "annotated_nodes": sum(1 for n in after if "__visited_by__" in n.get("attrs", {})),
        "max_abs_difference": float(np.abs(expected - got).max()),
    }


register(
    Scenario(
        name="extension_library",
        title="Extension library: graph pass or partitioner",
        description="Compile an MXNet 1.9.1-style C++ extension library with g++, load it, and let its graph pass "
        "or partitioner rewrite a small network (optimize_for); the graph shows the result, with subgraphs as groups.",
        params=ExtensionLibraryParams,
        run=run,
        tutorial="tutorials/08-cpp-operator-library.md",
        panels=("graph",),
    )
)
