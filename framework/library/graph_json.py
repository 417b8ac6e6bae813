"""What graph passes and partitioners of a 1.9.1-API library receive: a symbol's JSON, annotated.

MXNet 1.9.1 hands a library the symbol as JSON text (the library parses it into its
``mxnet::ext::Graph``). When shapes and dtypes are known (parameters given to ``optimize_for``,
or ``shape_dict``/``type_dict``), every operator node carries them as attributes
``__ext_shape__`` (``"[[2,3]]"``, one shape per output) and ``__ext_dtype__`` (``"[0]"``, type
codes), and every input node whose value is known gets it as ``node->tensor``. This module
builds those arguments and removes the annotations from what comes back.
"""

from __future__ import annotations

import ctypes
import json
from typing import Any

import numpy as np

from ..ndarray.ndarray import NDArray
from .abi import DTYPE_CODES, LibraryError

#: MX_STR_SHAPE, MX_STR_DTYPE of mxnet/lib_api.h
SHAPE_KEY, DTYPE_KEY = "__ext_shape__", "__ext_dtype__"


def c_options(options: dict[str, str]) -> tuple:
    """(keys, values, count): the C form of a string map."""
    keys = (ctypes.c_char_p * max(len(options), 1))(*[k.encode() for k in options])
    vals = (ctypes.c_char_p * max(len(options), 1))(*[v.encode() for v in options.values()])
    return keys, vals, len(options)


class NamedTensors:
    """The known parameters as the C side's named tensor list (count, names, data, shapes, ndims, dtypes).

    Holds the contiguous NumPy copies alive while the library may read them.
    """

    def __init__(self, arrays: dict[str, Any], who: str) -> None:
        self.arrays: list[np.ndarray] = []
        names = []
        for name, value in arrays.items():
            array = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
            if array.dtype.name not in DTYPE_CODES:
                raise LibraryError(
                    f"{who}: parameter {name!r} has dtype {array.dtype.name}, which lib_api.h cannot describe"
                )
            self.arrays.append(np.ascontiguousarray(array))
            names.append(name.encode())
        n = len(self.arrays)
        dims = [int(d) for a in self.arrays for d in a.shape]
        self.args = (
            n,
            (ctypes.c_char_p * max(n, 1))(*names),
            (ctypes.c_void_p * max(n, 1))(*[a.ctypes.data for a in self.arrays]),
            (ctypes.c_int64 * max(len(dims), 1))(*dims),
            (ctypes.c_int * max(n, 1))(*[a.ndim for a in self.arrays]),
            (ctypes.c_int * max(n, 1))(*[DTYPE_CODES[a.dtype.name] for a in self.arrays]),
        )


def annotated_json(symbol: Any, known: dict[str, Any], shape_dict: dict, type_dict: dict, skip_infer: bool) -> dict:
    """The symbol's JSON document with ``__ext_shape__``/``__ext_dtype__`` on nodes whose outputs are known."""
    doc = json.loads(symbol.tojson())
    if skip_infer:
        return doc
    shapes = {k: tuple(v.shape) for k, v in known.items()}
    shapes.update({k: tuple(v) for k, v in shape_dict.items()})
    types = {k: np.dtype(v.dtype).name for k, v in known.items()}
    types.update({k: np.dtype(v).name for k, v in type_dict.items()})
    if not shapes and not types:
        return doc
    internals = symbol.get_internals()
    by_entry_shape = _infer(internals, "infer_shape_partial", shapes)
    by_entry_type = _infer(internals, "infer_type_partial", types)
    for i, node in enumerate(doc["nodes"]):
        count = doc["node_row_ptr"][i + 1] - doc["node_row_ptr"][i]
        found_shapes = [by_entry_shape.get((node["name"], k)) for k in range(count)]
        found_types = [by_entry_type.get((node["name"], k)) for k in range(count)]
        attrs = node.setdefault("attrs", {})
        if found_shapes and all(s is not None and all(d > 0 for d in s) for s in found_shapes):
            attrs[SHAPE_KEY] = json.dumps([list(s) for s in found_shapes], separators=(",", ":"))
        if found_types and all(t is not None for t in found_types):
            attrs[DTYPE_KEY] = json.dumps(
                [DTYPE_CODES.get(np.dtype(t).name, -1) for t in found_types], separators=(",", ":")
            )
        if not attrs:
            del node["attrs"]
    return doc


def _infer(internals: Any, method: str, given: dict) -> dict[tuple[str, int], Any]:
    """(node name, output index) -> shape or dtype, as far as ``given`` determines them."""
    if not given:
        return {}
    wanted = set(internals.list_inputs())
    _, outs, _ = getattr(internals, method)(**{k: v for k, v in given.items() if k in wanted})
    return {(e.node.name, e.index): v for e, v in zip(internals.outputs, outs or [], strict=False) if v is not None}


def strip_annotations(doc: dict) -> dict:
    """Remove the shape/dtype annotations again (they describe the graph as it was given)."""
    for node in doc["nodes"]:
        attrs = node.get("attrs")
        if attrs:
            attrs.pop(SHAPE_KEY, None)
            attrs.pop(DTYPE_KEY, None)
            if not attrs:
                del node["attrs"]
    return doc
