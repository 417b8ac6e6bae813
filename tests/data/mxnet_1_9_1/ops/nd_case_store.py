"""Run front-end cases with MXNet's autograd and store them as ``STEM.json`` + ``STEM.npz``.

Shared by the peer scripts ops_misc17.py and ops_tensorutil.py, which differ only in their
cases: both run each case under ``autograd.record``, back-propagate :func:`head_gradient` and
write one record per case plus one flat buffer per dtype (tests/op_helpers.py reads the pair back).
It imports nothing of MXLab and runs under the MXNet 1.9.1 interpreter: a script finds it
because Python puts the script's own folder first on ``sys.path``.
"""

from __future__ import annotations

import json
import os

import numpy as np


def head_gradient(shape: tuple, dtype: str) -> np.ndarray:
    """The head gradient of an output: 0.5 + (i mod 7) / 7 over its flat index i, uneven enough
    to catch a permuted gradient and the same in the test (so it is not stored)."""
    size = int(np.prod(shape))
    return (0.5 + (np.arange(size) % 7) / 7).astype(dtype).reshape(shape)


def _invoke(mx, path: str, inputs: list, params: dict):
    fn = mx
    for part in path.split("."):
        fn = getattr(fn, part)
    return fn(*inputs, **params)


def record_cases(mx, cases: list[tuple], stem: str, out_dir: str) -> None:
    """Run ``cases`` and write ``stem``.json and ``stem``.npz into ``out_dir``.

    A case is ``(case_id, path, inputs, params, training, grad_inputs, zero_heads)``; ``training``
    None records in MXNet's default (training) mode and leaves ``train`` out of the record.
    """
    buffers: dict[str, list[np.ndarray]] = {}  # one flat buffer per dtype keeps the file small
    records = []

    def store(values: np.ndarray) -> list:
        buffers.setdefault(values.dtype.name, []).append(values.reshape(-1))
        return [values.dtype.name, list(values.shape)]

    for case_id, path, inputs, params, training, grad_inputs, zero_heads in cases:
        nd_inputs = [mx.nd.array(x, dtype=x.dtype) for x in inputs]
        for i in grad_inputs:
            nd_inputs[i].attach_grad()
        with mx.autograd.record(train_mode=True if training is None else training):
            result = _invoke(mx, path, nd_inputs, params)
        outputs = list(result) if isinstance(result, list | tuple) else [result]
        record = {"id": case_id, "function": path, "params": params}
        if training is not None:
            record["train"] = training
        record["grad"] = grad_inputs
        record["in"] = [store(x) for x in inputs]
        record["out"] = [store(o.asnumpy()) for o in outputs]
        if grad_inputs:
            heads = [head_gradient(o.shape, o.dtype) * (k not in zero_heads) for k, o in enumerate(outputs)]
            mx.autograd.backward(outputs, [mx.nd.array(h, dtype=h.dtype) for h in heads])
            record["zero_heads"] = zero_heads
            record["grads"] = [store(nd_inputs[i].grad.asnumpy()) for i in grad_inputs]
        records.append(record)
    np.savez_compressed(os.path.join(out_dir, f"{stem}.npz"), **{k: np.concatenate(v) for k, v in buffers.items()})
    with open(os.path.join(out_dir, f"{stem}.json"), "w") as f:
        json.dump({"mxnet": mx.__version__, "cases": records}, f, separators=(",", ":"))
        f.write("\n")
