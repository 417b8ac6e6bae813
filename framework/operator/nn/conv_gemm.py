"""Convolution as chunked GEMMs: the forward pass, the weight gradient and the data gradient,
shared by Convolution and Deconvolution (whose forward is a convolution's data gradient).

The math is three products around the column matrix ``col`` of ``im2col.py``::

    out      = weight @ col                   (F, C*K) @ (C*K, L)
    d_weight = d_out @ col^T                  summed over the samples
    d_col    = weight^T @ d_out,  then col2im (scattered back onto the input grid)

with groups as a leading batch axis of the GEMMs (``G`` groups: ``weight (G, F/G, C*K/G)``).
How the products are laid out decides the speed far more than the arithmetic does:

* **Chunks that fit in the cache.** The batch is processed ``m`` samples at a time, with
  ``m`` chosen so that one chunk's column matrix is about one core's L2 cache (1 MB). The
  GEMM then reads a column matrix that was just written, from the cache, and col2im adds a
  ``d_col`` that is still there. One big GEMM over the whole batch would stream every matrix
  through main memory: on LeNet's second layer (64 samples, 20 -> 50 channels, 5x5) the
  chunks make the whole forward + backward about 25 % faster.
* **Two layouts** (see ``im2col.py``), chosen per layer by :func:`prefers_batch_last`:

  - *sample-major*: each sample's windows are copied straight out of NCHW, col is
    ``(m, C*K, L)`` and ``np.matmul`` runs one GEMM per sample, writing ``(m, F, L)``, which
    *is* the NCHW output: no transposes at all. Its copies move runs of one output row.
  - *batch-last*: the chunk is first transposed to ``(C, *S, m)``, so its windows are
    copied in runs of ``out_w * m`` values, and one GEMM covers all ``m`` samples; the
    result is transposed back. Worth it when output rows are short.

  A copied run costs about as much as eight more copied elements (measured), so the rule
  compares ``8 * runs`` of the sample-major copy with the elements the batch-last
  transposes move. LeNet's first layer (1 -> 20 channels, 24-wide output rows) runs
  sample-major, twice as fast as batch-last; its second layer (8-wide rows) runs
  batch-last, 1.2x (forward) to 1.5x (backward) faster than sample-major.
* **No copy when there is nothing to gather**: a 1x1 kernel with stride 1 and no padding
  (a pointwise convolution) has the input itself as its column matrix.
* The weight gradient accumulates ``col @ d_out^T`` (``(C*K, F)``, the orientation where
  both operands are read along their contiguous axis) over the chunks; the backward pass
  recomputes ``col`` from the input (as MXNet does) instead of keeping it alive between
  the two operations, which costs one copy per chunk.

Scratch memory (padded or transposed inputs, column matrices, GEMM results) comes from the
resource manager's TEMP_SPACE. ``workspace`` keeps its MXNet meaning, a cap in MB on that
scratch: it can only make the chunks smaller.
"""

from __future__ import annotations

import math
from typing import Any

from ..kernel import ADD, NULL, WRITE, OpContext, Req, assign
from .geometry import Geometry
from .im2col import CACHE_BYTES, col2im, compute_dtype, scratch, to_batch_first, to_batch_last, to_padded, window_view

#: One copied contiguous run costs about as much as this many more copied elements (NumPy,
#: measured on LeNet's layers); it weighs the two layouts against each other.
RUN_COST = 8


def batch_chunks(n: int, step: int) -> list[slice]:
    """The batch ``0..n`` cut into consecutive slices of ``step`` samples (the last may be shorter)."""
    return [slice(start, min(start + step, n)) for start in range(0, n, step)]


def chunk_size(n: int, col_bytes: int, scratch_bytes: int, workspace_mb: int) -> int:
    """Samples per chunk: a column matrix of about one L2 cache, and scratch within ``workspace`` MB.

    ``col_bytes`` and ``scratch_bytes`` are per sample. With the default 1024 MB workspace
    only the cache decides; a small ``workspace`` makes the chunks smaller still.
    """
    by_cache = CACHE_BYTES // max(col_bytes, 1)
    by_workspace = (workspace_mb << 20) // max(scratch_bytes, 1)
    return max(1, min(n, by_cache, by_workspace))


def prefers_batch_last(
    channels: int, filters: int, kernel_size: int, spatial: tuple[int, ...], out_spatial: tuple[int, ...]
) -> bool:
    """Whether the batch-last layout is cheaper than sample-major for this layer (per sample).

    Sample-major copies its column matrix in runs of one output row: ``C*K*prod(out[:-1])``
    runs. Batch-last instead transposes the input and the output: ``C*prod(S) + F*prod(out)``
    elements.
    """
    runs = channels * kernel_size * math.prod(out_spatial[:-1])
    moved = channels * math.prod(spatial) + filters * math.prod(out_spatial)
    return RUN_COST * runs > moved


def _is_pointwise(g: Geometry) -> bool:
    """A 1x1 kernel, stride 1, no padding: the column matrix is the input itself."""
    return all(k == 1 for k in g.kernel) and all(s == 1 for s in g.stride) and not any(g.pad)


class _Layout:
    """How one call lays out its chunks: the sizes, the layout, the chunking and the scratch.

    ``channels`` are the convolution's input channels (the rows of ``col`` are
    ``channels * K``), ``filters`` its output channels; ``spatial`` is the input grid and
    ``out_spatial`` the window positions.
    """

    def __init__(
        self,
        n: int,
        channels: int,
        filters: int,
        groups: int,
        spatial: tuple[int, ...],
        out_spatial: tuple[int, ...],
        g: Geometry,
        cdt: Any,
    ) -> None:
        self.n, self.channels, self.filters, self.groups = n, channels, filters, groups
        self.spatial, self.out_spatial, self.g, self.cdt = spatial, out_spatial, g, cdt
        self.kernel_size = math.prod(g.kernel)
        self.positions = math.prod(out_spatial)
        self.padded = g.padded_shape(spatial)
        self.rows = channels * self.kernel_size  # rows of col: (C, *kernel)
        self.batch_last = prefers_batch_last(channels, filters, self.kernel_size, spatial, out_spatial)
        self.pointwise = not self.batch_last and _is_pointwise(g)

    def chunks(self, buffers: dict[str, tuple[int, ...]], workspace: int) -> tuple[list[slice], int]:
        """The chunks, and the samples per chunk, for per-sample scratch ``buffers`` (element counts)."""
        item = self.cdt.itemsize
        col_bytes = self.rows * self.positions * item
        per_sample = sum(math.prod(shape) for shape in buffers.values()) * item
        step = chunk_size(self.n, col_bytes, per_sample, workspace)
        return batch_chunks(self.n, step), step

    def scratch(self, op_ctx: OpContext, per_sample: dict[str, tuple[int, ...]], step: int, whole: dict) -> dict:
        """Carve the buffers from TEMP_SPACE: ``per_sample`` ones sized for ``step`` samples, ``whole`` as they are."""
        names = list(per_sample) + list(whole)
        specs = [((math.prod(shape) * step,), self.cdt) for shape in per_sample.values()]
        specs += [(shape, self.cdt) for shape in whole.values()]
        return dict(zip(names, scratch(op_ctx, specs), strict=True))

    # ------------------------------------------------------------------ the column matrix
    def col_buffer(self) -> dict[str, tuple[int, ...]]:
        """Per-sample buffers the column matrix needs (an input copy only when it cannot be a view)."""
        if self.pointwise:
            return {}
        grid = (self.channels, *self.padded)
        if self.batch_last:
            return {"grid": grid, "col": (self.rows, self.positions)}
        return ({"grid": grid} if any(self.g.pad) else {}) | {"col": (self.rows, self.positions)}

    def columns(self, xp: Any, src: Any, bufs: dict[str, Any], m: int) -> Any:
        """The column matrix of the chunk ``src`` (m, C, *S), grouped for the GEMMs.

        Batch-last: (G, C*K/G, L*m). Sample-major: (m, G, C*K/G, L).
        """
        g, groups = self.g, self.groups
        if self.pointwise:
            return src.astype(self.cdt, copy=False).reshape(m, groups, -1, self.positions)
        col = _view(bufs["col"], (self.rows * self.positions * m,))
        if self.batch_last:
            xt = to_batch_last(xp, src, g.pad, _view(bufs["grid"], (self.channels, *self.padded, m)))
            view = window_view(xp, xt, g.kernel, g.stride, g.dilate, self.out_spatial, lead=1)
            col.reshape(view.shape)[...] = view
            return col.reshape(groups, -1, self.positions * m)
        if any(g.pad):
            src = to_padded(xp, src, g.pad, _view(bufs["grid"], (m, self.channels, *self.padded)))
        view = window_view(xp, src, g.kernel, g.stride, g.dilate, self.out_spatial, lead=2)
        col.reshape(view.shape)[...] = view  # casts float16 to the compute dtype on the way
        return col.reshape(m, groups, -1, self.positions)

    def grads(self, xp: Any, d_out: Any, bufs: dict[str, Any], m: int) -> Any:
        """The output gradient of the chunk, (m, F, *out), laid out like :meth:`columns`' result."""
        if self.batch_last:
            dyt = to_batch_last(
                xp, d_out, (0,) * len(self.out_spatial), _view(bufs["dy"], (self.filters, *self.out_spatial, m))
            )
            return dyt.reshape(self.groups, -1, self.positions * m)
        return d_out.astype(self.cdt, copy=False).reshape(m, self.groups, -1, self.positions)


def _view(flat: Any, shape: tuple[int, ...]) -> Any:
    """The first ``prod(shape)`` elements of a flat scratch array, shaped."""
    return flat[: math.prod(shape)].reshape(shape)


def _accumulate_weight_grad(xp: Any, lay: _Layout, col: Any, dy: Any, acc: Any, first: bool) -> None:
    """``acc (G, C*K/G, F/G) (+)= col @ dy^T`` for one chunk, summed over its samples."""
    if lay.batch_last:
        if first:
            xp.matmul(col, dy.transpose(0, 2, 1), out=acc)
        else:
            acc += xp.matmul(col, dy.transpose(0, 2, 1))
        return
    per_sample = xp.matmul(col, dy.swapaxes(-1, -2))  # (m, G, C*K/G, F/G)
    if first:
        per_sample.sum(axis=0, out=acc)
    else:
        acc += per_sample.sum(axis=0)


def _assign_weight_grad(d_weight: Any, req: Req, acc: Any) -> None:
    """Write the accumulated ``(G, C*K/G, F/G)`` gradient into ``d_weight`` (F, C/G, *k) as ``req`` says."""
    assign(d_weight, req, acc.transpose(0, 2, 1).reshape(d_weight.shape))


def conv_gemm(
    op_ctx: OpContext,
    src: Any,
    weight: Any,
    g: Geometry,
    groups: int,
    out_spatial: tuple[int, ...],
    workspace: int,
    *,
    bias: Any = None,
    out: Any = None,
    req: Req = NULL,
    d_out: Any = None,
    d_weight: Any = None,
    d_weight_req: Req = NULL,
) -> None:
    """``out = conv(src, weight) + bias``; optionally also ``d_weight``, the weight gradient of
    that convolution for output gradient ``d_out``. Both share each chunk's column matrix.

    Serves Convolution's forward (weight (F, C/G, *k)) and Deconvolution's backward, where
    the deconvolution weight (C_in, F/G, *k) plays exactly this role and the deconvolution's
    input is ``d_out``.
    """
    xp = op_ctx.xp
    if req is NULL and d_weight_req is NULL:
        return
    n, channels, spatial = src.shape[0], src.shape[1], tuple(src.shape[2:])
    if n == 0:  # an empty batch: nothing to write, and a weight gradient of zero
        assign(d_weight, d_weight_req, 0)
        return
    filters = weight.shape[0]
    cdt = compute_dtype(src.dtype)
    lay = _Layout(n, channels, filters, groups, spatial, tuple(out_spatial), g, cdt)
    # sample-major writes the GEMM straight into a plain (write) output of the compute dtype
    direct = req is WRITE and out.dtype == cdt and out.flags.c_contiguous and not lay.batch_last
    per_sample = lay.col_buffer()
    if req is not NULL and not direct:
        per_sample["y"] = (filters, lay.positions)
    if d_weight_req is not NULL and lay.batch_last:
        per_sample["dy"] = (filters, lay.positions)
    chunks, step = lay.chunks(per_sample, workspace)
    whole = {"acc": (groups, lay.rows // groups, filters // groups)} if d_weight_req is not NULL else {}
    bufs = lay.scratch(op_ctx, per_sample, step, whole)
    w = weight.reshape(groups, filters // groups, -1).astype(cdt, copy=False)
    b = bias.astype(cdt, copy=False)[:, None] if bias is not None else None
    for i, chunk in enumerate(chunks):
        m = chunk.stop - chunk.start
        col = lay.columns(xp, src[chunk], bufs, m)
        if req is not NULL:
            if lay.batch_last:
                y = xp.matmul(w, col, out=_view(bufs["y"], (groups, filters // groups, lay.positions * m)))
                if b is not None:
                    y.reshape(filters, -1)[...] += b
                to_batch_first(xp, y.reshape(filters, *out_spatial, m), out[chunk], req)
            else:
                target = out[chunk] if direct else _view(bufs["y"], (m, filters, *out_spatial))
                y = xp.matmul(w, col, out=target.reshape(m, groups, filters // groups, lay.positions))
                if b is not None:
                    y.reshape(m, filters, -1)[...] += b
                if not direct:
                    assign(out[chunk], req, target)
        if d_weight_req is not NULL:
            _accumulate_weight_grad(xp, lay, col, lay.grads(xp, d_out[chunk], bufs, m), bufs["acc"], i == 0)
    if d_weight_req is not NULL:
        _assign_weight_grad(d_weight, d_weight_req, bufs["acc"])


def conv_backward(
    op_ctx: OpContext,
    d_out: Any,
    src: Any,
    weight: Any,
    g: Geometry,
    groups: int,
    workspace: int,
    req: list[Req],
    outputs: list[Any],
) -> None:
    """Gradients of ``conv(src, weight) + bias`` w.r.t. (src, weight, bias), as ``req`` says.

    Serves Convolution's backward and Deconvolution's forward (``d_src`` of a convolution
    is a transposed convolution of ``d_out``). ``src`` is only read for the weight gradient
    and may be None otherwise; ``outputs[0]`` gets ``d_src`` shaped like ``src``.
    """
    xp = op_ctx.xp
    need_src, need_weight = req[0] is not NULL, req[1] is not NULL
    need_bias = len(req) > 2 and req[2] is not NULL
    if not (need_src or need_weight or need_bias):
        return
    n, filters, out_spatial = d_out.shape[0], d_out.shape[1], tuple(d_out.shape[2:])
    if n == 0:  # an empty batch: parameter gradients of zero
        for index in (1, 2)[: len(req) - 1]:
            assign(outputs[index], req[index], 0)
        return
    cdt = compute_dtype(d_out.dtype)
    if need_bias:  # per sample and filter first: a reduction along contiguous memory
        per_sample = d_out.reshape(n, filters, -1).sum(axis=2, dtype=cdt)
        assign(outputs[2], req[2], per_sample.sum(axis=0))
    if not (need_src or need_weight):
        return
    channels, spatial = outputs[0].shape[1], tuple(outputs[0].shape[2:])
    lay = _Layout(n, channels, filters, groups, spatial, out_spatial, g, cdt)
    d_src = outputs[0]
    # sample-major scatters d_col straight onto a written or accumulated gradient of the compute dtype
    direct = req[0] in (WRITE, ADD) and d_src.dtype == cdt and not lay.batch_last
    per_sample = lay.col_buffer() if need_weight else {}
    if need_src:
        per_sample.setdefault("col", (lay.rows, lay.positions))
        if lay.batch_last:
            per_sample.setdefault("grid", (channels, *lay.padded))
        elif not direct:
            per_sample["dx"] = (channels, *spatial)
    if lay.batch_last:
        per_sample["dy"] = (filters, lay.positions)
    chunks, step = lay.chunks(per_sample, workspace)
    whole = {"acc": (groups, lay.rows // groups, filters // groups)} if need_weight else {}
    bufs = lay.scratch(op_ctx, per_sample, step, whole)
    w_t = weight.reshape(groups, filters // groups, -1).astype(cdt, copy=False).transpose(0, 2, 1)
    for i, chunk in enumerate(chunks):
        m = chunk.stop - chunk.start
        dy = lay.grads(xp, d_out[chunk], bufs, m)
        if need_weight:
            _accumulate_weight_grad(xp, lay, lay.columns(xp, src[chunk], bufs, m), dy, bufs["acc"], i == 0)
        if not need_src:
            continue
        d_col = _view(bufs["col"], (lay.rows * lay.positions * m,))
        if lay.batch_last:
            xp.matmul(w_t, dy, out=d_col.reshape(groups, -1, lay.positions * m))
            grid = _view(bufs["grid"], (channels, *spatial, m))  # reuses the padded input's memory
            d_col = d_col.reshape(channels, *g.kernel, *out_spatial, m)
            col2im(xp, d_col, grid, g.kernel, g.stride, g.dilate, g.pad, out_spatial, lead=1)
            to_batch_first(xp, grid, d_src[chunk], req[0])
            continue
        xp.matmul(w_t, dy, out=d_col.reshape(m, groups, -1, lay.positions))
        d_col = d_col.reshape(m, channels, *g.kernel, *out_spatial)
        grid = d_src[chunk] if direct else _view(bufs["dx"], (m, channels, *spatial))
        col2im(
            xp,
            d_col,
            grid,
            g.kernel,
            g.stride,
            g.dilate,
            g.pad,
            out_spatial,
            lead=2,
            accumulate=req[0] is ADD and direct,
        )
        if not direct:
            assign(d_src[chunk], req[0], grid)
    if need_weight:
        _assign_weight_grad(outputs[1], req[1], bufs["acc"])
