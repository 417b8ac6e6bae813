"""Helpers shared by the operator exercises: call a registered operator's pieces directly.

The checks look the learner's operator up in the registry (their file registered it when
imported) and call its compute, gradient and inference functions one at a time, on NumPy
arrays, with no engine in between: a mistake then shows up in the check about that piece,
with the exact input that exposed it. One check (``numeric_gradient``) goes the long way,
through ``mx.nd`` and autograd, as a user of the operator would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from framework.context import cpu
from framework.operator import registry
from framework.operator.infer import InferenceError
from framework.operator.kernel import OpContext, Req
from framework.operator.node import Entry, Node, NodeAttrs, topo_sort, variable
from framework.operator.params import OperatorParamError
from framework.resource import ResourceManager
from framework.test_utils import check_imperative_gradient

from .checker import CheckFailure, fmt_shape, fmt_value, mismatch, note_call

REQS = {"write": Req.WRITE, "add": Req.ADD, "null": Req.NULL}
ASSIGN_HINT = "write every output through `assign(out, req[i], value)` (framework/operator/kernel.py)"


def lookup(name: str) -> Any:
    """The learner's operator, or a failure saying the registration did not run."""
    if not registry.exists(name):
        raise CheckFailure(
            f"looking up operator {name!r} in the registry",
            f"operator {name!r} registered when your file is imported",
            "no such operator",
            "keep the registration block at the bottom of the stub; it must run at import time",
        )
    return registry.get(name)


def describe(op_name: str, arrays: dict[str, np.ndarray], params: dict[str, Any], req: str | None = None) -> str:
    """``op(x of shape (2, 3) float32, a=1) with req='add'``: how messages name a call."""
    parts = [f"{k} of shape {fmt_shape(v.shape)} {v.dtype}" for k, v in arrays.items()]
    if all(v.size <= 6 for v in arrays.values()):
        parts = [f"{k}={fmt_value(v)} (shape {fmt_shape(v.shape)}, {v.dtype})" for k, v in arrays.items()]
    parts += [f"{k}={v!r}" for k, v in params.items()]
    text = f"{op_name}({', '.join(parts)})"
    return text + (f" with req={req!r}" if req else "")


def _params_text(attrs: NodeAttrs) -> str:
    values = getattr(attrs.parsed, "_values", None)
    return f"parameters {dict(values)}" if isinstance(values, dict) else "its parameters"


def parse(op: Any, params: dict[str, Any]) -> NodeAttrs:
    return op.parse_attrs(dict(params))


def op_context(op: Any, attrs: NodeAttrs, is_train: bool = True) -> OpContext:
    ctx = cpu(0)
    requested = [ResourceManager.get().request(ctx, r) for r in op.resource_request(attrs)]
    return OpContext(is_train, ctx, None, requested)


def call_compute(
    op: Any,
    attrs: NodeAttrs,
    inputs: Sequence[np.ndarray],
    out_specs: Sequence[tuple[tuple[int, ...], Any]],
    req: Sequence[str],
    initial: Sequence[np.ndarray] | None = None,
    is_train: bool = True,
) -> list[np.ndarray]:
    """Run ``op``'s compute on copies of ``inputs``; outputs start as ``initial`` (or NaN)."""
    if initial is None:
        outputs = [np.full(shape, np.nan, dtype=dtype) for shape, dtype in out_specs]
    else:
        outputs = [np.array(a, copy=True) for a in initial]
    copies = [np.array(a, copy=True) for a in inputs]
    shapes = ", ".join(f"{fmt_shape(a.shape)} {a.dtype}" for a in copies)
    note_call(f"{op.name}'s compute on inputs {shapes} with req={list(req)} and {_params_text(attrs)}")
    op.get_compute("cpu")(attrs, op_context(op, attrs, is_train), copies, [REQS[r] for r in req], outputs)
    return outputs


def check_inputs_untouched(
    op_name: str, inputs: Sequence[np.ndarray], copies_after: Sequence[np.ndarray], names: Sequence[str], call: str
) -> None:
    for name, before, after in zip(names, inputs, copies_after, strict=True):
        if not np.array_equal(before, after, equal_nan=True):
            raise CheckFailure(
                call,
                f"{name} left unchanged",
                f"{name} modified by the operator",
                "compute the result into the output (through assign); never write into an input array",
            )


# ----------------------------------------------------------------------------- backward
def run_backward(
    op: Any,
    params: dict[str, Any],
    inputs: Sequence[np.ndarray],
    out_grads: Sequence[np.ndarray],
    req: Sequence[str],
    initial: Sequence[np.ndarray | None] | None = None,
    is_train: bool = True,
    forward_outputs: Sequence[np.ndarray] | None = None,
) -> list[np.ndarray | None]:
    """Input gradients from ``op``'s gradient nodes, run directly; None where no gradient exists.

    The forward pass runs first (with req write) because backward nodes may read its
    outputs, unless ``forward_outputs`` (the reference's) are given: then a backward check
    does not depend on the learner's forward. ``req[i]``/``initial[i]`` apply to the
    gradient of input ``i``.
    """
    attrs = parse(op, params)
    leaves = [variable(f"in{i}") for i in range(len(inputs))]
    forward = Node(op, NodeAttrs(op.name, op, attrs.parsed), [Entry(leaf, 0) for leaf in leaves])
    values: dict[tuple[int, int], np.ndarray] = {
        (leaf.id, 0): np.asarray(x) for leaf, x in zip(leaves, inputs, strict=True)
    }
    n_out = len(out_grads)  # forward outputs are shaped like their gradients (not the learner's inference)
    specs = [(np.shape(g), np.asarray(g).dtype) for g in out_grads]

    if forward_outputs is not None:
        for i, out in enumerate(forward_outputs):
            values[(forward.id, i)] = np.asarray(out)

    def run_forward() -> None:  # only when a backward node reads a forward output
        for i, out in enumerate(call_compute(op, attrs, inputs, specs, ["write"] * n_out, is_train=is_train)):
            values[(forward.id, i)] = out

    grad_leaves = [variable(f"ograd{i}") for i in range(n_out)]
    for leaf, g in zip(grad_leaves, out_grads, strict=True):
        values[(leaf.id, 0)] = np.asarray(g)
    grads = op.gradient(forward, [Entry(leaf, 0) for leaf in grad_leaves])
    final: dict[tuple[int, int], int] = {}
    for i, g in enumerate(grads):
        if g is not None:
            final[(g.node.id, g.index)] = i
    for node in topo_sort([g for g in grads if g is not None]):
        if node.is_variable or node is forward:
            continue
        if any(e.node is forward for e in node.inputs) and (forward.id, 0) not in values:
            run_forward()
        node_inputs = [values[(e.node.id, e.index)] for e in node.inputs]
        count = node.op.get_num_outputs(node.attrs)
        node_specs, node_req, node_initial = [], [], []
        for k in range(count):
            target = final.get((node.id, k))
            if target is not None:
                shape, dtype = inputs[target].shape, inputs[target].dtype
                node_req.append(req[target])
                start = None if initial is None else initial[target]
                node_initial.append(np.full(shape, np.nan, dtype) if start is None else start)
            else:
                shapes: list[Any] = [None] * count
                node.op.run_infer_shape(node.attrs, [a.shape for a in node_inputs], shapes)
                shape, dtype = shapes[k], node_inputs[0].dtype
                node_req.append("write")
                node_initial.append(np.full(shape, np.nan, dtype))
            node_specs.append((shape, dtype))
        outs = call_compute(node.op, node.attrs, node_inputs, node_specs, node_req, node_initial, is_train)
        for k, out in enumerate(outs):
            values[(node.id, k)] = out
    return [None if g is None else values[(g.node.id, g.index)] for g in grads]


# ----------------------------------------------------------------------------- inference
def infer_shapes(op: Any, params: dict[str, Any], in_shapes: list, out_shapes: list) -> tuple[list, list, bool]:
    attrs = parse(op, params)
    ins, outs = list(in_shapes), list(out_shapes)
    note_call(f"{op.name}'s infer_shape(in={ins}, out={outs}) with {params}")
    complete = op.run_infer_shape(attrs, ins, outs)
    return ins, outs, complete


def expect_inference_error(op: Any, params: dict[str, Any], in_shapes: list, out_shapes: list, why: str) -> None:
    """Shape inference must refuse these shapes with an InferenceError (or a parameter error)."""
    call = f"infer_shape({', '.join(map(str, in_shapes))} -> {', '.join(map(str, out_shapes))}) with {params}"
    try:
        ins, outs, _ = infer_shapes(op, params, in_shapes, out_shapes)
    except (InferenceError, OperatorParamError):
        return
    raise CheckFailure(
        call,
        f"an InferenceError ({why})",
        f"no error; inputs {ins}, outputs {outs}",
        "raise InferenceError (or use shape_assign, which raises it) naming both shapes when they do not fit",
    )


def expect_param_error(op: Any, params: dict[str, Any], why: str) -> None:
    try:
        parse(op, params)
    except OperatorParamError:
        return
    raise CheckFailure(
        f"parsing parameters {params}",
        f"an OperatorParamError ({why})",
        "the parameters were accepted",
        "declare the parameter with Param(type, default, description, low=/choices=) in your ParamSet",
    )


def numeric_gradient_via_autograd(
    fn: Any, location: Sequence[np.ndarray], call: str, grad_nodes: Sequence[int] | None = None
) -> None:
    """Framework's check_imperative_gradient (mx.nd + autograd against finite differences), in float64."""
    try:
        check_imperative_gradient(fn, list(location), grad_nodes=grad_nodes, dtype=np.float64, rtol=1e-3, atol=1e-5)
    except AssertionError as err:
        raise CheckFailure(
            call + " through mx.nd and autograd, projected onto random weights",
            "the gradient from your backward to match central finite differences of your forward",
            str(err).removeprefix("check_imperative_gradient: "),
            "if forward is right (its check passes), the derivative in backward is wrong: differentiate "
            "forward by hand, mind the sign, and multiply by the incoming output gradient (chain rule)",
        ) from None


# ----------------------------------------------------------------------------- req checks
WRONG_FORMULA_HINT = (
    "the result is already wrong with req 'write', so the formula in {what} is the problem, not req "
    "'add'/'null' handling: make the `{check}` check pass first (it names the input that breaks it)"
)


def _tolerances(dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing a result of ``dtype`` with the float64 reference."""
    return (1e-4, 1e-5) if dtype == np.float32 else (1e-7, 1e-9)


def check_forward_req(
    op: Any,
    params: dict[str, Any],
    inputs: Sequence[np.ndarray],
    names: Sequence[str],
    expected: Sequence[np.ndarray],
    formula: str,
    rng: np.random.Generator,
    output_names: Sequence[str] | None = None,
) -> None:
    """req add must accumulate onto what the outputs held, req null must leave them alone.

    The plain ``write`` result is checked first: when the formula itself is wrong, that is
    what the learner is told, not that ``add`` or ``null`` is mishandled.
    """
    attrs = parse(op, params)
    specs = [(e.shape, e.dtype) for e in expected]
    output_names = output_names or [f"out{i}" if len(expected) > 1 else "out" for i in range(len(expected))]
    arrays = dict(zip(names, inputs, strict=True))
    previous = [rng.uniform(-1, 1, size=e.shape).astype(e.dtype) for e in expected]
    written = call_compute(op, attrs, inputs, specs, ["write"] * len(expected), previous)
    for name, exp, out in zip(output_names, expected, written, strict=True):
        rtol, atol = _tolerances(exp.dtype)
        if not np.allclose(out, exp, rtol=rtol, atol=atol, equal_nan=True):
            raise CheckFailure(
                describe(op.name, arrays, params, "write"),
                f"{name} = {formula}",
                f"{name} = {fmt_value(out)}",
                WRONG_FORMULA_HINT.format(what="forward", check="forward"),
                mismatch(exp, out, rtol, atol) or "",
            )
    got = call_compute(op, attrs, inputs, specs, ["add"] * len(expected), previous)
    call = describe(op.name, arrays, params, "add")
    for name, prev, exp, out in zip(output_names, previous, expected, got, strict=True):
        rtol, atol = _tolerances(exp.dtype)
        target = prev + exp
        if np.allclose(out, target, rtol=rtol, atol=atol, equal_nan=True):
            continue
        lost = np.allclose(out, exp, rtol=rtol, atol=atol, equal_nan=True)
        raise CheckFailure(
            call,
            f"{name} = previous {name} + {formula}",
            f"{name} = {formula} (previous contents lost)" if lost else f"{name} = {fmt_value(out)}",
            f"with req 'add' the operator must add to {name}; {ASSIGN_HINT}",
            mismatch(target, out, rtol, atol) or "",
        )
    untouched = call_compute(op, attrs, inputs, specs, ["null"] * len(expected), previous)
    for name, prev, out in zip(output_names, previous, untouched, strict=True):
        if not np.array_equal(out, prev, equal_nan=True):
            raise CheckFailure(
                describe(op.name, arrays, params, "null"),
                f"{name} left exactly as it was",
                f"{name} was written",
                f"req 'null' means the output is not wanted: do not touch it; {ASSIGN_HINT}",
            )


def check_backward_req(
    op: Any,
    params: dict[str, Any],
    inputs: Sequence[np.ndarray],
    names: Sequence[str],
    out_grads: Sequence[np.ndarray],
    expected_grads: Sequence[np.ndarray | None],
    rng: np.random.Generator,
    forward_outputs: Sequence[np.ndarray] | None = None,
) -> None:
    """Gradients with req add accumulate (gradient accumulation), req null are not written."""
    arrays = dict(zip(names, inputs, strict=True))
    previous = [None if g is None else rng.uniform(-1, 1, size=g.shape).astype(g.dtype) for g in expected_grads]
    writes = ["write" if g is not None else "null" for g in expected_grads]
    written = run_backward(op, params, inputs, out_grads, writes, previous, forward_outputs=forward_outputs)
    call = "backward of " + describe(op.name, arrays, params) + " with req='write' on the input gradients"
    for name, exp, out in zip(names, expected_grads, written, strict=True):
        if exp is None:
            continue
        rtol, atol = _tolerances(exp.dtype)
        if out is None or not np.allclose(out, exp, rtol=rtol, atol=atol, equal_nan=True):
            raise CheckFailure(
                call,
                f"grad of {name} = {fmt_value(exp)}",
                f"grad of {name} = {fmt_value(out)}",
                WRONG_FORMULA_HINT.format(what="backward", check="backward"),
                "" if out is None else (mismatch(exp, out, rtol, atol) or ""),
            )
    reqs = ["add" if g is not None else "null" for g in expected_grads]
    got = run_backward(op, params, inputs, out_grads, reqs, previous, forward_outputs=forward_outputs)
    call = "backward of " + describe(op.name, arrays, params) + " with req='add' on the input gradients"
    for name, prev, exp, out in zip(names, previous, expected_grads, got, strict=True):
        if exp is None:
            continue
        rtol, atol = _tolerances(exp.dtype)
        if out is not None and np.allclose(out, prev + exp, rtol=rtol, atol=atol):
            continue
        lost = out is not None and np.allclose(out, exp, rtol=rtol, atol=atol)
        raise CheckFailure(
            call,
            f"grad of {name} = previous grad + the new gradient (accumulated)",
            "the new gradient alone (previous contents lost)" if lost else f"grad of {name} = {fmt_value(out)}",
            f"gradients accumulate when req is 'add' (grad_req='add'); {ASSIGN_HINT}",
            "" if out is None else (mismatch(prev + exp, out, rtol, atol) or ""),
        )
    nulls = ["null"] * len(expected_grads)
    untouched = run_backward(op, params, inputs, out_grads, nulls, previous, forward_outputs=forward_outputs)
    for name, prev, out in zip(names, previous, untouched, strict=True):
        if prev is not None and out is not None and not np.array_equal(out, prev, equal_nan=True):
            raise CheckFailure(
                "backward of " + describe(op.name, arrays, params, "null"),
                f"grad of {name} left exactly as it was",
                f"grad of {name} was written",
                f"req 'null' means that gradient is not wanted: do not touch it; {ASSIGN_HINT}",
            )
