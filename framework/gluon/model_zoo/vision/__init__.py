"""``mx.gluon.model_zoo.vision``: image classification networks with MXNet 1.9.1's names.

``get_model("resnet18_v1", classes=10)`` builds a network (no weights: ``pretrained=True``
raises :class:`PretrainedError`). The names in :data:`MODELS` are MXNet's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...block import HybridBlock
from . import inception
from .alexnet import AlexNet, alexnet
from .common import PretrainedError
from .densenet import DenseNet, densenet121, densenet161, densenet169, densenet201, get_densenet
from .inception import Inception3, inception_v3
from .mobilenet import (
    MobileNet,
    MobileNetV2,
    get_mobilenet,
    get_mobilenet_v2,
    mobilenet0_5,
    mobilenet0_25,
    mobilenet0_75,
    mobilenet1_0,
    mobilenet_v2_0_5,
    mobilenet_v2_0_25,
    mobilenet_v2_0_75,
    mobilenet_v2_1_0,
)
from .resnet import (
    BasicBlockV1,
    BasicBlockV2,
    BottleneckV1,
    BottleneckV2,
    ResNetV1,
    ResNetV2,
    get_resnet,
    resnet18_v1,
    resnet18_v2,
    resnet34_v1,
    resnet34_v2,
    resnet50_v1,
    resnet50_v2,
    resnet101_v1,
    resnet101_v2,
    resnet152_v1,
    resnet152_v2,
)
from .squeezenet import SqueezeNet, get_squeezenet, squeezenet1_0, squeezenet1_1
from .vgg import VGG, get_vgg, vgg11, vgg11_bn, vgg13, vgg13_bn, vgg16, vgg16_bn, vgg19, vgg19_bn

#: every model name get_model accepts -> its constructor
MODELS: dict[str, Callable[..., HybridBlock]] = {
    **{f.__name__: f for f in (resnet18_v1, resnet34_v1, resnet50_v1, resnet101_v1, resnet152_v1)},
    **{f.__name__: f for f in (resnet18_v2, resnet34_v2, resnet50_v2, resnet101_v2, resnet152_v2)},
    **{f.__name__: f for f in (vgg11, vgg13, vgg16, vgg19, vgg11_bn, vgg13_bn, vgg16_bn, vgg19_bn)},
    "alexnet": alexnet,
    **{f.__name__: f for f in (densenet121, densenet161, densenet169, densenet201)},
    "squeezenet1.0": squeezenet1_0,
    "squeezenet1.1": squeezenet1_1,
    "mobilenet1.0": mobilenet1_0,
    "mobilenet0.75": mobilenet0_75,
    "mobilenet0.5": mobilenet0_5,
    "mobilenet0.25": mobilenet0_25,
    "mobilenetv2_1.0": mobilenet_v2_1_0,
    "mobilenetv2_0.75": mobilenet_v2_0_75,
    "mobilenetv2_0.5": mobilenet_v2_0_5,
    "mobilenetv2_0.25": mobilenet_v2_0_25,
    "inceptionv3": inception_v3,
}


def get_model(name: str, **kwargs: Any) -> HybridBlock:
    """The zoo network ``name`` (case-insensitive), built with ``kwargs`` (``classes``, ``pretrained``, ...)."""
    key = name.lower() if isinstance(name, str) else name
    if key not in MODELS:
        raise ValueError(f"get_model: model {name!r} is not supported; available: {', '.join(sorted(MODELS))}")
    return MODELS[key](**kwargs)


__all__ = [
    "MODELS",
    "VGG",
    "AlexNet",
    "BasicBlockV1",
    "BasicBlockV2",
    "BottleneckV1",
    "BottleneckV2",
    "DenseNet",
    "Inception3",
    "MobileNet",
    "MobileNetV2",
    "PretrainedError",
    "ResNetV1",
    "ResNetV2",
    "SqueezeNet",
    "alexnet",
    "densenet121",
    "densenet161",
    "densenet169",
    "densenet201",
    "get_densenet",
    "get_mobilenet",
    "get_mobilenet_v2",
    "get_model",
    "get_resnet",
    "get_squeezenet",
    "get_vgg",
    "inception",
    "inception_v3",
    "mobilenet0_5",
    "mobilenet0_25",
    "mobilenet0_75",
    "mobilenet1_0",
    "mobilenet_v2_0_5",
    "mobilenet_v2_0_25",
    "mobilenet_v2_0_75",
    "mobilenet_v2_1_0",
    "resnet18_v1",
    "resnet18_v2",
    "resnet34_v1",
    "resnet34_v2",
    "resnet50_v1",
    "resnet50_v2",
    "resnet101_v1",
    "resnet101_v2",
    "resnet152_v1",
    "resnet152_v2",
    "squeezenet1_0",
    "squeezenet1_1",
    "vgg11",
    "vgg11_bn",
    "vgg13",
    "vgg13_bn",
    "vgg16",
    "vgg16_bn",
    "vgg19",
    "vgg19_bn",
]
