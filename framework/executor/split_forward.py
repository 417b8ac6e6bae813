"""Share a large FullyConnected forward product with the engine's second CPU worker.

The forward pass is one chain: every layer needs the previous layer's output, so with bulk
segments one engine worker runs all of it while the other waits (the backward pass has the
weight gradients to put beside its chain, :mod:`.split_backward`; the forward pass has
nothing). But a FullyConnected layer's output is made of independent blocks: rows of it are
rows of the data times the weight, columns of it are the data times rows of the weight. So the
product is cut into :data:`PIECES` blocks (:func:`pieces_of`; :func:`by_columns` says which
way), and a *helper* operation, pushed beside the chain, takes blocks while the chain's own
step takes the others. No memory changes: every block is written into the output's block.

Why blocks taken on demand rather than two fixed halves: both are on the critical path, so a
fixed half on a busy core delays the chain by all of it (measured: on a shared machine one of
two concurrent halves took twice as long as the other). Here the chain's step takes blocks
until none is left and then waits only for the ones the helper is computing: at most one
block's delay, and a helper that starts late finds nothing left (:class:`SharedProduct`).

The operations, per split product::

    before ... + fence  write (block, fence)   resets the blocks; waits for every earlier user of the block
    helper              read (inputs, fence)   takes blocks while there are any (the other worker)
    product + after ... write (block, ...)     the chain: takes blocks, waits for the helper's, goes on

The helper writes into the output's memory without holding its variable, which is safe
because it only computes blocks it took while the chain's step was still waiting for them, and
the chain's step (which does hold the variable) finishes only when they are done; the next
pass's fence writes the ``fence`` variable, so it waits for the helper to end. The fence
rides on the chain's previous segment; where nothing of the chain is before the product it is
an operation of its own. Each output element is the same dot product as before, but BLAS may
block a smaller product differently, so the numbers may differ from the whole product in the
last bits (tests compare with a tolerance; with OpenBLAS here they are equal). Monitoring
and a loop body's inline run use the whole nodes.

A product is split when it is big enough to be worth the extra work
(:data:`~.split_backward.MIN_MULTIPLY_ADDS`, as for the weight-gradient split).
``MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS=auto`` (the default) splits where a core is idle
(:func:`.split_backward.cores_to_spare`), ``1`` and ``0`` always and never. On a quiet 2-core
machine with one BLAS thread it takes the MLP from 0.93-0.98x to 1.00-1.12x NumPy by hand; on
a busy one, where no core is idle, it costs about as much as it saves (docs/performance.md).
"""

from __future__ import annotations

import copy
import itertools
import math
import threading
from collections.abc import Callable
from typing import Any, Literal

from .. import config
from ..engine import Var
from ..operator.kernel import Req
from .segments import Segment, Step
from .split_backward import MIN_MULTIPLY_ADDS

#: How many blocks a split product is cut into: a busy second core then delays the chain by at most
#: one block, and each block packs the uncut operand once more (about 1 % of the product per block).
PIECES = 4


def setting() -> bool | Literal["auto"]:
    """``MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS``: ``"auto"`` (the default), or split always / never."""
    value = config.get("MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS")
    return "auto" if value == "auto" else value == "1"


def splittable(step: Step) -> bool:
    """Whether ``step`` is a FullyConnected forward product worth sharing with a helper.

    Only on a CPU: a GPU worker's kernels run asynchronously on its own stream, so the chain's
    operation would go on before the helper's blocks are written.
    """
    if step.op_name != "FullyConnected" or step.is_async or step.req != [Req.WRITE] or step.ctx.device_type != "cpu":
        return False
    data, weight, out = step.inputs[0], step.inputs[1], step.outputs[0]
    rows = data.shape[0] if data.ndim else 0
    if rows < 2 or out.shape[:1] != (rows,) or any(v in step.reads for v in step.writes):
        return False
    return rows * math.prod(weight.shape) >= MIN_MULTIPLY_ADDS  # (rows) x (in) . (in, hidden)


def by_columns(step: Step) -> bool:
    """Whether to split the product's output columns (hidden units) rather than its rows (samples).

    Each block is a BLAS call of its own, and each call packs both its operands: cutting the
    rows makes every call pack the whole weight, cutting the columns every call the whole data.
    So the split copies the smaller of the two again per block. (One BLAS thread, 784-512 and
    512-512 layers at batch 128, two halves: rows cost 16 % more CPU than the whole product,
    columns 1 %.)
    Columns need a 2-D output (a block of columns is then one strided matrix BLAS can write).
    """
    data, weight, out = step.inputs[0], step.inputs[1], step.outputs[0]
    return out.ndim == 2 and weight.shape[0] >= 2 and data.size <= weight.size


def pieces_of(step: Step, count: int) -> list[Step]:
    """Copies of a FullyConnected step that each compute one of ``count`` blocks of its output.

    By columns (:func:`by_columns`): those rows of the weight (and bias) and those columns of
    the output. By rows: those rows of the data and of the output.
    """
    columns = by_columns(step)
    out = step.outputs[0]
    size = out.shape[1] if columns else out.shape[0]
    bounds = sorted({size * k // count for k in range(count + 1)})
    pieces = []
    for begin, end in itertools.pairwise(bounds):
        piece = copy.copy(step)
        if columns:
            piece.inputs = [step.inputs[0], *(array[begin:end] for array in step.inputs[1:])]
            piece.outputs = [out[:, begin:end]]
            piece.name = f"{step.name}[:, {begin}:{end}]"
        else:
            piece.inputs = [step.inputs[0][begin:end], *step.inputs[1:]]
            piece.outputs = [out[begin:end]]
            piece.name = f"{step.name}[{begin}:{end}]"
        pieces.append(piece)
    return pieces


class SharedProduct:
    """The pieces of one product, taken one at a time by the chain's operation and the helper.

    The fence resets it before every pass; whoever is free takes the next piece. The chain's
    operation takes pieces until none is left and then waits for the pieces the helper is
    still computing, so when it finishes the whole output is written, and a helper that starts
    late finds nothing left and ends at once.
    """

    def __init__(self, pieces: list[Step]) -> None:
        self.pieces = pieces
        self._lock = threading.Lock()
        self._all_done = threading.Event()
        self._error: BaseException | None = None
        self.taken_by_helper = 0  # pieces the helper computed in the last pass (for tests and curiosity)
        self.reset(None, False)

    def reset(self, run_ctx: Any, is_train: bool) -> None:
        """Make every piece available again (the fence's work; nobody else touches the state then)."""
        self._next, self._unfinished, self._error, self.taken_by_helper = 0, len(self.pieces), None, 0
        if self.pieces:
            self._all_done.clear()
        else:
            self._all_done.set()

    def _take(self) -> Step | None:
        with self._lock:
            if self._next >= len(self.pieces):
                return None
            self._next += 1
            return self.pieces[self._next - 1]

    def _work(self, run_ctx: Any, is_train: bool) -> int:
        """Compute pieces until none is left; returns how many this thread computed."""
        done = 0
        while (piece := self._take()) is not None:
            try:
                piece.run(run_ctx, is_train)
            except BaseException as err:  # the chain's operation re-raises it
                self._error = self._error or err
            done += 1
            with self._lock:
                self._unfinished -= 1
                if self._unfinished == 0:
                    self._all_done.set()
        return done

    def help(self, run_ctx: Any, is_train: bool) -> None:
        """The helper operation: take pieces while there are any."""
        self.taken_by_helper = self._work(run_ctx, is_train)

    def finish(self, run_ctx: Any, is_train: bool) -> None:
        """The chain's step: take pieces, then wait for the helper's (it is computing them, so this ends)."""
        self._work(run_ctx, is_train)
        self._all_done.wait()
        if self._error is not None:
            raise self._error


class Action(Step):
    """A step of a segment that calls ``fn(run_ctx, is_train)``: the fence's reset, the helper, the chain's part.

    It has no node of its own: a segment needs only its name, variables and ``run``.
    """

    __slots__ = ("fn",)

    def __init__(  # Step.__init__ is not called: there is no node to give it
        self, name: str, fn: Callable[[Any, bool], None], reads: list[Var], writes: list[Var]
    ) -> None:
        self.name, self.fn, self.reads, self.writes, self.is_async = name, fn, reads, writes, False

    def run(self, run_ctx: Any, is_train: bool) -> None:
        self.fn(run_ctx, is_train)


def split_products(
    segments: list[Segment], new_variable: Callable[[str], Var], pieces: int = PIECES
) -> tuple[list[Segment], list[SharedProduct]]:
    """The forward segments with every :func:`splittable` product shared with a helper (see the module doc).

    ``new_variable`` makes the fence variables. Returns the segments to push and the shared
    products, one per split product.
    """
    result: list[Segment] = []
    shared: list[SharedProduct] = []
    for segment in segments:
        before: list[Step] = []
        for step in segment.steps:
            if not splittable(step):
                before.append(step)
                continue
            product = SharedProduct(pieces_of(step, pieces))
            shared.append(product)
            block, fence = step.writes[0], new_variable(f"{step.name}_fence")
            # the block first: its waiter (the chain) becomes the fence's continuation, the helper goes elsewhere
            before.append(Action(f"{step.name} fence", product.reset, [], [block, fence]))
            result.append(Segment(before))
            result.append(Segment([Action(f"{step.name} helper", product.help, [*step.reads, fence], [])]))
            before = [Action(step.name, product.finish, list(step.reads), list(step.writes))]
        if before:
            result.append(Segment(before))
    return result, shared
