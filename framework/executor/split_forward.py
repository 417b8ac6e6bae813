"""Split a large FullyConnected forward product into two engine operations, one per CPU worker.

The forward pass is one chain: every layer needs the previous layer's output, so with bulk
segments one engine worker runs all of it while the other waits (the backward pass has the
weight gradients to put beside its chain, :mod:`.split_backward`; the forward pass has
nothing). But a FullyConnected layer's output is made of independent pieces: row ``i`` is
row ``i`` of the data times the weight, column ``j`` is the data times row ``j`` of the
weight. So its product can run as two operations over halves of the output, the first on
the worker that runs the chain and the second on the other, and the chain goes on when both
are done. No memory changes: both halves write into the output's own block.
:func:`by_columns` chooses which halves (each BLAS call packs its operands, so the split
packs twice whichever operand it does not cut: the smaller one).

Two operations that write the same block would be serialized by its engine variable, so the
halves are ordered through two variables of their own (``fence``, ``done``)::

    before ... + fence write (block, fence)   waits for every earlier reader/writer of the block
    first half       write (block)            the chain's worker goes on with it
    second half      read (inputs, fence)     the other worker
                     write (done)
    after ...  +     read (done)              the chain goes on when both halves are done;
                     write (block)            writing the block makes every later reader wait for it

The fence and the join ride on the chain's neighbouring segments; only where nothing of the
chain is before (or after) the product do they become operations of their own that only
order. Each output element is the same dot product as before, but BLAS may block a half-size
product differently from the whole one, so the numbers may differ in the last bits (tests
compare with a tolerance; with OpenBLAS here they are equal). Monitoring and a loop body's
inline run use the whole nodes.

A product is split when it is big enough to be worth two engine operations more
(:data:`~.split_backward.MIN_MULTIPLY_ADDS`, as for the weight-gradient split);
``MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS=auto`` splits where a core is idle
(:func:`.split_backward.cores_to_spare`), ``1`` and ``0`` (the default) always and never. It is
off by default because, unlike the weight-gradient split, both halves are on the critical
path: a half slowed by a busy core delays the chain, and on the shared machine where it was
measured the split cost about 5 % more than it saved (docs/performance.md).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Literal

from .. import config
from ..engine import Var
from ..operator.kernel import Req
from .segments import Segment, Step
from .split_backward import MIN_MULTIPLY_ADDS


def setting() -> bool | Literal["auto"]:
    """``MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS``: ``"auto"``, or split always / never (``0``, the default)."""
    value = config.get("MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS")
    return "auto" if value == "auto" else value == "1"


def splittable(step: Step) -> bool:
    """Whether ``step`` is a FullyConnected forward product worth running as two halves."""
    if step.op_name != "FullyConnected" or step.is_async or step.req != [Req.WRITE]:
        return False
    data, weight, out = step.inputs[0], step.inputs[1], step.outputs[0]
    rows = data.shape[0] if data.ndim else 0
    if rows < 2 or out.shape[:1] != (rows,) or any(v in step.reads for v in step.writes):
        return False
    return rows * math.prod(weight.shape) >= MIN_MULTIPLY_ADDS  # (rows) x (in) . (in, hidden)


def by_columns(step: Step) -> bool:
    """Whether to split the product's output columns (hidden units) rather than its rows (samples).

    Each half is a BLAS call of its own, and each call packs both its operands: halving the
    rows makes both calls pack the whole weight, halving the columns makes both pack the whole
    data. So the split copies the smaller of the two twice. (One BLAS thread, 784-512 and
    512-512 layers at batch 128: rows cost 16 % more CPU than the whole product, columns 1 %.)
    Columns need a 2-D output (a block of columns is then one strided matrix BLAS can write).
    """
    data, weight, out = step.inputs[0], step.inputs[1], step.outputs[0]
    return out.ndim == 2 and weight.shape[0] >= 2 and data.size <= weight.size


def half_of(step: Step, part: int, columns: bool) -> Step:
    """A copy of a FullyConnected step that computes the first (``part`` 0) or second half of its output.

    By rows: those rows of the data and of the output. By columns: those rows of the weight
    (and bias) and those columns of the output.
    """
    half = copy.copy(step)
    out = step.outputs[0]
    size = out.shape[1] if columns else out.shape[0]
    begin, end = (0, size // 2) if part == 0 else (size // 2, size)
    if columns:
        half.inputs = [step.inputs[0], *(array[begin:end] for array in step.inputs[1:])]
        half.outputs = [out[:, begin:end]]
        half.name = f"{step.name}[:, {begin}:{end}]"
    else:
        half.inputs = [step.inputs[0][begin:end], *step.inputs[1:]]
        half.outputs = [out[begin:end]]
        half.name = f"{step.name}[{begin}:{end}]"
    return half


def split_products(segments: list[Segment], new_variable: Callable[[str], Var]) -> tuple[list[Segment], int]:
    """The forward segments with every :func:`splittable` product run as two halves (see the module doc).

    ``new_variable`` makes the engine variables that order the halves. Returns the segments to
    push and the number of products split.
    """
    result: list[Segment] = []
    count = 0
    for segment in segments:
        before: list[Step] = []
        join_reads: tuple[Var, ...] = ()  # what the steps after a split wait for, and the block they write
        join_writes: tuple[Var, ...] = ()
        for step in segment.steps:
            if not splittable(step):
                before.append(step)
                continue
            block = step.writes[0]
            fence, done = new_variable(f"{step.name}_fence"), new_variable(f"{step.name}_halves_done")
            if before or join_reads:
                result.append(Segment(before, join_reads, (*join_writes, block, fence)))
            else:
                result.append(Segment([], (), (block, fence), name=f"{step.name} fence"))
            columns = by_columns(step)
            first, second = half_of(step, 0, columns), half_of(step, 1, columns)
            second.reads = [*step.reads, fence]
            second.writes = [done]
            result.append(Segment([first]))  # pushed first: the worker that ran the fence goes on with it
            result.append(Segment([second]))
            before, join_reads, join_writes = [], (done,), (block,)
            count += 1
        if before or join_reads:
            name = "" if before else f"{segment.steps[-1].name} join"
            result.append(Segment(before, join_reads, join_writes, name=name))
    return result, count
