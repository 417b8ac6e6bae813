"""Craft NDArray files in MXNet's pre-1.0 "v0" array layout and record how MXNet 1.9.1 reads them.

MXNet 1.9.1 no longer writes v0 arrays but still reads them, so this script writes the bytes
itself, from the documented layout, and asks real MXNet to load them::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/make_legacy_v0.py

A v0 array has no array magic: its first uint32 is the shape's ndim, followed by ndim uint32
dimensions (not int64 as from V1 on), the context (int32 device type, int32 device id), the
int32 type flag and the raw little-endian values. The file around the arrays is the usual one
(uint64 0x112, uint64 0, uint64 count, the arrays, uint64 name count, names).

It writes, next to this script:

* ``legacy_v0.nd``: list form, the five type flags of that era (float32, float64, float16,
  uint8, int32), 1 to 3 dimensions, one array saved from ``cpu(1)``;
* ``legacy_v0.params``: dict form with ``arg:``/``aux:`` names, as a 0.8 checkpoint;
* ``legacy_v0.json``: each entry's name, dtype, shape, context and values as MXNet 1.9.1
  loaded them, and the fact that MXNet refuses a v0 entry of ndim 0 (an "empty" handle).

tests/ndarray/test_io_legacy.py reads these; it never imports this script.
"""

from __future__ import annotations

import json
import os
import struct

import mxnet as mx
import numpy as np
from make_files import HERE, _describe

#: MXNet's type flags of the v0 era.
FLAGS = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4}


def v0_array(values: np.ndarray, device: tuple[int, int] = (1, 0)) -> bytes:
    """One array in the v0 layout (see the module docstring)."""
    head = struct.pack("<I", values.ndim) + struct.pack(f"<{values.ndim}I", *values.shape)
    head += struct.pack("<ii", *device) + struct.pack("<i", FLAGS[values.dtype.name])
    return head + np.ascontiguousarray(values, values.dtype.newbyteorder("<")).tobytes()


def v0_file(arrays: list[tuple[np.ndarray, tuple[int, int]]], names: list[str]) -> bytes:
    parts = [struct.pack("<QQQ", 0x112, 0, len(arrays))]
    parts += [v0_array(values, device) for values, device in arrays]
    parts.append(struct.pack("<Q", len(names)))
    for name in names:
        encoded = name.encode("utf-8")
        parts.append(struct.pack("<Q", len(encoded)) + encoded)
    return b"".join(parts)


def main() -> None:
    rng = np.random.default_rng(20261125)
    list_arrays = [
        (rng.standard_normal((2, 3)).astype(np.float32), (1, 0)),
        (np.array([0.0, -0.0, 1e300, -5e-324, 3.25], np.float64), (1, 0)),
        (np.array([[1.5, -2.0], [65504.0, 6e-8]], np.float16), (1, 0)),
        (np.array([0, 1, 128, 255], np.uint8), (1, 1)),
        (np.arange(-3, 3, dtype=np.int32).reshape(3, 1, 2), (1, 0)),
    ]
    params = {
        "arg:fc1_weight": (rng.standard_normal((4, 3)).astype(np.float32), (1, 0)),
        "arg:fc1_bias": (np.zeros((4,), np.float32), (1, 0)),
        "aux:bn_moving_var": (np.ones((4,), np.float32), (1, 0)),
    }
    files = {
        "legacy_v0.nd": v0_file(list_arrays, []),
        "legacy_v0.params": v0_file(list(params.values()), list(params)),
    }
    expected: dict = {"mxnet_version": mx.__version__}
    for fname, payload in files.items():
        path = os.path.join(HERE, fname)
        with open(path, "wb") as stream:
            stream.write(payload)
        loaded = mx.nd.load(path)
        items = loaded.items() if isinstance(loaded, dict) else ((None, a) for a in loaded)
        expected[fname] = {
            "form": "dict" if isinstance(loaded, dict) else "list",
            "entries": [_describe(name, arr) for name, arr in items],
        }
    # An entry of ndim 0 (how old MXNet saved an empty handle): MXNet 1.9.1 refuses the file.
    empty_entry = struct.pack("<QQQ", 0x112, 0, 1) + struct.pack("<I", 0) + struct.pack("<Q", 0)
    path = os.path.join(HERE, "legacy_v0_empty_entry.tmp")
    with open(path, "wb") as stream:
        stream.write(empty_entry)
    try:
        mx.nd.load(path)
        expected["ndim0_entry"] = "loaded"
    except mx.base.MXNetError as err:
        expected["ndim0_entry"] = "refused: " + str(err).strip().splitlines()[-1]
    finally:
        os.remove(path)
    with open(os.path.join(HERE, "legacy_v0.json"), "w") as stream:
        json.dump(expected, stream, indent=1)
        stream.write("\n")


if __name__ == "__main__":
    main()
