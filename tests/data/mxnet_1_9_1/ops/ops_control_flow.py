"""Write MXNet 1.9.1's results for symbols built with mx.sym.contrib.foreach / while_loop / cond.

Run with an interpreter that has ``mxnet==1.9.1`` (and ``numpy<1.24``)::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/ops/ops_control_flow.py [output folder]

Every case in ``CASES`` is a function ``build(mx)`` returning a symbol built with the ``mx``
module it is given (MXNet here; MXLab in tests/operator/test_control_flow_mxnet.py, which
imports this file without importing MXNet) and the shapes of its arguments. For each case the
script saves the symbol's JSON as MXNet writes it, the inputs (drawn from a seeded generator),
seeded head gradients, the outputs of one training forward pass and the argument gradients of
the backward pass: ``ops_control_flow.json`` and ``ops_control_flow.npz`` next to this script
(or in the folder given). When ``ops_control_flow_mxlab.json`` (symbols written by MXLab)
exists, MXNet loads each of those too and records its outputs, so the tests can check that a
symbol saved by MXLab runs in MXNet with the same results. ``_while_loop`` outputs after the
last step are undefined in MXNet, so each case records how many steps are defined (``steps``)
and how many outputs are stacked (``stacked``).
A ``cond`` nested in a ``foreach`` body is left out: MXNet 1.9.1's shape inference fails on it
(MXLab runs it; tests/operator/test_control_flow.py checks it against NumPy).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def rnn_foreach(mx):
    """A tanh RNN over 4 steps: foreach with a state and two weights read from outside."""
    data, h0 = mx.sym.var("data"), mx.sym.var("h0")
    wx, wh = mx.sym.var("wx"), mx.sym.var("wh")

    def body(x, states):
        h = mx.sym.tanh(mx.sym.dot(x, wx) + mx.sym.dot(states[0], wh))
        return h, [h]

    outs, states = mx.sym.contrib.foreach(body, data, [h0])
    return mx.sym.Group([outs, states[0]]), {"data": (4, 3, 2), "h0": (3, 5), "wx": (2, 5), "wh": (5, 5)}, {}


def foreach_two_data_outer_op(mx):
    """Two data sequences, two states, and an outer operator's output read by the body (cut to an input)."""
    a, b, s0, s1, z = (mx.sym.var(n) for n in ("a", "b", "s0", "s1", "z"))
    scale = mx.sym.relu(z) + 0.5

    def body(xs, states):
        x, y = xs
        out = x * scale + states[0]
        return [out, y * states[1]], [states[0] * 0.5 + x, mx.sym.sin(states[1]) + y]

    outs, states = mx.sym.contrib.foreach(body, [a, b], [s0, s1])
    shapes = {"a": (3, 4), "b": (3, 2), "s0": (4,), "s1": (2,), "z": (4,)}
    return mx.sym.Group(outs + states), shapes, {}


def while_counter(mx):
    """A while_loop stopping after 3 of at most 5 steps; func reads a weight from outside."""
    i, s, w = mx.sym.var("i"), mx.sym.var("s"), mx.sym.var("w")

    def func(i, s):
        return [s * w, mx.sym.broadcast_add(s, i)], [i + 1, mx.sym.sin(s) + w]

    outs, final = mx.sym.contrib.while_loop(lambda i, s: i < 3, func, [i, s], max_iterations=5)
    shapes = {"i": (1,), "s": (2, 3), "w": (2, 3)}
    return mx.sym.Group(outs + final), shapes, {"i": np.zeros(1, np.float32), "steps": 3, "stacked": 2}


def while_cond_on_values(mx):
    """A while_loop whose condition reads a loop variable's values (sum below a bound)."""
    x, total = mx.sym.var("x"), mx.sym.var("total")

    def cond(x, total):
        return mx.sym.sum(total) < 6

    def func(x, total):
        new_total = total + mx.sym.abs(x)
        return [new_total * 2], [x * 1.5, new_total]

    outs, final = mx.sym.contrib.while_loop(cond, func, [x, total], max_iterations=8)
    fixed = {"x": np.array([0.5, 1.0, 0.25], np.float32), "total": np.zeros(3, np.float32), "steps": 3, "stacked": 1}
    return mx.sym.Group(outs + final), {"x": (3,), "total": (3,)}, fixed


def cond_then(mx):
    """cond taking the then branch (pred > 0)."""
    p, a, w = mx.sym.var("p"), mx.sym.var("a"), mx.sym.var("w")
    out = mx.sym.contrib.cond(mx.sym.sum(p) > 0, lambda: a * w + 1, lambda: mx.sym.exp(a) - w)
    return out, {"p": (1,), "a": (2, 3), "w": (2, 3)}, {"p": np.array([1.0], np.float32)}


def cond_else(mx):
    """The same cond taking the else branch, with two outputs."""
    p, a, w = mx.sym.var("p"), mx.sym.var("a"), mx.sym.var("w")
    outs = mx.sym.contrib.cond(mx.sym.sum(p) > 0, lambda: [a * w + 1, a], lambda: [mx.sym.exp(a) - w, w * w])
    return mx.sym.Group(outs), {"p": (1,), "a": (2, 3), "w": (2, 3)}, {"p": np.array([-1.0], np.float32)}


CASES = {
    "rnn_foreach": rnn_foreach,
    "foreach_two_data_outer_op": foreach_two_data_outer_op,
    "while_counter": while_counter,
    "while_cond_on_values": while_cond_on_values,
    "cond_then": cond_then,
    "cond_else": cond_else,
}


def case_inputs(shapes: dict, fixed: dict, seed: int) -> dict:
    """The arguments of a case: fixed values where given, else uniform draws in [-1, 1)."""
    rng = np.random.default_rng(seed)
    return {n: fixed[n] if n in fixed else rng.uniform(-1, 1, s).astype(np.float32) for n, s in shapes.items()}


def build_named(mx, key: str):
    """A case's symbol built under a fresh name manager, so node names do not depend on earlier builds."""
    with mx.name.NameManager():
        return CASES[key](mx)


def run(mx, sym, args: dict, head_seed: int):
    """One training forward pass and a backward pass with seeded head gradients."""
    arrays = {n: mx.nd.array(v) for n, v in args.items()}
    grads = {n: mx.nd.zeros(v.shape) for n, v in args.items()}
    ex = sym.bind(mx.cpu(), arrays, args_grad=grads)
    outputs = [o.asnumpy() for o in ex.forward(is_train=True)]
    rng = np.random.default_rng(head_seed)
    heads = [rng.uniform(-1, 1, o.shape).astype(np.float32) for o in outputs]
    ex.backward([mx.nd.array(h) for h in heads])
    return outputs, heads, {n: g.asnumpy() for n, g in grads.items()}


def main() -> None:
    import mxnet as mx  # noqa: PLC0415 - only the peer interpreter has MXNet

    folder = sys.argv[1] if len(sys.argv) > 1 else HERE
    arrays, specs = {}, {}
    for index, key in enumerate(CASES):
        sym, shapes, fixed = build_named(mx, key)
        args = case_inputs(shapes, fixed, 100 + index)
        outputs, heads, grads = run(mx, sym, args, 200 + index)
        for name, value in args.items():
            arrays[f"{key}/args/{name}"] = value
        for i, (out, head) in enumerate(zip(outputs, heads, strict=True)):
            arrays[f"{key}/outputs/{i}"] = out
            arrays[f"{key}/heads/{i}"] = head
        for name, value in grads.items():
            arrays[f"{key}/grads/{name}"] = value
        specs[key] = {
            "json": sym.tojson(),
            "args": list(args),
            "num_outputs": len(outputs),
            "steps": fixed.get("steps"),
            "stacked": fixed.get("stacked", 0),
        }
    mxlab_file = os.path.join(HERE, "ops_control_flow_mxlab.json")
    if os.path.exists(mxlab_file):  # symbols MXLab wrote: MXNet must load and run them
        with open(mxlab_file) as f:
            written = json.load(f)["cases"]
        for key, text in written.items():
            index = list(CASES).index(key)
            args = {n: arrays[f"{key}/args/{n}"] for n in specs[key]["args"]}
            outputs, _, _ = run(mx, mx.sym.load_json(text), args, 200 + index)
            for i, out in enumerate(outputs):
                arrays[f"{key}/mxlab_json_outputs/{i}"] = out
    np.savez_compressed(os.path.join(folder, "ops_control_flow.npz"), **arrays)
    with open(os.path.join(folder, "ops_control_flow.json"), "w") as f:
        json.dump({"mxnet_version": mx.__version__, "cases": specs}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
