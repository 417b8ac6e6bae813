"""boolean_mask, SyncBatchNorm, BatchNormWithReLU, make_loss and RROIAlign agree with MXNet 1.9.1.

tests/data/mxnet_1_9_1/ops/ops_misc17.py ran each case with the real MXNet (in training or
inference mode) and stored the inputs, outputs and input gradients; here MXLab replays every
case through the same front-end function. When ``MXNET_PYTHON`` names an interpreter with
MXNet 1.9.1, the script is also run live.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import framework as mx
from framework import autograd

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "ops"
MXNET_PYTHON = os.environ.get("MXNET_PYTHON")


def _load(folder: Path) -> list[dict]:
    """The cases, each with its arrays (``in``, ``out``, ``grads``) cut out of the per-dtype buffers."""
    with open(folder / "ops_misc17.json") as f:
        cases = json.load(f)["cases"]
    with np.load(folder / "ops_misc17.npz") as data:
        buffers = {k: data[k] for k in data.files}
    offsets = dict.fromkeys(buffers, 0)
    for case in cases:
        for key in ("in", "out", "grads"):
            arrays = []
            for dtype, shape in case.get(key, []):
                size = int(np.prod(shape))
                arrays.append(buffers[dtype][offsets[dtype] : offsets[dtype] + size].reshape(shape))
                offsets[dtype] += size
            case[key] = arrays
    assert all(offsets[k] == buffers[k].size for k in buffers), "the reference buffers hold unread values"
    return cases


CASES = _load(DATA)


def _invoke(path: str, inputs: list, params: dict):
    fn = mx
    for part in path.split("."):
        fn = getattr(fn, part)
    return fn(*inputs, **{k: tuple(v) if isinstance(v, list) else v for k, v in params.items()})


def _head_gradient(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """The head gradients the script used (its ``head_gradient``; the script is not imported)."""
    size = int(np.prod(shape))
    return (0.5 + (np.arange(size) % 7) / 7).astype(dtype).reshape(shape)


def _replay(case: dict) -> None:
    cid = case["id"]
    inputs = [mx.nd.array(x, dtype=x.dtype) for x in case["in"]]
    for i in case["grad"]:
        inputs[i].attach_grad()
    with autograd.record(train_mode=case["train"]):
        result = _invoke(case["function"], inputs, case["params"])
    outputs = list(result) if isinstance(result, list | tuple) else [result]
    assert len(outputs) == len(case["out"]), f"{cid}: {len(outputs)} outputs, MXNet has {len(case['out'])}"
    for k, (out, expected) in enumerate(zip(outputs, case["out"], strict=True)):
        assert out.shape == expected.shape, f"{cid}: output {k} shape {out.shape} != MXNet's {expected.shape}"
        assert out.dtype == expected.dtype, f"{cid}: output {k} dtype {out.dtype} != MXNet's {expected.dtype}"
        np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-4, atol=1e-5, err_msg=f"{cid}: output {k}")
    if case["grad"]:
        heads = [_head_gradient(o.shape, o.dtype) * (k not in case["zero_heads"]) for k, o in enumerate(outputs)]
        autograd.backward(outputs, [mx.nd.array(h, dtype=h.dtype) for h in heads])
        for i, expected in zip(case["grad"], case["grads"], strict=True):
            np.testing.assert_allclose(
                inputs[i].grad.asnumpy(), expected, rtol=1e-4, atol=1e-4, err_msg=f"{cid}: grad {i}"
            )


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_agrees_with_committed_mxnet_data(case):
    _replay(case)


def test_the_data_covers_every_operator_of_the_script():
    functions = {c["function"] for c in CASES}
    assert functions == {
        "nd.contrib.boolean_mask",
        "nd.contrib.SyncBatchNorm",
        "nd.contrib.BatchNormWithReLU",
        "nd.make_loss",
        "nd.contrib.RROIAlign",
    }


@pytest.mark.skipif(not MXNET_PYTHON, reason="set MXNET_PYTHON to an interpreter with mxnet 1.9.1 to run")
def test_agrees_with_live_mxnet(tmp_path):
    script = DATA / "ops_misc17.py"
    subprocess.run([MXNET_PYTHON, str(script), str(tmp_path)], check=True, capture_output=True, timeout=300)
    for case in _load(tmp_path):
        _replay(case)
