"""Record the parameter names and shapes of MXNet 1.9.1's model zoo networks.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/gluon/make_model_zoo_names.py

For every network of :data:`MODELS`, built by ``get_model(name, classes=10)`` in a fresh
name scope (so the first prefix is ``resnetv10_``, not a later counter), it writes to
``model_zoo_names.json`` one ``[name, structural name, declared shape, inferred shape]``
row per parameter in ``collect_params()`` order: the structural name is the one
``save_parameters`` writes (``features.1.0.body.0.weight``); the declared shape has 0 for
a dimension inferred later; the inferred one comes from shape inference of the traced
symbol for one (1, 3, 224, 224) image (Inception v3: (1, 3, 299, 299), the size it is
built for). No weights are involved. tests/gluon/test_model_zoo.py
compares MXLab's networks against this file; it never imports MXNet.
"""

from __future__ import annotations

import json
import os
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.path.join(HERE, "model_zoo_names.json")
INPUT_SHAPE = (1, 3, 224, 224)
#: the networks built for another input size
INPUT_SHAPES = {"inceptionv3": (1, 3, 299, 299)}

MODELS = (
    [f"resnet{depth}_v{version}" for version in (1, 2) for depth in (18, 34, 50, 101, 152)]
    + [f"vgg{depth}{bn}" for bn in ("", "_bn") for depth in (11, 13, 16, 19)]
    + ["alexnet", "squeezenet1.0", "squeezenet1.1"]
    + [f"densenet{depth}" for depth in (121, 161, 169, 201)]
    + [f"mobilenet{m}" for m in ("1.0", "0.75", "0.5", "0.25")]
    + [f"mobilenetv2_{m}" for m in ("1.0", "0.75", "0.5", "0.25")]
    + ["inceptionv3"]
)


def describe(mx: Any, name: str) -> list[list[Any]]:
    """``[name, structural name, declared shape, inferred shape]`` per parameter (``mx``: mxnet or framework)."""
    with mx.name.NameManager():
        net = mx.gluon.model_zoo.vision.get_model(name, classes=10)
    out = net(mx.sym.var("data"))
    arg_shapes, _, aux_shapes = out.infer_shape(data=INPUT_SHAPES.get(name, INPUT_SHAPE))
    inferred = dict(zip(out.list_arguments(), arg_shapes, strict=True))
    inferred.update(zip(out.list_auxiliary_states(), aux_shapes, strict=True))
    structural = {param.name: key for key, param in net._collect_params_with_prefix().items()}
    return [
        [key, structural[key], list(param.shape), list(inferred[key])] for key, param in net.collect_params().items()
    ]


def main() -> None:
    import mxnet as mx  # noqa: PLC0415 - only this script, run by the peer interpreter, has mxnet

    shapes = {name: list(shape) for name, shape in INPUT_SHAPES.items()}
    lines = [f'{{"mxnet_version": {json.dumps(mx.__version__)}, "input_shape": {list(INPUT_SHAPE)}, ']
    lines[0] += f'"input_shapes": {json.dumps(shapes)}, "models": {{'

    for i, name in enumerate(MODELS):
        comma = "," if i < len(MODELS) - 1 else ""
        lines.append(f"{json.dumps(name)}: {json.dumps(describe(mx, name), separators=(',', ':'))}{comma}")
    with open(OUTPUT, "w") as f:
        f.write("\n".join([*lines, "}}"]) + "\n")
    print(f"wrote {OUTPUT}: {len(MODELS)} networks")


if __name__ == "__main__":
    main()
