"""im2col / col2im: turning convolution into one matrix product (shared by Convolution,
Deconvolution and their gradients).

A convolution slides a ``kernel`` over the (zero-padded) input. Every output position
reads ``C * prod(kernel)`` input values; written as the columns of one matrix (the
"column" matrix, im2col) the whole convolution becomes a single GEMM::

    weight (F, C*K)  @  col (C*K, L*N)  =  out (F, L*N)       K = prod(kernel), L = prod(out)

The transposed operation, col2im, scatters a column matrix back onto the input grid,
adding where windows overlap; it computes a convolution's data gradient and a
deconvolution's forward pass.

How it is done here, with no Python loop over pixels or batch elements:

* ``window_view`` builds the array of all windows as a *strided view* of the padded input
  (``as_strided``: no copy); one copy makes ``col``.
* ``col2im`` loops over the ``prod(kernel)`` kernel positions (25 for a 5x5 kernel, not
  the pixels): each adds one strided slab of the column matrix onto the input grid.
* Both work on two layouts, told apart by ``lead``, the number of axes before the spatial
  ones. *Sample-major* ``(N, C, *spatial)`` (``lead=2``) is NCHW itself: no transposes, and
  copies move runs of one output row. *Batch-last* ``(C, *spatial, N)`` (``lead=1``) moves
  runs of ``out_w * N`` values instead, which pays when rows are short; ``to_batch_last``
  / ``to_batch_first`` convert at the boundary (``conv_gemm.py`` chooses between the two).
* Scratch arrays come from the resource manager's TEMP_SPACE (``scratch``): reused blocks,
  so no page faults from fresh large allocations on every call (MXNet's workspace).

Every function takes the array module ``xp`` (NumPy or CuPy), so one code path serves CPU
and GPU.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from ...resource import ResourceRequest
from ..kernel import NULL, Req, assign

_ALIGN = 64  # bytes; scratch arrays start on cache-line boundaries
CACHE_BYTES = 1 << 20  # about one core's L2 cache: below it a transposed copy needs no tiling


def compute_dtype(dtype: Any) -> np.dtype:
    """The dtype the GEMMs run in: float16 is computed in float32 (BLAS has no half GEMM)."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def scratch(op_ctx: Any, specs: Sequence[tuple[tuple[int, ...], Any]]) -> list[Any]:
    """Uninitialised arrays of the given (shape, dtype)s, carved from one TEMP_SPACE block.

    Call it once per compute call: a second call hands out the same memory again. Falls
    back to fresh allocations when the operator was called without the resource (a direct
    compute call in a test, say).
    """
    xp = op_ctx.xp
    space = next((r for r in op_ctx.requested if getattr(r, "req", None) is ResourceRequest.TEMP_SPACE), None)
    if space is None:
        return [xp.empty(shape, dtype) for shape, dtype in specs]
    offsets, total = [], 0
    for shape, dtype in specs:
        offsets.append(total)
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        total += -(-nbytes // _ALIGN) * _ALIGN
    block = space.get_space((max(total, 1),), np.uint8)
    arrays = []
    for (shape, dtype), start in zip(specs, offsets, strict=True):
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        arrays.append(block[start : start + nbytes].view(dtype).reshape(shape))
    return arrays


def _zero_borders(out: Any, pad: Sequence[int], lead: int) -> None:
    """Zero the ``pad``-wide borders of the spatial axes of ``out`` (they start at axis ``lead``)."""
    for axis, p in enumerate(pad, start=lead):  # only the borders, not the whole block
        if p:
            index = [slice(None)] * out.ndim
            index[axis] = slice(0, p)
            out[tuple(index)] = 0
            index[axis] = slice(out.shape[axis] - p, None)
            out[tuple(index)] = 0


def _interior(pad: Sequence[int], spatial: Sequence[int], lead: int) -> tuple[slice, ...]:
    """The index of the unpadded input inside a padded array whose spatial axes start at ``lead``."""
    return (slice(None),) * lead + tuple(slice(p, p + s) for p, s in zip(pad, spatial, strict=True))


def to_batch_last(xp: ModuleType, x: Any, pad: Sequence[int], out: Any) -> Any:
    """Write ``x`` (N, C, *S) into ``out`` (C, *(S + 2 * pad), N), zero-padding the borders."""
    nd = x.ndim - 2
    _zero_borders(out, pad, 1)
    out[_interior(pad, x.shape[2:], 1)] = x.transpose(*range(1, nd + 2), 0)
    return out


def to_padded(xp: ModuleType, x: Any, pad: Sequence[int], out: Any) -> Any:
    """Write ``x`` (N, C, *S) into ``out`` (N, C, *(S + 2 * pad)), zero-padding the borders."""
    _zero_borders(out, pad, 2)
    out[_interior(pad, x.shape[2:], 2)] = x
    return out


def to_batch_first(xp: ModuleType, src: Any, out: Any, req: Req) -> None:
    """Write ``src`` (C, *S, N) into ``out`` (N, C, *S) as ``req`` says.

    A cache-blocked transpose: a plain transposed copy reads ``src`` with a stride of
    ``N`` elements and, once the array exceeds the cache, runs several times slower than
    copying it in tiles of rows (measured: 4.3 ms vs 0.45 ms for LeNet's first layer).
    """
    if req is NULL:
        return
    n = src.shape[-1]
    rows = math.prod(src.shape[:-1])
    small = src.nbytes <= CACHE_BYTES  # in cache: the plain copy is fine, tiles would only add calls
    if xp is not np or n == 1 or small or not (src.flags.c_contiguous and out.flags.c_contiguous):
        assign(out, req, src.transpose(src.ndim - 1, *range(src.ndim - 1)))
        return
    src2, out2 = src.reshape(rows, n), out.reshape(n, rows)
    tile = max(64, -(-rows // 512))  # at most 512 tiles: a loop over memory blocks, not pixels
    for start in range(0, rows, tile):
        assign(out2[:, start : start + tile], req, src2[start : start + tile].T)


def window_view(
    xp: ModuleType,
    xt: Any,
    kernel: Sequence[int],
    stride: Sequence[int],
    dilate: Sequence[int],
    out_spatial: Sequence[int],
    lead: int = 1,
) -> Any:
    """All convolution windows of ``xt`` as a strided view (no copy).

    The spatial axes of ``xt`` start at axis ``lead``; each becomes a kernel axis and an
    output axis, the others stay: batch-last (C, *S, N) gives (C, *kernel, *out, N) and
    sample-major (N, C, *S) with ``lead=2`` gives (N, C, *kernel, *out).
    """
    nd = len(kernel)
    st = xt.strides
    spatial = st[lead : lead + nd]
    shape = (*xt.shape[:lead], *kernel, *out_spatial, *xt.shape[lead + nd :])
    strides = (
        *st[:lead],
        *(s * d for s, d in zip(spatial, dilate, strict=True)),
        *(s * t for s, t in zip(spatial, stride, strict=True)),
        *st[lead + nd :],
    )
    return xp.lib.stride_tricks.as_strided(xt, shape=shape, strides=strides)


def im2col(
    xp: ModuleType,
    xt: Any,
    kernel: Sequence[int],
    stride: Sequence[int],
    dilate: Sequence[int],
    out_spatial: Sequence[int],
    col: Any,
) -> Any:
    """Copy the windows of ``xt`` (C, *Sp, N) into ``col``, viewed as (C * K, L * N)."""
    view = window_view(xp, xt, kernel, stride, dilate, out_spatial)
    col.reshape(view.shape)[...] = view
    return col.reshape(xt.shape[0] * math.prod(kernel), math.prod(out_spatial) * xt.shape[-1])


@functools.lru_cache(maxsize=256)
def _scatter_slices(
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilate: tuple[int, ...],
    pad: tuple[int, ...],
    out_spatial: tuple[int, ...],
    spatial: tuple[int, ...],
) -> tuple[tuple[tuple[int, ...], tuple[slice, ...], tuple[slice, ...]], ...]:
    """For each kernel position: (position, output windows it reaches, input grid slice they land on).

    Computed once per geometry (col2im runs once per chunk, often many times per step).
    """
    moves = []
    for kpos in itertools.product(*(range(k) for k in kernel)):
        src_index: list[slice] = []
        dst_index: list[slice] = []
        for i, k in enumerate(kpos):
            offset = k * dilate[i] - pad[i]  # input position of output 0 at this kernel position
            lo = max(0, -(offset // stride[i]))  # first output whose input is >= 0
            hi = min(out_spatial[i], (spatial[i] - 1 - offset) // stride[i] + 1)  # one past the last < size
            if hi <= lo:
                break
            src_index.append(slice(lo, hi))
            start = lo * stride[i] + offset
            dst_index.append(slice(start, start + (hi - lo - 1) * stride[i] + 1, stride[i]))
        else:
            moves.append((kpos, tuple(src_index), tuple(dst_index)))
    return tuple(moves)


def col2im(
    xp: ModuleType,
    col: Any,
    out: Any,
    kernel: Sequence[int],
    stride: Sequence[int],
    dilate: Sequence[int],
    pad: Sequence[int],
    out_spatial: Sequence[int],
    lead: int = 1,
    accumulate: bool = False,
) -> Any:
    """Scatter-add ``col`` (C, *kernel, *out, N) onto ``out`` (C, *S, N), zeroed first unless ``accumulate``.

    With ``lead=2`` the layouts are sample-major instead: ``col`` (N, C, *kernel, *out) onto
    ``out`` (N, C, *S). ``out`` is the *unpadded* grid: for each kernel position only the
    output positions whose input lands inside it are added (padding receives nothing, so no
    crop is needed). One vectorised add per kernel position.
    """
    if not accumulate:
        out[...] = 0
    nd = len(kernel)
    spatial = tuple(out.shape[lead : lead + nd])
    keep = (slice(None),) * lead
    geometry = (tuple(kernel), tuple(stride), tuple(dilate), tuple(pad), tuple(out_spatial), spatial)
    for kpos, src_index, dst_index in _scatter_slices(*geometry):
        out[keep + dst_index] += col[keep + kpos + src_index]
    return out
