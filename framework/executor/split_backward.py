"""Split a layer's backward node so its weight gradient runs beside the rest of the backward pass.

The gradient of a Convolution or FullyConnected layer is one node with three outputs: the
gradient of the layer's input, which the next backward node (the layer below) reads, and
the gradients of weight and bias, which nobody reads: they are final. As one node, the
whole backward pass is a single chain, and the engine runs it on one worker while the
others wait, although the weight gradient is needed only at the very end (by the update).

This pass gives such a node a clone, ``<name>_weight``, that computes the weight and bias
gradients; the original keeps the input gradient. Each output now has one reader, so the
memory planner gives the outputs each node does not produce no memory, the executor passes
``req='null'`` for them, and the kernels skip that part of the work (both operators honour
``req='null'`` per output). The clone depends only on values the forward pass made and on
the output gradient, so the engine runs it on another worker while the chain goes on to
the layers below: with LeNet, the second convolution's weight gradient (about half of its
backward time) overlaps the first layers' backward. What is computed twice is the layout
of the output gradient, a small part of the node.

The clones come last in the graph's order (a depth-first walk from the gradients reaches
each one after the whole chain it needs), so the executor pushes the chain's segments first.
When an output gradient is ready, the chain's next segment and the clone become ready together,
in push order: the worker that made it goes on with the chain (the critical path) and the clone
goes to the other worker. The chain also keeps its bulk segments. The clone's inputs stay alive
until it has run; the memory planner would keep them from the chain anyway, since it never
gives a block that a parallel node may still read to a node that does not wait for that reader
(``PlanOptions.parallel_safe``). That is what the split costs in memory: a deep network's
output gradients no longer share blocks down the chain (an 8-layer MLP plans 7.5 MB instead of
4.5), which is why ``auto`` keeps a split only when it plans no more bytes than the whole nodes.

A node is split only when both halves are wanted (the input gradient is read by another
node or returned, and the weight or bias gradient is returned) and
the weight gradient is big enough to be worth an engine operation of its own
(:data:`MIN_MULTIPLY_ADDS`; a classifier's last small layer is left whole).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from threadpoolctl import threadpool_info

from .. import config
from ..operator.node import Entry, Node, NodeAttrs, topo_sort

#: Backward operators whose outputs are (input gradient, weight gradient[, bias gradient]) and
#: whose kernels skip every output requested with ``req='null'``.
SPLITTABLE = frozenset({"_backward_Convolution", "_backward_FullyConnected"})
#: The weight gradient's size of work below which a split costs more (one more engine operation,
#: the output gradient's layout done twice) than running it beside the chain saves: about 0.1 ms.
MIN_MULTIPLY_ADDS = 10_000_000


def setting() -> bool | Literal["auto"]:
    """``MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS``: ``"auto"`` (the default), or split always / never."""
    value = config.get("MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS")
    return "auto" if value == "auto" else value == "1"


def blas_threads() -> int:
    """The threads one matrix product of NumPy's BLAS uses (threadpoolctl's view; 1 if none found).

    A process often holds more than one BLAS: SciPy's wheels bring an OpenBLAS of their own,
    loaded when ``framework.backend`` imports SciPy, and a limit set before that import (as
    ``threadpool_limits(1)`` at the top of a script does) leaves it at one thread per core.
    The layers' products are NumPy's, so the library shipped inside NumPy's package (the
    wheels' ``numpy.libs``) is the one that counts; without one there (NumPy built against a
    system BLAS, which SciPy then shares), every BLAS found is counted.
    """
    found = [info for info in threadpool_info() if info.get("user_api") == "blas"]
    numpy_dir = os.path.dirname(os.path.abspath(np.__file__))
    numpys = [info for info in found if _inside(info.get("filepath", ""), numpy_dir)]
    return max((info["num_threads"] for info in numpys or found), default=1)


def _inside(path: str, numpy_dir: str) -> bool:
    """Whether a shared library belongs to the NumPy package (its folder, or ``numpy.libs`` beside it)."""
    path = os.path.abspath(path)
    return any(path.startswith(folder + os.sep) for folder in (numpy_dir, numpy_dir + ".libs"))


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def engine_cpu_workers(engine: Any) -> int:
    """How many operations of a CPU context the engine runs at once (``NaiveEngine``: one)."""
    # ThreadedEnginePerDevice sizes its CPU pool with cpu_workers, ThreadedEngine its shared pool
    # with num_workers; NaiveEngine runs everything in the pushing thread.
    return int(getattr(engine, "cpu_workers", getattr(engine, "num_workers", 1)))


def cores_to_spare(device_type: str, engine: Any) -> bool:
    """Whether a weight-gradient product beside the chain's would find idle cores (``auto``'s rule).

    It needs a second engine worker to run on, and cores that the chain's product leaves
    idle: with BLAS on every core, two products at once only share them (and OpenBLAS's
    waiting threads spin against each other), so splitting adds work and saves no time.
    Only the CPU: on a GPU the split was never measured, so ``auto`` leaves it to ``1``.
    """
    if device_type != "cpu" or engine_cpu_workers(engine) < 2:
        return False
    return 2 * blas_threads() <= available_cores()


def weight_gradient_work(node: Node, shape_of: Callable[[Entry], tuple[int, ...] | None]) -> int:
    """Multiply-adds of a layer's weight gradient: each output element meets one weight row."""
    forward = node.control_deps[0] if node.control_deps else None
    out_shape = shape_of(Entry(forward, 0)) if forward is not None else None
    weight_shape = shape_of(node.inputs[2]) if len(node.inputs) > 2 else None
    if not out_shape or not weight_shape:
        return 0
    return math.prod(out_shape) * (math.prod(weight_shape) // max(weight_shape[0], 1))


def split_weight_gradients(
    heads: Sequence[Entry], grads: list[Entry | None], shape_of: Callable[[Entry], tuple[int, ...] | None]
) -> tuple[list[Entry | None], int]:
    """Rewire ``grads`` (the arguments' gradient entries) to clones computing only weight gradients.

    ``shape_of`` gives the shape of a forward entry (None if unknown). Returns the new list
    and the number of nodes split.
    """
    nodes = topo_sort(list(heads) + [g for g in grads if g is not None])
    readers: dict[tuple[int, int], int] = {}
    for node in nodes:
        for e in node.inputs:
            readers[(e.node.id, e.index)] = readers.get((e.node.id, e.index), 0) + 1
    final = {(g.node.id, g.index) for g in grads if g is not None}
    clones: dict[int, Node] = {}
    for node in nodes:
        if node.op is None or node.op.name not in SPLITTABLE or node.num_outputs() < 2:
            continue
        input_grad_wanted = readers.get((node.id, 0), 0) > 0 or (node.id, 0) in final
        weight_outputs = [(node.id, i) for i in range(1, node.num_outputs())]
        weights_final = any(key in final for key in weight_outputs)
        weights_read = any(readers.get(key, 0) > 0 for key in weight_outputs)
        if not (input_grad_wanted and weights_final) or weights_read:
            continue
        if weight_gradient_work(node, shape_of) < MIN_MULTIPLY_ADDS:
            continue
        clone = Node(node.op, NodeAttrs(f"{node.name}_weight", node.op, node.attrs.parsed, dict(node.attrs.extra)))
        clone.inputs = list(node.inputs)
        clone.control_deps.extend(node.control_deps)  # it belongs to the same forward node
        clones[node.id] = clone
    result = [
        g if g is None or g.node.id not in clones or g.index == 0 else Entry(clones[g.node.id], g.index) for g in grads
    ]
    return result, len(clones)
