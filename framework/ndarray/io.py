"""``mx.nd.save`` / ``mx.nd.load``: MXNet 1.x's binary NDArray file format, byte for byte.

A ``.params`` file written by MXNet loads here and a file written here loads in MXNet. The
format (little-endian throughout) is a list of arrays followed by an optional list of names::

    uint64  0x112                 file magic (kMXAPINDArrayListMagic)
    uint64  0                     reserved
    uint64  N                     number of arrays, then N times:
        uint32  0xF993FAC9        array magic (V2; V1 = 0xF993FAC8, V3 = 0xF993FACA)
        int32   storage type      0 = dense (1 row_sparse, 2 csr: not in MXLab)      [V2, V3]
        uint32  ndim, int64 x ndim   the shape                       (int32 ndim in V3)
        int32   device type, int32 device id      1 = cpu, 2 = gpu
        int32   type flag         0 float32, 1 float64, 2 float16, 3 uint8, 4 int32,
                                  5 int8, 6 int64, 7 bool
        bytes   the values, C order, prod(shape) * itemsize bytes
    uint64  K                     number of names: 0 (list form) or N (dict form), then K times:
        uint64  length, bytes     the UTF-8 name (``arg:fc1_weight``, ``aux:bn_moving_mean``)

Writing: MXLab always writes V2 headers, as MXNet 1.9.1 does by default. A 0-d array is
written as MXNet writes it (ndim 0, then its value); MXNet 1.9.1 itself cannot read such
an entry back (its V2 reader takes ndim 0 for "no array"), MXLab can.

Reading: V2, the legacy V1 header (no storage type), V3 (NumPy-shape files written
under ``npx.set_np()``) and the pre-1.0 "v0" layout are accepted. A v0 array has no magic
at all: its first uint32 *is* the ndim (1 to 32, which no magic can be mistaken for), and
its dimensions are uint32, not int64::

        uint32  ndim, uint32 x ndim   the shape                      [v0]
        int32   device type, int32 device id;  int32 type flag;  the values (as above)

A v0 entry of ndim 0 (how old MXNet saved an empty handle) is refused, as MXNet 1.9.1
refuses it. Anything malformed raises :class:`NDArrayFileError`
naming the file, the byte offset and what was expected there.

Contexts: each array's device is recorded as it was saved. Loading follows MXNet: arrays
saved on a CPU (any id) load onto ``cpu(0)``; arrays saved on ``gpu(i)`` load back onto
``gpu(i)`` when that GPU exists, else onto ``cpu(0)``. Pass ``ctx=`` to put every array on
one device instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import backend
from ..atomic_file import write_bytes_atomic
from ..base import DTYPE_TO_FLAG, FLAG_TO_DTYPE, MXLabError
from ..context import Context, cpu
from ..errors import read_existing
from .ndarray import NDArray, array

#: uint64 at the start of every NDArray list file (MXNet's ``kMXAPINDArrayListMagic``).
LIST_MAGIC = 0x112
#: uint32 at the start of each array: legacy V1 (no storage type), V2 (default), V3 (NumPy shapes).
ARRAY_MAGIC_V1 = 0xF993FAC8
ARRAY_MAGIC_V2 = 0xF993FAC9
ARRAY_MAGIC_V3 = 0xF993FACA
#: The most dimensions an array may have (MXNet's limit); a v0 array's first word is its ndim.
MAX_NDIM = 32
_STORAGE_NAMES = {-1: "undefined (an empty NDArray handle)", 0: "default", 1: "row_sparse", 2: "csr"}
_DEVICE_TYPES = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}


class NDArrayFileError(MXLabError, ValueError):
    """An NDArray file is malformed, or ``save`` was given something it cannot store."""


# --------------------------------------------------------------------------- writing
def _array_record(arr: NDArray) -> list[bytes]:
    """One array in the V2 layout: header fields then the raw little-endian values."""
    values = arr.asnumpy()  # waits for every pending write to the array
    dtype = np.dtype(values.dtype)
    ctx = arr.context
    return [
        np.array([ARRAY_MAGIC_V2], "<u4").tobytes(),
        np.array([0], "<i4").tobytes(),  # storage type: dense
        np.array([values.ndim], "<u4").tobytes(),
        np.array(values.shape, "<i8").tobytes(),
        np.array([ctx.device_typeid, ctx.device_id, DTYPE_TO_FLAG[dtype]], "<i4").tobytes(),
        np.ascontiguousarray(values, dtype=dtype.newbyteorder("<")).tobytes(),
    ]


def _entries(data: Any) -> tuple[list[NDArray], list[str]]:
    """Arrays and names from an NDArray, a list/tuple of them, or a dict of str -> NDArray."""
    if isinstance(data, NDArray):
        return [data], []
    if isinstance(data, Mapping):
        arrays, names = [], []
        for key, value in data.items():
            if not isinstance(key, str):
                raise NDArrayFileError(f"save: dict keys must be str, got {type(key).__name__} {key!r}")
            if not isinstance(value, NDArray):
                raise NDArrayFileError(
                    f"save: dict value for key {key!r} must be an NDArray, got {type(value).__name__}"
                )
            arrays.append(value)
            names.append(key)
        return arrays, names
    if isinstance(data, Sequence) and not isinstance(data, str | bytes):
        for i, value in enumerate(data):
            if not isinstance(value, NDArray):
                raise NDArrayFileError(f"save: list entry {i} must be an NDArray, got {type(value).__name__}")
        return list(data), []
    raise NDArrayFileError(
        f"save: data must be an NDArray, a list of NDArrays or a dict of str -> NDArray, got {type(data).__name__}"
    )


def save_tobuffer(data: NDArray | Sequence[NDArray] | Mapping[str, NDArray]) -> bytes:
    """The bytes :func:`save` would write (an MXLab addition; MXNet has only the file form)."""
    arrays, names = _entries(data)
    for arr in arrays:
        if np.dtype(arr.dtype) not in DTYPE_TO_FLAG:
            raise NDArrayFileError(f"save: dtype {np.dtype(arr.dtype).name} has no MXNet type flag")
    parts = [np.array([LIST_MAGIC, 0, len(arrays)], "<u8").tobytes()]
    for arr in arrays:
        parts.extend(_array_record(arr))
    parts.append(np.array([len(names)], "<u8").tobytes())
    for name in names:
        encoded = name.encode("utf-8")
        parts.append(np.array([len(encoded)], "<u8").tobytes())
        parts.append(encoded)
    return b"".join(parts)


def save(fname: str | os.PathLike, data: NDArray | Sequence[NDArray] | Mapping[str, NDArray]) -> None:
    """Write ``data`` to ``fname`` in MXNet's NDArray format (``mx.nd.save``).

    ``data`` is one NDArray, a list of them (list form) or a dict with str keys (dict form,
    the ``.params`` layout). Pending writes to the arrays are waited for first. The write is
    atomic: a crash mid-save leaves the previous file intact (see ``framework/atomic_file.py``).
    """
    payload = save_tobuffer(data)
    write_bytes_atomic(fname, payload)


# --------------------------------------------------------------------------- reading
class _Reader:
    """A cursor over the file's bytes that names the file and offset in every complaint."""

    def __init__(self, buf: bytes | bytearray | memoryview, source: str) -> None:
        self.buf = memoryview(buf).cast("B")
        self.source = source
        self.pos = 0

    def fail(self, what: str, at: int | None = None) -> NDArrayFileError:
        return NDArrayFileError(f"{self.source}: byte {self.pos if at is None else at}: {what}")

    def take(self, nbytes: int, what: str) -> memoryview:
        if nbytes > len(self.buf) - self.pos:
            raise self.fail(
                f"truncated: expected {nbytes} bytes ({what}), only {len(self.buf) - self.pos} left "
                f"(file size {len(self.buf)})"
            )
        view = self.buf[self.pos : self.pos + nbytes]
        self.pos += nbytes
        return view

    def ints(self, dtype: str, count: int, what: str) -> np.ndarray:
        size = np.dtype(dtype).itemsize
        return np.frombuffer(self.take(size * count, what), dtype=dtype, count=count)

    def one(self, dtype: str, what: str) -> int:
        return int(self.ints(dtype, 1, what)[0])


def _load_context(saved: tuple[int, int], ctx: Context | None) -> Context:
    """Where a loaded array goes: ``ctx`` if given, else MXNet's rule (see the module docstring)."""
    if ctx is not None:
        return ctx
    dev_type, dev_id = saved
    if _DEVICE_TYPES[dev_type] == "gpu" and dev_id < backend.num_gpus():
        return Context("gpu", dev_id)
    return cpu(0)


def _read_array(reader: _Reader, index: int, ctx: Context | None) -> NDArray:
    start = reader.pos
    label = f"array {index}"
    magic = reader.one("<u4", f"the magic number of {label}")
    if magic not in (ARRAY_MAGIC_V1, ARRAY_MAGIC_V2, ARRAY_MAGIC_V3):
        if magic == 0:
            raise reader.fail(
                f"{label}: a legacy v0 entry of ndim 0 holds no array (MXNet 1.9.1 refuses it too)", at=start
            )
        if magic > MAX_NDIM:
            raise reader.fail(
                f"{label}: expected array magic 0x{ARRAY_MAGIC_V2:X} (or V1 0x{ARRAY_MAGIC_V1:X} / "
                f"V3 0x{ARRAY_MAGIC_V3:X}), or a legacy v0 ndim between 1 and {MAX_NDIM}, got 0x{magic:X}",
                at=start,
            )
        reader.pos = start  # v0: the word just read is the ndim, read again below as the shape's
    if magic in (ARRAY_MAGIC_V2, ARRAY_MAGIC_V3):
        at = reader.pos
        stype = reader.one("<i4", f"the storage type of {label}")
        if stype != 0:
            kind = _STORAGE_NAMES.get(stype, "unknown")
            raise reader.fail(
                f"{label}: expected storage type 0 (dense), got {stype} ({kind}); MXLab has dense arrays only",
                at=at,
            )
    at = reader.pos
    ndim = reader.one("<i4" if magic == ARRAY_MAGIC_V3 else "<u4", f"the ndim of {label}")
    if magic == ARRAY_MAGIC_V3 and ndim == -1:
        raise reader.fail(f"{label}: the shape is unknown (ndim -1): the entry holds no array", at=at)
    if ndim < 0 or ndim > MAX_NDIM:
        raise reader.fail(f"{label}: expected ndim between 0 and {MAX_NDIM}, got {ndim}", at=at)
    at = shape_at = reader.pos
    legacy_v0 = magic not in (ARRAY_MAGIC_V1, ARRAY_MAGIC_V2, ARRAY_MAGIC_V3)
    dim_type = "<u4" if legacy_v0 else "<i8"
    shape = tuple(int(d) for d in reader.ints(dim_type, ndim, f"the {ndim} dimensions of {label}"))
    if any(d < 0 for d in shape):
        raise reader.fail(f"{label}: expected dimensions >= 0, got shape {shape}", at=at)
    at = reader.pos
    dev_type, dev_id = (int(v) for v in reader.ints("<i4", 2, f"the context of {label}"))
    if dev_type not in _DEVICE_TYPES or dev_id < 0:
        raise reader.fail(
            f"{label}: expected a context (device type 1 = cpu or 2 = gpu, device id >= 0), "
            f"got device type {dev_type}, id {dev_id}",
            at=at,
        )
    at = reader.pos
    flag = reader.one("<i4", f"the type flag of {label}")
    if flag not in FLAG_TO_DTYPE:
        known = ", ".join(f"{f} {d.name}" for f, d in FLAG_TO_DTYPE.items())
        raise reader.fail(f"{label}: expected a type flag ({known}), got {flag}", at=at)
    dtype = FLAG_TO_DTYPE[flag]
    # NumPy refuses a shape whose non-zero dimensions multiply past its index range, even
    # when another dimension is 0 and the array is empty: check it here, by name.
    extent = int(np.prod([d for d in shape if d], dtype=object)) * dtype.itemsize
    if extent > np.iinfo(np.intp).max:
        raise reader.fail(f"{label}: shape {shape} is too large for an array ({extent} bytes)", at=shape_at)
    count = int(np.prod(shape, dtype=object)) if shape else 1
    raw = reader.take(count * dtype.itemsize, f"the {count} {dtype.name} values of {label}, shape {shape}")
    values = np.frombuffer(raw, dtype=dtype.newbyteorder("<"), count=count).reshape(shape)
    return array(values, ctx=_load_context((dev_type, dev_id), ctx), dtype=dtype)


def load_frombuffer(
    buf: bytes | bytearray | memoryview, ctx: Context | None = None, source: str = "<buffer>"
) -> list[NDArray] | dict[str, NDArray]:
    """Parse NDArray-file bytes (``mx.nd.load_frombuffer``): a list, or a dict if names are stored."""
    if not isinstance(buf, bytes | bytearray | memoryview):
        raise NDArrayFileError(f"load_frombuffer: buf must be bytes or bytearray, got {type(buf).__name__}")
    if ctx is not None:
        backend.check_context(ctx)
    reader = _Reader(buf, source)
    magic = reader.one("<u8", "the file magic")
    if magic != LIST_MAGIC:
        raise reader.fail(f"not an MXNet NDArray file: expected magic 0x{LIST_MAGIC:X}, got 0x{magic:X}", at=0)
    reader.one("<u8", "the reserved header field")
    at = reader.pos
    count = reader.one("<u8", "the number of arrays")
    if count > len(reader.buf):  # each array takes far more than one byte: a corrupt count
        raise reader.fail(f"expected a plausible number of arrays, got {count}", at=at)
    arrays = [_read_array(reader, i, ctx) for i in range(count)]
    at = reader.pos
    num_names = reader.one("<u8", "the number of names")
    if num_names not in (0, count):
        raise reader.fail(f"expected 0 names (list form) or {count} (one per array), got {num_names}", at=at)
    names = []
    for i in range(num_names):
        length = reader.one("<u8", f"the length of name {i}")
        at = reader.pos
        raw = bytes(reader.take(length, f"name {i} ({length} bytes)"))
        try:
            names.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise reader.fail(f"name {i}: expected UTF-8 text, got {raw[:32]!r}", at=at) from None
    if reader.pos != len(reader.buf):
        raise reader.fail(f"expected the end of the file, found {len(reader.buf) - reader.pos} trailing bytes")
    if names:
        return dict(zip(names, arrays, strict=True))
    return arrays


def load(fname: str | os.PathLike, ctx: Context | None = None) -> list[NDArray] | dict[str, NDArray]:
    """Read an NDArray file written by MXNet or MXLab (``mx.nd.load``).

    Returns a list (list form) or a dict of name -> NDArray (dict form). Arrays go to
    ``ctx`` if given; otherwise where MXNet would put them: ``cpu(0)``, or the saved GPU if
    it exists (see the module docstring).
    """
    return load_frombuffer(read_existing(fname, "mx.nd.load"), ctx=ctx, source=os.fspath(fname))


__all__ = ["NDArrayFileError", "load", "load_frombuffer", "save", "save_tobuffer"]
