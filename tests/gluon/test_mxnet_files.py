"""Gluon files shared with MXNet 1.9.1: parameters, exports and numbers.

The references in tests/data/mxnet_1_9_1/gluon/ were written by MXNet 1.9.1 with
``make_gluon_files.py`` there; the network is built here by the same function
(``build_net(framework)``). The live checks (MXNet reading files MXLab wrote) run only
when MXNET_PYTHON names an interpreter that can ``import mxnet``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

import framework as mx
from framework import autograd, gluon

HERE = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "gluon"
MXNET_PYTHON = os.environ.get("MXNET_PYTHON")

_spec = importlib.util.spec_from_file_location("make_gluon_files", HERE / "make_gluon_files.py")
assert _spec is not None and _spec.loader is not None
reference_net = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference_net)


@pytest.fixture(scope="module")
def reference():
    return mx.nd.load(str(HERE / "net-reference.nd"))


def _close(actual, expected):
    np.testing.assert_allclose(actual.asnumpy(), expected.asnumpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("hybridize", [False, True])
def test_mxnet_save_parameters_load_here_and_give_mxnets_numbers(reference, hybridize):
    net = reference_net.build_net(mx)
    net.load_parameters(str(HERE / "net.params"))
    if hybridize:
        net.hybridize()
    x = reference["input"]
    _close(net(x), reference["output_predict"])
    x = x.copy()
    x.attach_grad()
    with autograd.record():
        out = net(x)
    out.backward(reference["head"])
    _close(out, reference["output_train"])
    _close(x.grad, reference["input_grad"])
    for name, param in net._collect_params_with_prefix().items():
        key = f"grad:{name}" if param.grad_req != "null" else f"after:{name}"
        _close(param.grad() if param.grad_req != "null" else param.data(), reference[key])


def test_mxnet_export_imports_as_symbol_block(reference):
    block = gluon.SymbolBlock.imports(str(HERE / "net-symbol.json"), ["data"], str(HERE / "net-0000.params"))
    _close(block(reference["input"]), reference["output_predict"])


def test_export_here_names_everything_as_mxnet_does(tmp_path, reference):
    net = reference_net.build_net(mx)
    reference_net.set_fixed_parameters(mx, net)
    net.hybridize()
    net(reference["input"])
    _, params_file = net.export(str(tmp_path / "net"))
    ours = mx.nd.load(params_file)
    theirs = mx.nd.load(str(HERE / "net-0000.params"))
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        _close(ours[key], theirs[key])  # the seeded values of set_fixed_parameters, in both systems
    symbol = json.loads((tmp_path / "net-symbol.json").read_text())
    mxnet_symbol = json.loads((HERE / "net-symbol.json").read_text())
    assert [n["op"] for n in symbol["nodes"]] == [n["op"] for n in mxnet_symbol["nodes"]]
    assert [n["name"] for n in symbol["nodes"]] == [n["name"] for n in mxnet_symbol["nodes"]]


@pytest.mark.skipif(not MXNET_PYTHON, reason="set MXNET_PYTHON to an interpreter with mxnet 1.9.1 to run MXNet")
def test_mxnet_loads_the_files_written_here(tmp_path, reference):
    net = reference_net.build_net(mx)
    reference_net.set_fixed_parameters(mx, net)
    for param in net.collect_params().values():  # values MXNet's own seeding could not produce
        param.set_data(param.data() * 1.5)
    net.save_parameters(str(tmp_path / "ours.params"))
    net.hybridize()
    expected = net(reference["input"]).asnumpy()
    net.export(str(tmp_path / "ours"))
    mx.nd.save(str(tmp_path / "input.nd"), {"input": reference["input"]})
    script = textwrap.dedent(
        """
        import json, os, sys
        os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
        import importlib.util
        import mxnet as mx
        spec = importlib.util.spec_from_file_location("m", sys.argv[1])
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        folder = sys.argv[2]
        x = mx.nd.load(os.path.join(folder, "input.nd"))["input"]
        net = m.build_net(mx)
        net.load_parameters(os.path.join(folder, "ours.params"))
        block = mx.gluon.SymbolBlock.imports(
            os.path.join(folder, "ours-symbol.json"), ["data"], os.path.join(folder, "ours-0000.params"))
        print(json.dumps([net(x).asnumpy().tolist(), block(x).asnumpy().tolist()]))
        """
    )
    result = subprocess.run(
        [MXNET_PYTHON, "-c", script, str(HERE / "make_gluon_files.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded, imported = json.loads(result.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(np.array(loaded), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.array(imported), expected, rtol=1e-4, atol=1e-5)
