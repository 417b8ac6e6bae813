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

* ``window_view`` builds the (C, *kernel, *out, N) array of all windows as a *strided
  view* of the padded input (``as_strided``: no copy); one reshape copy makes ``col``.
* ``col2im`` loops over the ``prod(kernel)`` kernel positions (25 for a 5x5 kernel, not
  the pixels): each adds one strided slab of the column matrix onto the input grid.
* Inside the operators the batch axis is kept *last* ("batch-last", shape
  ``(C, *spatial, N)``): then every copy above moves contiguous runs of ``N`` (or
  ``out_w * N``) values instead of single pixels, which is what makes NumPy fast here.
  ``to_batch_last`` / ``to_batch_first`` convert at the operator boundary (NCHW outside);
  the second is a cache-blocked transpose, since NumPy's plain transposed copy thrashes the
  cache once the array outgrows it.
* Scratch arrays come from the resource manager's TEMP_SPACE (``scratch``): reused blocks,
  so no page faults from fresh large allocations on every call (MXNet's workspace).

Every function takes the array module ``xp`` (NumPy or CuPy), so one code path serves CPU
and GPU.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from ...resource import ResourceRequest
from ..kernel import NULL, Req, assign

_ALIGN = 64  # bytes; scratch arrays start on cache-line boundaries


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


def to_batch_last(xp: ModuleType, x: Any, pad: Sequence[int], out: Any) -> Any:
    """Write ``x`` (N, C, *S) into ``out`` (C, *(S + 2 * pad), N), zero-padding the borders."""
    nd = x.ndim - 2
    interior = (slice(None),) + tuple(slice(p, p + s) for p, s in zip(pad, x.shape[2:], strict=True))
    for axis, p in enumerate(pad, start=1):  # zero only the borders, not the whole block
        if p:
            index = [slice(None)] * out.ndim
            index[axis] = slice(0, p)
            out[tuple(index)] = 0
            index[axis] = slice(out.shape[axis] - p, None)
            out[tuple(index)] = 0
    out[interior] = x.transpose(*range(1, nd + 2), 0)
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
    if xp is not np or n == 1 or not (src.flags.c_contiguous and out.flags.c_contiguous):
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
) -> Any:
    """All convolution windows of ``xt`` (C, *S, N) as a (C, *kernel, *out, N) strided view."""
    nd = len(kernel)
    st = xt.strides
    shape = (xt.shape[0], *kernel, *out_spatial, xt.shape[-1])
    strides = (
        st[0],
        *(st[1 + i] * dilate[i] for i in range(nd)),
        *(st[1 + i] * stride[i] for i in range(nd)),
        st[-1],
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


def col2im(
    xp: ModuleType,
    col: Any,
    out: Any,
    kernel: Sequence[int],
    stride: Sequence[int],
    dilate: Sequence[int],
    pad: Sequence[int],
    out_spatial: Sequence[int],
) -> Any:
    """Scatter-add ``col`` (C, *kernel, *out, N) onto ``out`` (C, *S, N), which is zeroed first.

    ``out`` is the *unpadded* grid: for each kernel position only the output positions
    whose input lands inside it are added (padding receives nothing, so no crop is needed).
    One vectorised add per kernel position.
    """
    out[...] = 0
    spatial = out.shape[1:-1]
    for kpos in itertools.product(*(range(k) for k in kernel)):
        src_index: list[slice] = []
        dst_index: list[slice] = [slice(None)]
        empty = False
        for i, k in enumerate(kpos):
            offset = k * dilate[i] - pad[i]  # input position of output 0 at this kernel position
            lo = max(0, -(offset // stride[i]))  # first output whose input is >= 0
            hi = min(out_spatial[i], (spatial[i] - 1 - offset) // stride[i] + 1)  # one past the last < size
            if hi <= lo:
                empty = True
                break
            src_index.append(slice(lo, hi))
            start = lo * stride[i] + offset
            dst_index.append(slice(start, start + (hi - lo - 1) * stride[i] + 1, stride[i]))
        if empty:
            continue
        out[tuple(dst_index)] += col[(slice(None), *kpos, *src_index)]
    return out
