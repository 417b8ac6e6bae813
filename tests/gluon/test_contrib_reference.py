"""gluon.contrib against MXNet 1.9.1: the same blocks, parameters and inputs give the same outputs.

The cases and the recorded arrays come from tests/data/mxnet_1_9_1/gluon_contrib/
make_contrib_reference.py (run with real MXNet); its ``CASES`` and ``run`` are read from the script's
source, so the code that built and ran each block there builds and runs it here. Every case runs imperatively and
hybridized, and parameter names must be MXNet's (a ``.params`` file of MXNet's loads, too;
with MXNET_PYTHON set, MXNet loads the ``.params`` files written here).
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from api_coverage import class_report, load_reference, module_report

import framework as mx
from framework.gluon import contrib  # also used by the CASES strings

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "gluon_contrib"
SCRIPT = DATA / "make_contrib_reference.py"


SCRIPT_TREE = ast.parse(SCRIPT.read_text(encoding="utf-8"))


def _cases() -> dict:
    for node in SCRIPT_TREE.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "CASES":
            return ast.literal_eval(node.value)
    raise AssertionError(f"{SCRIPT} defines no CASES")


def _script_run():
    """The script's own ``run(block, x, how)``, compiled here with ``mx`` bound to MXLab.

    Taken from the script's source (like ``CASES``) so a case runs here exactly as it ran under MXNet.
    """
    for node in SCRIPT_TREE.body:
        if isinstance(node, ast.FunctionDef) and node.name == "run":
            namespace: dict = {"mx": mx}
            exec(compile(ast.Module(body=[node], type_ignores=[]), str(SCRIPT), "exec"), namespace)
            return namespace["run"]
    raise AssertionError(f"{SCRIPT} defines no run(block, x, how)")


CASES = _cases()
REFERENCE = np.load(DATA / "reference.npz")
_run = _script_run()


def _build(case: str, hybridize: bool):
    code, _shape, how = CASES[case]
    block = eval(code)  # the fixed strings of the reference script
    block.initialize()
    x = mx.nd.array(REFERENCE[f"{case}/x"])
    _run(block, x, "block" if how == "train" else how)  # settle deferred shapes, as the script does
    params = block.collect_params()
    expected_names = sorted(k.split("/param/", 1)[1] for k in REFERENCE.files if k.startswith(f"{case}/param/"))
    assert sorted(params.keys()) == expected_names
    for name in expected_names:
        params[name].set_data(mx.nd.array(REFERENCE[f"{case}/param/{name}"]))
    if hybridize:
        block.hybridize()
    return block, x, how


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_forward_matches_mxnet(case: str, hybridize: bool) -> None:
    block, x, how = _build(case, hybridize)
    if how == "train":
        x.attach_grad()
        with mx.autograd.record():
            out = block(x)
            loss = (out * mx.nd.array(REFERENCE[f"{case}/head"])).sum()
        loss.backward()
        np.testing.assert_allclose(x.grad.asnumpy(), REFERENCE[f"{case}/grad_x"], rtol=1e-4, atol=1e-5)
        outputs = [out]
        params = block.collect_params()
        for key in REFERENCE.files:
            if key.startswith(f"{case}/after/"):
                name = key.split("/after/", 1)[1]
                np.testing.assert_allclose(params[name].data().asnumpy(), REFERENCE[key], rtol=1e-4, atol=1e-6)
    else:
        outputs = _run(block, x, how)
    expected = sorted(k for k in REFERENCE.files if k.startswith(f"{case}/out/"))
    assert len(outputs) == len(expected)
    for i, out in enumerate(outputs):
        np.testing.assert_allclose(out.asnumpy(), REFERENCE[f"{case}/out/{i}"], rtol=1e-4, atol=1e-5)


def test_mxnet_params_file_loads_into_deformable_convolution() -> None:
    layer = contrib.cnn.DeformableConvolution(4, kernel_size=3, padding=1, in_channels=3)
    layer.load_parameters(str(DATA / "deformable.params"))
    weight = layer.deformable_conv_weight.data().asnumpy()
    np.testing.assert_array_equal(weight, REFERENCE["deformable/param/dc_deformable_conv_weight"])
    out = layer(mx.nd.array(REFERENCE["deformable/x"]))
    np.testing.assert_allclose(out.asnumpy(), REFERENCE["deformable/out/0"], rtol=1e-4, atol=1e-5)


def _plain_signature(function) -> str:
    """A signature as MXNet's (unannotated) source prints it."""
    signature = inspect.signature(function)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()]
    return str(signature.replace(parameters=params, return_annotation=inspect.Signature.empty))


def test_cnn_data_estimator_signatures_match_mxnet() -> None:
    recorded = json.loads((DATA / "signatures.json").read_text(encoding="utf-8"))
    problems = []
    for path, members in recorded.items():
        module_name, class_name = path.split(".")
        cls = getattr(getattr(contrib, module_name), class_name, None)
        if cls is None:
            problems.append(f"{path} is missing")
            continue
        for member, theirs in members.items():
            ours = _plain_signature(cls if member == "__init__" else getattr(cls, member, None) or (lambda: None))
            if ours != theirs:
                problems.append(f"{path}.{member}: {ours} != MXNet's {theirs}")
    assert not problems, "\n".join(problems)


def test_contrib_modules_lack_only_the_documented_names() -> None:
    reference = load_reference()
    absent = {"SparseEmbedding"}  # row-sparse gradients: docs/gluon-contrib.md
    for path in ("gluon.contrib", "gluon.contrib.nn", "gluon.contrib.rnn"):
        report = module_report(reference, mx, path)
        assert not report.module_missing and set(report.missing) <= absent and not report.signatures, path
    for key, cls in reference["classes"].items():
        if key.startswith("mxnet.gluon.contrib.") and cls["path"].rsplit(".", 1)[1] not in absent:
            report = class_report(reference, mx, key)
            assert not report.class_missing and "__init__" not in report.signatures, (key, report.signatures)


MXNET_PYTHON = os.environ.get("MXNET_PYTHON")

_MXNET_LOADS = """
import importlib.util, os, sys
os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx
import numpy as np
spec = importlib.util.spec_from_file_location("reference", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
folder = sys.argv[2]
inputs = np.load(os.path.join(folder, "inputs.npz"))
outputs = {}
for case in inputs.files:
    code, shape, how = m.CASES[case]
    block = eval(code, vars(m))
    block.initialize()
    x = mx.nd.array(inputs[case])
    how = "block" if how == "train" else how
    m.run(block, x, how)
    block.load_parameters(os.path.join(folder, case + ".params"))
    for i, out in enumerate(m.run(block, x, how)):
        outputs[case + "/" + str(i)] = out.asnumpy()
np.savez(os.path.join(folder, "outputs.npz"), **outputs)
"""


@pytest.mark.skipif(not MXNET_PYTHON, reason="set MXNET_PYTHON to an interpreter with mxnet 1.9.1 to run MXNet")
def test_mxnet_loads_parameters_saved_here(tmp_path) -> None:
    expected, inputs = {}, {}
    for case in sorted(CASES):
        block, x, how = _build(case, hybridize=False)
        for param in block.collect_params().values():  # values MXNet's own run did not produce
            param.set_data(param.data() * 1.5)
        block.save_parameters(str(tmp_path / f"{case}.params"))
        inputs[case] = x.asnumpy()
        for i, out in enumerate(_run(block, x, "block" if how == "train" else how)):
            expected[f"{case}/{i}"] = out.asnumpy()
    np.savez(tmp_path / "inputs.npz", **inputs)
    result = subprocess.run(
        [MXNET_PYTHON, "-c", _MXNET_LOADS, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    theirs = np.load(tmp_path / "outputs.npz")
    assert sorted(theirs.files) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(theirs[key], value, rtol=1e-4, atol=1e-5, err_msg=key)
