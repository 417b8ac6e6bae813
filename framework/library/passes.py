"""A graph pass of a 1.9.1-API library (``REGISTER_PASS``) as an ``optimize_for`` backend.

The pass receives the symbol's JSON (see :mod:`.graph_json`), rewrites the library's
``mxnet::ext::Graph`` in place, and the graph's JSON comes back as the new symbol.
Parameters the pass created with ``Node::alloc_arg``/``alloc_aux`` are copied out into
NDArrays and returned as new args/aux.
"""

from __future__ import annotations

import ctypes
import json
from typing import Any

import numpy as np

from ..ndarray import ndarray as nd
from ..symbol import load_json
from .abi import CODE_DTYPES, Library, LibraryError
from .graph_json import NamedTensors, annotated_json, c_options, strip_annotations


class LibraryPass:
    """Pass ``index`` of ``lib``, called as ``sym.optimize_for(name, ...)``."""

    def __init__(self, lib: Library, index: int, name: str) -> None:
        self.lib, self.index, self.name = lib, index, name

    def __call__(
        self,
        symbol: Any,
        args: dict,
        aux: dict,
        ctx: Any,
        shape_dict: dict,
        type_dict: dict,
        skip_infer: bool,
        options: dict[str, str],
    ) -> tuple[Any, dict, dict]:
        who = f"library {self.lib.name}: graph pass {self.name!r}"
        doc = annotated_json(symbol, {**args, **aux}, shape_dict, type_dict, skip_infer)
        params = NamedTensors({**args, **aux}, who)
        handle = ctypes.c_void_p()
        ok = self.lib._passCall(self.index, json.dumps(doc).encode(), *c_options(options), *params.args, handle)
        self.lib.check(ok, None, f"graph pass {self.name!r}")
        try:
            text = self.lib._graphJson(handle)
            self.lib.check(text is not None, None, f"graph pass {self.name!r}: writing the graph back")
            new_args, new_aux = self._new_params(handle, who)
        finally:
            self.lib._graphFree(handle)
        try:
            out = strip_annotations(json.loads(text.decode("utf-8")))
            return load_json(json.dumps(out)), new_args, new_aux
        except Exception as err:
            raise LibraryError(f"{who} returned a graph MXLab cannot load: {err}") from err

    def _new_params(self, handle: ctypes.c_void_p, who: str) -> tuple[dict, dict]:
        """The parameters the pass made (alloc_arg / alloc_aux), copied into NDArrays."""
        new_args: dict[str, Any] = {}
        new_aux: dict[str, Any] = {}
        for i in range(int(self.lib._graphNewParamCount(handle))):
            name, is_arg, ndim, dtype = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
            shape, data = ctypes.POINTER(ctypes.c_int64)(), ctypes.c_void_p()
            self.lib._graphNewParam(handle, i, name, is_arg, ndim, shape, dtype, data)
            dims = tuple(int(shape[d]) for d in range(ndim.value))
            dtype_name = CODE_DTYPES.get(dtype.value)
            if dtype_name is None:
                raise LibraryError(f"{who}: new parameter {name.value!r} has unknown type code {dtype.value}")
            count = int(np.prod(dims, dtype=np.int64))
            buffer = (ctypes.c_char * (count * np.dtype(dtype_name).itemsize)).from_address(data.value)
            values = np.frombuffer(buffer, dtype=dtype_name, count=count).reshape(dims).copy()
            (new_args if is_arg.value else new_aux)[name.value.decode()] = nd.array(values, dtype=dtype_name)
        return new_args, new_aux
