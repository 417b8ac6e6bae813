"""``mx.gluon``: MXNet 1.x's imperative-first API on MXLab's engine, with ``hybridize``.

Bottom up: :mod:`.parameter` (Parameter, Constant, ParameterDict), :mod:`.block`
(Block, HybridBlock, SymbolBlock; hybridize traces into a Symbol run by the executor's
CachedOp), :mod:`.nn` (layers), :mod:`.rnn` (recurrent layers), :mod:`.loss`, :mod:`.trainer` (the optimizer through a
KVStore), :mod:`.utils` and :mod:`.data` (datasets and the DataLoader). See docs/gluon.md.
"""

from __future__ import annotations

from . import contrib, data, loss, model_zoo, nn, rnn, utils
from .block import Block, BlockError, HybridBlock, SymbolBlock
from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict, tensor_types
from .trainer import Trainer

__all__ = [
    "Block",
    "BlockError",
    "Constant",
    "DeferredInitializationError",
    "HybridBlock",
    "Parameter",
    "ParameterDict",
    "SymbolBlock",
    "Trainer",
    "contrib",
    "data",
    "loss",
    "model_zoo",
    "nn",
    "rnn",
    "tensor_types",
    "utils",
]
