"""The C side of a custom-operator library: ``lib_api.h``'s ABI as seen through :mod:`ctypes`.

Everything that depends on the exact C signatures is here: the version and limits, the flag
bits of ``_opRegGetFlags``, the dtype/storage codes, the ``argtypes`` of every exported
``_opXxx`` function (declared by :class:`Library`), the builders of the tensor-list and device
arguments, and the allocators a library calls back into for temporary memory. The errors a
library can cause are defined here too, as everything above this module raises them.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

import numpy as np

from .. import backend
from ..base import MXLabError
from ..context import Context
from ..operator.infer import InferenceError
from ..operator.params import OperatorParamError

#: The ABI version of framework/include/lib_api.h (the older single-header API; ``MX_LIBRARY_VERSION``).
LIBRARY_VERSION = 1
#: The ABI version of framework/include/mxnet/lib_api.h + lib_api.cc (MXNet 1.9.1's API).
LIBRARY_VERSION_1_9 = 2
#: What ``initialize(version)`` receives from a 1.9.1-API library: the MXNet version MXLab follows.
MXNET_VERSION = 10901
MAX_NDIM = 32  # MX_MAX_NDIM

DTYPE_CODES = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5, "int64": 6}
CODE_DTYPES = {code: name for name, code in DTYPE_CODES.items()}
STYPE_NAMES = {0: "default", 1: "row_sparse", 2: "csr"}

# _opRegGetFlags bits
PARSE, TYPE, STYPE, SHAPE, MUTATE = 1, 2, 4, 8, 16
FWD = {"cpu": 32, "gpu": 64}
BWD = {"cpu": 128, "gpu": 256}
STATE = {"cpu": 512, "gpu": 1024}
SUBGRAPH_OP = 2048  # setIsSubgraphOp (1.9.1 API only)
DEVICE_INDEX = {"cpu": 0, "gpu": 1}


class LibraryError(MXLabError, ValueError):
    """Loading a custom-operator library, or one of its functions, failed."""


class LibraryInferenceError(LibraryError, InferenceError):
    """A library's inferShape/inferType/inferSType failed (also an InferenceError)."""


class LibraryParamError(LibraryError, OperatorParamError):
    """A library's parseAttrs rejected the keyword arguments (also an OperatorParamError)."""


class LibraryMetadataError(LibraryError, ValueError):
    """A library reported impossible metadata: operator count, names, counts, shapes, indices."""


#: Sanity bounds on what a library may report; larger values are corrupt, not ambitious.
MAX_OPERATORS = 4096
MAX_OPERATOR_ARRAYS = 4096  # inputs or outputs of one operator


# ------------------------------------------------------------------------------ allocation
_AllocFn = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
call_local = threading.local()  # .buffers: memory lent to the running call; .ctx its device


def _keep(buffer: Any) -> None:
    call_local.buffers.append(buffer)


@_AllocFn
def _cpu_alloc(_ctx: Any, size: int) -> int | None:
    """OpResource::alloc_cpu: a NumPy buffer kept alive until the call returns."""
    try:
        buffer = np.empty(max(int(size), 1), dtype=np.uint8)
        _keep(buffer)
        return buffer.ctypes.data
    except Exception:
        return None


@_AllocFn
def _gpu_alloc(_ctx: Any, size: int) -> int | None:
    """OpResource::alloc_gpu: a CuPy buffer on the call's GPU (NULL on a CPU call)."""
    try:
        ctx = getattr(call_local, "ctx", None)
        if ctx is None or ctx.device_type != "gpu":
            return None
        buffer = backend.empty_buffer(ctx, max(int(size), 1))
        _keep(buffer)
        return buffer.data.ptr
    except Exception:
        return None


def _pointer(array: Any) -> int:
    return int(array.ctypes.data) if isinstance(array, np.ndarray) else int(array.data.ptr)


def tensor_args(arrays: list[Any], lib: Library, op_name: str, what: str) -> tuple:
    """(count, data pointers, flattened shapes, ndims, dtype codes) for a list of contiguous arrays:
    the five C arguments ``lib_api.h`` takes for each tensor list (``_TENSOR_LIST_ARGTYPES``)."""
    n = len(arrays)
    data = (ctypes.c_void_p * max(n, 1))(*[_pointer(a) for a in arrays])
    dims = [int(d) for a in arrays for d in a.shape]
    shapes = (ctypes.c_int64 * max(len(dims), 1))(*dims)
    ndims = (ctypes.c_int * max(n, 1))(*[a.ndim for a in arrays])
    codes = []
    for i, a in enumerate(arrays):
        code = DTYPE_CODES.get(np.dtype(a.dtype).name)
        if code is None:
            raise LibraryError(
                f"{lib.name}: operator {op_name!r}: {what} {i} has dtype {np.dtype(a.dtype).name}, "
                f"which lib_api.h cannot describe (use one of {', '.join(DTYPE_CODES)})"
            )
        codes.append(code)
    return n, data, shapes, ndims, (ctypes.c_int * max(n, 1))(*codes)


def device_args(ctx: Context, stream: Any) -> tuple:
    """The C arguments that end both compute calls: device type and id, the allocators, the stream."""
    dev_type = 2 if ctx.device_type == "gpu" else 1
    return dev_type, ctx.device_id, _cpu_alloc, _gpu_alloc, None, stream


_INT, _VOID_P = ctypes.c_int, ctypes.c_void_p
#: (count, data pointers, flattened shapes, ndims, dtype codes): see :func:`tensor_args`.
_TENSOR_LIST_ARGTYPES = [_INT, ctypes.POINTER(_VOID_P), ctypes.POINTER(ctypes.c_int64)] + [ctypes.POINTER(_INT)] * 2
#: (device type, device id, cpu allocator, gpu allocator, allocator context, stream): see :func:`device_args`.
_DEVICE_ARGTYPES = [_INT, _INT, _AllocFn, _AllocFn, _VOID_P, _VOID_P]


# ------------------------------------------------------------------------------ the library handle
class Library:
    """One loaded library file: its ctypes handle and the components it registered.

    ``version`` is the ABI the library was built with: :data:`LIBRARY_VERSION` (the older
    ``lib_api.h``) or :data:`LIBRARY_VERSION_1_9` (``mxnet/lib_api.h`` + ``lib_api.cc``, which
    adds a random seed to compute calls, shapes and types to ``createOpState``, graph passes
    and partitioners).
    """

    def __init__(self, path: str, handle: ctypes.CDLL, version: int = LIBRARY_VERSION) -> None:
        self.path = path
        self.name = os.path.basename(path)
        self.handle = handle
        self.version = version
        self.operators: list[str] = []
        #: name -> the operator's adapter (``num_states_created`` counts stateful instances)
        self.ops: dict[str, Any] = {}
        #: graph pass names and partitioner (backend) names, in the library's order
        self.passes: list[str] = []
        self.partitioners: list[str] = []
        self._declare()

    @property
    def api_1_9(self) -> bool:
        """Built with MXNet 1.9.1's API (``mxnet/lib_api.h``)."""
        return self.version == LIBRARY_VERSION_1_9

    def _declare(self) -> None:
        h = self.handle
        p, i, cp, vp = ctypes.POINTER, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p
        ints, strs, tensors = p(i), p(cp), _TENSOR_LIST_ARGTYPES
        attr_args = [strs, strs, i]  # keys, values, count: what c_attrs() returns
        sig = {
            "_opVersion": ([], i),
            "_opLastError": ([], cp),
            "_opInitialize": ([i], i),
            "_opRegSize": ([], i),
            "_opRegGetName": ([i], cp),
            "_opRegGetFlags": ([i], i),
            "_opCallParseAttrs": ([i, *attr_args, ints, ints], i),
            "_opCallInferType": ([i, *attr_args, ints, i, i], i),
            "_opCallInferSType": ([i, *attr_args, ints, i, i], i),
            "_opCallInferShape": ([i, *attr_args, i, ints, p(ctypes.c_uint), i, ints, p(ctypes.c_uint)], i),
            "_opCallMutateInputs": ([i, *attr_args, i, ints, ints], i),
            # index, is_forward, device, attributes, inputs, outputs, device
            "_opCallFCompute": ([i, i, i, *attr_args, *tensors, *tensors, *_DEVICE_ARGTYPES], i),
            "_opCallCreateOpState": ([i, i, *attr_args, p(vp)], i),
            # is_forward, state, inputs, outputs, device
            "_opCallFStatefulCompute": ([i, vp, *tensors, *tensors, *_DEVICE_ARGTYPES], i),
            "_opDestroyOpState": ([vp], None),
        }
        if self.api_1_9:
            sig.update(_signatures_1_9())
        for fname, (argtypes, restype) in sig.items():
            try:
                fn = getattr(h, fname)
            except AttributeError:
                how = (
                    "compile framework/include/lib_api.cc into it (mxnet/lib_api.h's companion)"
                    if self.api_1_9
                    else "rebuild the library against framework/include/lib_api.h"
                )
                raise LibraryError(f"{self.path}: missing exported function {fname}; {how}") from None
            fn.argtypes, fn.restype = argtypes, restype
            setattr(self, fname, fn)

    def last_error(self) -> str:
        message = self._opLastError()
        return message.decode("utf-8", "replace") if message else "no message"

    def check(self, ok: int, op_name: str | None, step: str, node: str | None = None, cls: type = LibraryError) -> None:
        """Raise ``cls`` naming the library, operator, node and step when a call returned 0."""
        if not ok:
            where = f" (node {node!r})" if node and node != op_name else ""
            what = f"operator {op_name!r}{where}: " if op_name else ""
            raise cls(f"library {self.name}: {what}{step} failed: {self.last_error()}")

    def __repr__(self) -> str:
        return f"<Library {self.path} operators={self.operators}>"


def _signatures_1_9() -> dict[str, tuple[list, Any]]:
    """The C functions of framework/include/lib_api.cc that differ from, or add to, version 1.

    Compute calls end with a 64-bit random seed (``OpResource::get_cpu_rand_states``);
    ``createOpState`` also receives the device id and the input shapes and types; graph passes
    (``_passXxx``), partitioners (``_partXxx``) and their selectors (``_selXxx``) work on the
    symbol's JSON, with the known parameters passed as a named tensor list.
    """
    p, i, cp, vp, u64 = ctypes.POINTER, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_uint64
    ints, strs, tensors = p(i), p(cp), _TENSOR_LIST_ARGTYPES
    attr_args = [strs, strs, i]
    # count, names, data pointers, flattened shapes, ndims, dtype codes: see framework/library/graph_abi.py
    params = [i, strs, p(vp), p(ctypes.c_int64), ints, ints]
    return {
        "_opCallFCompute": ([i, i, i, *attr_args, *tensors, *tensors, *_DEVICE_ARGTYPES, u64], i),
        "_opCallFStatefulCompute": ([i, vp, *tensors, *tensors, *_DEVICE_ARGTYPES, u64], i),
        # index, device, attributes, device id, input count, ndims, flattened dims, dtype codes, state
        "_opCallCreateOpState": ([i, i, *attr_args, i, i, ints, p(ctypes.c_uint), ints, p(vp)], i),
        "_passRegSize": ([], i),
        "_passRegGetName": ([i], cp),
        "_passCall": ([i, cp, *attr_args, *params, p(vp)], i),
        "_graphJson": ([vp], cp),
        "_graphNewParamCount": ([vp], i),
        "_graphNewParam": ([vp, i, p(cp), ints, ints, p(p(ctypes.c_int64)), ints, p(vp)], None),
        "_graphFree": ([vp], None),
        "_partRegSize": ([], i),
        "_partRegGetName": ([i], cp),
        "_partRegGetStrategyCount": ([i], i),
        "_partRegGetStrategy": ([i, i, p(cp), p(cp), ints], None),
        "_partCallSupportedOps": ([i, i, cp, *attr_args, *params, ints, i], i),
        "_partCallCreateSelector": ([i, i, cp, *attr_args, *params, p(vp)], i),
        "_partCallReviewSubgraph": ([i, i, cp, i, *attr_args, *params, ints, p(cp)], i),
        "_selSelect": ([vp, i, ints], i),
        "_selSelectInput": ([vp, i, i, ints], i),
        "_selSelectOutput": ([vp, i, i, ints], i),
        "_selFilter": ([vp, ints, i, ints, ints], i),
        "_selReset": ([vp], i),
    }
