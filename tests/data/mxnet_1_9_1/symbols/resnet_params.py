"""Deterministic ResNet-18 parameters, shared by make_resnet_reference.py (run with MXNet)
and tests/symbol/test_resnet_reference.py (run with MXLab). Pure NumPy: the legacy
``RandomState`` generator gives the same numbers in every NumPy version."""

import numpy as np

INPUT_SHAPE = (2, 3, 64, 64)


def deterministic_params(arg_shapes: dict, aux_shapes: dict) -> tuple[dict, dict]:
    """Small weights, unit-ish BatchNorm statistics: a well-conditioned forward pass."""
    rng = np.random.RandomState(1234)
    args = {}
    for name in sorted(arg_shapes):
        if name == "data":
            continue
        shape = arg_shapes[name]
        if name.endswith("gamma"):
            args[name] = rng.uniform(0.8, 1.2, shape).astype(np.float32)
        elif name.endswith(("beta", "bias")):
            args[name] = rng.uniform(-0.1, 0.1, shape).astype(np.float32)
        else:
            fan_in = int(np.prod(shape[1:])) or 1
            args[name] = (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    aux = {}
    for name in sorted(aux_shapes):
        low, high = (0.5, 1.5) if name.endswith("var") else (-0.1, 0.1)
        aux[name] = rng.uniform(low, high, aux_shapes[name]).astype(np.float32)
    return args, aux


def deterministic_input() -> np.ndarray:
    return np.random.RandomState(7).uniform(-1, 1, INPUT_SHAPE).astype(np.float32)
