"""The tensor utilities inside a bound symbol: the executor's shape/type inference (including
the backward operators') and memory plan give the same outputs and gradients as autograd."""

from __future__ import annotations

from op_helpers import seeded_rng

import framework as mx
from framework import autograd
from framework.executor import simple_bind
from framework.test_utils import assert_almost_equal

sym, nd = mx.sym, mx.nd


def _graph(module):
    """One expression over x (2, 3, 4), q (3, 2, 12) and att (4, 3, 3), written once for both front ends."""

    def build(x, q, att):
        mean, var = module.moments(x, axes=(0, 2), keepdims=True)
        pieces = module.split_v2(x, (1,), axis=1)
        scores = module.contrib.interleaved_matmul_selfatt_qk(q, heads=2)
        values = module.contrib.interleaved_matmul_selfatt_valatt(q, att, heads=2)
        terms = [
            module.sum(module.broadcast_mul(var, module.erf(x))),
            module.sum(module.cumsum(pieces[1], axis=2)),
            module.sum(module.diag(module.reverse(pieces[0], axis=(2,)), k=1, axis1=1, axis2=2)),
            module.sum(module.square(mean)),
            module.sum(module.hard_sigmoid(module.slice_like(x, pieces[0], axes=(1,)))),
            module.sum(module.contrib.div_sqrt_dim(scores)),
            module.sum(module.square(values)),
            module.sum(module.reshape_like(module.gammaln(x + 3), module.transpose(x)) * module.transpose(x)),
        ]
        return module.add_n(*terms)

    return build


def test_bound_symbol_matches_autograd():
    rng = seeded_rng(1)
    values = {
        "x": rng.uniform(-1, 1, (2, 3, 4)),
        "q": rng.uniform(-1, 1, (3, 2, 12)),
        "att": rng.uniform(0, 1, (4, 3, 3)),
    }
    net = _graph(sym)(sym.var("x"), sym.var("q"), sym.var("att"))
    exe = simple_bind(
        net, mx.cpu(), **{k: v.shape for k, v in values.items()}, type_dict=dict.fromkeys(values, "float64")
    )
    for name, value in values.items():
        exe.arg_dict[name][:] = value
    out = exe.forward(is_train=True)[0]
    exe.backward(nd.ones((1,), dtype="float64"))

    arrays = {k: nd.array(v, dtype="float64") for k, v in values.items()}
    for a in arrays.values():
        a.attach_grad()
    with autograd.record():
        expected = _graph(nd)(arrays["x"], arrays["q"], arrays["att"])
    expected.backward()
    assert_almost_equal(out, expected.asnumpy())
    for name in values:
        assert_almost_equal(exe.grad_dict[name], arrays[name].grad.asnumpy(), names=(f"executor d{name}", "autograd"))
