"""foreach / while_loop / cond symbols agree with MXNet 1.9.1, through JSON in both directions.

tests/data/mxnet_1_9_1/ops/ops_control_flow.py built each case with MXNet, saved its JSON (with
the ``subgraphs`` field) and one training step's outputs and gradients. Here MXLab (1) loads
MXNet's JSON and (2) builds the same case with its own ``mx.sym.contrib`` and must match both
(float32: rtol 1e-4); (3) the JSON MXLab writes for each case is committed in
``ops_control_flow_mxlab.json`` (this test checks it is still what MXLab writes), and the script
ran it in MXNet, whose outputs must match MXLab's. With ``MXNET_PYTHON`` naming an interpreter
with mxnet 1.9.1 the script is also run live. Regenerate the MXLab file with
``python tests/operator/test_control_flow_mxnet.py`` before rerunning the script.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from needs import needs_env_path

import framework as mx
from framework.test_utils import assert_almost_equal

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "ops"
SPECS = json.loads((DATA / "ops_control_flow.json").read_text())["cases"]
MXLAB_JSON = DATA / "ops_control_flow_mxlab.json"


def _script():
    spec = importlib.util.spec_from_file_location("ops_control_flow", DATA / "ops_control_flow.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()


def _run(sym, spec: dict, arrays: dict, key: str) -> tuple[list, dict]:
    args = {n: mx.nd.array(arrays[f"{key}/args/{n}"]) for n in spec["args"]}
    grads = {n: mx.nd.zeros(a.shape) for n, a in args.items()}
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    outputs = [o.asnumpy() for o in ex.forward(is_train=True)]
    ex.backward([mx.nd.array(arrays[f"{key}/heads/{i}"]) for i in range(len(outputs))])
    return outputs, {n: g.asnumpy() for n, g in grads.items()}


def _defined(spec: dict, i: int, value: np.ndarray) -> np.ndarray:
    """The part of output ``i`` MXNet defines: a while_loop's stacked outputs stop at the last step."""
    return value[: spec["steps"]] if i < spec["stacked"] else value


def _check(spec: dict, key: str, arrays: dict, outputs: list, grads: dict | None, kind: str = "outputs") -> None:
    assert len(outputs) == spec["num_outputs"]
    for i, got in enumerate(outputs):
        want = _defined(spec, i, arrays[f"{key}/{kind}/{i}"])
        assert_almost_equal(_defined(spec, i, got), want, rtol=1e-4, atol=1e-5, names=("MXLab", "MXNet 1.9.1"))
    for name, got in (grads or {}).items():
        want = arrays[f"{key}/grads/{name}"]
        assert_almost_equal(got, want, rtol=1e-4, atol=1e-5, names=(f"MXLab d{name}", "MXNet 1.9.1"))


def _arrays(folder: Path) -> dict:
    with np.load(folder / "ops_control_flow.npz") as npz:
        return dict(npz)


def mxlab_json() -> dict[str, str]:
    """The JSON MXLab writes for every case."""
    return {key: SCRIPT.build_named(mx, key)[0].tojson() for key in SCRIPT.CASES}


@pytest.mark.parametrize("key", sorted(SPECS))
def test_mxnet_json_loads_and_agrees(key):
    spec, arrays = SPECS[key], _arrays(DATA)
    sym = mx.sym.load_json(spec["json"])
    assert sym.tojson() == spec["json"]  # written back byte for byte, subgraphs included
    outputs, grads = _run(sym, spec, arrays, key)
    _check(spec, key, arrays, outputs, grads)


@pytest.mark.parametrize("key", sorted(SPECS))
def test_mxlab_built_symbol_agrees(key):
    spec, arrays = SPECS[key], _arrays(DATA)
    sym = SCRIPT.build_named(mx, key)[0]
    assert len(sym.list_arguments()) == len(spec["args"])
    outputs, grads = _run(sym, spec, arrays, key)
    _check(spec, key, arrays, outputs, grads)


def test_committed_mxlab_json_is_what_mxlab_writes():
    assert json.loads(MXLAB_JSON.read_text())["cases"] == mxlab_json()


@pytest.mark.parametrize("key", sorted(SPECS))
def test_mxlab_json_runs_in_mxnet_with_the_same_outputs(key):
    spec, arrays = SPECS[key], _arrays(DATA)
    sym = mx.sym.load_json(json.loads(MXLAB_JSON.read_text())["cases"][key])
    outputs, _ = _run(sym, spec, arrays, key)
    _check(spec, key, arrays, outputs, None, kind="mxlab_json_outputs")


def test_agrees_with_mxnet_run_live(tmp_path):
    python = needs_env_path("MXNET_PYTHON", "it names an interpreter with mxnet 1.9.1, to rerun the reference script")
    script = DATA / "ops_control_flow.py"
    subprocess.run([python, str(script), str(tmp_path)], check=True, capture_output=True, timeout=600)
    arrays = _arrays(tmp_path)
    for key, spec in json.loads((tmp_path / "ops_control_flow.json").read_text())["cases"].items():
        outputs, grads = _run(mx.sym.load_json(spec["json"]), spec, arrays, key)
        _check(spec, key, arrays, outputs, grads)


if __name__ == "__main__":  # regenerate the committed MXLab JSON (then rerun the MXNet script)
    MXLAB_JSON.write_text(json.dumps({"cases": mxlab_json()}, indent=1, sort_keys=True) + "\n")
    sys.exit(0)
