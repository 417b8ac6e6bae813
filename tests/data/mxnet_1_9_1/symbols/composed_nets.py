"""Symbols built with the ``mx.sym`` API, the same code for MXNet and for MXLab.

``make_symbols.py`` runs :func:`build` with MXNet 1.9.1 and stores what MXNet says about
each symbol (``composed.json``); tests/symbol/test_symbol_json.py runs it with MXLab and
compares: JSON text byte for byte, names, attributes, ``debug_str`` and inferred shapes.
It imports nothing, so it runs under either library.

Pooling here is average pooling: MXNet built with MKL-DNN gives max pooling a hidden
workspace output, which would change ``node_row_ptr``.
"""


def build(sym, NameManager):
    """Name -> (symbol, keyword shapes for infer_shape or None)."""
    out = {}
    with NameManager():
        a = sym.Variable("a", shape=(2, 0))
        b = sym.var("b")
        c = sym.var("c", shape=(0, 3), lr_mult=2, dtype="float16", attr={"mood": "calm", "ctx_group": "dev1"})
        out["seed004"] = (a * b + b * c, {})
        x, y = sym.var("x"), sym.var("y")
        arith = [x + 1, 1 + x, x - 2, 2 - x, x * 3.5, x / 2, 2 / x, x**2, 2**x, -x, x % 3, 3 % x]
        arith += [x == 1, x != y, x > 0, x >= y, x < 2, 2 > x, x <= 1, x / x, x**x, x % x, abs(x), x * x - x]
        out["arithmetic"] = (sym.Group(arith), {"x": (2, 3), "y": (2, 3)})
        fc = sym.FullyConnected(data=x, num_hidden=10, name="fc1", attr={"lr_mult": "3", "__mood__": "x"})
        bn = sym.BatchNorm(fc, fix_gamma=False, eps=1e-5)
        act = sym.Activation(bn, act_type="relu")
        conv = sym.Convolution(sym.var("img"), kernel=(3, 3), num_filter=4, stride=[1, 1], no_bias=True)
        pool = sym.Pooling(conv, kernel=(2, 2), pool_type="avg", stride=(2, 2))
        flat = sym.Flatten(pool)
        cat = sym.Concat(act, flat, dim=1)
        parts = sym.split(cat, num_outputs=2, axis=1)
        soft = sym.SoftmaxOutput(parts[0] + parts[1], name="softmax")
        net = sym.Group([soft, parts[1], sym.BatchNorm(name="bn")])
        out["network"] = (net, {"x": (2, 5), "img": (2, 3, 6, 6), "bn_data": (2, 4)})
        out["internals"] = (net.get_internals(), None)
        out["children"] = (soft.get_children(), None)
        out["creation"] = (
            sym.Group([sym.zeros((2, 3)), sym.ones((2,)), sym.full((2,), 3.0), sym.Cast(x, dtype="float16")]),
            None,
        )
        out["fluent"] = (sym.Group([x.astype("int32"), x.reshape((1, -1)), x.sum(axis=1), x.exp(), x.relu()]), None)
        many = [sym.var(f"v{i}") for i in range(12)]
        out["many_inputs"] = (sym.Group([sym.Concat(*many, dim=0), *many]), None)
        data = sym.var("data")
        head = sym.Activation(sym.var("q"), act_type="tanh", name="act")
        out["compose"] = (head(q=sym.FullyConnected(data, num_hidden=3, name="fcc"), name="renamed"), {"data": (4, 7)})
        out["no_bias"] = (sym.FullyConnected(data, num_hidden=3, no_bias=True, flatten=False), {"data": (4, 5, 7)})
        out["positional"] = (sym.FullyConnected(data, sym.var("w"), None, 6), {"data": (4, 7)})
        out["dropout"] = (sym.Dropout(data, p=0.2), None)
        out["embedding"] = (sym.Embedding(data, input_dim=10, output_dim=4), {"data": (3, 5)})
        out["leaky"] = (sym.LeakyReLU(data, act_type="leaky", slope=0.1), None)
        out["two_batchnorms"] = (sym.BatchNorm(data, name="bnx") + sym.BatchNorm(data, name="bny"), {"data": (2, 3)})
        shared = sym.var("stat")
        out["shared_aux"] = (
            sym.BatchNorm(data, moving_mean=shared, name="bn1") + sym.BatchNorm(data, moving_mean=shared, name="bn2"),
            None,
        )
    return out
