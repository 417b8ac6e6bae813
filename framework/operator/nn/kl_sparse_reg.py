"""IdentityAttachKLSparseReg: the identity, with a sparsity penalty added to its gradient.

Used after a sigmoid layer of an autoencoder to make each hidden unit active on only a small
fraction ``rho`` (``sparseness_target``) of the samples. The forward pass returns ``data``
``(N, C, ...)`` unchanged. The operator keeps, as an auxiliary state ``moving_avg`` ``(C,)``,
a running average of each unit's mean activation ``rho_hat``::

    moving_avg = momentum * moving_avg + (1 - momentum) * mean(data over all axes but 1)

and its backward pass adds the gradient of the penalty ``penalty * KL(rho || rho_hat)`` to the
head gradient, one value per unit broadcast over the batch::

    d data = g + penalty * (-rho / rho_hat + (1 - rho) / (1 - rho_hat))

MXNet 1.9.1 updates ``moving_avg`` in the backward pass; MXLab updates it in the forward pass
of training (as its BatchNorm does), so after one forward and backward step the state and the
gradient agree with MXNet's. The state gets no gradient.
"""

from __future__ import annotations

from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..kernel import assign
from ..node import Entry, Node, NodeAttrs
from ..params import Param, ParamSet
from ..registry import register

FLOAT_TYPES = ("float16", "float32", "float64")


class KLSparseRegParam(ParamSet):
    sparseness_target = Param(float, 0.1, "The target mean activation rho of each unit.", low=0.0, high=1.0)
    penalty = Param(float, 1e-3, "Weight of the KL sparseness penalty.")
    momentum = Param(float, 0.9, "Momentum of the running average of the activations.")


def _unit_shape(ndim: int) -> tuple[int, ...]:
    """Shape of a per-unit (axis 1) vector broadcast against the data."""
    return tuple(-1 if i == 1 else 1 for i in range(ndim))


def _kl_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """output = data (N, C, ...); moving_avg (C,)."""
    name = attrs.name
    shape_assign(out_shapes, 0, in_shapes[0], name, "output")
    shape_assign(in_shapes, 0, out_shapes[0], name, "data")
    data = in_shapes[0]
    if data is not None:
        if len(data) < 2:
            raise InferenceError(f"{name}: data must have at least 2 dimensions (batch, units, ...), got {data}")
        shape_assign(in_shapes, 1, (data[1],), name, "moving_avg")
        if in_shapes[1] is not None:
            shape_assign(in_shapes, 0, (data[0], in_shapes[1][0], *data[2:]), name, "data")
            shape_assign(out_shapes, 0, in_shapes[0], name, "output")
    return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))


def _kl_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    name = attrs.name
    type_assign(out_types, 0, in_types[0], name, "output")
    type_assign(in_types, 0, out_types[0], name, "data")
    if in_types[0] is None:
        return False
    if in_types[0] not in FLOAT_TYPES:
        raise InferenceError(f"{name}: data must be float16, float32 or float64, got {in_types[0]}")
    type_assign(in_types, 1, in_types[0], name, "moving_avg")
    return True


def _kl_forward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    p = attrs.parsed
    data, moving_avg = inputs
    if op_ctx.is_train:
        axes = tuple(i for i in range(data.ndim) if i != 1)
        mean = data.mean(axis=axes, dtype=moving_avg.dtype)
        moving_avg[...] = p.momentum * moving_avg + (1 - p.momentum) * mean  # auxiliary state: in place
    assign(outputs[0], req[0], data)


def _kl_backward(attrs: NodeAttrs, op_ctx, inputs, req, outputs) -> None:
    """Inputs: the head gradient and the (updated) moving average."""
    p = attrs.parsed
    grad, moving_avg = inputs
    rho, rho_hat = p.sparseness_target, moving_avg.reshape(_unit_shape(grad.ndim))
    penalty = p.penalty * (-rho / rho_hat + (1 - rho) / (1 - rho_hat))
    assign(outputs[0], req[0], (grad + penalty).astype(grad.dtype, copy=False))
    assign(outputs[1], req[1], 0)  # the auxiliary state gets no gradient


def _kl_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    backward = make_backward_node(node, "_backward_IdentityAttachKLSparseReg", [out_grads[0], node.inputs[1]])
    return [Entry(backward, 0), Entry(backward, 1)]


def _backward_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    for i in range(2):
        shape_assign(out_shapes, i, in_shapes[i], attrs.name, f"gradient {i}")
    return all(shape_known(s) for s in out_shapes)


def _backward_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    for i in range(2):
        type_assign(out_types, i, in_types[i], attrs.name, f"gradient {i}")
    return all(t is not None for t in out_types)


(
    register("IdentityAttachKLSparseReg")
    .describe(
        "Identity whose gradient also carries a KL sparseness penalty pulling each unit's running mean "
        "activation towards sparseness_target."
    )
    .set_params(KLSparseRegParam)
    .set_num_inputs(2)
    .set_input_names(["data", "moving_avg"])
    .set_infer_shape(_kl_shape)
    .set_infer_type(_kl_type)
    .set_compute(_kl_forward)
    .set_gradient(_kl_gradient)
    .set_mutate_inputs(lambda attrs: [1])
    .set_inplace_option(lambda attrs: [(0, 0)])
)
(
    register("_backward_IdentityAttachKLSparseReg")
    .set_params(KLSparseRegParam)
    .set_num_inputs(2)
    .set_num_outputs(2)
    .set_infer_shape(_backward_shape)
    .set_infer_type(_backward_type)
    .set_compute(_kl_backward)
    .set_is_backward()
)
