"""Spatial operators: resampling, rearranging and unfolding the spatial axes of NCHW images.

One module per shared idea: ``layout`` moves pixels between depth and space
(``depth_to_space``, ``space_to_depth``); ``resample`` maps a grid onto a grid of another
size with a fixed linear map (``UpSampling``, ``_contrib_BilinearResize2D``,
``_contrib_AdaptiveAvgPooling2D``); ``sampler`` reads an image at computed positions
(``GridGenerator``, ``BilinearSampler``, ``SpatialTransformer``); ``im2col`` registers the
sliding-window unfold that Convolution uses internally (``im2col``, ``col2im``); ``crop``
cuts a window (``Crop``); ``roi`` pools regions of interest (``ROIPooling``,
``_contrib_ROIAlign``, ``_contrib_PSROIPooling``); ``roi_sampled`` pools them from bilinear
samples at computed positions (``_contrib_RROIAlign``, ``_contrib_DeformablePSROIPooling``);
``correlation`` compares two maps at many offsets (``Correlation``); ``deformable`` convolves at learned offsets
(``_contrib_DeformableConvolution``, ``_contrib_ModulatedDeformableConvolution``). Importing the
package registers them.
"""

from __future__ import annotations

from . import correlation, crop, deformable, im2col, layout, resample, roi, roi_sampled, sampler

__all__ = ["correlation", "crop", "deformable", "im2col", "layout", "resample", "roi", "roi_sampled", "sampler"]
