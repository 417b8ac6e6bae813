"""``mx.gluon.contrib.cnn``: deformable convolution layers (:mod:`.conv_layers`)."""

from __future__ import annotations

from . import conv_layers
from .conv_layers import DeformableConvolution, ModulatedDeformableConvolution

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution", "conv_layers"]
