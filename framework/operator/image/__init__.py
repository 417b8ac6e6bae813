"""Image operators (``mx.nd.image.*``, registered as ``_image_<name>``): the per-image transforms of a
data pipeline, as graph operators on ``(H, W, C)`` images or ``(N, H, W, C)`` batches.

- :mod:`.tensor`: ``to_tensor`` (HWC uint8 -> CHW float in [0, 1]) and ``normalize`` (per channel);
- :mod:`.geometry`: ``resize``, ``crop``, ``flip_left_right``, ``flip_top_bottom``, random flips;
- :mod:`.color`: ``adjust_lighting`` and the random brightness, contrast, saturation, hue,
  colour jitter and lighting;
- :mod:`.interpolation`: OpenCV's resize methods as weight matrices (``mx.image.imresize`` uses
  them too); :mod:`.common`: layouts, the float-tuple parameter, saturating casts.

The shared idea: channels last, arithmetic in float, results written back in the input's dtype.
"""

from __future__ import annotations

from . import color, geometry, interpolation, tensor

__all__ = ["color", "geometry", "interpolation", "tensor"]
