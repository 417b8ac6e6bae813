"""Write ``reference.json`` in this folder with real MXNet 1.9.1: unrolled ``mx.rnn`` cells, names and values.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/rnn/make_rnn_reference.py

For each case (a cell built by the code in ``CASES``, unrolled 3 steps over ``data`` of shape
(2, 3, 5), layout NTC) it records ``list_arguments()`` and ``list_outputs()`` of
``Group(outputs + states)`` (BidirectionalCell's states
``[l_states, r_states]`` flattened), and the forward values for weights drawn from a fixed seed
(``np.random.RandomState(7)``, uniform in [-0.5, 0.5] as float32, in ``list_arguments()`` order, data first).
The convolutional cells (``CONV_CASES``) are recorded the same way over ``CONV_SHAPE``.
It also records ``FusedRNNCell.unpack_weights`` of a packed ``arange`` vector: the names, shapes and
first values of each slice, which pins MXNet's packed layout. tests/rnn/ reads the JSON; it never
imports MXNet.
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPE = (2, 3, 5)

CASES = {
    "rnn_tanh": "mx.rnn.RNNCell(4, prefix='rnn_')",
    "rnn_relu": "mx.rnn.RNNCell(4, activation='relu', prefix='rr_')",
    "lstm": "mx.rnn.LSTMCell(4, prefix='lstm_')",
    "gru": "mx.rnn.GRUCell(4, prefix='gru_')",
    "stack": "stack_cell()",
    "bidirectional": "mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(3, prefix='l_'), mx.rnn.GRUCell(3, prefix='r_'))",
    "residual": "mx.rnn.ResidualCell(mx.rnn.GRUCell(5, prefix='res_'))",
    "fused_unfused": "mx.rnn.FusedRNNCell(3, num_layers=2, mode='gru', bidirectional=True, prefix='f_').unfuse()",
}

# convolutional cells: one step's input is (2, 2, 5, 5); the sequence (N, T, C, H, W) = (2, 3, 2, 5, 5)
CONV_SHAPE = (2, 3, 2, 5, 5)
CONV_CASES = {
    "conv_rnn": "mx.rnn.ConvRNNCell((2, 2, 5, 5), 3, prefix='crnn_')",
    "conv_lstm": "mx.rnn.ConvLSTMCell((2, 2, 5, 5), 2, i2h_kernel=(3, 3), i2h_pad=(1, 1), prefix='clstm_')",
    "conv_gru": "mx.rnn.ConvGRUCell((2, 2, 5, 5), 2, h2h_kernel=(5, 5), activation='tanh', prefix='cgru_')",
}


def stack_cell():
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(4, prefix="s0_"))
    stack.add(mx.rnn.DropoutCell(0.5, prefix="drop_"))
    stack.add(mx.rnn.RNNCell(3, prefix="s1_"))
    return stack


def run_case(code, shape=SHAPE):
    cell = eval(code)  # the fixed strings of CASES
    outputs, states = cell.unroll(3, mx.sym.Variable("data"), layout="NTC", merge_outputs=False)
    flat_states = [s for state in states for s in (state if isinstance(state, list) else [state])]
    group = mx.sym.Group(list(outputs) + flat_states)
    arg_shapes, _, _ = group.infer_shape(data=shape)
    rng = np.random.RandomState(7)
    args = {
        name: mx.nd.array(rng.uniform(-0.5, 0.5, shape).astype(np.float32))
        for name, shape in zip(group.list_arguments(), arg_shapes, strict=True)
    }
    exe = group.bind(mx.cpu(), args)
    values = [out.asnumpy().tolist() for out in exe.forward(is_train=False)]
    return {
        "code": code,
        "arguments": group.list_arguments(),
        "outputs": group.list_outputs(),
        "values": values,
    }


def fused_layout(mode, num_layers, bidirectional, num_input, num_hidden):
    cell = mx.rnn.FusedRNNCell(num_hidden, num_layers=num_layers, mode=mode, bidirectional=bidirectional, prefix="p_")
    gates = {"lstm": 4, "gru": 3}.get(mode, 1)
    b = 2 if bidirectional else 1
    total = (num_input + num_hidden + 2) * num_hidden * gates * b + (num_layers - 1) * gates * num_hidden * (
        num_hidden + b * num_hidden + 2
    ) * b
    unpacked = cell.unpack_weights({"p_parameters": mx.nd.arange(total)})
    return {
        "mode": mode,
        "num_layers": num_layers,
        "bidirectional": bidirectional,
        "num_input": num_input,
        "num_hidden": num_hidden,
        "total": total,
        "slices": [[name, list(arr.shape), float(arr.asnumpy().reshape(-1)[0])] for name, arr in unpacked.items()],
    }


def main():
    reference = {"shape": SHAPE, "cases": {name: run_case(code) for name, code in CASES.items()}}
    reference["conv_shape"] = CONV_SHAPE
    reference["conv_cases"] = {name: run_case(code, CONV_SHAPE) for name, code in CONV_CASES.items()}
    reference["fused_layouts"] = [
        fused_layout("lstm", 2, True, 5, 3),
        fused_layout("gru", 1, False, 4, 2),
        fused_layout("rnn_tanh", 2, False, 3, 2),
    ]
    with open(os.path.join(HERE, "reference.json"), "w", encoding="utf-8") as handle:
        json.dump(reference, handle)


if __name__ == "__main__":
    main()
