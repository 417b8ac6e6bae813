"""``mx.gluon.contrib.nn``'s layers: concurrent containers, pixel shuffles and SyncBatchNorm.

* :class:`Concurrent` / :class:`HybridConcurrent` feed one input to every child and concatenate
  the outputs (the model zoo's DenseNet and SqueezeNet are built from :class:`HybridConcurrent`).
* ``PixelShuffle1D/2D/3D`` trade channels for resolution (sub-pixel convolution): ``f`` groups of
  ``C`` channels become an ``f`` times longer axis, by reshapes and one transpose, so they trace
  into a graph without knowing the input's shape.
* :class:`SyncBatchNorm` is BatchNorm whose batch statistics are shared by ``num_devices`` devices;
  it runs ``_contrib_SyncBatchNorm``, which in MXLab's single process sees one slice of the batch.

``SparseEmbedding`` needs row-sparse gradients, which MXLab does not have (docs/differences.md).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from .... import context
from .... import ndarray as nd
from ... import nn as _nn
from ...block import BlockError
from ...nn import Identity

__all__ = [
    "Concurrent",
    "HybridConcurrent",
    "Identity",
    "PixelShuffle1D",
    "PixelShuffle2D",
    "PixelShuffle3D",
    "SyncBatchNorm",
]


class Concurrent(_nn.Sequential):
    """Feed the input to every child and concatenate their outputs along ``axis``."""

    def __init__(self, axis: int = -1, prefix: str | None = None, params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x: Any) -> Any:
        outputs = [block(x) for block in self._children.values()]
        return nd.concat(*outputs, dim=self.axis)


class HybridConcurrent(_nn.HybridSequential):
    """:class:`Concurrent` for HybridBlocks: traced, the branches and the concat are one graph."""

    def __init__(self, axis: int = -1, prefix: str | None = None, params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        outputs = [block(x) for block in self._children.values()]
        return F.concat(*outputs, dim=self.axis)


# ----------------------------------------------------------------------------- pixel shuffle
def _factors(who: str, factor: int | Sequence[int], dims: int) -> tuple[int, ...]:
    """``factor`` as ``dims`` positive ints (one int means the same factor on every axis)."""
    if isinstance(factor, int):
        factors = (factor,) * dims
    else:
        factors = tuple(factor)
    if len(factors) != dims or not all(isinstance(f, int) and f >= 1 for f in factors):
        raise BlockError(f"{who}: factor must be a positive int or {dims} positive ints, got {factor!r}")
    return factors


class _PixelShuffle(_nn.HybridBlock):
    """Channels ``C * prod(f)`` and spatial sizes ``S_i`` become channels ``C`` and sizes ``S_i * f_i``.

    Channel ``c * prod(f) + k`` supplies, for every input position, the output pixel at offset
    ``k`` (unravelled over the factors) inside that position's ``f_1 x ... x f_d`` block.
    """

    _dims = 0

    def __init__(self, factor: int | Sequence[int]) -> None:
        super().__init__()
        self._factors = _factors(type(self).__name__, factor, self._dims)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        dims, factors = self._dims, self._factors
        block = 1
        for f in factors:
            block *= f
        if isinstance(x, nd.NDArray):  # shapes are known imperatively: say what is wrong before reshaping
            if x.ndim != dims + 2:
                raise BlockError(f"{type(self).__name__}: expects (N, C, {dims} spatial axes), got shape {x.shape}")
            if x.shape[1] % block:
                raise BlockError(
                    f"{type(self).__name__}: {x.shape[1]} channels are not a multiple of the factors' "
                    f"product {block} (factor {factors})"
                )
        keep = (0,) * dims
        # (N, C*F, S...) -> (N, C, F, S...) -> (N, C, f_1, ..., f_d, S...)
        x = F.reshape(x, shape=(0, -4, -1, block, *keep))
        for i in range(dims - 1):
            rest = 1
            for f in factors[i + 1 :]:
                rest *= f
            x = F.reshape(x, shape=(0, 0, *(0,) * i, -4, factors[i], rest, *keep))
        # interleave each spatial axis with its factor: (N, C, S_1, f_1, ..., S_d, f_d)
        axes = [0, 1]
        for i in range(dims):
            axes += [2 + dims + i, 2 + i]
        x = F.transpose(x, axes=tuple(axes))
        # merge each (S_i, f_i) pair into one axis
        return F.reshape(x, shape=(0, 0, *(-3,) * dims))

    def __repr__(self) -> str:
        shown = self._factors[0] if self._dims == 1 else self._factors
        return f"{type(self).__name__}({shown})"


class PixelShuffle1D(_PixelShuffle):
    """``(N, f*C, W)`` to ``(N, C, W*f)``."""

    _dims = 1

    def __init__(self, factor: int) -> None:
        super().__init__(factor)


class PixelShuffle2D(_PixelShuffle):
    """``(N, f1*f2*C, H, W)`` to ``(N, C, H*f1, W*f2)``; ``factor`` is an int or ``(f1, f2)``."""

    _dims = 2

    def __init__(self, factor: int | Sequence[int]) -> None:
        super().__init__(factor)


class PixelShuffle3D(_PixelShuffle):
    """``(N, f1*f2*f3*C, D, H, W)`` to ``(N, C, D*f1, H*f2, W*f3)``."""

    _dims = 3

    def __init__(self, factor: int | Sequence[int]) -> None:
        super().__init__(factor)


# ----------------------------------------------------------------------------- SyncBatchNorm
class SyncBatchNorm(_nn.BatchNorm):
    """BatchNorm over axis 1 whose statistics ``num_devices`` devices compute together.

    MXNet splits a batch across GPUs and lets the devices meeting under this layer's prefix
    (the operator's ``key``) exchange partial sums. MXLab runs one process, one slice, so the
    exchange is the identity and the result is BatchNorm's on the slice it sees; the layer's
    parameters (``gamma``, ``beta``, ``running_mean``, ``running_var``) are BatchNorm's, so
    MXNet's ``.params`` files load.
    """

    def __init__(
        self,
        in_channels: int = 0,
        num_devices: int | None = None,
        momentum: float = 0.9,
        epsilon: float = 1e-5,
        center: bool = True,
        scale: bool = True,
        use_global_stats: bool = False,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        running_mean_initializer: Any = "zeros",
        running_variance_initializer: Any = "ones",
        **kwargs: Any,
    ) -> None:
        super().__init__(
            axis=1,
            momentum=momentum,
            epsilon=epsilon,
            center=center,
            scale=scale,
            use_global_stats=use_global_stats,
            beta_initializer=beta_initializer,
            gamma_initializer=gamma_initializer,
            running_mean_initializer=running_mean_initializer,
            running_variance_initializer=running_variance_initializer,
            in_channels=in_channels,
            **kwargs,
        )
        if num_devices is None:
            warnings.warn(
                "SyncBatchNorm: num_devices not given, using the number of GPUs (at least 1); "
                "set num_devices to the devices that really share the batch",
                UserWarning,
                stacklevel=2,
            )
            num_devices = max(context.num_gpus(), 1)
        if not isinstance(num_devices, int) or num_devices < 1:
            raise BlockError(f"SyncBatchNorm: num_devices must be a positive int, got {num_devices!r}")
        # BatchNorm's operator arguments (the SyncBatchNorm operator has no axis: it is 1), plus the
        # devices sharing the statistics and the key they meet under
        operator_kwargs = {name: value for name, value in self._kwargs.items() if name != "axis"}
        self._kwargs = {**operator_kwargs, "ndev": num_devices, "key": self.prefix}

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any, running_mean: Any, running_var: Any) -> Any:
        return F.contrib.SyncBatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)
