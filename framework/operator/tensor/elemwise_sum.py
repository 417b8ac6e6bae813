"""``add_n`` (alias ``ElementWiseSum``): the element-wise sum of any number of same-shape arrays.

Its number of inputs is a parameter (``num_args``), unlike the two-input operators of
:mod:`.elemwise_binary`, and the gradient pass uses it to add up the contributions to an
array that feeds several operators. Every summand's gradient is the output gradient.
"""

from __future__ import annotations

from ..infer import elemwise_shape, elemwise_type
from ..kernel import ADD, NULL, assign, assign_ufunc
from ..node import Entry, Node
from ..params import REQUIRED, Param, ParamSet
from ..registry import alias, register
from .binary_family import inplace_first


class ElementWiseSumParam(ParamSet):
    num_args = Param(int, REQUIRED, "Number of input arrays to sum.", low=1)


def _sum_compute(attrs, op_ctx, inputs, req, outputs) -> None:
    """Sum into the output directly; go through a temporary only if the output aliases a later input."""
    out, r = outputs[0], req[0]
    if r is NULL:
        return
    xp = op_ctx.xp
    first, rest = inputs[0], inputs[1:]
    if r is ADD or any(x is out or xp.may_share_memory(x, out) for x in rest):
        total = first.copy()
        for x in rest:
            total += x
        assign(out, r, total)
        return
    if not rest:
        assign(out, r, first)
        return
    assign_ufunc(out, r, xp.add, first, rest[0])
    for x in rest[1:]:
        out += x


def _sum_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Every summand receives the output gradient unchanged (MXNet's CloneGradient)."""
    return [out_grads[0]] * len(node.inputs)


(
    register("add_n")  # MXNet's canonical name; ElementWiseSum is its alias
    .describe("Adds all input arguments element-wise: add_n(a1, ..., an) = a1 + ... + an; all shapes equal.")
    .set_params(ElementWiseSumParam)
    .set_num_inputs(lambda attrs: attrs.parsed.num_args)
    .set_num_outputs(1)
    .set_input_names(lambda attrs: [f"arg{i}" for i in range(attrs.parsed.num_args)])
    .set_key_var_num_args("num_args")
    .set_infer_shape(elemwise_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_sum_compute)
    .set_gradient(_sum_gradient)
    .set_inplace_option(inplace_first)
)
alias("ElementWiseSum", "add_n")
alias("_ElementWiseSum", "add_n")
