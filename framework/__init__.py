"""MXLab: the architecture of Apache MXNet 1.x, rebuilt in Python to be read, run and watched.

Use it as MXNet: ``import framework as mx``.
"""

from __future__ import annotations

from . import (
    autograd,
    base,
    callback,
    custom_op,
    engine,
    events,
    initializer,
    io,
    kvstore,
    libinfo,
    library,
    lr_scheduler,
    metric,
    model,
    module,
    ndarray,
    operator,
    optimizer,
    profiler,
    random,
    recordio,
    resource,
    runtime,
    storage,
    symbol,
    test_utils,
    util,
    visualization,
)
from . import errors as error
from . import initializer as init
from . import kvstore as kv
from . import module as mod
from . import ndarray as nd
from . import symbol as sym
from . import visualization as viz
from .backend import num_gpus
from .base import MXLabError, MXNetError
from .context import Context, cpu, current_context, gpu
from .symbol import naming as name
from .util import is_np_array, is_np_shape, np_shape, set_np_shape, use_np_shape

# The Python CustomOp front door lives above NDArray (it hands NDArrays to user code) but is
# reached as mx.operator.CustomOp, as in MXNet. mx.operator.register stays the registry API of
# seed 004; CustomOpProp classes register with mx.operator.register_custom (docs/differences.md).
operator.CustomOp = custom_op.CustomOp
operator.CustomOpProp = custom_op.CustomOpProp
operator.CustomOpError = custom_op.CustomOpError
operator.register_custom = custom_op.register
operator.get_all_registered_operators = custom_op.get_all_registered_operators

# The MXNet API version MXLab reproduces (scripts compare it); MXLab's own is __mxlab_version__.
__version__ = libinfo.__version__
__mxlab_version__ = libinfo.MXLAB_VERSION

__all__ = [
    "Context",
    "MXLabError",
    "MXNetError",
    "autograd",
    "base",
    "callback",
    "custom_op",
    "cpu",
    "current_context",
    "engine",
    "error",
    "events",
    "gpu",
    "init",
    "io",
    "kv",
    "kvstore",
    "initializer",
    "library",
    "lr_scheduler",
    "metric",
    "mod",
    "model",
    "module",
    "num_gpus",
    "nd",
    "ndarray",
    "operator",
    "optimizer",
    "profiler",
    "random",
    "recordio",
    "resource",
    "sym",
    "test_utils",
    "visualization",
    "viz",
    "symbol",
    "name",
    "storage",
    "is_np_array",
    "is_np_shape",
    "libinfo",
    "np_shape",
    "runtime",
    "set_np_shape",
    "use_np_shape",
    "util",
]
