"""Write the Gluon references in this folder with real MXNet 1.9.1.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/gluon/make_gluon_files.py

It builds :func:`build_net` (Conv2D, BatchNorm, Activation, MaxPool2D, Flatten, Dense with
an activation, Dense) with the fixed parameter values of :func:`set_fixed_parameters`
and writes:

* ``net.params``: ``net.save_parameters`` (structural names such as ``0.weight``);
* ``net-symbol.json`` and ``net-0000.params``: ``net.export`` after one hybridized call
  (``arg:``/``aux:`` names such as ``arg:hybridsequential0_conv0_weight``);
* ``net-reference.nd``: ``mx.nd.save`` of the fixed ``input``; ``output_predict`` (not
  recording: BatchNorm uses the running statistics); and, after one recorded training
  forward of the imperative network, ``output_train``, ``input_grad`` and ``grad:<name>``
  for every parameter (the gradient of ``sum(output * head)``, ``head`` saved too), and
  ``after:<name>`` for the running statistics the training forward updated.

The tests in tests/gluon/test_mxnet_files.py build the same network with MXLab through
``build_net(framework)`` (the functions here take the ``mx`` module as an argument, so the
one definition serves both) and compare; they never import MXNet.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
INPUT_SHAPE = (2, 2, 4, 4)


def build_net(mx: Any) -> Any:
    """The reference network, created in a fresh name scope (prefix ``hybridsequential0_``)."""
    nn = mx.gluon.nn
    with mx.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(
                nn.Conv2D(4, 3, padding=1, in_channels=2),
                nn.BatchNorm(in_channels=4),
                nn.Activation("relu"),
                nn.MaxPool2D(2),
                nn.Flatten(),
                nn.Dense(8, activation="tanh", in_units=16),
                nn.Dense(3, in_units=8),
            )
    return net


def set_fixed_parameters(mx: Any, net: Any) -> None:
    """Initialize, then give every parameter values from one seeded generator (name order)."""
    net.initialize()
    rng = np.random.default_rng(20240917)
    for name, param in sorted(net.collect_params().items()):
        values = rng.standard_normal(param.shape).astype(np.float32) * 0.5
        if name.endswith("running_var"):
            values = np.abs(values) + 0.5
        param.set_data(mx.nd.array(values))


def fixed_input() -> tuple[np.ndarray, np.ndarray]:
    """The input and the head gradient (``d loss / d output``) the references use."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(INPUT_SHAPE).astype(np.float32)
    head = np.linspace(-1.0, 1.0, INPUT_SHAPE[0] * 3, dtype=np.float32).reshape(INPUT_SHAPE[0], 3)
    return x, head


def main() -> None:
    import mxnet as mx  # noqa: PLC0415 - the tests import this module for build_net (with MXLab); MXNet only when run

    net = build_net(mx)
    set_fixed_parameters(mx, net)
    net.save_parameters(os.path.join(HERE, "net.params"))
    x_np, head_np = fixed_input()
    x, head = mx.nd.array(x_np), mx.nd.array(head_np)
    reference = {"input": x, "head": head, "output_predict": net(x)}

    x.attach_grad()
    with mx.autograd.record():
        out = net(x)
    out.backward(head)
    reference["output_train"] = out
    reference["input_grad"] = x.grad
    for name, param in net._collect_params_with_prefix().items():
        if param.grad_req != "null":
            reference[f"grad:{name}"] = param.grad()
        else:
            reference[f"after:{name}"] = param.data()

    exported = build_net(mx)  # the export: the same starting values, hybridized
    set_fixed_parameters(mx, exported)
    exported.hybridize()
    exported(mx.nd.array(x_np))
    exported.export(os.path.join(HERE, "net"), epoch=0)
    mx.nd.save(os.path.join(HERE, "net-reference.nd"), reference)


if __name__ == "__main__":
    main()
