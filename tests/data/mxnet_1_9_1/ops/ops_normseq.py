"""Write MXNet 1.9.1's results for a sample of the normalisation, sequence and loss operators.

Run with an interpreter that has ``mxnet==1.9.1`` (and ``numpy<1.24``)::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/ops/ops_normseq.py [output folder]

For every case in ``CASES`` (operator, parameters, input arrays drawn from a seeded
generator, which inputs are auxiliary states and which get gradients) it builds the symbol
``mx.sym.<op>(name=var(name)..., **params)``, binds it, runs one training forward pass and a
backward pass with seeded head gradients, and saves into ``ops_normseq.npz`` next to this
script (or in the folder given): the inputs, head gradients, visible outputs, input
gradients and auxiliary states after the step, keyed ``<case>/<kind>/<name>``, plus
``ops_normseq.json`` with each case's operator, parameters and input roles. The tests in
tests/operator/test_mxnet_reference_normseq.py run the same steps in MXLab and compare; they
never import MXNet.
"""

from __future__ import annotations

import json
import os
import sys

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _uniform(rng, low, high, shape):
    return rng.uniform(low, high, shape).astype(np.float32)


def cases(rng: np.random.Generator) -> dict:
    """Each case: op, params, args (name -> array), aux (name -> array), grads (names of inputs to differentiate)."""
    x3 = _uniform(rng, -2, 2, (3, 4, 5))
    x4 = _uniform(rng, -2, 2, (2, 4, 3, 3))
    ctc_data = _uniform(rng, -2, 2, (7, 3, 5))
    ctc_label = np.array([[1, 2, 2, 0], [3, 1, 0, 0], [4, 4, 4, 1]], np.float32)
    seq_t = _uniform(rng, -2, 2, (5, 3, 2))
    seq_b = _uniform(rng, -2, 2, (3, 5, 2))
    lengths = np.array([2, 5, 3], np.float32)
    return {
        "layer_norm_last": {
            "op": "LayerNorm",
            "params": {"eps": 1e-5},
            "args": {"data": x3, "gamma": _uniform(rng, 0.5, 1.5, 5), "beta": _uniform(rng, -1, 1, 5)},
            "grads": ["data", "gamma", "beta"],
        },
        "layer_norm_axis1": {
            "op": "LayerNorm",
            "params": {"axis": 1, "eps": 1e-3, "output_mean_var": True},
            "args": {"data": x3, "gamma": _uniform(rng, 0.5, 1.5, 4), "beta": _uniform(rng, -1, 1, 4)},
            "grads": ["data", "gamma", "beta"],
        },
        "group_norm": {
            "op": "GroupNorm",
            "params": {"num_groups": 2, "output_mean_var": True},
            "args": {"data": x4, "gamma": _uniform(rng, 0.5, 1.5, 2), "beta": _uniform(rng, -1, 1, 2)},
            "grads": ["data", "gamma", "beta"],
        },
        "instance_norm": {
            "op": "InstanceNorm",
            "params": {"eps": 1e-3},
            "args": {"data": x4, "gamma": _uniform(rng, 0.5, 1.5, 4), "beta": _uniform(rng, -1, 1, 4)},
            "grads": ["data", "gamma", "beta"],
        },
        **{
            f"l2_normalization_{mode}": {
                "op": "L2Normalization",
                "params": {"mode": mode},
                "args": {"data": x4},
                "grads": ["data"],
            }
            for mode in ("instance", "channel", "spatial")
        },
        "batch_norm_v1": {
            "op": "BatchNorm_v1",
            "params": {"fix_gamma": False, "output_mean_var": True, "momentum": 0.8},
            "args": {"data": x4, "gamma": _uniform(rng, 0.5, 1.5, 4), "beta": _uniform(rng, -1, 1, 4)},
            "aux": {"moving_mean": np.zeros(4, np.float32), "moving_var": np.ones(4, np.float32)},
            "grads": ["data", "gamma", "beta"],
        },
        "convolution_v1": {
            "op": "Convolution_v1",
            "params": {"kernel": (2, 2), "num_filter": 3, "pad": (1, 0), "stride": (1, 2)},
            "args": {"data": x4, "weight": _uniform(rng, -1, 1, (3, 4, 2, 2)), "bias": _uniform(rng, -1, 1, 3)},
            "grads": ["data", "weight", "bias"],
        },
        "pooling_v1": {
            "op": "Pooling_v1",
            "params": {"kernel": (2, 2), "pool_type": "avg", "pad": (1, 1), "stride": (2, 2)},
            "args": {"data": x4},
            "grads": ["data"],
        },
        "sequence_mask": {
            "op": "SequenceMask",
            "params": {"use_sequence_length": True, "value": -3.0},
            "args": {"data": seq_t, "sequence_length": lengths},
            "grads": ["data"],
        },
        "sequence_mask_axis1": {
            "op": "SequenceMask",
            "params": {"use_sequence_length": True, "axis": 1},
            "args": {"data": seq_b, "sequence_length": lengths},
            "grads": ["data"],
        },
        "sequence_last": {
            "op": "SequenceLast",
            "params": {"use_sequence_length": True},
            "args": {"data": seq_t, "sequence_length": lengths},
            "grads": ["data"],
        },
        "sequence_last_axis1": {
            "op": "SequenceLast",
            "params": {"use_sequence_length": True, "axis": 1},
            "args": {"data": seq_b, "sequence_length": lengths},
            "grads": ["data"],
        },
        "sequence_reverse": {
            "op": "SequenceReverse",
            "params": {"use_sequence_length": True},
            "args": {"data": seq_t, "sequence_length": lengths},
            "grads": ["data"],
        },
        "ctc_loss_first": {
            "op": "ctc_loss",
            "params": {},
            "args": {"data": ctc_data, "label": ctc_label},
            "grads": ["data"],
        },
        "ctc_loss_last_with_lengths": {
            "op": "CTCLoss",
            "params": {"use_data_lengths": True, "use_label_lengths": True, "blank_label": "last"},
            "args": {
                "data": ctc_data,
                "label": ctc_label - 1,
                "data_lengths": np.array([7, 5, 6], np.float32),
                "label_lengths": np.array([3, 1, 4], np.float32),
            },
            "grads": ["data"],
        },
        "svm_output_l2": {
            "op": "SVMOutput",
            "params": {"margin": 0.7, "regularization_coefficient": 1.5},
            "args": {"data": _uniform(rng, -2, 2, (6, 4)), "label": np.array([0, 3, 1, 2, 2, 0], np.float32)},
            "grads": ["data"],
        },
        "svm_output_l1": {
            "op": "SVMOutput",
            "params": {"margin": 0.4, "use_linear": True},
            "args": {"data": _uniform(rng, -2, 2, (6, 4)), "label": np.array([1, 3, 1, 0, 2, 0], np.float32)},
            "grads": ["data"],
        },
        "kl_sparse_reg": {
            "op": "IdentityAttachKLSparseReg",
            "params": {"sparseness_target": 0.2, "penalty": 0.5, "momentum": 0.8},
            "args": {"data": _uniform(rng, 0.05, 0.95, (4, 3))},
            "aux": {"moving_avg": np.array([0.2, 0.3, 0.4], np.float32)},
            "grads": ["data"],
        },
    }


def run_case(case: dict, heads_rng: np.random.Generator) -> dict:
    """One training step of ``case`` in MXNet: outputs, input gradients, auxiliary states after it."""
    inputs = {name: mx.sym.var(name) for name in [*case["args"], *case.get("aux", {})]}
    sym = getattr(mx.sym, case["op"])(name="op", **inputs, **case["params"])
    args = {n: mx.nd.array(a) for n, a in case["args"].items()}
    aux = {n: mx.nd.array(a) for n, a in case.get("aux", {}).items()}
    grads = {n: mx.nd.zeros(a.shape) for n, a in case["args"].items()}
    req = {n: ("write" if n in case["grads"] else "null") for n in case["args"]}
    ex = sym.bind(mx.cpu(), args, args_grad=grads, grad_req=req, aux_states=aux)
    outputs = [o.asnumpy() for o in ex.forward(is_train=True)]
    heads = [heads_rng.uniform(-1, 1, o.shape).astype(np.float32) for o in outputs]
    ex.backward([mx.nd.array(h) for h in heads])
    return {
        "heads": heads,
        "outputs": outputs,
        "grads": {n: grads[n].asnumpy() for n in case["grads"]},
        "aux_after": {n: aux[n].asnumpy() for n in aux},
    }


def main() -> None:
    folder = sys.argv[1] if len(sys.argv) > 1 else HERE
    rng = np.random.default_rng(17)
    arrays, specs = {}, {}
    for index, (key, case) in enumerate(cases(rng).items()):
        result = run_case(case, np.random.default_rng(1000 + index))
        for kind in ("args", "aux"):
            for name, value in case.get(kind, {}).items():
                arrays[f"{key}/{kind}/{name}"] = value
        for i, value in enumerate(result["heads"]):
            arrays[f"{key}/heads/{i}"] = value
        for i, value in enumerate(result["outputs"]):
            arrays[f"{key}/outputs/{i}"] = value
        for kind in ("grads", "aux_after"):
            for name, value in result[kind].items():
                arrays[f"{key}/{kind}/{name}"] = value
        specs[key] = {
            "op": case["op"],
            "params": {k: list(v) if isinstance(v, tuple) else v for k, v in case["params"].items()},
            "args": list(case["args"]),
            "aux": list(case.get("aux", {})),
            "grads": case["grads"],
            "num_outputs": len(result["outputs"]),
        }
    np.savez_compressed(os.path.join(folder, "ops_normseq.npz"), **arrays)
    with open(os.path.join(folder, "ops_normseq.json"), "w") as f:
        json.dump({"mxnet_version": mx.__version__, "cases": specs}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
