"""Reference numbers for higher-order gradients, written with real MXNet 1.9.1.

Run with an interpreter that has ``mxnet==1.9.1``::

    .peers/mxvenv/bin/python tests/data/mxnet_1_9_1/autograd/higher_order.py [out.json]

For every case, ``derivative`` differentiates ``y = f(x)`` with ``autograd.grad(...,
create_graph=True)`` ``order - 1`` times and calls ``backward()`` on the last gradient, so
``x.grad`` holds the ``order``-th derivative of ``f`` (summed over the head of ones). The JSON
(``higher_order.json`` next to this script, or the path given) maps each case to that
gradient, or to ``"error"`` when MXNet refuses (an operator whose backward has no gradient).
tests/test_autograd_higher_order.py runs the same function with MXLab and compares.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

X = [[0.3, 0.5, 0.7], [-0.2, 0.4, 0.9]]
ABOVE_ONE = [[1.3, 1.5, 1.7], [1.2, 1.4, 1.9]]  # arccosh
POSITIVE = [[0.3, 0.5, 0.7], [0.2, 0.4, 0.9]]  # logarithms, roots
UNARY = [
    "sin", "cos", "tan", "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh",
    "log", "log2", "log10", "log1p", "exp", "expm1", "sqrt", "rsqrt", "cbrt", "rcbrt", "square", "reciprocal",
    "abs", "sigmoid", "relu", "radians", "degrees", "softsign", "erf", "sign", "floor",
]  # fmt: skip
THIRD_ORDER = ["sin", "cos", "log", "tanh", "sigmoid", "relu", "exp", "square"]
WEIGHT = [[0.2, -0.1, 0.4], [0.3, 0.5, -0.2]]


def functions(mx: Any) -> dict[str, Callable[[Any], Any]]:
    """The cases beyond the unary table: ``name -> f(x)``."""
    nd = mx.nd
    weight = nd.array(WEIGHT)
    return {
        "clip": lambda x: nd.clip(nd.sin(x), 0.1, 0.6),
        "elemwise_add": lambda x: nd.elemwise_add(nd.sin(x), nd.cos(x)),
        "elemwise_mul": lambda x: nd.elemwise_mul(x, nd.sin(x)),
        "sum": lambda x: nd.sum(nd.sin(x)),
        "transpose": lambda x: nd.transpose(nd.sin(x)),
        "FullyConnected": lambda x: nd.FullyConnected(nd.sin(x), weight, no_bias=True, num_hidden=2),
        "Activation": lambda x: nd.Activation(x, act_type="tanh"),
    }


def cases(mx: Any) -> dict[str, tuple[Callable[[Any], Any], list, int]]:
    """``case -> (f, x, order)``."""
    found: dict[str, tuple[Callable[[Any], Any], list, int]] = {}
    for name in UNARY:
        values = ABOVE_ONE if name == "arccosh" else POSITIVE if name.startswith(("log", "sqrt", "rsqrt")) else X
        found[f"{name}/2"] = (getattr(mx.nd, name), values, 2)
        if name in THIRD_ORDER:
            found[f"{name}/3"] = (getattr(mx.nd, name), values, 3)
    for name, f in functions(mx).items():
        found[f"{name}/2"] = (f, X, 2)
    return found


def derivative(mx: Any, f: Callable[[Any], Any], values: list, order: int) -> list:
    """The ``order``-th derivative of ``f`` at ``values``, through autograd."""
    x = mx.nd.array(values)
    x.attach_grad()
    with mx.autograd.record():
        g = f(x)
        for _ in range(order - 1):
            g = mx.autograd.grad(g, [x], head_grads=mx.nd.ones_like(g), create_graph=True, retain_graph=True)[0]
    g.backward()
    return x.grad.asnumpy().astype(np.float64).tolist()


def main() -> None:
    import mxnet as mx  # noqa: PLC0415 - the tests import this file, where there is no MXNet

    out = (
        sys.argv[1]
        if len(sys.argv) > 1
        else os.path.join(os.path.dirname(os.path.abspath(__file__)), "higher_order.json")
    )
    results: dict[str, Any] = {}
    for case, (f, values, order) in cases(mx).items():
        try:
            results[case] = derivative(mx, f, values, order)
        except mx.base.MXNetError:
            results[case] = "error"
    with open(out, "w", encoding="utf-8") as file:
        json.dump({"mxnet": mx.__version__, "cases": results}, file, indent=1, sort_keys=True)
        file.write("\n")


if __name__ == "__main__":
    main()
