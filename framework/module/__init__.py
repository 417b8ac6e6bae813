"""``mx.mod``: the Module API, MXNet 1.x's way to train a symbol.

* :mod:`.interface`: ``ModuleInterface``, the life cycle and the steps every module provides;
* :mod:`.base_module`: ``BaseModule``, the training loop (``fit``, ``score``, ``predict``) on those steps;
* :mod:`.progress`: the per-epoch progress bar of ``fit``;
* :mod:`.input_checks`: ``bind``'s checks of input names and shapes;
* :mod:`.module`: ``Module``, a symbol bound on one or more devices;
* :mod:`.bucketing_module`: ``BucketingModule``, one Module per input length sharing parameters;
* :mod:`.sequential_module`: ``SequentialModule``, modules chained output to input;
* :mod:`.python_module`: ``PythonModule`` / ``PythonLossModule``, modules written in Python;
* :mod:`.executor_group`: one executor per device, each given a slice of the batch;
* :mod:`.aggregation`: how a Module sums gradients across devices through a KVStore (``mx.kv``).

Checkpoint files (``prefix-symbol.json`` + ``prefix-0001.params``) are in ``mx.model``.
"""

from __future__ import annotations

from .. import model as _model  # noqa: F401 - registers save_checkpoint for mx.callback.do_checkpoint
from .aggregation import AggregationError
from .base_module import BaseModule, TrainingDivergedError
from .bucketing_module import BucketingModule
from .executor_group import DataParallelExecutorGroup, ModuleError
from .module import Module
from .python_module import PythonLossModule, PythonModule
from .sequential_module import SequentialModule

__all__ = [
    "AggregationError",
    "BaseModule",
    "BucketingModule",
    "DataParallelExecutorGroup",
    "Module",
    "ModuleError",
    "PythonLossModule",
    "PythonModule",
    "SequentialModule",
    "TrainingDivergedError",
]
