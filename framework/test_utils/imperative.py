"""Testing helpers for operators called imperatively: numeric gradients of functions, ``req`` checks.

``mx.test_utils`` (:mod:`framework.test_utils`) gathers these, the comparisons and tolerances
of its other modules, and the symbolic checkers of :mod:`.symbolic`. They build on the
comparisons and tolerances, never the other way round (``framework.imperative_test_utils``
re-exports them under the name they had first).

Messages speak the learner's language: which input, which index, what autograd said and
what finite differences said, never a bare traceback from inside the checker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import autograd
from .. import ndarray as nd
from ..base import MXLabError
from ..context import Context, cpu
from ..ndarray.ndarray import NDArray
from ..operator import registry
from ..operator.kernel import ADD, NULL, WRITE, OpContext
from ..operator.node import Entry, Node, NodeAttrs, topo_sort, variable
from ..resource import ResourceManager, ResourceRequest
from ..symbol import Symbol
from .compare import assert_almost_equal
from .tolerances import default_context, default_numeric_eps


def _outputs_list(result: Any, what: str) -> list[NDArray]:
    outputs = [result] if isinstance(result, NDArray) else list(result)
    if not outputs or not all(isinstance(o, NDArray) for o in outputs):
        raise MXLabError(f"{what}: the function must return an NDArray or a list of NDArrays")
    return outputs


def check_imperative_gradient(
    fn: Callable[..., Any] | Any,
    location: Sequence[np.ndarray] | Any,
    aux_states: Any = None,
    numeric_eps: float | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    grad_nodes: Sequence[int] | Any = None,
    use_forward_train: bool = True,
    ctx: Context | None = None,
    grad_stype_dict: Any = None,
    dtype: Any = np.float64,
    seed: int = 0,
) -> None:
    """Compare autograd's gradients of ``fn`` with central finite differences.

    ``fn`` takes one NDArray per entry of ``location`` and returns an NDArray (or a list).
    The outputs are projected onto random weights in [0.1, 1.1) to make a scalar loss, as
    MXNet does; then each input element is nudged by +/- eps. MXNet's
    ``check_numeric_gradient(sym, location, ...)`` is the same check on a Symbol through an
    executor (:mod:`.symbolic`); the parameters here keep its names.
    """
    if isinstance(fn, Symbol):
        raise MXLabError(
            "check_imperative_gradient: got a Symbol; use check_numeric_gradient(sym, location) for symbols"
        )
    if not callable(fn):
        raise MXLabError(f"check_imperative_gradient: expected a function of NDArrays, got {type(fn).__name__}")
    if aux_states is not None or grad_stype_dict is not None:
        raise MXLabError("check_imperative_gradient: aux_states and grad_stype_dict apply to symbols only")
    dtype = np.dtype(dtype)
    ctx = ctx or default_context()
    eps = numeric_eps or default_numeric_eps().get(dtype, 2.0**-14)
    rtol = 1e-2 if rtol is None else rtol
    atol = 1e-4 if atol is None else atol
    location = [np.asarray(loc, dtype=dtype) for loc in location]
    grad_nodes = list(range(len(location))) if grad_nodes is None else list(grad_nodes)
    rng = np.random.default_rng(seed)

    inputs = [nd.array(loc, ctx=ctx, dtype=dtype) for loc in location]
    for i in grad_nodes:
        inputs[i].attach_grad()
    with autograd.record():
        outputs = _outputs_list(fn(*inputs), "check_imperative_gradient")
    projections = [rng.uniform(0.1, 1.1, size=o.shape).astype(o.dtype) for o in outputs]
    autograd.backward(outputs, [nd.array(p, ctx=ctx, dtype=p.dtype) for p in projections])
    analytic = {i: inputs[i].grad.asnumpy().astype(np.float64) for i in grad_nodes}

    def loss(values: list[np.ndarray]) -> float:
        arrays = [nd.array(v, ctx=ctx, dtype=dtype) for v in values]
        with autograd.train_mode():  # the same mode record() used for the analytic pass
            outs = _outputs_list(fn(*arrays), "check_imperative_gradient")
        return float(sum(np.sum(o.asnumpy().astype(np.float64) * p) for o, p in zip(outs, projections, strict=True)))

    for i in grad_nodes:
        numeric = np.zeros(location[i].shape, dtype=np.float64)
        flat = numeric.reshape(-1)
        for j in range(location[i].size):
            values = [v.copy() for v in location]
            values[i].reshape(-1)[j] += eps
            plus = loss(values)
            values[i].reshape(-1)[j] -= 2 * eps
            minus = loss(values)
            flat[j] = (plus - minus) / (2 * eps)
        try:
            assert_almost_equal(analytic[i], numeric, rtol=rtol, atol=atol, names=("autograd", "finite differences"))
        except AssertionError as err:
            raise AssertionError(f"check_imperative_gradient: gradient of input {i} is wrong: {err}") from None


# ---------------------------------------------------------------------- req checks on raw compute
def _run_node(
    node: Node, values: dict[tuple[int, int], np.ndarray], req: Any, initial: list[np.ndarray] | None, is_train: bool
) -> list[np.ndarray]:
    """Run one node's compute directly on NumPy arrays (no engine), returning its outputs."""
    op, attrs = node.op, node.attrs
    in_data = [values[(e.node.id, e.index)] for e in node.inputs]
    n_out = op.get_num_outputs(attrs)
    in_shapes, out_shapes = [a.shape for a in in_data], [None] * n_out
    in_types, out_types = [a.dtype.name for a in in_data], [None] * n_out
    op.run_infer_shape(attrs, in_shapes, out_shapes)
    if op.shape_from_values is not None:  # boolean_mask: the shapes follow from the values
        out_shapes = op.shape_from_values(attrs, in_data)
    op.run_infer_type(attrs, in_types, out_types)
    outputs = [
        np.array(initial[i], copy=True) if initial is not None else np.zeros(out_shapes[i], out_types[i])
        for i in range(n_out)
    ]
    ctx = cpu(0)
    requested = [ResourceManager.get().request(ctx, r) for r in op.resource_request(attrs)]
    if any(r == ResourceRequest.RANDOM for r in op.resource_request(attrs)):
        ResourceManager.get().seed(1234, ctx)
        nd.waitall()
    op.get_compute("cpu")(attrs, OpContext(is_train, ctx, None, requested), in_data, [req] * n_out, outputs)
    return outputs


def check_req(
    op_name: str, inputs: Sequence[np.ndarray], is_train: bool = True, backward: bool = True, **params: Any
) -> None:
    """Check that ``op_name`` (and its backward operators) honour ``req``.

    For each checked compute function: ``add`` onto random initial outputs must equal the
    initial values plus the ``write`` result, and ``null`` must leave them untouched.
    """
    op = registry.get(op_name)
    attrs = op.parse_attrs(params)
    leaves = [variable(f"in{i}") for i in range(len(inputs))]
    forward = Node(op, NodeAttrs(op_name, op, attrs.parsed), [Entry(leaf, 0) for leaf in leaves])
    values: dict[tuple[int, int], np.ndarray] = {
        (leaf.id, 0): np.asarray(x) for leaf, x in zip(leaves, inputs, strict=True)
    }
    rng = np.random.default_rng(7)
    checked = [forward]
    for i, out in enumerate(_run_node(forward, values, WRITE, None, is_train)):
        values[(forward.id, i)] = out
    if backward and op.gradient is not None:
        grad_leaves = [variable(f"ograd{i}") for i in range(forward.num_outputs())]
        for i, leaf in enumerate(grad_leaves):
            values[(leaf.id, 0)] = rng.uniform(-1, 1, size=values[(forward.id, i)].shape).astype(
                values[(forward.id, i)].dtype
            )
        grads = op.gradient(forward, [Entry(leaf, 0) for leaf in grad_leaves])
        for node in topo_sort([g for g in grads if g is not None]):
            if node.is_variable or node is forward:
                continue
            for i, out in enumerate(_run_node(node, values, WRITE, None, is_train)):
                values[(node.id, i)] = out
            checked.append(node)
    for node in checked:
        written = [values[(node.id, i)] for i in range(node.num_outputs())]
        initial = [rng.uniform(-1, 1, size=w.shape).astype(w.dtype) for w in written]
        added = _run_node(node, values, ADD, initial, is_train)
        for i, (w, init, got) in enumerate(zip(written, initial, added, strict=True)):
            try:
                assert_almost_equal(got, init + w, names=("req=add result", "initial + req=write result"))
            except AssertionError as err:
                raise AssertionError(f"check_req: {node.op.name} output {i} does not honour req='add': {err}") from None
        untouched = _run_node(node, values, NULL, initial, is_train)
        for i, (init, got) in enumerate(zip(initial, untouched, strict=True)):
            if not np.array_equal(got, init, equal_nan=True):
                raise AssertionError(f"check_req: {node.op.name} output {i} was modified although req='null'")
