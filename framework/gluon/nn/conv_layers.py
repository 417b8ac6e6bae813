"""Convolution, transposed convolution and pooling layers in 1, 2 and 3 dimensions.

They wrap the ``Convolution``, ``Deconvolution`` and ``Pooling`` operators with MXNet 1.x's
defaults and weight layouts: a convolution's weight is ``(channels, in_channels / groups,
*kernel)``, a transposed convolution's ``(in_channels, channels / groups, *kernel)``. With
``in_channels=0`` the input-channel dimension is found at the first forward pass.
Layouts are channel-first (``NCW``, ``NCHW``, ``NCDHW``), the ones MXLab's operators take.
``ReflectionPad2D`` pads the spatial axes (the ``pad`` operator).
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Sequence
from typing import Any

from ..block import BlockError, HybridBlock
from ..parameter import Parameter
from .activations import Activation

_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _tuple(value: Any, n: int, what: str) -> tuple[int, ...]:
    """A per-axis setting (kernel, stride, pad, ...) as ``n`` ints; one int is repeated on every axis.

    The one reading of such settings for Gluon's layers, the contrib convolutional ones included.
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return (int(value),) * n
    items = tuple(value) if isinstance(value, (tuple, list)) else None
    if (
        items is None
        or len(items) != n
        or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in items)
    ):
        raise BlockError(f"{what} must be an int or a tuple of {n} ints, got {value!r}")
    return tuple(int(v) for v in items)


def _signature(names: list[str], defaults: dict[str, Any], required: tuple[str, ...] = ()) -> inspect.Signature:
    """The signature ``help()`` shows for a generated ``__init__`` (MXNet's argument order)."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter("self", kind)]
    params += [inspect.Parameter(n, kind) for n in required]
    params += [inspect.Parameter(n, kind, default=defaults[n]) for n in names]
    params.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(params)


def _check_layout(layout: str, n: int, what: str) -> None:
    if layout != _LAYOUTS[n]:
        raise BlockError(f"{what}: MXLab supports layout {_LAYOUTS[n]!r} only, got {layout!r}")


class _Conv(HybridBlock):
    """Shared by every convolution layer: parameters, operator arguments, optional activation."""

    def __init__(
        self,
        channels: int,
        kernel_size: tuple[int, ...],
        strides: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        groups: int,
        layout: str,
        in_channels: int = 0,
        activation: str | None = None,
        use_bias: bool = True,
        weight_initializer: Any = None,
        bias_initializer: Any = "zeros",
        op_name: str = "Convolution",
        adj: tuple[int, ...] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            self._op_name = op_name
            self._kwargs: dict[str, Any] = {
                "kernel": kernel_size,
                "stride": strides,
                "dilate": dilation,
                "pad": padding,
                "num_filter": channels,
                "num_group": groups,
                "no_bias": not use_bias,
                "layout": layout,
            }
            if adj is not None:
                self._kwargs["adj"] = adj
            if op_name == "Convolution":
                wshape = (channels, in_channels // groups, *kernel_size)
            else:
                wshape = (in_channels, channels // groups, *kernel_size)
            self.weight = self.params.get("weight", shape=wshape, init=weight_initializer, allow_deferred_init=True)
            self.bias: Parameter | None
            if use_bias:
                self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer, allow_deferred_init=True)
            else:
                self.bias = None
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def hybrid_forward(self, F: Any, x: Any, weight: Any, bias: Any = None) -> Any:
        op = getattr(F, self._op_name)
        # inputs by name: how many inputs Deconvolution takes depends on no_bias
        inputs = {"data": x, "weight": weight} if bias is None else {"data": x, "weight": weight, "bias": bias}
        out = op(name="fwd", **inputs, **self._kwargs)
        return self.act(out) if self.act is not None else out

    def _alias(self) -> str:
        return "conv"

    def __repr__(self) -> str:
        """MXNet's text: ``weight.shape[1] -> weight.shape[0]`` (for a transposed convolution that
        reads out -> in, as MXNet prints it), then the options that differ from their defaults (not
        ``output_padding``, which MXNet 1.9.1 never shows)."""
        shape = self.weight.shape
        assert shape is not None
        kw, ones, zeros = self._kwargs, (1,) * len(self._kwargs["kernel"]), (0,) * len(self._kwargs["kernel"])
        text = f"{type(self).__name__}({shape[1] if shape[1] else None} -> {shape[0]}, "
        text += f"kernel_size={kw['kernel']}, stride={kw['stride']}"
        text += f", padding={kw['pad']}" if kw["pad"] != zeros else ""
        text += f", dilation={kw['dilate']}" if kw["dilate"] != ones else ""
        text += f", groups={kw['num_group']}" if kw["num_group"] != 1 else ""
        text += ", bias=False" if self.bias is None else ""
        text += f", {self.act}" if self.act is not None else ""
        return text + ")"


def _conv_class(n: int, transpose: bool) -> type[_Conv]:
    """ConvND / ConvNDTranspose with MXNet's signature for ``n`` spatial dimensions."""

    def __init__(
        self: _Conv,
        channels: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: Any = 0,
        *rest: Any,
        **kwargs: Any,
    ) -> None:
        names = ["output_padding"] if transpose else []
        names += ["dilation", "groups", "layout", "activation", "use_bias", "weight_initializer", "bias_initializer"]
        names += ["in_channels"]
        if len(rest) > len(names):
            raise TypeError(f"{name}: too many positional arguments")
        options = dict(zip(names, rest, strict=False))
        duplicated = sorted(set(options) & set(kwargs))
        if duplicated:
            raise TypeError(f"{name}: got multiple values for {duplicated}")
        options.update(kwargs)
        layout = options.pop("layout", _LAYOUTS[n])
        _check_layout(layout, n, name)
        adj = _tuple(options.pop("output_padding", 0), n, f"{name} output_padding") if transpose else None
        _Conv.__init__(
            self,
            channels,
            _tuple(kernel_size, n, f"{name} kernel_size"),
            _tuple(strides, n, f"{name} strides"),
            _tuple(padding, n, f"{name} padding"),
            _tuple(options.pop("dilation", 1), n, f"{name} dilation"),
            options.pop("groups", 1),
            layout,
            op_name="Deconvolution" if transpose else "Convolution",
            adj=adj,
            **options,
        )

    name = f"Conv{n}D" + ("Transpose" if transpose else "")
    tuple_default = (0,) * n if n > 1 else 0
    names = ["strides", "padding"] + (["output_padding"] if transpose else [])
    names += ["dilation", "groups", "layout", "activation", "use_bias", "weight_initializer", "bias_initializer"]
    names += ["in_channels"]
    defaults = {
        "strides": (1,) * n if n > 1 else 1,
        "padding": tuple_default,
        "output_padding": tuple_default,
        "dilation": (1,) * n if n > 1 else 1,
        "groups": 1,
        "layout": _LAYOUTS[n],
        "activation": None,
        "use_bias": True,
        "weight_initializer": None,
        "bias_initializer": "zeros",
        "in_channels": 0,
    }
    __init__.__signature__ = _signature(names, defaults, ("channels", "kernel_size"))  # type: ignore[attr-defined]
    op_name = "Deconvolution" if transpose else "Convolution"
    doc = f"{n}-d {'transposed ' if transpose else ''}convolution (the ``{op_name}`` operator)."
    return type(name, (_Conv,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


Conv1D = _conv_class(1, False)
Conv2D = _conv_class(2, False)
Conv3D = _conv_class(3, False)
Conv1DTranspose = _conv_class(1, True)
Conv2DTranspose = _conv_class(2, True)
Conv3DTranspose = _conv_class(3, True)


class _Pooling(HybridBlock):
    """Shared by the pooling layers: the ``Pooling`` operator's arguments."""

    def __init__(
        self,
        pool_size: tuple[int, ...],
        strides: tuple[int, ...] | None,
        padding: tuple[int, ...],
        ceil_mode: bool,
        global_pool: bool,
        pool_type: str,
        layout: str,
        count_include_pad: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if strides is None:
            strides = pool_size
        self._kwargs: dict[str, Any] = {
            "kernel": pool_size,
            "stride": strides,
            "pad": padding,
            "global_pool": global_pool,
            "pool_type": pool_type,
            "pooling_convention": "full" if ceil_mode else "valid",
            "layout": layout,
        }
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self) -> str:
        return "pool"

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(size={self._kwargs['kernel']}, stride={self._kwargs['stride']}, "
            f"padding={self._kwargs['pad']}, ceil_mode={self._kwargs['pooling_convention'] == 'full'}, "
            f"global_pool={self._kwargs['global_pool']}, pool_type={self._kwargs['pool_type']}, "
            f"layout={self._kwargs['layout']})"
        )


def _pool_class(n: int, pool_type: str) -> type[_Pooling]:
    """MaxPoolND / AvgPoolND with MXNet 1.9.1's positional order.

    That order differs between them: ``layout`` comes before ``ceil_mode`` in the 1-d layers
    and in MaxPool2D, after it in AvgPool2D and the 3-d layers; average pooling adds
    ``count_include_pad`` at the end.
    """
    name = f"{'Max' if pool_type == 'max' else 'Avg'}Pool{n}D"
    names = ["pool_size", "strides", "padding"]
    if n == 1 or (n == 2 and pool_type == "max"):
        names += ["layout", "ceil_mode"]
    else:
        names += ["ceil_mode", "layout"]
    if pool_type == "avg":
        names.append("count_include_pad")
    defaults: dict[str, Any] = {"pool_size": (2,) * n if n > 1 else 2, "strides": None, "padding": 0}
    defaults.update(layout=_LAYOUTS[n], ceil_mode=False, count_include_pad=True)

    def __init__(self: _Pooling, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{name}: takes at most {len(names)} positional arguments ({', '.join(names)})")
        options = dict(zip(names, args, strict=False))
        duplicated = sorted(set(options) & set(kwargs))
        if duplicated:
            raise TypeError(f"{name}: got multiple values for {duplicated}")
        for key in names:
            options[key] = kwargs.pop(key, options.get(key, defaults[key]))
        if "count_include_pad" in kwargs:
            raise TypeError(f"{name}: max pooling has no count_include_pad")
        _check_layout(options["layout"], n, name)
        strides = options["strides"]
        _Pooling.__init__(
            self,
            _tuple(options["pool_size"], n, f"{name} pool_size"),
            None if strides is None else _tuple(strides, n, f"{name} strides"),
            _tuple(options["padding"], n, f"{name} padding"),
            options["ceil_mode"],
            False,
            pool_type,
            options["layout"],
            options.get("count_include_pad"),
            **kwargs,
        )

    __init__.__signature__ = _signature(names, defaults)  # type: ignore[attr-defined]
    doc = f"{n}-d {pool_type} pooling."
    return type(name, (_Pooling,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


def _global_pool_class(n: int, pool_type: str) -> type[_Pooling]:
    name = f"Global{'Max' if pool_type == 'max' else 'Avg'}Pool{n}D"

    def __init__(self: _Pooling, layout: str = _LAYOUTS[n], **kwargs: Any) -> None:
        _check_layout(layout, n, name)
        _Pooling.__init__(self, (1,) * n, None, (0,) * n, True, True, pool_type, layout, **kwargs)

    doc = f"Global {pool_type} pooling over the {n} spatial axes (the output keeps them, with length 1)."
    return type(name, (_Pooling,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


MaxPool1D = _pool_class(1, "max")
MaxPool2D = _pool_class(2, "max")
MaxPool3D = _pool_class(3, "max")
AvgPool1D = _pool_class(1, "avg")
AvgPool2D = _pool_class(2, "avg")
AvgPool3D = _pool_class(3, "avg")
GlobalMaxPool1D = _global_pool_class(1, "max")
GlobalMaxPool2D = _global_pool_class(2, "max")
GlobalMaxPool3D = _global_pool_class(3, "max")
GlobalAvgPool1D = _global_pool_class(1, "avg")
GlobalAvgPool2D = _global_pool_class(2, "avg")
GlobalAvgPool3D = _global_pool_class(3, "avg")


class ReflectionPad2D(HybridBlock):
    """Pads the two spatial axes of an NCHW input by reflection (the ``pad`` operator, mode ``reflect``).

    ``padding`` is one int (every side) or the operator's 8-number ``pad_width``.
    """

    def __init__(self, padding: int | Sequence[int] = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        width: tuple[int, ...]
        if isinstance(padding, numbers.Integral):
            width = (0, 0, 0, 0, int(padding), int(padding), int(padding), int(padding))
        else:
            width = tuple(int(p) for p in padding)  # type: ignore[union-attr]
        if len(width) != 8:
            raise BlockError(f"ReflectionPad2D: padding must be an int or 8 numbers (pad_width), got {width}")
        self._padding = width

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.pad(x, mode="reflect", pad_width=self._padding)
