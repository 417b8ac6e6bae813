"""Write MXNet 1.9.1's numbers for Gluon losses and image transforms to ``reference-numbers.nd``.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/gluon/make_reference_numbers.py

The inputs come from :func:`inputs` (seeded NumPy, so the tests rebuild them without MXNet);
the file holds MXNet's outputs by the names of :data:`LOSSES` and :data:`TRANSFORMS`, whose
entries take the ``mx`` module as an argument so that tests/gluon/test_reference_numbers.py
runs the very same calls on MXLab. (``nn.BatchNormReLU`` is not here: MXNet 1.9.1 runs its
fused operator only with the MKL-DNN backend, which the reference build lacks.)
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.path.join(HERE, "reference-numbers.nd")


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    logits = rng.standard_normal((4, 5)).astype(np.float32)
    return {
        "x1": rng.standard_normal((5, 3)).astype(np.float32),
        "x2": rng.standard_normal((5, 3)).astype(np.float32),
        "pred": logits,
        "label": (np.exp(logits[::-1]) / np.exp(logits[::-1]).sum(1, keepdims=True)).astype(np.float32),
        "image": rng.integers(0, 256, size=(6, 8, 3)).astype(np.uint8),
        "batch": rng.integers(0, 256, size=(2, 6, 8, 3)).astype(np.uint8),
    }


def _nd(mx: Any, name: str) -> Any:
    value = inputs()[name]
    return mx.nd.array(value, dtype=value.dtype)


#: name -> function of the ``mx`` module giving the loss's output
LOSSES = {
    "sdml": lambda mx: mx.gluon.loss.SDMLLoss()(_nd(mx, "x1"), _nd(mx, "x2")),
    "sdml_smooth_0.1": lambda mx: mx.gluon.loss.SDMLLoss(smoothing_parameter=0.1)(_nd(mx, "x1"), _nd(mx, "x2")),
    "kldiv_logits": lambda mx: mx.gluon.loss.KLDivLoss(from_logits=False)(_nd(mx, "pred"), _nd(mx, "label")),
    "kldiv_log_probabilities": lambda mx: mx.gluon.loss.KLDivLoss()(
        mx.nd.log_softmax(_nd(mx, "pred")), _nd(mx, "label")
    ),
}


def _transforms(mx: Any) -> Any:
    return mx.gluon.data.vision.transforms


#: name -> function of the ``mx`` module giving the transform's output (the deterministic transforms)
TRANSFORMS = {
    "to_tensor": lambda mx: _transforms(mx).ToTensor()(_nd(mx, "image")),
    "to_tensor_batch": lambda mx: _transforms(mx).ToTensor()(_nd(mx, "batch")),
    "normalize": lambda mx: _transforms(mx).Normalize((0.5, 0.4, 0.3), (0.2, 0.3, 0.4))(
        _transforms(mx).ToTensor()(_nd(mx, "image"))
    ),
    "resize_pair": lambda mx: _transforms(mx).Resize((5, 3))(_nd(mx, "image")),
    "resize_keep_ratio": lambda mx: _transforms(mx).Resize(4, keep_ratio=True)(_nd(mx, "image")),
    "resize_bicubic_batch": lambda mx: _transforms(mx).Resize((10, 7), interpolation=2)(_nd(mx, "batch")),
    "crop_resize": lambda mx: _transforms(mx).CropResize(1, 2, 5, 3)(_nd(mx, "image")),
    "crop_resize_size": lambda mx: _transforms(mx).CropResize(1, 2, 5, 3, size=(4, 6), interpolation=0)(
        _nd(mx, "image")
    ),
    "center_crop": lambda mx: _transforms(mx).CenterCrop((5, 4))(_nd(mx, "image")),
    "cast": lambda mx: _transforms(mx).Cast("float16")(_nd(mx, "image")),
    "rotate_zoom_in": lambda mx: _transforms(mx).Rotate(30, zoom_in=True)(_transforms(mx).ToTensor()(_nd(mx, "image"))),
}


def main() -> None:
    import mxnet as mx  # noqa: PLC0415 - only this script, run by the peer interpreter, has mxnet

    results = {name: make(mx) for name, make in {**LOSSES, **TRANSFORMS}.items()}
    mx.nd.save(OUTPUT, results)
    print(f"wrote {OUTPUT}: {sorted(results)}")


if __name__ == "__main__":
    main()
