"""Loading operators written in C++/CUDA at run time: ``mx.library.load`` (seed 003).

A custom-operator library is a shared object built against ``framework/include/lib_api.h``
alone. The header defines a small C ABI (functions named ``_opXxx``); this module talks
to it through :mod:`ctypes` and turns every operator it finds into **one ordinary record
of the operator registry**, so ``mx.nd.my_gemm``, ``mx.sym.my_gemm``, autograd, the
executor's memory planning and the engine's scheduling treat it like a built-in operator.

What each registry attribute of a library operator does:

=================== ==================================================================
attribute           implementation
=================== ==================================================================
parameters          every keyword argument, converted to a string (the C side sees a
                    ``std::unordered_map<std::string, std::string>``); ``parseAttrs``
                    runs when the attributes are parsed, so a bad keyword fails at the
                    call, naming the library, operator and step
inputs / outputs    the counts ``parseAttrs`` returned
infer_shape/type    the library's ``inferShape`` / ``inferType`` once every input is
                    known; ``inferSType`` (optional) must keep everything dense
mutate_inputs       the library's ``mutateInputs`` (auxiliary states)
compute             ``forward`` for the array's device ("cpu" or "gpu"), or the
                    ``Forward`` of the node's stateful instance
gradient            a ``_backward_<name>`` node fed (output gradients, forward inputs,
                    forward outputs), computing one gradient per input
=================== ==================================================================

**Write requests.** The C functions always overwrite their outputs. When the graph asks
to *add* (gradient accumulation) or not to write at all, this module passes a temporary
instead and adds it (or drops it) afterwards; non-contiguous arrays are copied the same
way. Library authors therefore never see ``req``.

**Stateful operators.** The instance made by ``createOpState`` is stored on the parsed
attributes of the node, which a node shares with its backward node (and autograd's tape
node with the imperative call): one instance per executor node and device, or, for
imperative calls, per distinct set of keyword arguments (MXLab caches parsed attributes
by keywords, so repeated calls from one call site share the instance). It is deleted
(``_opDestroyOpState``) when the graph holding it is garbage collected.

**Errors.** A library function returning ``MX_FAIL`` (message from ``MX_ERROR_MSG``) or
throwing a C++ exception becomes a :class:`LibraryError` naming the library file, the
operator, the node and the step; nothing crosses the C boundary as an exception, so the
interpreter never crashes because of a *reported* error (a segfault in library code
still kills the process, as in MXNet).
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import backend
from .base import MXLabError
from .context import Context
from .operator import registry
from .operator.grad import make_backward_node
from .operator.infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from .operator.kernel import OpContext, Req
from .operator.node import Entry, Node, NodeAttrs
from .operator.params import OperatorParamError, Param, ParamSet

__all__ = ["LIBRARY_VERSION", "Library", "LibraryError", "LibraryMetadataError", "load", "loaded_libraries"]

#: The ABI version of framework/include/lib_api.h this loader speaks (``MX_LIBRARY_VERSION``).
LIBRARY_VERSION = 1
_MAX_NDIM = 32  # MX_MAX_NDIM

_DTYPE_CODES = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5, "int64": 6}
_CODE_DTYPES = {code: name for name, code in _DTYPE_CODES.items()}
_STYPE_NAMES = {0: "default", 1: "row_sparse", 2: "csr"}

# _opRegGetFlags bits
_PARSE, _TYPE, _STYPE, _SHAPE, _MUTATE = 1, 2, 4, 8, 16
_FWD = {"cpu": 32, "gpu": 64}
_BWD = {"cpu": 128, "gpu": 256}
_STATE = {"cpu": 512, "gpu": 1024}
_DEVICE_INDEX = {"cpu": 0, "gpu": 1}


class LibraryError(MXLabError, ValueError):
    """Loading a custom-operator library, or one of its functions, failed."""


class LibraryInferenceError(LibraryError, InferenceError):
    """A library's inferShape/inferType/inferSType failed (also an InferenceError)."""


class LibraryParamError(LibraryError, OperatorParamError):
    """A library's parseAttrs rejected the keyword arguments (also an OperatorParamError)."""


class LibraryMetadataError(LibraryError, ValueError):
    """A library reported impossible metadata: operator count, names, counts, shapes, indices."""


#: Sanity bounds on what a library may report; larger values are corrupt, not ambitious.
_MAX_OPERATORS = 4096
_MAX_OPERATOR_ARRAYS = 4096  # inputs or outputs of one operator


# ------------------------------------------------------------------------------ allocation
_AllocFn = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
_call_local = threading.local()  # .buffers: memory lent to the running call; .ctx its device


def _keep(buffer: Any) -> None:
    _call_local.buffers.append(buffer)


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
        ctx = getattr(_call_local, "ctx", None)
        if ctx is None or ctx.device_type != "gpu":
            return None
        buffer = backend.empty_buffer(ctx, max(int(size), 1))
        _keep(buffer)
        return buffer.data.ptr
    except Exception:
        return None


def _pointer(array: Any) -> int:
    return int(array.ctypes.data) if isinstance(array, np.ndarray) else int(array.data.ptr)


def _tensor_args(arrays: list[Any], lib: Library, op_name: str, what: str) -> tuple:
    """(count, data pointers, flattened shapes, ndims, dtype codes) for a list of contiguous arrays:
    the five C arguments ``lib_api.h`` takes for each tensor list (``_TENSOR_LIST_ARGTYPES``)."""
    n = len(arrays)
    data = (ctypes.c_void_p * max(n, 1))(*[_pointer(a) for a in arrays])
    dims = [int(d) for a in arrays for d in a.shape]
    shapes = (ctypes.c_int64 * max(len(dims), 1))(*dims)
    ndims = (ctypes.c_int * max(n, 1))(*[a.ndim for a in arrays])
    codes = []
    for i, a in enumerate(arrays):
        code = _DTYPE_CODES.get(a.dtype.name)
        if code is None:
            raise LibraryError(
                f"{lib.name}: operator {op_name!r}: {what} {i} has dtype {a.dtype.name}, "
                f"which lib_api.h cannot describe (use one of {', '.join(_DTYPE_CODES)})"
            )
        codes.append(code)
    return n, data, shapes, ndims, (ctypes.c_int * max(n, 1))(*codes)


def _device_args(ctx: Context, stream: Any) -> tuple:
    """The C arguments that end both compute calls: device type and id, the allocators, the stream."""
    dev_type = 2 if ctx.device_type == "gpu" else 1
    return dev_type, ctx.device_id, _cpu_alloc, _gpu_alloc, None, stream


_INT, _VOID_P = ctypes.c_int, ctypes.c_void_p
#: (count, data pointers, flattened shapes, ndims, dtype codes): see :func:`_tensor_args`.
_TENSOR_LIST_ARGTYPES = [_INT, ctypes.POINTER(_VOID_P), ctypes.POINTER(ctypes.c_int64)] + [ctypes.POINTER(_INT)] * 2
#: (device type, device id, cpu allocator, gpu allocator, allocator context, stream): see :func:`_device_args`.
_DEVICE_ARGTYPES = [_INT, _INT, _AllocFn, _AllocFn, _VOID_P, _VOID_P]


# ------------------------------------------------------------------------------ the library
class Library:
    """One loaded library file: its ctypes handle and the operators it registered."""

    def __init__(self, path: str, handle: ctypes.CDLL) -> None:
        self.path = path
        self.name = os.path.basename(path)
        self.handle = handle
        self.operators: list[str] = []
        #: name -> the operator's adapter (``num_states_created`` counts stateful instances)
        self.ops: dict[str, Any] = {}
        self._declare()

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
        for fname, (argtypes, restype) in sig.items():
            try:
                fn = getattr(h, fname)
            except AttributeError:
                raise LibraryError(
                    f"{self.path}: missing exported function {fname}; rebuild the library against "
                    "framework/include/lib_api.h"
                ) from None
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


_libraries: dict[str, Library] = {}
_load_lock = threading.Lock()


def loaded_libraries() -> list[Library]:
    """The libraries loaded so far, in load order."""
    return list(_libraries.values())


def _log(message: str) -> None:
    stamp = time.strftime("%H:%M:%S")
    print(f"[{stamp}] framework/library.py: {message}", file=sys.stderr)


def load(path: str, verbose: bool = True) -> Library:
    """Load a custom-operator library and register its operators (MXNet's ``mx.library.load``).

    Checks the library's ``MX_LIBRARY_VERSION`` against :data:`LIBRARY_VERSION`, calls its
    ``initialize(version)``, then registers every operator it declared. Loading the same
    file again returns the already loaded :class:`Library`. ``verbose`` logs what was
    found, as MXNet does. Unlike MXNet, relative paths are accepted (made absolute).
    """
    if not isinstance(path, str | os.PathLike):
        raise LibraryError(f"load: path must be a string, got {type(path).__name__}")
    path = os.path.abspath(os.fspath(path))
    if not os.path.isfile(path):
        raise LibraryError(f"load: library file {path!r} does not exist")
    with _load_lock:
        found = _libraries.get(path)
        if found is not None:
            if verbose:
                _log(f"Library {path} already loaded ({len(found.operators)} operators)")
            return found
        try:
            handle = ctypes.CDLL(path)
        except OSError as err:
            raise LibraryError(f"load: {path!r} is not a loadable shared library: {err}") from None
        if not hasattr(handle, "_opVersion"):
            raise LibraryError(
                f"load: {path!r} is not an MXLab operator library (it exports no _opVersion; "
                'build it with #include "lib_api.h" from framework/include)'
            )
        handle._opVersion.argtypes, handle._opVersion.restype = [], ctypes.c_int
        version = int(handle._opVersion())
        if version != LIBRARY_VERSION:
            raise LibraryError(
                f"load: library {os.path.basename(path)} was built against lib_api.h version {version}, but this MXLab "
                f"speaks version {LIBRARY_VERSION}; rebuild it with this MXLab's framework/include/lib_api.h"
            )
        lib = Library(path, handle)
        lib.check(lib._opInitialize(LIBRARY_VERSION), None, f"initialize({LIBRARY_VERSION})")
        count = int(lib._opRegSize())
        if not 0 <= count <= _MAX_OPERATORS:
            raise LibraryMetadataError(
                f"load: library {lib.name} reports {count} operators (_opRegSize); expected 0 to {_MAX_OPERATORS}"
            )
        if verbose:
            _log(f"Found {count} operators in library")
        ops = []
        for index in range(count):
            name = _operator_name(lib, index, {op.name for op in ops})
            ops.append(_LibraryOp(lib, index, name, int(lib._opRegGetFlags(index))))
            if verbose:
                _log(f"\tOp[{index}] {name}")
        for op in ops:  # check everything before registering anything
            op.validate()
        for op in ops:
            op.register()
            lib.operators.append(op.name)
            lib.ops[op.name] = op
        if verbose:
            _log("Found 0 partitioners in library")
        _libraries[path] = lib
        return lib


def _operator_name(lib: Library, index: int, seen: set[str]) -> str:
    """Operator ``index``'s name as the library reports it: UTF-8, an identifier, not repeated."""
    raw = lib._opRegGetName(index)
    where = f"load: library {lib.name}: operator {index} (_opRegGetName)"
    if raw is None:
        raise LibraryMetadataError(f"{where} has no name (NULL)")
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise LibraryMetadataError(f"{where}: name is not UTF-8 at byte {err.start}: {raw[:40]!r}") from None
    if not name.isidentifier():
        raise LibraryMetadataError(f"{where}: name {name!r:.60} is not a Python identifier (mx.nd.<name> must work)")
    if name in seen:
        raise LibraryMetadataError(f"{where}: name {name!r} is declared twice in the library")
    return name


# ------------------------------------------------------------------------------ parameters
class OpenFields(dict):
    """The ``fields`` of a parameter set that accepts any keyword as a string parameter.

    Library operators (and ``Custom``) learn their keywords only at call time, so the
    front ends must treat every non-hidden keyword as a parameter: membership is always
    true, lookups of undeclared names give a string :class:`Param`, and iteration yields
    only the declared fields (so generated signatures and docs list just those).
    """

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str)

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        return Param(str, "", "an attribute passed through as a string") if isinstance(key, str) else default


def _make_param_class(op: _LibraryOp) -> type[ParamSet]:
    """A ParamSet accepting any keyword (as a string) and validated by the library's parseAttrs."""

    class LibraryAttrs(ParamSet):
        __doc__ = f"Attributes of {op.name} (from {op.lib.name}): any keyword, passed as strings."

        @classmethod
        def parse(cls, op_name: str, kwargs: Mapping[str, Any]) -> ParamSet:
            values = {str(k): (v if isinstance(v, str) else str(v)) for k, v in kwargs.items()}
            values.pop("num_args", None)  # the front ends' count of positional inputs, not for the library
            inst = cls(values)
            keys = (ctypes.c_char_p * max(len(values), 1))(*[k.encode() for k in values])
            vals = (ctypes.c_char_p * max(len(values), 1))(*[v.encode() for v in values.values()])
            object.__setattr__(inst, "_c_attrs", (keys, vals, len(values)))
            num_in, num_out = ctypes.c_int(-1), ctypes.c_int(-1)
            ok = op.lib._opCallParseAttrs(op.index, keys, vals, len(values), num_in, num_out)
            op.lib.check(ok, op.name, "parseAttrs", cls=LibraryParamError)
            if not (0 <= num_in.value <= _MAX_OPERATOR_ARRAYS and 1 <= num_out.value <= _MAX_OPERATOR_ARRAYS):
                raise LibraryParamError(
                    f"library {op.lib.name}: operator {op.name!r}: parseAttrs set num_in={num_in.value}, "
                    f"num_out={num_out.value} (need 0 <= num_in and 1 <= num_out, both <= {_MAX_OPERATOR_ARRAYS})"
                )
            object.__setattr__(inst, "_counts", (num_in.value, num_out.value))
            object.__setattr__(inst, "_states", _StateBox(op))
            object.__setattr__(inst, "_mutate", None)
            return inst

        def to_strings(self) -> dict[str, str]:
            return dict(self._values)

        @classmethod
        def describe(cls) -> str:
            return "**kwargs : str\n    Attributes passed to the library's parseAttrs as strings."

    LibraryAttrs.__name__ = LibraryAttrs.__qualname__ = f"{op.name}Attrs"
    LibraryAttrs.fields = OpenFields()
    return LibraryAttrs


class _StateBox:
    """The stateful instances (one per device) of one node; deleted with the node's attributes."""

    def __init__(self, op: _LibraryOp) -> None:
        self.handles: dict[tuple[str, int], int] = {}
        self.lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _destroy_states, op.lib._opDestroyOpState, self.handles)

    def get(self, op: _LibraryOp, attrs: NodeAttrs, ctx: Context) -> int:
        key = (ctx.device_type, ctx.device_id)
        with self.lock:
            handle = self.handles.get(key)
            if handle is None:
                handle = self.handles[key] = op.create_state(attrs, ctx)
            return handle


def _destroy_states(destroy: Any, handles: dict) -> None:
    for handle in handles.values():
        destroy(handle)
    handles.clear()


# ------------------------------------------------------------------------------ one operator
class _LibraryOp:
    """The registry attributes of one library operator (and of its ``_backward_`` twin)."""

    def __init__(self, lib: Library, index: int, name: str, flags: int) -> None:
        self.lib, self.index, self.name, self.flags = lib, index, name, flags
        self.backward_name = f"_backward_{name}"
        self.stateful = bool(flags & (_STATE["cpu"] | _STATE["gpu"]))
        self.params = _make_param_class(self)
        #: stateful instances created so far (for tests and curious learners)
        self.num_states_created = 0

    def has(self, bit: int) -> bool:
        return bool(self.flags & bit)

    def validate(self) -> None:
        """Required functions present, and no clash with an operator already registered."""
        missing = [
            what
            for bit, what in ((_PARSE, "parseAttrs"), (_TYPE, "inferType"), (_SHAPE, "inferShape"))
            if not self.has(bit)
        ]
        if not (self.has(_FWD["cpu"]) or self.has(_FWD["gpu"]) or self.stateful):
            missing.append("forward (setForward) or createOpState (setCreateOpState)")
        if missing:
            raise LibraryError(
                f"library {self.lib.name}: operator {self.name!r} is missing required function(s): "
                + ", ".join(missing)
            )
        for name in (self.name, self.backward_name):
            if registry.exists(name):
                owner = registry.get(name).front_door
                raise LibraryError(
                    f"library {self.lib.name}: operator {name!r} is already registered (by {owner}); "
                    "rename it in the library"
                )

    def devices(self, backward: bool) -> list[str]:
        bits = _STATE if self.stateful else (_BWD if backward else _FWD)
        return [d for d in ("cpu", "gpu") if self.has(bits[d])]

    def differentiable(self) -> bool:
        return self.stateful or bool(self.devices(backward=True))

    # -------------------------------------------------------------- counts and names
    @staticmethod
    def counts(attrs: NodeAttrs) -> tuple[int, int]:
        return attrs.parsed._counts  # type: ignore[union-attr]

    @staticmethod
    def c_attrs(attrs: NodeAttrs) -> tuple:
        return attrs.parsed._c_attrs  # type: ignore[union-attr]

    def mutate_inputs(self, attrs: NodeAttrs) -> list[int]:
        parsed = attrs.parsed
        if parsed._mutate is None:  # type: ignore[union-attr]
            num_in, _ = self.counts(attrs)
            indices, count = (ctypes.c_int * max(num_in, 1))(), ctypes.c_int(0)
            ok = self.lib._opCallMutateInputs(self.index, *self.c_attrs(attrs), num_in, indices, count)
            self.lib.check(ok, self.name, "mutateInputs", attrs.name)
            if not 0 <= count.value <= num_in:
                raise LibraryMetadataError(
                    f"library {self.lib.name}: operator {self.name!r}: mutateInputs reported {count.value} "
                    f"indices, but the operator has {num_in} inputs"
                )
            found = [int(indices[i]) for i in range(count.value)]
            bad = [i for i in found if not 0 <= i < num_in]
            if bad:
                raise LibraryError(
                    f"library {self.lib.name}: operator {self.name!r}: mutateInputs returned index {bad[0]}, "
                    f"but the operator has {num_in} inputs"
                )
            object.__setattr__(parsed, "_mutate", found)
        return list(parsed._mutate)  # type: ignore[union-attr]

    # -------------------------------------------------------------- inference (forward)
    def _check_stype(self, attrs: NodeAttrs) -> None:
        num_in, num_out = self.counts(attrs)
        stypes = (ctypes.c_int * (num_in + num_out))(*([0] * num_in + [-1] * num_out))
        ok = self.lib._opCallInferSType(self.index, *self.c_attrs(attrs), stypes, num_in, num_out)
        self.lib.check(ok, self.name, "inferSType", attrs.name, LibraryInferenceError)
        for i in range(num_in + num_out):
            if stypes[i] not in (0, -1):
                what = f"input {i}" if i < num_in else f"output {i - num_in}"
                raise LibraryInferenceError(
                    f"library {self.lib.name}: operator {self.name!r} (node {attrs.name!r}): inferSType chose "
                    f"storage type {_STYPE_NAMES.get(stypes[i], stypes[i])!r} for {what}; MXLab supports only "
                    "dense arrays (kDefaultStorage)"
                )

    def infer_shape(self, attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        num_in, num_out = self.counts(attrs)
        if self.has(_STYPE):
            self._check_stype(attrs)
        if not all(shape_known(s) for s in in_shapes):
            return False  # the C function needs every input shape
        in_ndims = (ctypes.c_int * max(num_in, 1))(*[len(s) for s in in_shapes])
        dims = [int(d) for s in in_shapes for d in s]
        in_dims = (ctypes.c_uint * max(len(dims), 1))(*dims)
        out_ndims = (ctypes.c_int * num_out)(*([-1] * num_out))
        out_dims = (ctypes.c_uint * (num_out * _MAX_NDIM))()
        ok = self.lib._opCallInferShape(
            self.index, *self.c_attrs(attrs), num_in, in_ndims, in_dims, num_out, out_ndims, out_dims
        )
        self.lib.check(
            ok, self.name, f"inferShape (input shapes {list(map(tuple, in_shapes))})", attrs.name, LibraryInferenceError
        )
        for i in range(num_out):
            if out_ndims[i] < 0:
                continue
            if out_ndims[i] > _MAX_NDIM:
                raise LibraryInferenceError(
                    f"library {self.lib.name}: operator {self.name!r} (node {attrs.name!r}): inferShape gave output "
                    f"{i} {out_ndims[i]} dimensions; at most {_MAX_NDIM} are allowed"
                )
            shape = tuple(int(out_dims[i * _MAX_NDIM + d]) for d in range(out_ndims[i]))
            shape_assign(out_shapes, i, shape, attrs.name, f"output {i}")
        return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))

    def infer_type(self, attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
        num_in, num_out = self.counts(attrs)
        if any(t is None for t in in_types):
            return False
        codes = []
        for i, t in enumerate(in_types):
            if t not in _DTYPE_CODES:
                raise LibraryInferenceError(
                    f"library {self.lib.name}: operator {self.name!r} (node {attrs.name!r}): input {i} has dtype "
                    f"{t}, which lib_api.h cannot describe"
                )
            codes.append(_DTYPE_CODES[t])
        codes += [_DTYPE_CODES.get(t, -1) if t is not None else -1 for t in out_types]
        types = (ctypes.c_int * (num_in + num_out))(*codes)
        ok = self.lib._opCallInferType(self.index, *self.c_attrs(attrs), types, num_in, num_out)
        self.lib.check(ok, self.name, f"inferType (input types {list(in_types)})", attrs.name, LibraryInferenceError)
        for i in range(num_in + num_out):
            code = types[i]
            if code in (-1, 100):
                continue
            name = _CODE_DTYPES.get(code)
            if name is None:
                raise LibraryInferenceError(
                    f"library {self.lib.name}: operator {self.name!r}: inferType produced unknown type code {code}"
                )
            if i < num_in:
                type_assign(in_types, i, name, attrs.name, f"input {i}")
            else:
                type_assign(out_types, i - num_in, name, attrs.name, f"output {i - num_in}")
        return all(t is not None for t in list(in_types) + list(out_types))

    # -------------------------------------------------------------- inference (backward)
    def backward_infer_shape(self, attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        """Inputs: ograds (like outputs), forward inputs, forward outputs; outputs: like the inputs."""
        num_in, num_out = self.counts(attrs)
        for i in range(num_out):  # ograd i ~ output i
            shape_assign(in_shapes, i, in_shapes[num_out + num_in + i], attrs.name, f"output gradient {i}")
            shape_assign(in_shapes, num_out + num_in + i, in_shapes[i], attrs.name, f"output {i}")
        for i in range(num_in):  # input gradient i ~ input i
            shape_assign(out_shapes, i, in_shapes[num_out + i], attrs.name, f"gradient of input {i}")
            shape_assign(in_shapes, num_out + i, out_shapes[i], attrs.name, f"input {i}")
        return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))

    def backward_infer_type(self, attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
        num_in, num_out = self.counts(attrs)
        for i in range(num_out):
            type_assign(in_types, i, in_types[num_out + num_in + i], attrs.name, f"output gradient {i}")
            type_assign(in_types, num_out + num_in + i, in_types[i], attrs.name, f"output {i}")
        for i in range(num_in):
            type_assign(out_types, i, in_types[num_out + i], attrs.name, f"gradient of input {i}")
            type_assign(in_types, num_out + i, out_types[i], attrs.name, f"input {i}")
        return all(t is not None for t in list(in_types) + list(out_types))

    def gradient(self, node: Node, out_grads: list[Entry]) -> list[Entry]:
        outputs = [Entry(node, i) for i in range(node.num_outputs())]
        backward = make_backward_node(node, self.backward_name, list(out_grads) + list(node.inputs) + outputs)
        return [Entry(backward, i) for i in range(len(node.inputs))]

    # -------------------------------------------------------------- state
    def create_state(self, attrs: NodeAttrs, ctx: Context, *_: Any) -> int:
        """A new CustomStatefulOp instance for ``ctx`` (opaque pointer), via createOpState."""
        device = ctx.device_type
        if not self.has(_STATE[device]):
            raise LibraryError(
                f"library {self.lib.name}: operator {self.name!r} has no createOpState for {device} "
                f"(registered for {', '.join(self.devices(False)) or 'no device'})"
            )
        handle = ctypes.c_void_p()
        ok = self.lib._opCallCreateOpState(self.index, _DEVICE_INDEX[device], *self.c_attrs(attrs), handle)
        self.lib.check(ok, self.name, f"createOpState ({device})", attrs.name)
        self.num_states_created += 1
        return int(handle.value)

    # -------------------------------------------------------------- compute
    def forward(self, attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list, outputs: list) -> None:
        self._compute(True, attrs, op_ctx, inputs, req, outputs)

    def backward(self, attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list, outputs: list) -> None:
        self._compute(False, attrs, op_ctx, inputs, req, outputs)

    def _compute(
        self, is_forward: bool, attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list, outputs: list
    ) -> None:
        xp, ctx = op_ctx.xp, op_ctx.ctx
        step = "forward" if is_forward else "backward"
        in_c = [xp.ascontiguousarray(a) for a in inputs]
        # Outputs the C code may overwrite directly, or temporaries (add / null / non-contiguous).
        out_c = []
        for out, r in zip(outputs, req, strict=True):
            if r is Req.ADD:
                out_c.append(xp.zeros(out.shape, out.dtype))
            elif r is Req.NULL or not out.flags.c_contiguous:
                out_c.append(xp.empty(out.shape, out.dtype))
            else:
                out_c.append(out)
        tensor_and_device_args = (
            *_tensor_args(in_c, self.lib, self.name, "input"),
            *_tensor_args(out_c, self.lib, self.name, "output"),
            *_device_args(ctx, getattr(op_ctx.stream, "ptr", None)),
        )
        _call_local.buffers, _call_local.ctx = [], ctx
        try:
            if self.stateful:
                handle = attrs.parsed._states.get(self, attrs, ctx)  # type: ignore[union-attr]
                ok = self.lib._opCallFStatefulCompute(int(is_forward), handle, *tensor_and_device_args)
                self.lib.check(ok, self.name, "Forward" if is_forward else "Backward", attrs.name)
            else:
                device = ctx.device_type
                have = self.devices(backward=not is_forward)
                if device not in have:
                    raise LibraryError(
                        f"library {self.lib.name}: operator {self.name!r} has no {step} for {device} "
                        f"(registered for {', '.join(have) or 'no device'})"
                    )
                ok = self.lib._opCallFCompute(
                    self.index,
                    int(is_forward),
                    _DEVICE_INDEX[device],
                    *self.c_attrs(attrs),
                    *tensor_and_device_args,
                )
                self.lib.check(ok, self.name, f"{step} ({device})", attrs.name)
        finally:
            _call_local.buffers, _call_local.ctx = [], None
        for out, tmp, r in zip(outputs, out_c, req, strict=True):
            if tmp is out or r is Req.NULL:
                continue
            if r is Req.ADD:
                out[...] += tmp
            else:
                out[...] = tmp

    # -------------------------------------------------------------- registration
    def register(self) -> None:
        counts = self.counts
        forward_devices = self.devices(backward=False)
        op = (
            registry.register(self.name)
            .describe(f"Custom operator {self.name} loaded from {self.lib.path}.")
            .set_params(self.params)
            .set_num_inputs(lambda attrs: counts(attrs)[0])
            .set_num_outputs(lambda attrs: counts(attrs)[1])
            .set_key_var_num_args("num_args")  # inputs are positional: mx.nd.op(*arrays, **attrs)
            .set_infer_shape(self.infer_shape)
            .set_infer_type(self.infer_type)
            .set_compute(self.forward, forward_devices)
        )
        if self.has(_MUTATE):
            op.set_mutate_inputs(self.mutate_inputs)
        op.front_door = f"library {self.lib.name}"
        if self.stateful:
            op.create_state = self.create_state  # also tells the mirror pass not to recompute it
        if not self.differentiable():
            return
        op.set_gradient(self.gradient)
        backward = (
            registry.register(self.backward_name)
            .describe(f"Backward of {self.name} (library {self.lib.name}).")
            .set_params(self.params)
            .set_num_inputs(lambda attrs: counts(attrs)[0] + 2 * counts(attrs)[1])
            .set_num_outputs(lambda attrs: counts(attrs)[0])
            .set_infer_shape(self.backward_infer_shape)
            .set_infer_type(self.backward_infer_type)
            .set_compute(self.backward, self.devices(backward=True))
            .set_is_backward()
        )
        backward.front_door = op.front_door
        if self.stateful:
            backward.create_state = self.create_state
