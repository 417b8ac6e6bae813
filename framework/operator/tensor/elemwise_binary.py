"""Element-wise binary operators on two arrays of one shape: ``elemwise_add(lhs, rhs)`` and friends.

MXNet 1.x has three spellings of ``a + b``. This module registers the **same-shape** one:
``elemwise_add`` (alias ``_plus``/``_Plus``/``_add``, the names ``Symbol.__add__`` produces),
``elemwise_sub``/``mul``/``div``, ``_maximum``, ``_minimum``, ``_power``, ``_mod``, ``_hypot``,
the comparisons ``_equal`` ... ``_lesser_equal`` and the logical
``_logical_and``/``or``/``xor``, plus ``_grad_add``, which the gradient pass uses to
accumulate. Both inputs and the output have one shape and one dtype (``elemwise_shape``
infers any of them from the others); broadcasting is the job of the ``broadcast_*`` family
(:mod:`.broadcast`), which ``NDArray.__add__`` uses. The other spellings live beside it:

- :mod:`.binary_maths`: each operation's maths (``BINARY_MATHS``), shared with broadcasting;
- :mod:`.binary_family`: ``BinaryFamily`` and ``register_binary``, the registration skeleton;
- :mod:`.elemwise_scalar`: the array-scalar operators (``_plus_scalar``, ``SCALAR_OPS``);
- :mod:`.elemwise_sum`: ``add_n`` (``ElementWiseSum``), the sum of any number of arrays.

Comparisons return 1/0 in the *input* dtype (``a == 1`` on float32 is float32) and have a
zero gradient. The names of those modules stay importable from here.
"""

from __future__ import annotations

from ..grad import FormulaBuilder, elemwise_grad_use_none
from ..infer import elemwise_shape, elemwise_type
from ..node import Entry, Node
from ..registry import get, register
from .binary_family import BinaryFamily, inplace_binary, register_binary
from .binary_maths import BINARY_MATHS, BinaryMath, binary_backward_compute, binary_forward_compute, mod
from .elemwise_scalar import SCALAR_OPS, ScalarOp, ScalarParam, register_scalar_op
from .elemwise_sum import ElementWiseSumParam

__all__ = [
    "BINARY_MATHS",
    "SAME_SHAPE",
    "SCALAR_OPS",
    "BinaryFamily",
    "BinaryMath",
    "ElementWiseSumParam",
    "ScalarOp",
    "ScalarParam",
    "binary_backward_compute",
    "binary_forward_compute",
    "mod",
    "register_binary",
    "register_scalar_op",
]

SAME_SHAPE = BinaryFamily(
    description_suffix="; both inputs must have the same shape (use broadcast_* to broadcast).",
    infer_shape=elemwise_shape,
    backward_infer_shape=elemwise_shape,
    backward_description="Gradients of {name} with respect to lhs and rhs.",
    backward_name=lambda kind, name: f"_backward_{kind}",
)

# (kind, registered name, aliases), with MXNet's names
_SAME_SHAPE_NAMES = (
    ("add", "elemwise_add", ("_plus", "_Plus", "_add")),
    ("sub", "elemwise_sub", ("_minus", "_Minus", "_sub")),
    ("mul", "elemwise_mul", ("_mul", "_Mul")),
    ("div", "elemwise_div", ("_div", "_Div")),
    ("mod", "_mod", ("_Mod",)),
    ("power", "_power", ("_Power",)),
    ("maximum", "_maximum", ("_Maximum",)),
    ("minimum", "_minimum", ("_Minimum",)),
    ("hypot", "_hypot", ("_Hypot",)),
    ("equal", "_equal", ("_Equal",)),
    ("not_equal", "_not_equal", ("_Not_Equal",)),
    ("greater", "_greater", ("_Greater",)),
    ("greater_equal", "_greater_equal", ("_Greater_Equal",)),
    ("lesser", "_lesser", ("_Lesser",)),
    ("lesser_equal", "_lesser_equal", ("_Lesser_Equal",)),
    ("logical_and", "_logical_and", ("_Logical_And",)),
    ("logical_or", "_logical_or", ("_Logical_Or",)),
    ("logical_xor", "_logical_xor", ("_Logical_Xor",)),
)

for _kind, _name, _aliases in _SAME_SHAPE_NAMES:
    register_binary(SAME_SHAPE, _kind, _name, _aliases)


def _add_backward_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """``_backward_add(g)`` hands ``g`` to both inputs, so its gradient is the sum of the two head
    gradients: elemwise_add stays differentiable at higher orders, as in MXNet 1.9.1."""
    return [FormulaBuilder(node.name).op("elemwise_add", *out_grads)]


get("_backward_add").set_gradient(_add_backward_gradient)

# The executor's gradient accumulation operator (MXNet keeps it apart from elemwise_add).
(
    register("_grad_add")
    .describe("Adds two gradients element-wise (used to accumulate gradient contributions).")
    .set_num_inputs(2)
    .set_input_names(["lhs", "rhs"])
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(binary_forward_compute("add"))
    .set_gradient(elemwise_grad_use_none("_backward_add"))
    .set_inplace_option(inplace_binary)
)
