"""NDArray: an asynchronous n-dimensional array on a device (MXNet's ``mx.nd.NDArray``).

An NDArray is a *view* (shape, dtype, offset, strides) of a storage block, and shares that
block's engine variable with every other view of it. Every operation on it is pushed to
the engine and returns at once; reading values (``asnumpy``, ``asscalar``, printing)
waits for the writes pushed before. ``_data`` is the NumPy/CuPy view that engine functions
compute on; user code never touches it directly.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .. import backend
from ..base import MXLabError
from ..context import Context, current_context
from ..engine import Engine, FnProperty
from ..errors import check_stype
from .chunk import Chunk, bury_the_dead

# MXNet's mx_real_t: the dtype of arrays created without one (mx.nd.array of anything but an NDArray,
# zeros, ones, empty, full).
DEFAULT_DTYPE = "float32"

_DTYPES = ("float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool")


def normalize_dtype(dtype: Any, what: str = "dtype") -> np.dtype:
    """A NumPy dtype MXLab supports, or a clear error naming the supported ones."""
    try:
        resolved = np.dtype(dtype)
    except TypeError:
        raise MXLabError(f"{what}: unknown dtype {dtype!r}; supported: {', '.join(_DTYPES)}") from None
    if resolved.name not in _DTYPES:
        raise MXLabError(f"{what}: dtype {resolved.name} is not supported; supported: {', '.join(_DTYPES)}")
    return resolved


_DTYPE_OBJECTS: dict[str, np.dtype] = {name: np.dtype(name) for name in _DTYPES}


def new_array(shape: tuple[int, ...], ctx: Context, dtype_name: str, nbytes: int | None = None) -> NDArray:
    """A fresh array for already-validated arguments: the allocation fast path of ``invoke``.

    ``nbytes`` (the shape's element count times the dtype's item size) may be passed by a
    caller that worked it out once for many calls (``CallPlan.out_nbytes``).
    """
    dtype = _DTYPE_OBJECTS[dtype_name]
    if nbytes is None:
        nbytes = math.prod(shape) * dtype.itemsize
    chunk = Chunk(nbytes, ctx)
    handle = chunk.handle
    view = handle.view  # the typed view the block's last owner made, if any (see storage.Handle)
    if view is not None and view.dtype is dtype and view.shape == shape:
        return NDArray(chunk, view)
    buffer = handle.buffer
    if type(buffer) is np.ndarray:  # one constructor call instead of slice, view and reshape
        view = np.ndarray(shape, dtype, buffer)
    else:
        view = buffer[:nbytes].view(dtype).reshape(shape)
    handle.view = view
    return NDArray(chunk, view)


class NotAScalarError(MXLabError, ValueError):
    """``asscalar`` was called on an array with more than one element (MXNet raises ValueError)."""


class ShapeMismatchError(MXLabError, ValueError):
    """A value assigned into an array (or part of one) whose shape does not broadcast to the target's."""


class NDArray:
    """An array whose operations run asynchronously on the dependency engine.

    The methods that run operators (arithmetic, ``reshape``, ``astype``, ``T``, reading with
    ``[]``, ``x.sum()``-style operator methods, ``attach_grad``, ``backward``) are written in
    :mod:`framework.ndarray.methods`, which installs them here: they need the imperative path,
    and the imperative path needs this class.
    """

    __slots__ = ("_chunk", "_data", "_grad", "_grad_req", "_entry", "__weakref__")
    # Make numpy defer to our reflected operators (np.float32(2) * nd).
    __array_priority__ = 1000.0

    def __init__(self, chunk: Chunk, data: Any) -> None:
        self._chunk = chunk
        self._data = data
        self._grad: NDArray | None = None
        self._grad_req = "null"
        self._entry = None  # autograd: the recorded node entry that produced this array

    # ------------------------------------------------------------------ properties
    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def dtype(self) -> type[np.generic]:
        """The element type as MXNet gives it: the NumPy scalar type (``x.dtype is np.float32``,
        ``x.dtype.__name__``); ``np.dtype(x.dtype)`` is the ``numpy.dtype``."""
        return self._data.dtype.type

    @property
    def size(self) -> int:
        return int(self._data.size)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def context(self) -> Context:
        return self._chunk.ctx

    ctx = context

    @property
    def stype(self) -> str:
        """Storage type: MXLab has dense arrays only."""
        return "default"

    @property
    def grad(self) -> NDArray | None:
        """The gradient buffer attached by :meth:`attach_grad` (None before)."""
        return self._grad

    # ------------------------------------------------------------------ synchronisation
    def wait_to_read(self) -> None:
        """Block until every pushed write to this array has finished (re-raises their errors)."""
        self._chunk.engine.wait_for_var(self._chunk.var)

    def asnumpy(self) -> np.ndarray:
        """A NumPy copy of the values, after waiting for pending writes."""
        self.wait_to_read()
        data = self._data
        if self._chunk.ctx.device_type == "gpu":
            return data.get()
        return np.array(data, copy=True)

    def asscalar(self) -> np.generic:
        """The single value of a one-element array, as a NumPy scalar of the array's dtype.

        MXNet 1.9.1 returns ``numpy.float32(3.5)`` for ``nd.array([3.5])`` (not a Python
        float), so arithmetic on the result keeps the array's precision. For one-element
        arrays of two or more dimensions MXNet hands back the NumPy array itself; MXLab
        returns the scalar (docs/differences.md).
        """
        if self.size != 1:
            raise NotAScalarError(
                f"The current array is not a scalar: asscalar needs exactly one element, shape is {self.shape}"
            )
        return self.asnumpy().reshape(())[()]

    def item(self) -> Any:
        """The single value as a Python number (NumPy's ``item``; ``asscalar`` keeps the dtype)."""
        return self.asscalar().item()

    def __repr__(self) -> str:
        shape = "x".join(str(d) for d in self.shape) or "scalar"
        return f"\n{self.asnumpy()}\n<NDArray {shape} @{self.context}>"

    def __str__(self) -> str:
        return repr(self)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d NDArray")
        return self.shape[0]

    def __iter__(self) -> Iterator[NDArray]:
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                f"the truth value of an NDArray with {self.size} elements is ambiguous; use .asnumpy().any() or .all()"
            )
        return bool(self.asscalar())

    def __float__(self) -> float:
        return float(self.asscalar())

    def __int__(self) -> int:
        return int(self.asscalar())

    def __index__(self) -> int:
        if not np.issubdtype(self.dtype, np.integer):
            raise TypeError(f"only integer NDArrays can be used as an index, not {self.dtype}")
        return int(self.asscalar())

    __nonzero__ = __bool__  # Python 2's name, which MXNet 1.x still defines

    # MXNet's C handle of the array. MXLab has no C library: always None (documented).
    handle = None

    @property
    def writable(self) -> bool:
        """Whether the array may be written: every MXLab array can be (MXNet's read-only DLPack imports aside)."""
        return True

    # ------------------------------------------------------------------ pickling (values and context)
    def __reduce__(self) -> tuple:
        """Pickle through :meth:`__getstate__` / :meth:`__setstate__`, as MXNet's NDArray does."""
        return _new_for_unpickling, (), self.__getstate__()

    def __getstate__(self) -> dict[str, Any]:
        """The values (a NumPy copy, after pending writes) and the context; not the engine state."""
        ctx = self.context
        return {"values": self.asnumpy(), "device_type": ctx.device_type, "device_id": ctx.device_id}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Become a fresh array holding ``state``'s values (on the pickled context)."""
        values = state["values"]
        fresh = array(values, ctx=Context(state["device_type"], state["device_id"]), dtype=values.dtype)
        self._chunk, self._data = fresh._chunk, fresh._data
        self._grad, self._grad_req, self._entry = None, "null", None

    # ------------------------------------------------------------------ DLPack (NumPy's protocol)
    def to_dlpack_for_read(self) -> DLPackTensor:
        """The values, shared (not copied) through DLPack, after pending writes.

        MXNet returns a bare capsule; MXLab returns an object with ``__dlpack__``, which
        ``np.from_dlpack``, ``torch.from_dlpack`` and :func:`mx.nd.from_dlpack` all accept.
        """
        self.wait_to_read()
        return DLPackTensor(self._data, self._chunk)

    def to_dlpack_for_write(self) -> DLPackTensor:
        """As :meth:`to_dlpack_for_read`; a consumer may write through it (nothing else may be pending)."""
        self._chunk.engine.wait_for_var(self._chunk.var)
        return DLPackTensor(self._data, self._chunk)

    def as_nd_ndarray(self) -> NDArray:
        """This array (MXNet converts ``mx.np`` arrays back; MXLab has only ``mx.nd`` arrays)."""
        return self

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        values = self.asnumpy()
        return values if dtype is None else values.astype(dtype)

    # ------------------------------------------------------------------ copies and views
    def copy(self) -> NDArray:
        """A new array with the same values on the same context."""
        return self.copyto(self.context)

    def copyto(self, other: NDArray | Context) -> NDArray:
        """Copy into ``other`` (an array of the same shape) or onto a context; returns the copy.

        (Replaced by the version in methods.py, which also puts the copy on autograd's tape.)
        """
        return copy_values(self, other)

    def as_in_context(self, context: Context) -> NDArray:
        """This array if it already lives on ``context``, else a copy there."""
        return self if context == self.context else self.copyto(context)

    def detach(self) -> NDArray:
        """The same values, cut off from the autograd graph."""
        return NDArray(self._chunk, self._data)

    # ------------------------------------------------------------------ indexing (reading: methods.py)
    def __setitem__(self, key: Any, value: Any) -> None:
        """(Replaced by the version in methods.py, which refuses writes into arrays on autograd's tape.)"""
        assign_index(self, key, value)


class DLPackTensor:
    """An array's memory offered through the DLPack protocol (``__dlpack__``, ``__dlpack_device__``).

    The memory belongs to a storage-pool block, which returns to the pool when its chunk dies.
    A consumer keeps only the exported view alive (the capsule references it), so the view
    carries a reference to the chunk: the block stays out of the pool while anyone reads it.
    """

    __slots__ = ("_view",)

    def __init__(self, view: Any, chunk: Chunk) -> None:
        self._view = _pinned_view(view, chunk)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._view.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._view.__dlpack_device__()


_PINNED_TYPES: dict[type, type] = {}


def _pinned_view(view: Any, owner: Any) -> Any:
    """A view of ``view`` (NumPy or CuPy) that holds a reference to ``owner``.

    An array subclass with no behaviour of its own: its only job is the ``_owner`` attribute.
    """
    base = type(view)
    pinned = _PINNED_TYPES.get(base)
    if pinned is None:
        pinned = _PINNED_TYPES[base] = type(f"Pinned{base.__name__}", (base,), {})
    result = view.view(pinned)
    result._owner = owner
    return result


def _new_for_unpickling() -> NDArray:
    """An empty shell that :meth:`NDArray.__setstate__` fills."""
    return NDArray.__new__(NDArray)


def _unpickle(values: np.ndarray, device_type: str, device_id: int) -> NDArray:
    """Arrays pickled by earlier MXLab versions (values, device type, device id)."""
    return array(values, ctx=Context(device_type, device_id), dtype=values.dtype)


def _is_basic_index(key: Any) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return all(
        (isinstance(p, numbers.Integral) and not isinstance(p, bool))
        or isinstance(p, slice)
        or p is Ellipsis
        or p is None
        for p in parts
    )


def _view_key(key: Any) -> Any:
    """A basic index that always yields a view: all-integer keys get a trailing Ellipsis
    (``a[1, 2]`` is a NumPy scalar, ``a[1, 2, ...]`` a 0-d view of the same element)."""
    parts = key if isinstance(key, tuple) else (key,)
    if Ellipsis not in parts:
        return (*parts, Ellipsis)
    return key


def _advanced_index(source: NDArray, key: Any) -> tuple[tuple, tuple, list[NDArray]]:
    """An advanced index for ``source``'s data: the key as the engine applies it (index arrays
    on the array's device), the shape it selects, and the NDArrays among it (to read).

    As in MXNet, float index arrays (``mx.nd.array([0, 2])`` is float32) count as integers.
    """
    parts = key if isinstance(key, tuple) else (key,)
    index_arrays = [p for p in parts if isinstance(p, NDArray)]
    host_parts = []
    for part in parts:
        if isinstance(part, NDArray):
            part = part.asnumpy()  # noqa: PLW2901 - the index's values, on the host
            if part.dtype.kind == "f":
                part = part.astype(np.int64)  # noqa: PLW2901
        host_parts.append(part)
    try:
        probe = np.empty(source.shape, dtype=np.bool_)[tuple(host_parts)]
    except IndexError as err:
        raise MXLabError(f"NDArray indexing: {err}") from None
    xp = backend.array_module(source.context)
    index = tuple(xp.asarray(p) if isinstance(p, np.ndarray) else p for p in host_parts)
    return index, probe.shape, index_arrays


def _advanced_get(source: NDArray, key: Any) -> NDArray:
    """Advanced indexing copies (as NumPy does): the selected elements, gathered inside the engine."""
    index, shape, index_arrays = _advanced_index(source, key)
    result = empty(shape, source.context, source.dtype)
    src_data, dst_data = source._data, result._data

    def gather(run_ctx: Any) -> None:
        dst_data[...] = src_data[index]

    reads = [source._chunk.var] + [a._chunk.var for a in index_arrays if a._chunk.var is not source._chunk.var]
    source._chunk.engine.push_sync(gather, source.context, reads, [result._chunk.var], name="advanced_index")
    return result


def assign_index(target: NDArray, key: Any, value: Any) -> None:
    """``target[key] = value``: a view filled or copied into for a basic key, the selected
    elements scattered into for an advanced one (index arrays or lists, as in MXNet)."""
    if _is_basic_index(key):
        view = NDArray(target._chunk, target._data[_view_key(key)])
        if isinstance(value, NDArray):
            if value.context != target.context:
                value = value.as_in_context(target.context)
            _push_copy(value, view, broadcast=True)
        elif isinstance(value, numbers.Number | np.generic):
            _push_fill(view, value)
        else:
            _push_copy(array(value, ctx=target.context, dtype=target.dtype), view, broadcast=True)
        return
    index, shape, index_arrays = _advanced_index(target, key)
    source = value if isinstance(value, NDArray | numbers.Number | np.generic) else array(value, dtype=target.dtype)
    if isinstance(source, NDArray):
        source = source.as_in_context(target.context)
        try:
            np.broadcast_shapes(source.shape, shape)
        except ValueError:
            raise ShapeMismatchError(
                f"cannot assign an array of shape {source.shape} to {shape} selected elements"
            ) from None
    dst_data = target._data
    values = source._data if isinstance(source, NDArray) else source

    def scatter(run_ctx: Any) -> None:
        dst_data[index] = values

    reads = [a._chunk.var for a in index_arrays if a._chunk.var is not target._chunk.var]
    if isinstance(source, NDArray) and source._chunk.var is not target._chunk.var:
        reads.append(source._chunk.var)
    target._chunk.engine.push_sync(scatter, target.context, reads, [target._chunk.var], name="advanced_assign")


def copy_values(source: NDArray, other: NDArray | Context) -> NDArray:
    """``source.copyto(other)`` without autograd: into ``other`` (an array of the same shape) or
    onto a context; returns the copy."""
    if isinstance(other, Context):
        target = empty(source.shape, other, source.dtype)
    elif isinstance(other, NDArray):
        if other is source:
            raise MXLabError("copyto: cannot copy an array onto itself")
        if other.shape != source.shape:
            raise MXLabError(f"copyto: shape mismatch, source {source.shape} vs target {other.shape}")
        target = other
    else:
        raise MXLabError(f"copyto: expected an NDArray or a Context, got {type(other).__name__}")
    _push_copy(source, target)
    return target


def _push_copy(source: NDArray, target: NDArray, broadcast: bool = False) -> None:
    """Copy values between arrays (across devices too) through the engine."""
    engine = target._chunk.engine
    src, dst = source._data, target._data
    src_ctx, dst_ctx = source.context, target.context
    if broadcast:
        try:
            np.broadcast_shapes(source.shape, target.shape)
        except ValueError:
            raise ShapeMismatchError(
                f"cannot assign an array of shape {source.shape} to a slice of shape {target.shape}"
            ) from None
    if src_ctx == dst_ctx:
        prop = FnProperty.NORMAL

        def copy(run_ctx: Any) -> None:
            dst[...] = src

    else:
        prop = FnProperty.COPY_FROM_GPU if src_ctx.device_type == "gpu" else FnProperty.COPY_TO_GPU
        xp = backend.array_module(dst_ctx)

        def copy(run_ctx: Any) -> None:
            if src_ctx.device_type == "gpu" and dst_ctx.device_type == "cpu":
                dst[...] = src.get(stream=run_ctx.stream)
            else:
                with backend.device(dst_ctx):
                    dst[...] = xp.asarray(src)

    run_ctx_device = dst_ctx if dst_ctx.device_type == "gpu" else src_ctx
    if source._chunk.var is target._chunk.var:  # assigning a view of the array to another view of it
        snapshot = source.copy()
        _push_copy(snapshot, target, broadcast)
        return
    engine.push_sync(copy, run_ctx_device, [source._chunk.var], [target._chunk.var], prop=prop, name="copyto")


def _push_fill(target: NDArray, value: Any) -> None:
    data = target._data

    def fill(run_ctx: Any) -> None:
        data[...] = value

    target._chunk.engine.push_sync(fill, target.context, [], [target._chunk.var], name="fill")


# ---------------------------------------------------------------------- creation
def empty(
    shape: int | Sequence[int], ctx: Context | None = None, dtype: Any = None, stype: str | None = None
) -> NDArray:
    """An uninitialised array (its memory comes from the storage pool); dtype defaults to float32."""
    check_stype(stype, "empty")
    shape = _check_shape(shape, "empty")
    ctx = ctx or current_context()
    if not isinstance(ctx, Context):
        raise MXLabError(f"ctx must be a Context such as mx.cpu(0), got {ctx!r}")
    dtype = normalize_dtype(DEFAULT_DTYPE if dtype is None else dtype)
    backend.check_context(ctx)
    return new_array(shape, ctx, dtype.name)


def array(source_array: Any, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """An array holding a copy of ``source_array`` (NDArray, NumPy array, list, scalar).

    As in MXNet 1.x the dtype defaults to float32 whatever the source holds (NumPy float64 and
    int arrays, Python ints, NumPy scalars), except that an NDArray source keeps its own dtype.
    """
    source = source_array
    if isinstance(source, NDArray):
        result = source.copyto(ctx or source.context)
        return result if dtype is None else result.astype(dtype)
    dtype = normalize_dtype(DEFAULT_DTYPE if dtype is None else dtype, "array")
    try:
        values = np.array(source, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise MXLabError(f"array: cannot convert {type(source).__name__} to an array of {dtype.name}: {err}") from None
    result = empty(values.shape, ctx, dtype)
    target = result._data
    xp = backend.array_module(result.context)

    def load(run_ctx: Any) -> None:
        target[...] = values if xp is np else xp.asarray(values)

    prop = FnProperty.NORMAL if result.context.device_type == "cpu" else FnProperty.COPY_TO_GPU
    result._chunk.engine.push_sync(load, result.context, [], [result._chunk.var], prop=prop, name="array")
    return result


def waitall() -> None:
    """Block until every pushed operation has finished (re-raises the first unreported error)."""
    bury_the_dead()
    Engine.get().wait_for_all()


def _check_shape(shape: Any, api: str) -> tuple[int, ...]:
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (int(shape),)
    try:
        shape = tuple(int(d) for d in shape if not isinstance(d, bool) or False)
    except TypeError:
        raise MXLabError(f"{api}: shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise MXLabError(f"{api}: shape dimensions must be >= 0, got {shape}")
    return shape
