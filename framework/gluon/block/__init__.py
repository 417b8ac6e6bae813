"""Blocks: Gluon's layers and models, and ``hybridize``, the bridge to the graph executor.

A :class:`Block` is a piece of a network with parameters and child blocks. Assigning a
Block or a Parameter to an attribute registers it (``self.dense = nn.Dense(10)``), so
``collect_params`` finds every parameter of the tree. Names follow MXNet 1.x: a block
gets a prefix (``dense0_``) from the name scope it is created in, and its parameters are
``prefix + name`` (``dense0_weight``); children created inside ``with self.name_scope():``
get the parent's prefix in front (``hybridsequential0_dense0_``).

A :class:`HybridBlock` writes its computation once, ``hybrid_forward(F, x, **params)``,
for both halves of MXNet: called with NDArrays, ``F`` is ``mx.nd`` and every operator is
pushed to the engine as it is called (imperative). After ``hybridize()``, the next call
**traces** the block: it calls ``hybrid_forward`` with ``F = mx.sym`` on symbol variables
(``data``, and each parameter's ``var()``), which builds a Symbol of the whole block,
children included. That Symbol becomes a :class:`~framework.executor.cached_op.CachedOp`,
and every later call runs the cached, memory-planned graph (see docs/gluon.md).

The first call also finishes **deferred initialization**: the parameters whose shapes
had unknown (0) dimensions get them from the symbol's shape inference, given the
shapes of the actual inputs.

:class:`SymbolBlock` wraps an existing Symbol (an export loaded with
``SymbolBlock.imports``) as a block.

Modules: :mod:`.base` (``Block``, name scopes, hooks), :mod:`.hybrid` (``HybridBlock`` and
tracing), :mod:`.symbol_block` (``SymbolBlock``).
"""

from __future__ import annotations

from .base import Block, BlockError, HookHandle
from .hybrid import HybridBlock
from .symbol_block import SymbolBlock

__all__ = ["Block", "BlockError", "HookHandle", "HybridBlock", "SymbolBlock"]
