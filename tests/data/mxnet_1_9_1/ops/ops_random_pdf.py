"""Reference values and gradients of the ``random_pdf_*`` operators, written with MXNet 1.9.1.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/ops/ops_random_pdf.py [out.npz]

For each distribution and ``is_log`` in (False, True) it scores seeded float32 samples of shape
``s + t`` = (2, 3) + (4,) against parameters of shape ``s`` (Dirichlet: vectors of length 3),
backpropagates a seeded output gradient and stores, in ``ops_random_pdf.npz`` next to this
script (or the path given), ``<case>/in<i>`` (sample, then parameters), ``<case>/head``,
``<case>/out`` and ``<case>/grad<i>``, with ``<case>/op`` and ``<case>/is_log``.
tests/operator/test_random_pdf_sampling.py compares MXLab with them. (The samplers themselves
draw from other generators than MXNet's, so only their statistics are tested.)
"""

from __future__ import annotations

import os
import sys

import mxnet as mx
import numpy as np

S, T = (2, 3), (4,)
DISCRETE = ("poisson", "negative_binomial", "generalized_negative_binomial")

# distribution: ranges of its parameters (uniform draws in [low, high))
PARAMS = {
    "uniform": [(-2.0, -1.0), (1.0, 3.0)],
    "normal": [(-1.0, 1.0), (0.5, 2.0)],
    "gamma": [(1.5, 3.0), (0.5, 2.0)],
    "exponential": [(0.5, 2.0)],
    "poisson": [(1.0, 4.0)],
    "negative_binomial": [(1.0, 4.0), (0.2, 0.8)],
    "generalized_negative_binomial": [(1.0, 3.0), (0.2, 0.8)],
    "dirichlet": [(0.5, 3.0)],
}


def inputs(dist: str, rng: np.random.Generator) -> list[np.ndarray]:
    if dist == "dirichlet":
        x = rng.uniform(0.1, 1.0, size=S + T + (3,))
        sample = x / x.sum(axis=-1, keepdims=True)
        params = [rng.uniform(0.5, 3.0, size=S + (3,))]
    else:
        if dist in DISCRETE:
            sample = rng.integers(0, 6, size=S + T).astype(np.float64)
        elif dist == "uniform":
            sample = rng.uniform(-0.9, 0.9, size=S + T)
        else:
            sample = rng.uniform(0.2, 2.5, size=S + T)
        params = [rng.uniform(lo, hi, size=S) for lo, hi in PARAMS[dist]]
    return [a.astype(np.float32) for a in (sample, *params)]


def main(path: str) -> None:
    data = {}
    for k, dist in enumerate(PARAMS):
        for is_log in (False, True):
            case = f"{dist}_{'log' if is_log else 'pdf'}"
            rng = np.random.default_rng(100 + 2 * k + is_log)
            arrays = inputs(dist, rng)
            nds = [mx.nd.array(a, dtype="float32") for a in arrays]
            for x in nds:
                x.attach_grad()
            with mx.autograd.record():
                out = getattr(mx.nd, f"random_pdf_{dist}")(*nds, is_log=is_log)
            head = rng.uniform(0.5, 1.5, size=out.shape).astype(np.float32)
            out.backward(mx.nd.array(head, dtype="float32"))
            data[f"{case}/op"] = np.array(f"_random_pdf_{dist}")
            data[f"{case}/is_log"] = np.array(is_log)
            data[f"{case}/head"] = head
            data[f"{case}/out"] = out.asnumpy()
            for i, (a, x) in enumerate(zip(arrays, nds, strict=True)):
                data[f"{case}/in{i}"] = a
                data[f"{case}/grad{i}"] = x.grad.asnumpy()
    np.savez(path, **data)


if __name__ == "__main__":
    main(
        sys.argv[1]
        if len(sys.argv) > 1
        else os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops_random_pdf.npz")
    )
