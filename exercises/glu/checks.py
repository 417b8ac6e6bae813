"""Checks of the ``glu`` exercise (class ``GLU``, a HybridBlock)."""

from __future__ import annotations

from typing import Any

import numpy as np

import framework as mx
from framework import autograd
from framework.base import MXLabError

from ..checker import Check, CheckFailure, compare

PARAM_NAMES = ("weight", "bias", "gate_weight", "gate_bias")
#: (batch, in_units, units) of the cases
SHAPES = [(4, 3, 2), (1, 5, 7), (6, 8, 1)]
TRACE_HINT = (
    "hybrid_forward must use only F.<operator> calls (F.FullyConnected, F.sigmoid, *): under hybridize() "
    "F is mx.sym and x a Symbol, which has no values: no NumPy, no .asnumpy(), no mx.nd"
)


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def reference(x: np.ndarray, p: dict[str, np.ndarray]) -> np.ndarray:
    return (x @ p["weight"].T + p["bias"]) * sigmoid(x @ p["gate_weight"].T + p["gate_bias"])


def reference_grads(x: np.ndarray, p: dict[str, np.ndarray], head: np.ndarray) -> dict[str, np.ndarray]:
    """Gradients of sum(y * head): the product rule over the linear half and the gate."""
    linear = x @ p["weight"].T + p["bias"]
    gate = sigmoid(x @ p["gate_weight"].T + p["gate_bias"])
    d_linear = head * gate
    d_gate_in = head * linear * gate * (1 - gate)
    return {
        "data": d_linear @ p["weight"] + d_gate_in @ p["gate_weight"],
        "weight": d_linear.T @ x,
        "bias": d_linear.sum(axis=0),
        "gate_weight": d_gate_in.T @ x,
        "gate_bias": d_gate_in.sum(axis=0),
    }


def _build(attempt: Any, units: int, in_units: int, seed: int) -> tuple[Any, dict[str, np.ndarray]]:
    """A GLU with random parameter values (set after initialization); returns it and the values."""
    block = attempt.GLU(units, in_units=in_units)
    block.initialize()
    rng = np.random.default_rng(seed)
    values = {}
    for name in PARAM_NAMES:
        param = _param(block, name, units, in_units)
        values[name] = rng.uniform(-1, 1, size=param.shape).astype(np.float32)
        param.set_data(mx.nd.array(values[name]))
    return block, values


def _param(block: Any, name: str, units: int, in_units: int) -> Any:
    found = [p for key, p in block.collect_params().items() if key == block.prefix + name]
    if len(found) != 1:
        raise CheckFailure(
            f"GLU({units}, in_units={in_units}).collect_params()",
            f"one parameter named <prefix>{name} (parameters: {', '.join(PARAM_NAMES)})",
            f"{sorted(block.collect_params().keys())}",
            "declare each with self.params.get(name, shape=..., allow_deferred_init=True) inside name_scope",
        )
    return found[0]


def _describe(batch: int, in_units: int, units: int, mode: str) -> str:
    return f"GLU({units}, in_units={in_units}) on x of shape ({batch}, {in_units}), {mode}"


def check_parameters(attempt: Any) -> None:
    block = attempt.GLU(5)
    declared = {name: _param(block, name, 5, 0).shape for name in PARAM_NAMES}
    want = {"weight": (5, 0), "bias": (5,), "gate_weight": (5, 0), "gate_bias": (5,)}
    if declared != want:
        raise CheckFailure(
            "GLU(5) (in_units unknown)", f"declared shapes {want}", f"{declared}",
            "weights are (units, in_units) with in_units 0 = deferred; biases are (units,)",
        )  # fmt: skip
    try:
        block.initialize()
        block(mx.nd.ones((2, 7)))
    except MXLabError as err:
        raise CheckFailure(
            "GLU(5).initialize(), then a call on x of shape (2, 7)", "in_units inferred as 7 at the first call",
            f"{type(err).__name__}: {err}",
            "a shape with 0 can only be initialized later: pass allow_deferred_init=True to self.params.get",
        ) from None  # fmt: skip
    inferred = {name: _param(block, name, 5, 7).shape for name in PARAM_NAMES}
    want = {"weight": (5, 7), "bias": (5,), "gate_weight": (5, 7), "gate_bias": (5,)}
    if inferred != want:
        raise CheckFailure(
            "GLU(5) called on x of shape (2, 7)", f"inferred shapes {want}", f"{inferred}",
            "pass allow_deferred_init=True so that the first call fills in in_units",
        )  # fmt: skip


def check_forward(attempt: Any) -> None:
    for i, (batch, in_units, units) in enumerate(SHAPES):
        block, values = _build(attempt, units, in_units, seed=10 + i)
        x = np.random.default_rng(20 + i).uniform(-2, 2, size=(batch, in_units)).astype(np.float32)
        got = block(mx.nd.array(x)).asnumpy()
        compare(
            got, reference(x, values), _describe(batch, in_units, units, "imperative"), "y",
            "y = (x W^T + b) * sigmoid(x V^T + c): FullyConnected with weight/bias, times sigmoid of "
            "FullyConnected with gate_weight/gate_bias", rtol=1e-4, atol=1e-5,
        )  # fmt: skip


def _hybrid_call(block: Any, x: np.ndarray, description: str) -> np.ndarray:
    block.hybridize()
    try:
        return block(mx.nd.array(x)).asnumpy()
    except NotImplementedError:
        raise
    except Exception as err:  # tracing failed: report what the learner's code did with a Symbol
        raise CheckFailure(description, "the traced graph to run", f"{type(err).__name__}: {err}", TRACE_HINT) from None


def check_hybridized(attempt: Any) -> None:
    for i, (batch, in_units, units) in enumerate(SHAPES):
        block, values = _build(attempt, units, in_units, seed=30 + i)
        x = np.random.default_rng(40 + i).uniform(-2, 2, size=(batch, in_units)).astype(np.float32)
        imperative = block(mx.nd.array(x)).asnumpy()
        description = _describe(batch, in_units, units, "hybridized")
        hybridized = _hybrid_call(block, x, description)
        compare(hybridized, reference(x, values), description, "y", TRACE_HINT, rtol=1e-4, atol=1e-5)
        compare(
            hybridized, imperative, description, "y (hybridized against imperative)",
            "the traced graph must compute what the imperative call computes", rtol=1e-4, atol=1e-5,
        )  # fmt: skip


def _gradients(block: Any, x: np.ndarray, head: np.ndarray, units: int, in_units: int) -> dict[str, np.ndarray]:
    data = mx.nd.array(x)
    data.attach_grad()
    with autograd.record():
        y = block(data)
    y.backward(mx.nd.array(head))
    got = {"data": data.grad.asnumpy()}
    for name in PARAM_NAMES:
        got[name] = _param(block, name, units, in_units).grad().asnumpy()
    return got


def check_gradients(attempt: Any) -> None:
    for i, (batch, in_units, units) in enumerate(SHAPES):
        rng = np.random.default_rng(50 + i)
        x = rng.uniform(-2, 2, size=(batch, in_units)).astype(np.float32)
        head = rng.uniform(-1, 1, size=(batch, units)).astype(np.float32)
        for mode in ("imperative", "hybridized"):
            block, values = _build(attempt, units, in_units, seed=60 + i)
            description = "backward of " + _describe(batch, in_units, units, mode) + ", head gradient random"
            if mode == "hybridized":
                _hybrid_call(block, x, description)
            got = _gradients(block, x, head, units, in_units)
            expected = reference_grads(x, values, head)
            for name, want in expected.items():
                compare(
                    got[name], want, description, f"the gradient of {name}",
                    "autograd differentiates F operators for you: if this fails, the forward uses something that "
                    "stops the gradient (BlockGrad, .asnumpy(), a constant) on the linear half or the gate",
                    rtol=1e-3, atol=1e-4,
                )  # fmt: skip


CHECKS = [
    Check("parameters", "the four parameters: names, declared and inferred shapes", check_parameters),
    Check("forward", "imperative output against NumPy", check_forward),
    Check("hybridized", "hybridized output against NumPy and the imperative output", check_hybridized),
    Check("gradients", "input and parameter gradients against NumPy, imperative and hybridized", check_gradients),
]
