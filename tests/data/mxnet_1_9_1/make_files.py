"""Write the reference NDArray files in this folder with real MXNet 1.9.1.

Run with an interpreter that has ``mxnet==1.9.1`` (and ``numpy<1.24``)::

    /work/mxvenv/bin/python tests/data/mxnet_1_9_1/make_files.py

It writes, next to this script:

* ``list_form.nd``: ``mx.nd.save`` of a list of float32 arrays of 1 to 4 dimensions;
* ``mlp.params``: the dict form of a parameter file, ``arg:``/``aux:`` keys as
  ``Module.save_checkpoint`` and ``HybridBlock.export`` write them, for a small MLP
  (Dense 4->8, BatchNorm, Dense 8->3) trained for one step, stored in several dtypes;
* ``all_dtypes.nd``: one array per MXNet type flag (float32, float64, float16, uint8, int32,
  int8, int64, bool) with extreme values, plus empty arrays, a 0-d array and an array saved
  from ``cpu(1)``;
* ``np_shape.nd``: arrays saved under NumPy shape semantics (``mx.util.np_shape(True)``),
  which MXNet writes with the V3 array magic ``0xF993FACA`` (0-d and empty arrays);
* ``expected.json``: for every file, each entry's name, dtype, shape, saved context and
  values, read back from the MXNet arrays that were saved (so the tests need no MXNet).

The tests in tests/ndarray/test_io.py read these files; they never import this script.
"""

from __future__ import annotations

import json
import math
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _values_for_json(values: np.ndarray) -> list:
    """Flat values that JSON keeps exactly (floats via repr, NaN/inf as strings)."""
    flat = values.reshape(-1)
    if values.dtype.kind == "f":
        return [float(v) if math.isfinite(v) else repr(float(v)) for v in flat.astype(np.float64)]
    if values.dtype.kind == "b":
        return [bool(v) for v in flat]
    return [int(v) for v in flat]


def _describe(name: str, arr: mx.nd.NDArray) -> dict:
    ctx = arr.context
    return {
        "name": name,
        "dtype": np.dtype(arr.dtype).name,
        "shape": list(arr.shape),
        "context": [ctx.device_type, ctx.device_id],
        "values": _values_for_json(arr.asnumpy()),
    }


def list_form(rng: np.random.Generator) -> list:
    return [
        mx.nd.array(rng.standard_normal(5).astype(np.float32)),
        mx.nd.array(rng.standard_normal((2, 3)).astype(np.float32)),
        mx.nd.array(rng.uniform(-10, 10, (2, 1, 3)).astype(np.float32)),
        mx.nd.array(rng.standard_normal((1, 2, 2, 2)).astype(np.float32)),
    ]


def mlp_params() -> dict:
    """Parameters of a small trained MLP, named as MXNet's checkpoints name them."""
    mx.random.seed(7)
    net = mx.gluon.nn.HybridSequential(prefix="")
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(8, in_units=4, prefix="fc1_"))
        net.add(mx.gluon.nn.BatchNorm(in_channels=8, prefix="bn1_"))
        net.add(mx.gluon.nn.Activation("relu"))
        net.add(mx.gluon.nn.Dense(3, in_units=8, prefix="fc2_"))
    net.initialize(mx.init.Xavier())
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x = mx.nd.array(np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32))
    with mx.autograd.record():
        loss = (net(x) ** 2).mean()
    loss.backward()
    trainer.step(6)
    # Several dtypes, as mixed-precision checkpoints hold them.
    cast = {"fc2_weight": "float16", "fc2_bias": "float16", "bn1_running_mean": "float64", "bn1_running_var": "float64"}
    params = {}
    for name, param in net.collect_params().items():
        kind = "aux" if param.grad_req == "null" else "arg"
        params[f"{kind}:{name}"] = param.data().astype(cast.get(name, "float32"))
    return params


def all_dtypes() -> list:
    f_special = [0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-3]
    arrays = [
        mx.nd.array(np.array(f_special, np.float32).reshape(2, 4), dtype="float32"),
        mx.nd.array(np.array(f_special + [1e300, -5e-324], np.float64).reshape(2, 5), dtype="float64"),
        mx.nd.array(np.array(f_special + [65504.0, 6e-8], np.float16).reshape(5, 2), dtype="float16"),
        mx.nd.array(np.array([0, 1, 127, 128, 255, 42], np.uint8).reshape(2, 3), dtype="uint8"),
        mx.nd.array(np.array([0, -1, 2**31 - 1, -(2**31), 7, 123456], np.int32).reshape(3, 2), dtype="int32"),
        mx.nd.array(np.array([0, -1, 127, -128, 5, -6], np.int8), dtype="int8"),
        mx.nd.array(np.array([0, -1, 2**63 - 1, -(2**63), 2**40 + 3, 9], np.int64).reshape(2, 3), dtype="int64"),
        mx.nd.array(np.array([True, False, False, True, True, False]).reshape(3, 2), dtype="bool"),
        mx.nd.array(np.zeros((0,), np.float32)),
        mx.nd.array(np.zeros((2, 0, 3), np.int32), dtype="int32"),
        mx.nd.array(np.array([1.0, 2.0, 3.0], np.float32), ctx=mx.cpu(1)),
        mx.nd.array(np.array(2.5, np.float32)),  # 0-d: MXNet writes it but cannot read it back
    ]
    return arrays


def main() -> None:
    rng = np.random.default_rng(20240601)
    files = {
        "list_form.nd": list_form(rng),
        "mlp.params": mlp_params(),
        "all_dtypes.nd": all_dtypes(),
    }
    expected = {"mxnet_version": mx.__version__}
    for fname, data in files.items():
        mx.nd.save(os.path.join(HERE, fname), data)
        items = data.items() if isinstance(data, dict) else ((None, a) for a in data)
        expected[fname] = {
            "form": "dict" if isinstance(data, dict) else "list",
            "entries": [_describe(name, arr) for name, arr in items],
        }
    with mx.util.np_shape(True):
        np_arrays = [
            mx.nd.array(np.array(-1.25, np.float32)),
            mx.nd.array(np.zeros((2, 0), np.float64), dtype="float64"),
            mx.nd.array(np.array([3, 4], np.int64), dtype="int64"),
        ]
        mx.nd.save(os.path.join(HERE, "np_shape.nd"), np_arrays)
        expected["np_shape.nd"] = {"form": "list", "entries": [_describe(None, a) for a in np_arrays]}
    # MXNet reads back what it wrote (except the 0-d entry, which it cannot).
    assert set(mx.nd.load(os.path.join(HERE, "mlp.params"))) == set(files["mlp.params"])
    with open(os.path.join(HERE, "expected.json"), "w") as stream:
        json.dump(expected, stream, indent=1)
        stream.write("\n")


if __name__ == "__main__":
    main()
