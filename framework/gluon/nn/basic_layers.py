"""Basic layers: containers, Dense, Dropout, the normalizations, Embedding, Flatten, Lambda, Identity.

Each layer declares its parameters with MXNet 1.x's names and layouts (``weight`` of a
Dense is ``(units, in_units)``; BatchNorm keeps ``gamma``, ``beta`` and the auxiliary
states ``running_mean`` / ``running_var``) and its ``hybrid_forward`` calls the one
operator it wraps, so the same code runs imperatively and traces into a Symbol.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ... import ndarray as nd
from ..block import Block, BlockError, HybridBlock
from ..parameter import Parameter
from .activations import Activation


class Sequential(Block):
    """Stacks Blocks; ``forward`` runs them in order."""

    _is_container = True

    def __init__(self, prefix: str | None = None, params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)

    def add(self, *blocks: Block) -> None:
        """Append blocks (they become children ``0``, ``1``, ...)."""
        for block in blocks:
            self.register_child(block)

    def forward(self, x: Any, *args: Any) -> Any:
        for block in self._children.values():
            x = block(x, *args)
            args = ()
            if isinstance(x, tuple | list):
                args, x = tuple(x[1:]), x[0]
        if args:
            x = tuple([x, *args])
        return x

    def __repr__(self) -> str:
        body = "\n".join(f"  ({key}): {block!r}".replace("\n", "\n  ") for key, block in self._children.items())
        return f"{type(self).__name__}(\n{body}\n)"

    def __getitem__(self, key: int | slice) -> Any:
        layers = list(self._children.values())[key]
        if isinstance(layers, list):
            net = type(self)(prefix=self._prefix)
            with net.name_scope():
                net.add(*layers)
            return net
        return layers

    def __len__(self) -> int:
        return len(self._children)

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(
                f"All children of this Sequential layer '{self.prefix}' are HybridBlocks. Consider using "
                "HybridSequential for the best performance.",
                stacklevel=2,
            )
        super().hybridize(active, **kwargs)


class HybridSequential(HybridBlock):
    """Stacks HybridBlocks; hybridized, the whole stack is one traced graph."""

    _is_container = True

    def __init__(self, prefix: str | None = None, params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)

    def add(self, *blocks: Block) -> None:
        for block in blocks:
            self.register_child(block)

    def hybrid_forward(self, F: Any, x: Any, *args: Any) -> Any:
        for block in self._children.values():
            x = block(x, *args)
            args = ()
            if isinstance(x, tuple | list):
                args, x = tuple(x[1:]), x[0]
        if args:
            x = tuple([x, *args])
        return x

    __repr__ = Sequential.__repr__
    __getitem__ = Sequential.__getitem__
    __len__ = Sequential.__len__


class Dense(HybridBlock):
    """A fully connected layer: ``activation(dot(x, weight.T) + bias)``, weight ``(units, in_units)``."""

    def __init__(
        self,
        units: int,
        activation: str | None = None,
        use_bias: bool = True,
        flatten: bool = True,
        dtype: Any = "float32",
        weight_initializer: Any = None,
        bias_initializer: Any = "zeros",
        in_units: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get(
                "weight", shape=(units, in_units), init=weight_initializer, dtype=dtype, allow_deferred_init=True
            )
            self.bias: Parameter | None
            if use_bias:
                self.bias = self.params.get(
                    "bias", shape=(units,), init=bias_initializer, dtype=dtype, allow_deferred_init=True
                )
            else:
                self.bias = None
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def hybrid_forward(self, F: Any, x: Any, weight: Any, bias: Any = None) -> Any:
        if bias is None:
            out = F.FullyConnected(x, weight, no_bias=True, num_hidden=self._units, flatten=self._flatten, name="fwd")
        else:
            out = F.FullyConnected(x, weight, bias, num_hidden=self._units, flatten=self._flatten, name="fwd")
        return self.act(out) if self.act is not None else out

    def __repr__(self) -> str:
        shape = self.weight.shape
        assert shape is not None
        layout = f"{shape[1] if shape[1] else None} -> {shape[0]}"
        return f"{type(self).__name__}({layout}, {self.act if self.act else 'linear'})"


class Dropout(HybridBlock):
    """Zeroes a fraction ``rate`` of the inputs in training (scaling the rest by 1/(1-rate))."""

    def __init__(self, rate: float, axes: tuple = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd", cudnn_off=False)
        return F.identity(x)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p = {self._rate}, axes={self._axes})"


def _affine_params(
    block: HybridBlock,
    size: int,
    center: bool,
    scale: bool,
    beta_initializer: Any,
    gamma_initializer: Any,
    switched_off_not_differentiable: bool = False,
) -> None:
    """Declare ``gamma`` / ``beta`` of length ``size``; a switched-off one keeps its init value, untrained.

    Shared by every normalization layer. BatchNorm alone also marks a switched-off one as not
    differentiable (``switched_off_not_differentiable``), as MXNet's BatchNorm does.
    """
    for name, trained, init in (("gamma", scale, gamma_initializer), ("beta", center, beta_initializer)):
        extra = {"differentiable": trained} if switched_off_not_differentiable else {}
        param = block.params.get(
            name, grad_req="write" if trained else "null", shape=(size,), init=init, allow_deferred_init=True, **extra
        )
        setattr(block, name, param)


class BatchNorm(HybridBlock):
    """Batch normalization over ``axis``, with moving statistics ``running_mean`` / ``running_var``."""

    def __init__(
        self,
        axis: int = 1,
        momentum: float = 0.9,
        epsilon: float = 1e-5,
        center: bool = True,
        scale: bool = True,
        use_global_stats: bool = False,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        running_mean_initializer: Any = "zeros",
        running_variance_initializer: Any = "ones",
        in_channels: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._kwargs = {
            "axis": axis,
            "eps": epsilon,
            "momentum": momentum,
            "fix_gamma": not scale,
            "use_global_stats": use_global_stats,
        }
        if in_channels != 0:
            self.in_channels = in_channels
        _affine_params(
            self, in_channels, center, scale, beta_initializer, gamma_initializer, switched_off_not_differentiable=True
        )
        # the moving statistics: auxiliary states the operator updates in training, never trained
        for name, init in (("running_mean", running_mean_initializer), ("running_var", running_variance_initializer)):
            param = self.params.get(
                name, grad_req="null", shape=(in_channels,), init=init, allow_deferred_init=True, differentiable=False
            )
            setattr(self, name, param)

    def cast(self, dtype: Any) -> None:
        if np.dtype(dtype).name == "float16":  # the statistics stay in float32, as MXNet keeps them
            dtype = "float32"
        super().cast(dtype)

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any, running_mean: Any, running_var: Any) -> Any:
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        shape = self.gamma.shape
        channels = shape[0] if shape else None
        inner = ", ".join(f"{k}={v}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({inner}, in_channels={channels or None})"


class BatchNormReLU(BatchNorm):
    """``BatchNorm`` followed by ReLU, with BatchNorm's parameters and names (``batchnormrelu0_gamma``).

    MXNet 1.9.1 runs one fused operator (``_contrib_BatchNormWithReLU``); MXLab traces the two
    operators it stands for, which compute the same values and gradients.
    """

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any, running_mean: Any, running_var: Any) -> Any:
        normalized = super().hybrid_forward(F, x, gamma, beta, running_mean, running_var)
        return F.Activation(normalized, act_type="relu", name="relu")


class Embedding(HybridBlock):
    """Looks up rows of ``weight`` (``(input_dim, output_dim)``) by integer index."""

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        dtype: Any = "float32",
        weight_initializer: Any = None,
        sparse_grad: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if sparse_grad:
            raise BlockError("Embedding: MXLab has dense gradients only (sparse_grad=False)")
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": np.dtype(dtype).name}
        self.weight = self.params.get(
            "weight", shape=(input_dim, output_dim), init=weight_initializer, dtype=dtype, allow_deferred_init=True
        )

    def hybrid_forward(self, F: Any, x: Any, weight: Any) -> Any:
        return F.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        kw = self._kwargs
        return f"{type(self).__name__}({kw['input_dim']} -> {kw['output_dim']}, {kw['dtype']})"


class Flatten(HybridBlock):
    """Collapses all axes but the first."""

    def __init__(self, **kwargs: Any) -> None:  # MXNet 1.9.1's signature: prefix/params by keyword
        super().__init__(**kwargs)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.Flatten(x)

    def __repr__(self) -> str:
        return type(self).__name__


class Identity(HybridBlock):
    """Returns its input unchanged (a placeholder in a Sequential)."""

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return x


class Lambda(Block):
    """A Block from a function (``nd`` operator name or callable on NDArrays)."""

    def __init__(self, function: str | Any, prefix: str | None = None) -> None:
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(nd, function):
                raise BlockError(f"Lambda: function name {function!r} is not found in ndarray.")
            self._func_impl = getattr(nd, function)
        elif callable(function):
            self._func_impl = function
        else:
            raise BlockError(f"Lambda: unrecognized function in lambda: {function!r} of type {type(function)}")

    def forward(self, *args: Any) -> Any:
        return self._func_impl(*args)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({getattr(self._func_impl, '__name__', repr(self._func_impl))})"


class HybridLambda(HybridBlock):
    """A HybridBlock from a function: an operator name, or a callable ``(F, x, *args)``."""

    def __init__(self, function: str | Any, prefix: str | None = None) -> None:
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(nd, function):
                raise BlockError(f"HybridLambda: function name {function!r} is not found in symbol/ndarray.")
            name = function
            self._func = lambda F, *args: getattr(F, name)(*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = getattr(function, "__name__", repr(function))
        else:
            raise BlockError(f"HybridLambda: unrecognized function: {function!r} of type {type(function)}")

    def hybrid_forward(self, F: Any, x: Any, *args: Any) -> Any:
        return self._func(F, x, *args)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._func_name})"


def _norm_repr(block: InstanceNorm | LayerNorm) -> str:
    """``Name(option=value, ..., in_channels=C)``: InstanceNorm's and LayerNorm's repr (C is 0 until known)."""
    shape = block.gamma.shape
    inner = ", ".join(f"{k}={v}" for k, v in block._kwargs.items())
    return f"{type(block).__name__}({inner}, in_channels={shape[0] if shape else 0})"


class InstanceNorm(HybridBlock):
    """Normalizes each sample's each channel over its spatial axes; ``axis`` is the channel axis.

    As in MXNet, ``scale`` defaults to False: ``gamma`` stays at its initial value (ones) untrained.
    """

    def __init__(
        self,
        axis: int = 1,
        epsilon: float = 1e-5,
        center: bool = True,
        scale: bool = False,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        in_channels: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        _affine_params(self, in_channels, center, scale, beta_initializer, gamma_initializer)

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any) -> Any:
        # the operator wants channels on axis 1: move them there and back
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        x = F.swapaxes(x, 1, self._axis)
        return F.swapaxes(F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon), 1, self._axis)

    def __repr__(self) -> str:
        return _norm_repr(self)


class LayerNorm(HybridBlock):
    """Normalizes each sample along ``axis`` (default the last), then scales by ``gamma``, shifts by ``beta``."""

    def __init__(
        self,
        axis: int = -1,
        epsilon: float = 1e-5,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        in_channels: int = 0,
        prefix: str | None = None,
        params: Any = None,
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        _affine_params(self, in_channels, center, scale, beta_initializer, gamma_initializer)

    def hybrid_forward(self, F: Any, data: Any, gamma: Any, beta: Any) -> Any:
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)

    def __repr__(self) -> str:
        return _norm_repr(self)


class GroupNorm(HybridBlock):
    """Splits the channels (axis 1) into ``num_groups`` groups and normalizes each group of each sample.

    As in MXNet 1.9.1, ``gamma`` and ``beta`` hold one value per group, shape ``(num_groups,)``.
    """

    def __init__(
        self,
        num_groups: int = 1,
        epsilon: float = 1e-5,
        center: bool = True,
        scale: bool = True,
        beta_initializer: Any = "zeros",
        gamma_initializer: Any = "ones",
        prefix: str | None = None,
        params: Any = None,
    ) -> None:
        super().__init__(prefix=prefix, params=params)
        if not isinstance(num_groups, int) or num_groups < 1:
            raise BlockError(f"GroupNorm: num_groups must be a positive int, got {num_groups!r}")
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center, "scale": scale}
        self._num_groups = num_groups
        self._epsilon = epsilon
        _affine_params(self, num_groups, center, scale, beta_initializer, gamma_initializer)

    def hybrid_forward(self, F: Any, data: Any, gamma: Any, beta: Any) -> Any:
        return F.GroupNorm(data, gamma=gamma, beta=beta, num_groups=self._num_groups, eps=self._epsilon)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({inner})"
