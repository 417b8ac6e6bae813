"""The fused RNN agrees with MXNet 1.9.1: weights packed by MXNet give MXNet's outputs and gradients.

tests/data/mxnet_1_9_1/ops/ops_rnn.py ran one training step (forward, backward with seeded head
gradients for every output) of each case with real MXNet and committed the inputs and results
(see its docstring for the cases MXNet's CPU operator cannot compute itself); here MXLab runs
the same step as a bound symbol and must match (float32: rtol 1e-4). With ``MXNET_PYTHON``
naming an interpreter with mxnet 1.9.1 the script is also run live.
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
SPECS = json.loads((DATA / "ops_rnn.json").read_text())["cases"]


def _run_mxlab(spec: dict, arrays: dict, key: str) -> tuple[list, dict]:
    """The script's training step in MXLab: outputs, and gradients of the float inputs."""
    names = spec["inputs"]
    sym = mx.sym.RNN(name="op", **{n: mx.sym.var(n) for n in names}, **spec["params"])
    args = {n: mx.nd.array(arrays[f"{key}/args/{n}"]) for n in names}
    grads = {n: mx.nd.zeros(a.shape, dtype=a.dtype) for n, a in args.items()}
    req = {n: ("write" if n in spec["grads"] else "null") for n in names}
    ex = sym.bind(mx.cpu(), args, args_grad=grads, grad_req=req)
    outputs = [o.asnumpy() for o in ex.forward(is_train=True)]
    ex.backward([mx.nd.array(arrays[f"{key}/heads/{i}"]) for i in range(len(outputs))])
    return outputs, {n: grads[n].asnumpy() for n in spec["grads"]}


def _compare(folder: Path, key: str) -> None:
    spec = json.loads((folder / "ops_rnn.json").read_text())["cases"][key]
    with np.load(folder / "ops_rnn.npz") as npz:
        arrays = dict(npz)
    outputs, grads = _run_mxlab(spec, arrays, key)
    expected = sorted(k for k in arrays if k.startswith(f"{key}/outputs/"))
    assert len(outputs) == len(expected)
    for i, got in enumerate(outputs):
        want = arrays[f"{key}/outputs/{i}"]
        assert_almost_equal(got, want, rtol=1e-4, atol=1e-5, names=(f"MXLab output {i}", "MXNet 1.9.1"))
    for name, got in grads.items():
        want = arrays[f"{key}/grads/{name}"]
        assert_almost_equal(got, want, rtol=1e-4, atol=1e-5, names=(f"MXLab d{name}", "MXNet 1.9.1"))


def test_the_cases_cover_every_mode_and_option():
    params = [spec["params"] for spec in SPECS.values()]
    assert {p["mode"] for p in params} == {"rnn_relu", "rnn_tanh", "lstm", "gru"}
    for option in ("bidirectional", "state_outputs", "projection_size", "use_sequence_length", "lstm_state_clip_min"):
        assert any(p.get(option) for p in params), option
    assert all(p["num_layers"] == 2 for p in params)
    assert {spec["source"] for spec in SPECS.values()} == {"operator", "per_sample", "unrolled_lstm"}


@pytest.mark.parametrize("key", sorted(SPECS))
def test_agrees_with_committed_mxnet_results(key):
    _compare(DATA, key)


def test_agrees_with_mxnet_run_live(tmp_path):
    python = needs_env_path("MXNET_PYTHON", "it names an interpreter with mxnet 1.9.1, to rerun the reference script")
    subprocess.run([python, str(DATA / "ops_rnn.py"), str(tmp_path)], check=True, capture_output=True, timeout=600)
    for key in sorted(SPECS):
        _compare(tmp_path, key)
