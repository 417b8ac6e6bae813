"""Write MXNet 1.9.1's results for the fused ``RNN`` operator: outputs and gradients of every mode.

Run with an interpreter that has ``mxnet==1.9.1`` (and ``numpy<1.24``)::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/ops/ops_rnn.py [output folder]

Every case draws a packed parameter vector, data and initial states from a seeded generator
(as weights MXNet trained would be, they are just numbers in MXNet's packed order), runs one
training forward pass and a backward pass with seeded head gradients for every output, and
saves into ``ops_rnn.npz`` next to this script (or in the folder given) the inputs, head
gradients, outputs and the gradients of data, parameters and states, keyed
``<case>/<kind>/<name>``, plus ``ops_rnn.json`` (each case's parameters, inputs and how the
reference was made). tests/operator/test_rnn_mxnet.py runs the same step in MXLab.

How the reference is made (``source`` in the JSON):

* ``operator``: MXNet's own ``RNN`` operator, bound as a symbol.
* ``per_sample``: ``use_sequence_length`` with lengths shorter than the sequence. MXNet
  1.9.1's CPU operator accepts the ``sequence_length`` input but ignores it (only its cuDNN
  path honours it), so the reference runs MXNet's operator once per sample on that sample's
  own steps (what variable lengths mean: the right-to-left direction starts at the sample's
  last step), pads the outputs and the data gradient with zeros and sums the parameter
  gradients over the samples.
* ``unrolled_lstm``: LSTM with a projection (LSTMP) or with cell clipping. MXNet 1.9.1's CPU
  operator crashes with ``projection_size`` and ignores ``lstm_state_clip_min/max`` (both are
  cuDNN-only there), so the reference unrolls the LSTM (Gluon's ``LSTMCell``, or
  ``contrib.rnn.LSTMPCell`` with a projection, with ``clip`` on the cell state) step by step
  with MXNet's NDArray operators under autograd, reading the weights from the packed vector in
  Gluon's packing order (``gluon/rnn/rnn_layer.py``: per layer and direction ``i2h``, ``h2h``,
  ``h2r`` weights, then ``i2h``, ``h2h`` biases).
"""

from __future__ import annotations

import json
import os
import sys

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS, BATCH, FEATURES, HIDDEN, PROJECTION = 5, 3, 4, 6, 3
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def input_names(params: dict) -> list[str]:
    names = ["data", "parameters", "state"]
    if params["mode"] == "lstm":
        names.append("state_cell")
    if params.get("use_sequence_length"):
        names.append("sequence_length")
    return names


def packed_pieces(params: dict) -> list[tuple[int, int, str, tuple]]:
    """(layer, direction, kind, shape) in Gluon's packing order."""
    mode, layers = params["mode"], params["num_layers"]
    dirs = 2 if params.get("bidirectional") else 1
    proj = params.get("projection_size")
    out = proj or params["state_size"]
    rows = GATES[mode] * params["state_size"]
    pieces = []
    for kind_group in ("weight", "bias"):
        for layer in range(layers):
            width = FEATURES if layer == 0 else dirs * out
            for direction in range(dirs):
                if kind_group == "weight":
                    pieces.append((layer, direction, "i2h_weight", (rows, width)))
                    pieces.append((layer, direction, "h2h_weight", (rows, out)))
                    if proj:
                        pieces.append((layer, direction, "h2r_weight", (proj, params["state_size"])))
                else:
                    pieces.append((layer, direction, "i2h_bias", (rows,)))
                    pieces.append((layer, direction, "h2h_bias", (rows,)))
    return pieces


def make_inputs(params: dict, rng: np.random.Generator, lengths: list[int] | None) -> dict:
    dirs = 2 if params.get("bidirectional") else 1
    layers = params["num_layers"] * dirs
    size = sum(int(np.prod(shape)) for *_, shape in packed_pieces(params))
    out = params.get("projection_size") or params["state_size"]
    arrays = {
        "data": rng.uniform(-1, 1, (STEPS, BATCH, FEATURES)).astype(np.float32),
        "parameters": rng.uniform(-0.6, 0.6, size).astype(np.float32),
        "state": rng.uniform(-0.5, 0.5, (layers, BATCH, out)).astype(np.float32),
    }
    if params["mode"] == "lstm":
        arrays["state_cell"] = rng.uniform(-0.5, 0.5, (layers, BATCH, params["state_size"])).astype(np.float32)
    if lengths is not None:
        arrays["sequence_length"] = np.array(lengths, np.float32)
    return arrays


def output_shapes(params: dict) -> list[tuple]:
    dirs = 2 if params.get("bidirectional") else 1
    out = params.get("projection_size") or params["state_size"]
    shapes = [(STEPS, BATCH, dirs * out)]
    if params.get("state_outputs"):
        shapes.append((params["num_layers"] * dirs, BATCH, out))
        if params["mode"] == "lstm":
            shapes.append((params["num_layers"] * dirs, BATCH, params["state_size"]))
    return shapes


def run_operator(params: dict, arrays: dict, heads: list) -> tuple[list, dict]:
    """MXNet's RNN operator as a bound symbol: outputs and gradients of every float input."""
    names = input_names(params)
    sym = mx.sym.RNN(name="op", **{n: mx.sym.var(n) for n in names}, **params)
    args = {n: mx.nd.array(arrays[n]) for n in names}
    grads = {n: mx.nd.zeros(arrays[n].shape) for n in names}
    req = {n: ("null" if n == "sequence_length" else "write") for n in names}
    ex = sym.bind(mx.cpu(), args, args_grad=grads, grad_req=req)
    outputs = [o.asnumpy() for o in ex.forward(is_train=True)]
    ex.backward([mx.nd.array(h) for h in heads])
    return outputs, {n: grads[n].asnumpy() for n in names if n != "sequence_length"}


def run_per_sample(params: dict, arrays: dict, heads: list) -> tuple[list, dict]:
    """Variable lengths from MXNet's operator run on each sample's own steps."""
    inner = {k: v for k, v in params.items() if k != "use_sequence_length"}
    outputs = [np.zeros(h.shape, np.float32) for h in heads]
    grads = {n: np.zeros(arrays[n].shape, np.float32) for n in input_names(inner)}
    for b, length in enumerate(arrays["sequence_length"].astype(int)):
        one = {
            "data": arrays["data"][:length, b : b + 1],
            "parameters": arrays["parameters"],
            "state": arrays["state"][:, b : b + 1],
        }
        if "state_cell" in arrays:
            one["state_cell"] = arrays["state_cell"][:, b : b + 1]
        one_heads = [heads[0][:length, b : b + 1]] + [h[:, b : b + 1] for h in heads[1:]]
        outs, one_grads = run_operator(inner, one, one_heads)
        outputs[0][:length, b : b + 1] = outs[0]
        for i in range(1, len(outs)):
            outputs[i][:, b : b + 1] = outs[i]
        grads["data"][:length, b : b + 1] = one_grads["data"]
        grads["parameters"] += one_grads["parameters"]
        for n in ("state", "state_cell"):
            if n in grads:
                grads[n][:, b : b + 1] = one_grads[n]
    return outputs, grads


def run_unrolled_lstm(params: dict, arrays: dict, heads: list) -> tuple[list, dict]:
    """An LSTM (LSTMP) from Gluon's cell equations, step by step under autograd."""
    layers = params["num_layers"]
    clip = None
    if params.get("lstm_state_clip_min") is not None:
        clip = (params["lstm_state_clip_min"], params["lstm_state_clip_max"])
    dirs = 2 if params.get("bidirectional") else 1
    nd_in = {n: mx.nd.array(arrays[n]) for n in ("data", "parameters", "state", "state_cell")}
    for v in nd_in.values():
        v.attach_grad()
    with mx.autograd.record():
        weights, offset = {}, 0
        for layer, direction, kind, shape in packed_pieces(params):
            size = int(np.prod(shape))
            piece = mx.nd.slice_axis(nd_in["parameters"], axis=0, begin=offset, end=offset + size)
            weights[(layer, direction, kind)] = piece.reshape(shape)
            offset += size
        x, final_h, final_c = nd_in["data"], [], []
        for layer in range(layers):
            outs = []
            for direction in range(dirs):
                w = {k: weights.get((layer, direction, k)) for k in ("i2h_weight", "h2h_weight", "h2r_weight")}
                b = {k: weights[(layer, direction, k)] for k in ("i2h_bias", "h2h_bias")}
                k = layer * dirs + direction
                h, c = nd_in["state"][k], nd_in["state_cell"][k]
                ys = [None] * STEPS
                order = range(STEPS - 1, -1, -1) if direction else range(STEPS)
                for t in order:
                    gates = (
                        mx.nd.dot(x[t], w["i2h_weight"], transpose_b=True)
                        + b["i2h_bias"]
                        + mx.nd.dot(h, w["h2h_weight"], transpose_b=True)
                        + b["h2h_bias"]
                    )
                    i, f, g, o = mx.nd.split(gates, num_outputs=4, axis=1)
                    c = mx.nd.sigmoid(f) * c + mx.nd.sigmoid(i) * mx.nd.tanh(g)
                    if clip is not None:
                        c = mx.nd.clip(c, *clip)
                    h = mx.nd.sigmoid(o) * mx.nd.tanh(c)
                    if w["h2r_weight"] is not None:
                        h = mx.nd.dot(h, w["h2r_weight"], transpose_b=True)
                    ys[t] = h
                outs.append(mx.nd.stack(*ys, axis=0))
                final_h.append(h)
                final_c.append(c)
            x = outs[0] if dirs == 1 else mx.nd.concat(*outs, dim=2)
        outputs = [x, mx.nd.stack(*final_h, axis=0), mx.nd.stack(*final_c, axis=0)]
    mx.autograd.backward(outputs, [mx.nd.array(h) for h in heads])
    return [o.asnumpy() for o in outputs], {n: v.grad.asnumpy() for n, v in nd_in.items()}


def cases() -> dict:
    base = {"state_size": HIDDEN, "num_layers": 2}
    return {
        "rnn_relu_bidirectional": ({**base, "mode": "rnn_relu", "bidirectional": True, "state_outputs": True}, None),
        "rnn_tanh": ({**base, "mode": "rnn_tanh", "state_outputs": True}, None),
        "lstm_bidirectional": ({**base, "mode": "lstm", "bidirectional": True, "state_outputs": True}, None),
        "lstm_clipped_bidirectional": (
            {
                **base,
                "mode": "lstm",
                "bidirectional": True,
                "state_outputs": True,
                "lstm_state_clip_min": -0.3,
                "lstm_state_clip_max": 0.3,
            },
            None,
        ),
        "gru_bidirectional": ({**base, "mode": "gru", "bidirectional": True, "state_outputs": True}, None),
        "gru_output_only": ({**base, "mode": "gru"}, None),
        "lstm_full_lengths": (
            {**base, "mode": "lstm", "state_outputs": True, "use_sequence_length": True},
            [STEPS] * BATCH,
        ),
        "lstm_lengths_bidirectional": (
            {**base, "mode": "lstm", "bidirectional": True, "state_outputs": True, "use_sequence_length": True},
            [STEPS, 3, 1],
        ),
        "gru_lengths": ({**base, "mode": "gru", "state_outputs": True, "use_sequence_length": True}, [2, STEPS, 4]),
        "lstm_projection_bidirectional": (
            {**base, "mode": "lstm", "bidirectional": True, "state_outputs": True, "projection_size": PROJECTION},
            None,
        ),
    }


def source_of(params: dict, lengths: list[int] | None) -> str:
    if params.get("projection_size") or params.get("lstm_state_clip_min") is not None:
        return "unrolled_lstm"
    if lengths is not None and min(lengths) < STEPS:
        return "per_sample"
    return "operator"


def main() -> None:
    folder = sys.argv[1] if len(sys.argv) > 1 else HERE
    arrays, specs = {}, {}
    runners = {"operator": run_operator, "per_sample": run_per_sample, "unrolled_lstm": run_unrolled_lstm}
    for index, (key, (params, lengths)) in enumerate(cases().items()):
        rng = np.random.default_rng(1700 + index)
        inputs = make_inputs(params, rng, lengths)
        heads = [rng.uniform(-1, 1, shape).astype(np.float32) for shape in output_shapes(params)]
        source = source_of(params, lengths)
        outputs, grads = runners[source](params, inputs, heads)
        for name, value in inputs.items():
            arrays[f"{key}/args/{name}"] = value
        for i, value in enumerate(heads):
            arrays[f"{key}/heads/{i}"] = value
        for i, value in enumerate(outputs):
            arrays[f"{key}/outputs/{i}"] = value
        for name, value in grads.items():
            arrays[f"{key}/grads/{name}"] = value
        specs[key] = {"params": params, "inputs": list(inputs), "grads": list(grads), "source": source}
    np.savez_compressed(os.path.join(folder, "ops_rnn.npz"), **arrays)
    meta = {"mxnet": mx.__version__, "command": "python tests/data/mxnet_1_9_1/ops/ops_rnn.py", "cases": specs}
    with open(os.path.join(folder, "ops_rnn.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
