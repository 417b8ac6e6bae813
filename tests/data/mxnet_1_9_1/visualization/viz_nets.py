"""Networks drawn and summarised by both MXNet 1.9.1 (make_reference.py) and MXLab (the tests).

Each builder takes a module that has ``sym`` (``mxnet`` or a namespace holding
``framework.symbol``) and returns ``(symbol, input shapes)``.
"""


def mlp(mx):
    net = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data=net, name="fc1", num_hidden=128)
    net = mx.sym.Activation(data=net, name="relu1", act_type="relu")
    net = mx.sym.FullyConnected(data=net, name="fc2", num_hidden=64)
    net = mx.sym.Activation(data=net, name="relu2", act_type="relu")
    net = mx.sym.FullyConnected(data=net, name="fc3", num_hidden=10)
    return mx.sym.SoftmaxOutput(data=net, name="softmax"), {"data": (100, 784)}


def lenet(mx):
    """Convolution with and without bias, BatchNorm, both pooling types, LeakyReLU, Dropout."""
    data = mx.sym.Variable("data")
    c1 = mx.sym.Convolution(data=data, kernel=(5, 5), num_filter=20, name="conv1")
    b1 = mx.sym.BatchNorm(data=c1, name="bn1")
    a1 = mx.sym.Activation(data=b1, act_type="tanh", name="tanh1")
    p1 = mx.sym.Pooling(data=a1, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    c2 = mx.sym.Convolution(data=p1, kernel=(5, 5), num_filter=50, no_bias=True, name="conv2")
    a2 = mx.sym.LeakyReLU(data=c2, act_type="elu", name="elu2")
    p2 = mx.sym.Pooling(data=a2, pool_type="avg", kernel=(2, 2), stride=(2, 2), name="pool2")
    f = mx.sym.Flatten(data=p2, name="flatten")
    fc1 = mx.sym.FullyConnected(data=f, num_hidden=500, name="fc1")
    d = mx.sym.Dropout(data=fc1, p=0.5, name="drop")
    fc2 = mx.sym.FullyConnected(data=d, num_hidden=10, no_bias=True, name="fc2")
    return mx.sym.SoftmaxOutput(data=fc2, name="softmax"), {"data": (64, 1, 28, 28)}


def branches(mx):
    """Two inputs, two branches joined by an addition and a Concat, a grouped convolution, Embedding."""
    data = mx.sym.Variable("data")
    tok = mx.sym.Variable("tokens")
    emb = mx.sym.Embedding(data=tok, input_dim=100, output_dim=16, name="embed")
    c0 = mx.sym.Convolution(data=data, kernel=(3, 3), pad=(1, 1), num_filter=8, name="stem")
    a = mx.sym.Convolution(data=c0, kernel=(1, 1), num_filter=8, num_group=2, name="branch_a")
    b = mx.sym.Convolution(data=c0, kernel=(3, 3), pad=(1, 1), num_filter=8, name="branch_b")
    s = mx.sym.elemwise_add(a, b, name="sum")
    cat = mx.sym.Concat(s, c0, dim=1, name="cat")
    pool = mx.sym.Pooling(data=cat, global_pool=True, kernel=(1, 1), pool_type="avg", name="gpool")
    flat = mx.sym.Flatten(data=pool, name="flat")
    fc = mx.sym.FullyConnected(data=flat, num_hidden=16, name="fc")
    both = mx.sym.elemwise_mul(fc, mx.sym.sum(emb, axis=1, name="bag"), name="mix")
    return mx.sym.MakeLoss(both, name="loss"), {"data": (2, 3, 8, 8), "tokens": (2, 5)}


def split(mx):
    """A multi-output node: MXNet's summary knows no shape for it and counts 0 features after it."""
    data = mx.sym.Variable("data")
    parts = mx.sym.SliceChannel(data=data, num_outputs=2, axis=1, name="split")
    fc = mx.sym.FullyConnected(data=parts[0], num_hidden=4, name="fc")
    out = mx.sym.broadcast_add(fc, parts[1], name="add")
    return out, {"data": (3, 8)}


def group(mx):
    """Two outputs; a FullyConnected fed a 4-d tensor (MXNet counts its channels only)."""
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data=data, kernel=(3, 3), num_filter=4, name="conv")
    fc = mx.sym.FullyConnected(data=conv, num_hidden=5, name="fc")
    act = mx.sym.Activation(data=conv, act_type="sigmoid", name="act")
    return mx.sym.Group([fc, act]), {"data": (2, 3, 6, 6)}


NETS = {"mlp": mlp, "lenet": lenet, "branches": branches, "split": split, "group": group}
