"""``mx.nd``: asynchronous arrays and the imperative operator functions.

``mx.nd.<operator>`` is generated from the operator registry on first use; operators whose
names start with ``_contrib_`` or ``_linalg_`` live in ``mx.nd.contrib`` and
``mx.nd.linalg``; the samplers are wrapped by ``mx.nd.random`` (``uniform``, ``normal``, ...);
the remaining ``_``-prefixed operators (scalar helpers, backward operators) are in
``mx.nd._internal``; ``linspace``, ``eye``, ``histogram`` and ``split_v2`` are hand-written
front ends over internal operators, with MXNet's other Python-written functions (:mod:`.functions`).
"""

from __future__ import annotations

from typing import Any

from .. import operator as _operators  # noqa: F401 - registers the built-in operators
from ..absent import absent_attribute
from ..operator import registry as _registry
from . import (
    contrib_functions,
    contrib_updates,
    control_flow,
    methods,  # noqa: F401 - installs NDArray's operator methods (a + b, x.reshape, ...)
    op,
    random,
    utils,
)
from .creation import arange, full, ones, zeros
from .functions import (
    concatenate,
    eye,
    from_dlpack,
    from_numpy,
    histogram,
    linspace,
    logical_and,
    logical_or,
    logical_xor,
    moveaxis,
    onehot_encode,
    power,
    split_v2,
    to_dlpack_for_read,
    to_dlpack_for_write,
)
from .imperative import invoke
from .io import load, load_frombuffer, save, save_tobuffer
from .namespace import OperatorNamespace
from .ndarray import NDArray, array, empty, normalize_dtype, waitall
from .ufunc import (
    add,
    divide,
    equal,
    greater,
    greater_equal,
    lesser,
    lesser_equal,
    maximum,
    minimum,
    modulo,
    multiply,
    not_equal,
    subtract,
    true_divide,
)

contrib = OperatorNamespace("mx.nd.contrib", "_contrib_")
for _name, _wrapper in {**contrib_updates.WRAPPERS, **contrib_functions.FUNCTIONS, **control_flow.FUNCTIONS}.items():
    setattr(contrib, _name, _wrapper)  # MXNet's hand-written contrib functions (AdamW/LAMB, foreach/while_loop/cond...)
linalg = OperatorNamespace("mx.nd.linalg", "_linalg_")
image = OperatorNamespace("mx.nd.image", "_image_")
_internal = OperatorNamespace("mx.nd._internal", "")

# MXNet generates its operator functions into modules named gen_<prefix>; scripts sometimes
# import them directly. They are the same functions as above (gen_contrib without the
# hand-written AdamW/LAMB front ends that mx.nd.contrib puts over the raw operators).
gen_op = op
gen_contrib = OperatorNamespace("mx.nd.gen_contrib", "_contrib_")
gen_linalg = linalg
gen_image = image
gen_random = OperatorNamespace("mx.nd.gen_random", "_random_")
gen__internal = _internal


def __getattr__(name: str) -> Any:
    if not name.startswith("_") and _registry.exists(name):
        return getattr(op, name)
    raise absent_attribute("mx.ndarray", name, shown="mx.nd")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {n for n in _registry.list_operators() if not n.startswith("_")})


__all__ = [
    "NDArray",
    "add",
    "divide",
    "equal",
    "greater",
    "greater_equal",
    "lesser",
    "lesser_equal",
    "maximum",
    "minimum",
    "modulo",
    "multiply",
    "not_equal",
    "power",
    "subtract",
    "true_divide",
    "arange",
    "array",
    "concatenate",
    "eye",
    "from_dlpack",
    "from_numpy",
    "histogram",
    "linspace",
    "logical_and",
    "logical_or",
    "logical_xor",
    "moveaxis",
    "onehot_encode",
    "split_v2",
    "to_dlpack_for_read",
    "to_dlpack_for_write",
    "contrib",
    "empty",
    "full",
    "invoke",
    "linalg",
    "load",
    "load_frombuffer",
    "normalize_dtype",
    "ones",
    "op",
    "random",
    "save",
    "save_tobuffer",
    "utils",
    "waitall",
    "zeros",
]
