"""model_zoo.vision: MXNet 1.9.1's parameter names and shapes for every network, and forward passes.

The reference, tests/data/mxnet_1_9_1/gluon/model_zoo_names.json, was written by
make_model_zoo_names.py under MXNet 1.9.1; the same ``describe`` runs here on MXLab.
"""

from __future__ import annotations

import inspect
import json
import os
import sys

import numpy as np
import pytest

import framework as mx
from framework.gluon.contrib import nn as contrib_nn
from framework.gluon.model_zoo import model_store, vision

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE_DIR = os.path.join(HERE, "..", "data", "mxnet_1_9_1", "gluon")
sys.path.insert(0, REFERENCE_DIR)
from make_model_zoo_names import MODELS, describe  # noqa: E402 - the folder is put on the path just above

with open(os.path.join(REFERENCE_DIR, "model_zoo_names.json")) as _f:
    REFERENCE = json.load(_f)["models"]


def test_reference_covers_every_model():
    assert sorted(REFERENCE) == sorted(MODELS) == sorted(vision.MODELS)


@pytest.mark.parametrize("name", MODELS)
def test_names_and_shapes_match_mxnet(name):
    got = describe(mx, name)
    expected = REFERENCE[name]
    assert [row[0] for row in got] == [row[0] for row in expected], "prefixed names (collect_params order)"
    assert [row[1] for row in got] == [row[1] for row in expected], "structural names (save_parameters)"
    assert got == expected, "declared and inferred shapes"


def _forward_both_ways(net, x):
    net.initialize(mx.init.Xavier())
    imperative = net(x).asnumpy()
    net.hybridize()
    hybridized = net(x).asnumpy()
    return imperative, hybridized


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("resnet18_v1", {"thumbnail": True}),
        ("resnet18_v2", {"thumbnail": True}),
        ("mobilenet0.25", {}),
        ("mobilenetv2_0.25", {}),
    ],
)
def test_forward_imperative_and_hybridized_agree(name, kwargs):
    mx.random.seed(1)
    net = vision.get_model(name, classes=10, **kwargs)
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, size=(2, 3, 32, 32)), dtype="float32")
    imperative, hybridized = _forward_both_ways(net, x)
    assert imperative.shape == (2, 10)
    assert np.isfinite(imperative).all()
    np.testing.assert_allclose(hybridized, imperative, rtol=1e-4, atol=1e-5)


def test_backward_imperative_and_hybridized_agree():
    # BatchNorm in training mode (batch statistics), grouped convolutions, clip (ReLU6), shortcuts
    mx.random.seed(2)
    net = vision.get_model("mobilenetv2_0.25", classes=4)
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(1).uniform(0, 1, size=(2, 3, 32, 32)), dtype="float32")
    grads = []
    for hybrid in (False, True):
        net.hybridize(active=hybrid)
        with mx.autograd.record():
            loss = net(x).sum()
        loss.backward()
        grads.append({k: p.grad().asnumpy().copy() for k, p in net.collect_params().items() if p.grad_req != "null"})
    assert grads[0].keys() == grads[1].keys() and len(grads[0]) > 100
    for key in grads[0]:
        np.testing.assert_allclose(grads[1][key], grads[0][key], rtol=1e-3, atol=1e-4, err_msg=key)


def test_squeezenet_forward_at_224():
    net = vision.get_model("squeezenet1.1", classes=4)
    x = mx.nd.array(np.random.RandomState(1).uniform(0, 1, size=(1, 3, 224, 224)), dtype="float32")
    imperative, hybridized = _forward_both_ways(net, x)
    assert imperative.shape == (1, 4)
    np.testing.assert_allclose(hybridized, imperative, rtol=1e-4, atol=1e-5)


def test_params_file_round_trip_by_structural_names(tmp_path):
    net = vision.get_model("mobilenet0.25", classes=10)
    net.initialize()
    x = mx.nd.ones((1, 3, 32, 32))
    y = net(x).asnumpy()
    path = str(tmp_path / "m.params")
    net.save_parameters(path)
    other = vision.mobilenet0_25(classes=10)
    other.load_parameters(path)
    np.testing.assert_allclose(other(x).asnumpy(), y, rtol=1e-5, atol=1e-6)


def test_pretrained_and_unknown_names_raise():
    with pytest.raises(vision.PretrainedError, match="does not download"):
        vision.get_model("resnet18_v1", pretrained=True)
    with pytest.raises(vision.PretrainedError, match="inceptionv3: pretrained=True: MXLab does not download"):
        vision.inception_v3(pretrained=True, ctx=mx.cpu(), root="/nowhere")
    with pytest.raises(ValueError, match="model 'inceptionv4' is not supported; available: alexnet"):
        vision.get_model("inceptionv4")
    with pytest.raises(ValueError, match="num_layers must be one of"):
        vision.get_resnet(1, 20)


@pytest.mark.parametrize(
    "getter, args",
    [
        (vision.alexnet, ()),
        (vision.get_resnet, (1, 18)),
        (vision.get_vgg, (11,)),
        (vision.get_mobilenet, (0.25,)),
        (vision.get_mobilenet_v2, (0.25,)),
        (vision.inception_v3, ()),
        (vision.get_densenet, (121,)),
        (vision.get_squeezenet, ("1.1",)),
    ],
)
def test_getters_take_mxnets_ctx_and_root(getter, args):
    params = inspect.signature(getter).parameters
    assert str(params["ctx"].default) == "cpu(0)" and params["root"].default == os.path.join("~", ".mxnet", "models")
    net = getter(*args, classes=3, ctx=mx.cpu(1), root="/somewhere/else")  # no weights: nothing is read or placed
    assert isinstance(net, mx.gluon.HybridBlock)


def test_inception_v3_runs_a_299_image_both_ways():
    mx.random.seed(3)
    net = vision.inception_v3(classes=5)
    assert vision.get_model("InceptionV3", classes=5).prefix.startswith("inception3")
    assert vision.inception.Inception3 is vision.Inception3
    x = mx.nd.array(np.random.RandomState(2).uniform(0, 1, size=(1, 3, 299, 299)), dtype="float32")
    imperative, hybridized = _forward_both_ways(net, x)
    assert imperative.shape == (1, 5) and np.isfinite(imperative).all()
    np.testing.assert_allclose(hybridized, imperative, rtol=1e-4, atol=1e-5)
    with pytest.raises(mx.gluon.BlockError):  # the 8x8 average pooling needs the 299 input
        net(mx.nd.ones((1, 3, 100, 100)))


def test_concurrent_containers_concatenate_their_branches():
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    expected = np.concatenate([x.asnumpy(), 2 * x.asnumpy()], axis=1)
    plain = contrib_nn.Concurrent(axis=1)
    plain.add(contrib_nn.Identity(), mx.gluon.nn.Lambda(lambda v: v * 2))
    np.testing.assert_array_equal(plain(x).asnumpy(), expected)
    hybrid = contrib_nn.HybridConcurrent(axis=1)
    hybrid.add(contrib_nn.Identity(), mx.gluon.nn.HybridLambda(lambda F, v: v * 2))
    np.testing.assert_array_equal(hybrid(x).asnumpy(), expected)
    hybrid.hybridize()
    np.testing.assert_array_equal(hybrid(x).asnumpy(), expected)


def test_model_store_never_downloads_and_purges_params_files(tmp_path):
    with pytest.raises(mx.gluon.utils.DownloadError, match="get_model_file\\('resnet18_v1'\\): MXLab does not"):
        model_store.get_model_file("resnet18_v1", root=str(tmp_path))
    (tmp_path / "resnet18_v1-a0666292.params").write_bytes(b"w")
    (tmp_path / "notes.txt").write_text("keep")
    model_store.purge(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    model_store.purge(str(tmp_path / "missing"))  # nothing there: nothing to do


def test_seeded_networks_compute_mxnets_outputs():
    """Same names and shapes could still hide a branch order or a pooling setting: compare outputs."""
    sys.path.insert(0, REFERENCE_DIR)
    import make_model_zoo_outputs as outputs  # noqa: PLC0415 - the reference folder is put on the path just above

    expected = mx.nd.load(os.path.join(REFERENCE_DIR, "model_zoo_outputs.nd"))
    assert sorted(expected) == sorted(outputs.NETWORKS)
    for name in outputs.NETWORKS:
        net = outputs.seeded_network(mx, name)
        got = net(mx.nd.array(outputs.seeded_input(name))).asnumpy()
        np.testing.assert_allclose(got, expected[name].asnumpy(), rtol=1e-3, atol=1e-3 * np.abs(got).max())
