"""``_contrib_hawkesll``: the log-likelihood of K independent self-exciting (Hawkes) processes.

Process ``k`` has the intensity ``lda_k + alpha_k * beta_k * s_k(t)``, where the *memory*
``s_k(t) = sum over past events i of mark k of exp(-beta_k (t - t_i))`` (plus the carried-in
``state`` decayed from time 0). For each sample ``n`` the events arrive after the gaps
``lags[n, :valid_length[n]]`` with marks ``marks[n, :]`` and are observed on ``(0, max_time[n]]``:

    loglike = sum over events of log(intensity of its mark just before it)
              - sum over k of the integral of the intensity over (0, max_time]

and the integral has a closed form, ``lda_k T + alpha_k (s_k(0) + count_k - s_k(T))``. The
outputs are ``loglike`` ``(N,)`` and the memory ``s(T)`` ``(N, K)``, to carry into the next window.

The memory is a recursion over the events, so the kernel loops over the T event *positions*,
each step vectorised over the N samples and K processes (as a recurrent network loops over
time). The gradient (``_contrib_backward_hawkesll``) runs the same loop, carrying alongside
``s`` its derivatives with respect to ``beta`` and to the initial state, for ``lda``,
``alpha``, ``beta`` and ``state``; the observations (lags, marks, lengths, max_time) get zeros.
"""

from __future__ import annotations

from typing import Any

from ..grad import elemwise_grad_use_in
from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..registry import register
from ..tensor.common import put

INPUTS = ["lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time"]


def _hawkes_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    lda, lags = in_shapes[0], in_shapes[4]
    if lda is None or lags is None:
        return False
    if len(lda) != 2 or len(lags) != 2 or (lda[0] and lags[0] and lda[0] != lags[0]):
        raise InferenceError(f"{attrs.name}: lda must be (N, K) and lags (N, T) with the same N, got {lda} and {lags}")
    n, k = lda
    for i, shape in ((1, (k,)), (2, (k,)), (3, (n, k)), (5, lags), (6, (n,)), (7, (n,))):
        shape_assign(in_shapes, i, shape, attrs.name, INPUTS[i])
    shape_assign(out_shapes, 0, (n,), attrs.name, "loglike")
    shape_assign(out_shapes, 1, (n, k), attrs.name, "states")
    return all(shape_known(s) for s in in_shapes)


def _hawkes_type(attrs: Any, in_types: list, out_types: list) -> bool:
    dtype = in_types[0]
    for i in (1, 2, 3, 4, 6, 7):
        type_assign(in_types, i, dtype, attrs.name, INPUTS[i])
    type_assign(in_types, 5, "int32", attrs.name, "marks")
    for i in range(2):
        type_assign(out_types, i, dtype, attrs.name, f"output {i}")
    return dtype is not None


def _sweep(xp: Any, inputs: list, derivatives: bool) -> dict[str, Any]:
    """Run the recursion over event positions; with ``derivatives`` also accumulate what the
    gradient needs. Every quantity is (N, K) unless named otherwise."""
    lda, alpha, beta, state, lags, marks, valid_length, max_time = inputs
    n = lda.shape[0]
    rows = xp.arange(n)
    s = state.astype("float64")
    ds_dbeta = xp.zeros_like(s)  # d s / d beta_k
    decay_from_0 = xp.ones_like(s)  # d s / d state = exp(-beta t)
    count = xp.zeros_like(s)  # events so far, per mark
    elapsed = xp.zeros(n)
    loglike = xp.zeros(n)
    acc = {name: xp.zeros_like(s) for name in ("inv", "s_inv", "sb_inv", "d_inv")} if derivatives else {}
    b = beta.astype("float64")[None, :]
    a = alpha.astype("float64")[None, :]
    for j in range(lags.shape[1]):
        valid = (j < valid_length).astype("float64")[:, None]  # (N, 1): padding steps change nothing
        gap = lags[:, j].astype("float64")[:, None] * valid
        factor = xp.exp(-b * gap)
        ds_dbeta = factor * (ds_dbeta - gap * s)
        s = s * factor
        decay_from_0 = decay_from_0 * factor
        elapsed = elapsed + gap[:, 0]
        hit = xp.zeros_like(s)
        hit[rows, marks[:, j].astype("int64")] = 1.0
        hit = hit * valid  # (N, K): 1 at the event's mark
        intensity = ((lda + a * b * s) * hit).sum(axis=1)  # of the event's own mark
        safe = xp.where(valid[:, 0] > 0, intensity, 1.0)
        loglike = loglike + xp.log(safe)
        if derivatives:
            inv = hit / safe[:, None]
            acc["inv"] += inv
            acc["s_inv"] += b * s * inv
            acc["sb_inv"] += a * (s + b * ds_dbeta) * inv
            acc["d_inv"] += a * b * decay_from_0 * inv
        s = s + hit
        count = count + hit
    rest = (max_time.astype("float64") - elapsed)[:, None]
    factor = xp.exp(-b * rest)
    ds_dbeta = factor * (ds_dbeta - rest * s)
    s = s * factor
    decay_from_0 = decay_from_0 * factor
    total = max_time.astype("float64")[:, None]
    compensator = lda * total + a * (state + count - s)
    return {
        "loglike": loglike - compensator.sum(axis=1),
        "state": s,
        "ds_dbeta": ds_dbeta,
        "decay": decay_from_0,
        "count": count,
        "total": total,
        **acc,
    }


def _hawkes_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    result = _sweep(op_ctx.xp, inputs, derivatives=False)
    put(outputs[0], req[0], result["loglike"])
    put(outputs[1], req[1], result["state"])


def _hawkes_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp = op_ctx.xp
    g_ll, g_state, forward = inputs[0], inputs[1], inputs[2:]
    alpha, state = forward[1].astype("float64"), forward[3].astype("float64")
    r = _sweep(xp, forward, derivatives=True)
    g = g_ll.astype("float64")[:, None]
    gs = g_state.astype("float64")
    a = alpha[None, :]
    grads = [
        g * (r["inv"] - r["total"]),  # lda
        (g * (r["s_inv"] - (state + r["count"] - r["state"]))).sum(axis=0),  # alpha
        (g * (r["sb_inv"] + a * r["ds_dbeta"]) + gs * r["ds_dbeta"]).sum(axis=0),  # beta
        g * (r["d_inv"] - a * (1 - r["decay"])) + gs * r["decay"],  # state
    ]
    for i, value in enumerate(grads):
        put(outputs[i], req[i], value)
    for i in range(4, 8):
        put(outputs[i], req[i], xp.zeros(outputs[i].shape, dtype=outputs[i].dtype))


def _backward_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    for i in range(8):
        shape_assign(out_shapes, i, in_shapes[2 + i], attrs.name, f"gradient of {INPUTS[i]}")
    return all(shape_known(s) for s in out_shapes)


def _backward_type(attrs: Any, in_types: list, out_types: list) -> bool:
    for i in range(8):
        type_assign(out_types, i, in_types[2 + i], attrs.name, f"gradient of {INPUTS[i]}")
    return all(t is not None for t in out_types)


(
    register("_contrib_hawkesll")
    .describe("Log-likelihood of K independent exponential-kernel Hawkes processes, and their final memory.")
    .set_num_inputs(8)
    .set_num_outputs(2)
    .set_input_names(INPUTS)
    .set_infer_shape(_hawkes_shape)
    .set_infer_type(_hawkes_type)
    .set_compute(_hawkes_compute)
    .set_gradient(elemwise_grad_use_in("_contrib_backward_hawkesll"))
)
(
    register("_contrib_backward_hawkesll")
    .set_num_inputs(10)
    .set_num_outputs(8)
    .set_infer_shape(_backward_shape)
    .set_infer_type(_backward_type)
    .set_compute(_hawkes_backward)
    .set_is_backward()
)
