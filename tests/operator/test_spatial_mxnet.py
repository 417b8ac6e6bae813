"""Spatial operators agree with MXNet 1.9.1 itself.

tests/data/mxnet_1_9_1/ops/ops_spatial.py ran one training step (forward, backward with seeded
head gradients) of each case with real MXNet and committed the inputs and results; here MXLab
runs the same step through its own symbol API and must match (float32: rtol 1e-4). With
``MXNET_PYTHON`` naming an interpreter with mxnet 1.9.1 the script is also run live.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from needs import needs_env_path

import framework as mx
from framework.test_utils import assert_almost_equal

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "ops"
SPECS = json.loads((DATA / "ops_spatial.json").read_text())["cases"]


def _symbol_function(op: str):
    """``mx.sym.<op>``, where op may name a sub-namespace (``contrib.BilinearResize2D``)."""
    fn = mx.sym
    for part in op.split("."):
        fn = getattr(fn, part)
    return fn


def _run_mxlab(spec: dict, arrays: dict, key: str) -> dict:
    """The script's training step, in MXLab."""
    names = spec["args"]
    variables = [mx.sym.var(n) for n in names]
    if "num_args" in spec["params"]:  # variadic: inputs by position
        sym = _symbol_function(spec["op"])(*variables, name="op", **spec["params"])
    else:
        sym = _symbol_function(spec["op"])(name="op", **dict(zip(names, variables, strict=True)), **spec["params"])
    args = {n: mx.nd.array(arrays[f"{key}/args/{n}"], dtype="float32") for n in names}
    grads = {n: mx.nd.zeros(a.shape, dtype="float32") for n, a in args.items()}
    req = {n: ("write" if n in spec["grads"] else "null") for n in names}
    ex = sym.bind(mx.cpu(), args, args_grad=grads, grad_req=req)
    outputs = [o.asnumpy() for o in ex.forward(is_train=True)]
    ex.backward([mx.nd.array(arrays[f"{key}/heads/{i}"], dtype="float32") for i in range(len(outputs))])
    return {"outputs": outputs, "grads": {n: grads[n].asnumpy() for n in spec["grads"]}}


def _compare(folder: Path, key: str) -> None:
    spec = json.loads((folder / "ops_spatial.json").read_text())["cases"][key]
    with np.load(folder / "ops_spatial.npz") as npz:
        arrays = dict(npz)
    ours = _run_mxlab(spec, arrays, key)
    assert len(ours["outputs"]) == spec["num_outputs"]
    for i, got in enumerate(ours["outputs"]):
        assert_almost_equal(got, arrays[f"{key}/outputs/{i}"], rtol=1e-4, atol=1e-5, names=("MXLab", "MXNet 1.9.1"))
    for name, got in ours["grads"].items():
        assert_almost_equal(
            got, arrays[f"{key}/grads/{name}"], rtol=1e-4, atol=1e-5, names=(f"MXLab d{name}", "MXNet 1.9.1")
        )


@pytest.mark.parametrize("key", sorted(SPECS))
def test_agrees_with_committed_mxnet_results(key):
    _compare(DATA, key)


def test_agrees_with_mxnet_run_live(tmp_path):
    python = needs_env_path("MXNET_PYTHON", "it names an interpreter with mxnet 1.9.1, to rerun the reference script")
    subprocess.run([python, str(DATA / "ops_spatial.py"), str(tmp_path)], check=True, capture_output=True, timeout=600)
    for key in sorted(SPECS):
        _compare(tmp_path, key)
