"""ResNet-18 v1 exported by MXNet 1.9.1 gives MXNet's outputs here, with the same parameters.

The parameters are regenerated deterministically (tests/data/.../symbols/resnet_params.py)
instead of being stored (45 MB); make_resnet_reference.py ran the same network in MXNet.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

import framework as mx
from framework.test_utils import assert_almost_equal

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "symbols"


def _params_module():
    spec = importlib.util.spec_from_file_location("resnet_params", DATA / "resnet_params.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_resnet18_outputs_match_mxnet():
    params = _params_module()
    net = mx.sym.load(str(DATA / "resnet18_v1-symbol.json"))
    arg_shapes, _, aux_shapes = net.infer_shape(data=params.INPUT_SHAPE)
    args, aux = params.deterministic_params(
        dict(zip(net.list_arguments(), arg_shapes, strict=True)),
        dict(zip(net.list_auxiliary_states(), aux_shapes, strict=True)),
    )
    reference = mx.nd.load(str(DATA / "resnet18_v1-reference.nd"))
    data = params.deterministic_input()
    assert np.array_equal(reference["data"].asnumpy(), data)
    arrays = {name: mx.nd.array(value) for name, value in args.items()}
    arrays["data"] = mx.nd.array(data)
    executor = net.bind(mx.cpu(), arrays, aux_states={k: mx.nd.array(v) for k, v in aux.items()}, grad_req="null")
    output = executor.forward(is_train=False)[0]
    assert output.shape == (2, 1000)
    assert_almost_equal(output, reference["output"], rtol=1e-3, atol=1e-3)
