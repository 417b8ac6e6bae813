"""Spatial operators: resampling, rearranging and unfolding the spatial axes of NCHW images.

One module per shared idea: ``layout`` moves pixels between depth and space
(``depth_to_space``, ``space_to_depth``), ``resample`` maps a grid onto a grid of another
size with a fixed linear map (``UpSampling``, ``_contrib_BilinearResize2D``,
``_contrib_AdaptiveAvgPooling2D``), ``sampler`` reads an image at computed positions
(``GridGenerator``, ``BilinearSampler``, ``SpatialTransformer``), ``im2col`` registers the sliding-window unfold that
Convolution uses internally (``im2col``, ``col2im``). Importing the package registers them.
"""

from __future__ import annotations

from . import im2col, layout, resample, sampler

__all__ = ["im2col", "layout", "resample", "sampler"]
