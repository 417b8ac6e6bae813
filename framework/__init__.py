"""MXLab: the architecture of Apache MXNet 1.x, rebuilt in Python to be read, run and watched.

Use it as MXNet: ``import framework as mx``.
"""

from __future__ import annotations

from . import (
    autograd,
    backend,
    base,
    callback,
    context,
    contrib,
    custom_op,
    engine,
    events,
    feedforward,
    gluon,
    image,
    initializer,
    io,
    kvstore,
    legacy_imdecode,
    libinfo,
    library,
    log,
    lr_scheduler,
    metric,
    model,
    module,
    monitor,
    ndarray,
    operator,
    optimizer,
    profiler,
    random,
    recordio,
    registry,
    resource,
    rnn,
    runtime,
    storage,
    symbol,
    test_utils,
    util,
    visualization,
)
from . import errors as error
from . import image as img
from . import initializer as init
from . import kvstore as kv
from . import module as mod
from . import monitor as mon
from . import ndarray as nd
from . import random as rnd
from . import symbol as sym
from . import visualization as viz
from .backend import num_gpus
from .base import MXLabError, MXNetError
from .context import Context, cpu, cpu_pinned, current_context, gpu
from .executor import cached_op as _cached_op
from .symbol import AttrScope
from .symbol import attribute as attribute
from .symbol import naming as name
from .util import is_np_array, is_np_shape, np_shape, set_np_shape, use_np_shape

# The Python CustomOp front door lives above NDArray (it hands NDArrays to user code) but is
# reached as mx.operator.CustomOp, and its class decorator as mx.operator.register, as in
# MXNet. The native registry API of seed 004 is mx.operator.register_op (docs/differences.md);
# register_custom is the decorator's former MXLab name.
operator.CustomOp = custom_op.CustomOp
operator.CustomOpProp = custom_op.CustomOpProp
operator.CustomOpError = custom_op.CustomOpError
operator.register = custom_op.register
operator.register_custom = custom_op.register
operator.get_all_registered_operators = custom_op.get_all_registered_operators
# get_symbol turns the autograd tape into a Symbol, a layer above autograd: reached as in MXNet.
autograd.get_symbol = symbol.from_autograd.get_symbol
# MXNet's legacy mx.nd.imdecode decodes with recordio's decoder, which sits above NDArray.
ndarray.imdecode = legacy_imdecode.imdecode
# The CachedOp is an executor mechanism (above ndarray), reached as mx.nd.CachedOp as in MXNet.
ndarray.CachedOp = _cached_op.CachedOp

# FeedForward trains through mx.mod, which itself uses mx.model's checkpoint functions: it has its own
# file above both and is reached as mx.model.FeedForward, as in MXNet.
model.FeedForward = feedforward.FeedForward

# mx.random is, in MXNet, the seed plus the samplers of mx.nd.random (a star import). The
# samplers live above framework.random (they build NDArrays), so they are attached here.
for _sampler in ndarray.random.SAMPLERS:
    setattr(random, _sampler, getattr(ndarray.random, _sampler))
random.__all__ = ["seed", *ndarray.random.SAMPLERS]

# mx.context.num_gpus / gpu_memory_info ask CUDA through the backend, which builds on contexts.
context.num_gpus = num_gpus
context.gpu_memory_info = backend.gpu_memory_info

# The MXNet API version MXLab reproduces (scripts compare it); MXLab's own is __mxlab_version__.
__version__ = libinfo.__version__
__mxlab_version__ = libinfo.MXLAB_VERSION

__all__ = [
    "AttrScope",
    "Context",
    "attribute",
    "contrib",
    "cpu_pinned",
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
    "gluon",
    "gpu",
    "image",
    "img",
    "init",
    "io",
    "kv",
    "kvstore",
    "initializer",
    "library",
    "log",
    "lr_scheduler",
    "metric",
    "mod",
    "model",
    "mon",
    "monitor",
    "module",
    "num_gpus",
    "nd",
    "ndarray",
    "operator",
    "optimizer",
    "profiler",
    "random",
    "recordio",
    "registry",
    "rnd",
    "resource",
    "rnn",
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
