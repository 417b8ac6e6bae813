"""``mx.init``: how parameters get their first values (MXNet 1.x's ``initializer.py``).

An initializer is called once per parameter as ``init(desc, arr)``: ``desc`` is an
:class:`InitDesc`, the parameter's *name* (a ``str``) carrying the variable's attributes,
and ``arr`` the NDArray to fill in place. The initializer dispatches on the name, because
in MXNet a name says what a parameter is for:

====================  =========================================
name ends with        value
====================  =========================================
``weight``            the initializer's own rule (``_init_weight``: random for Uniform/Xavier...)
``bias``              0
``gamma``             1 (BatchNorm scale)
``beta``              0 (BatchNorm shift)
``min`` / ``max``     0 / 1 (quantisation ranges)
``moving_mean``       0 (BatchNorm running mean; also ``moving_inv_var``, ``moving_avg``)
``moving_var``        1 (BatchNorm running variance)
====================  =========================================

A variable can override this with its own initializer: ``mx.sym.var("w", init=mx.init.Normal(0.5))``
stores ``init.dumps()``, the JSON ``'["normal", {"sigma": 0.5}]'``, in its ``__init__``
attribute; when that attribute is present, ``create`` turns it back into an initializer and its
``_init_weight`` fills the array whatever the name. That is why initializers are registered by
name (:func:`register`, :func:`alias`) and know how to ``dumps`` themselves.

Random initializers draw through ``mx.nd.random`` (one engine operation writing ``arr``), so
``mx.random.seed(n)`` makes them reproducible. The numbers are not MXNet's (a different
generator), the distributions are.

One deliberate difference: MXNet 1.x relies on BatchNorm having set ``__init__`` on its
moving statistics and raises for an unknown name; MXLab also recognises the ``moving_*``
names directly (as MXNet's legacy string path does), so auxiliary states initialise either way.
"""

from __future__ import annotations

import json
import logging
import math
import numbers
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .base import MXLabError
from .ndarray import NDArray, load, zeros
from .ndarray import random as _random
from .operator.rnn.layout import GATES, RNNShape, gate_slices, input_size_from_param_size


class InitializerError(MXLabError, ValueError):
    """An initializer is unknown, misconfigured, or cannot initialise a given array."""


class InitDesc(str):
    """A parameter name with the variable's attributes (``attrs``) and the fallback initializer.

    Args:
        name: the parameter's name (``fc1_weight``).
        attrs: the variable's attributes, as in ``Symbol.attr_dict()[name]`` (``__init__``...).
        global_init: the initializer to fall back to (set by the first initializer called).
    """

    attrs: dict[str, str]
    global_init: Initializer | None

    def __new__(cls, name: str, attrs: dict[str, str] | None = None, global_init: Initializer | None = None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


# ---------------------------------------------------------------------- registry
_REGISTRY: dict[str, type[Initializer]] = {}


def register(klass: type[Initializer]) -> type[Initializer]:
    """Class decorator: make ``klass`` creatable by its lower-case class name (and by ``dumps`` output)."""
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise InitializerError(f"mx.init.register expects an Initializer subclass, got {klass!r}")
    name = klass.__name__.lower()
    previous = _REGISTRY.get(name)
    if previous is not None and previous is not klass:
        warnings.warn(
            f"New initializer {klass.__module__}.{klass.__name__} is overriding existing initializer "
            f"{previous.__module__}.{previous.__name__}",
            UserWarning,
            stacklevel=2,
        )
    _REGISTRY[name] = klass
    return klass


def alias(*aliases: str) -> Callable[[type[Initializer]], type[Initializer]]:
    """Class decorator: also register ``klass`` under each of ``aliases`` (``"zeros"`` for Zero)."""

    def reg(klass: type[Initializer]) -> type[Initializer]:
        for name in aliases:
            _REGISTRY[name.lower()] = klass
        return klass

    return reg


def create(initializer: Any = None, *args: Any, **kwargs: Any) -> Initializer:
    """An initializer from an instance, a name, a ``dumps()`` JSON string or a config dict.

    ``create("xavier", magnitude=2)``, ``create('["uniform", {"scale": 0.1}]')`` and
    ``create(mx.init.One())`` all work; the JSON form is what a variable's ``__init__``
    attribute holds.
    """
    if initializer is None:
        if "initializer" not in kwargs:
            raise InitializerError("mx.init.create: give an initializer name, instance, JSON string or dict")
        initializer = kwargs.pop("initializer")
    if isinstance(initializer, Initializer):
        if args or kwargs:
            raise InitializerError(
                f"mx.init.create: {initializer!r} is already an instance; additional arguments are invalid"
            )
        return initializer
    if isinstance(initializer, dict):
        return create(**initializer)
    if not isinstance(initializer, str):
        raise InitializerError(
            f"mx.init.create: expected a name, JSON string, dict or Initializer, got {type(initializer).__name__}"
        )
    text = initializer.strip()
    if text.startswith(("[", "{")):
        if args or kwargs:
            raise InitializerError("mx.init.create: a JSON description takes no further arguments")
        try:
            decoded = json.loads(text)
        except json.JSONDecodeError as err:
            raise InitializerError(f"mx.init.create: malformed initializer JSON {initializer!r}: {err}") from None
        if isinstance(decoded, list):
            if len(decoded) != 2 or not isinstance(decoded[0], str) or not isinstance(decoded[1], dict):
                raise InitializerError(f"mx.init.create: expected '[name, {{kwargs}}]', got {initializer!r}")
            return create(decoded[0], **decoded[1])
        return create(**decoded)
    klass = _REGISTRY.get(text.lower())
    if klass is None:
        known = ", ".join(sorted(_REGISTRY))
        raise InitializerError(
            f"mx.init.create: initializer {initializer!r} is not registered (registered: {known}); "
            "register custom ones with mx.init.register"
        )
    return klass(*args, **kwargs)


def _check_array(what: str, arr: Any) -> None:
    if not isinstance(arr, NDArray):
        raise InitializerError(f"{what}: the array to initialise must be an NDArray, got {type(arr).__name__}")


# ---------------------------------------------------------------------- the base class
class Initializer:
    """Base class: dispatches on the parameter name; subclasses implement ``_init_weight``.

    ``kwargs`` are the constructor arguments, kept for :meth:`dumps`.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._verbose = False
        self._print_func: Callable[[NDArray], str] | None = None

    def set_verbosity(self, verbose: bool = False, print_func: Callable[[NDArray], str] | None = None) -> Initializer:
        """Log each initialised array with a statistic (default: its norm / sqrt(size))."""
        self._verbose = verbose
        if print_func is None:

            def print_func(x: NDArray) -> str:
                values = x.asnumpy().astype(np.float64)
                return str(float(np.linalg.norm(values) / math.sqrt(max(values.size, 1))))

        self._print_func = print_func
        return self

    def _verbose_print(self, desc: str, init: str, arr: NDArray) -> None:
        if self._verbose and self._print_func:
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self) -> str:
        """JSON ``'["name", {kwargs}]'``: what a variable's ``__init__`` attribute stores."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, desc: str, arr: NDArray) -> None:
        """Fill ``arr`` in place according to ``desc`` (an :class:`InitDesc`, or a plain name)."""
        _check_array(type(self).__name__, arr)
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffix, method, label in _DISPATCH:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, label, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name: Any, arr: NDArray) -> None:
        """MXNet's older entry point, ``init("fc1_weight", arr)`` with a plain string."""
        warnings.warn(
            "Calling initializer with init(str, NDArray) has been deprecated. "
            "please use init(mx.init.InitDesc(...), NDArray) instead.",
            DeprecationWarning,
            stacklevel=3,
        )
        if not isinstance(name, str):
            raise InitializerError(f"{type(self).__name__}: name must be a string, got {type(name).__name__}")
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
            return
        for suffix, method in _LEGACY_DISPATCH:
            if name.endswith(suffix):
                getattr(self, method)(name, arr)
                return
        self._init_default(name, arr)

    # The per-kind rules; subclasses override _init_weight (and may override the others).
    def _init_zero(self, _: str, arr: NDArray) -> None:
        arr[:] = 0.0

    def _init_one(self, _: str, arr: NDArray) -> None:
        arr[:] = 1.0

    def _init_bias(self, _: str, arr: NDArray) -> None:
        arr[:] = 0.0

    def _init_gamma(self, _: str, arr: NDArray) -> None:
        arr[:] = 1.0

    def _init_beta(self, _: str, arr: NDArray) -> None:
        arr[:] = 0.0

    def _init_bilinear(self, _: str, arr: NDArray) -> None:
        arr[:] = _bilinear_kernel(arr.shape)

    def _init_weight(self, name: str, arr: NDArray) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement _init_weight(name, arr)")

    def _init_default(self, name: str, _: NDArray) -> None:
        raise InitializerError(
            f"Unknown initialization pattern for {name!r}. Default initialization is limited to names ending in "
            '"weight", "bias", "gamma" (1.0), "beta" (0.0), "min", "max" and "moving_mean"/"moving_var". '
            "Please use mx.sym.Variable(init=mx.init.*) to set initialization pattern"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = None  # type: ignore[assignment]  # equal by configuration, and mutable: not hashable (as MXNet)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._kwargs}>"


# (name suffix, method, label) in MXNet's order; the moving_* rules are MXLab's addition.
_DISPATCH = (
    ("weight", "_init_weight", "weight"),
    ("bias", "_init_bias", "bias"),
    ("gamma", "_init_gamma", "gamma"),
    ("beta", "_init_beta", "beta"),
    ("min", "_init_zero", "min"),
    ("max", "_init_one", "max"),
    ("moving_mean", "_init_zero", "moving_mean"),
    ("moving_var", "_init_one", "moving_var"),
    ("moving_inv_var", "_init_zero", "moving_inv_var"),
    ("moving_avg", "_init_zero", "moving_avg"),
)
_LEGACY_DISPATCH = (
    ("bias", "_init_bias"),
    ("gamma", "_init_gamma"),
    ("beta", "_init_beta"),
    ("weight", "_init_weight"),
    ("moving_mean", "_init_zero"),
    ("moving_var", "_init_one"),
    ("moving_inv_var", "_init_zero"),
    ("moving_avg", "_init_zero"),
    ("min", "_init_zero"),
    ("max", "_init_one"),
)


def _bilinear_kernel(shape: tuple[int, ...]) -> np.ndarray:
    """Weights of a bilinear upsampling filter (Deconvolution), for a 4-d ``shape``."""
    if len(shape) != 4:
        raise InitializerError(f"Bilinear: the weight must be 4-d (out, in, h, w), got shape {shape}")
    f = math.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    x = np.arange(shape[3])
    y = np.arange(shape[2])
    kernel = np.outer(1 - np.abs(y / f - c), 1 - np.abs(x / f - c)).astype(np.float32)
    return np.broadcast_to(kernel, shape).copy()


def _positive(value: Any, what: str, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise InitializerError(f"{what} must be a number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise InitializerError(f"{what} must be {'>=' if allow_zero else '>'} 0, got {value}")
    return float(value)


# ---------------------------------------------------------------------- combinators
class Load:
    """Initialise from saved parameters (a ``.params`` file or a dict), else from ``default_init``.

    ``arg:`` / ``aux:`` prefixes of saved names are dropped, so a checkpoint loads directly.
    """

    def __init__(self, param: str | dict[str, NDArray], default_init: Any = None, verbose: bool = False) -> None:
        if isinstance(param, str):
            param = load(param)
        if not isinstance(param, dict):
            raise InitializerError(f"Load: param must be a file name or a dict of name -> NDArray, got {param!r}")
        self.param: dict[str, NDArray] = {}
        for name, arr in param.items():
            key = name[4:] if name.startswith(("arg:", "aux:")) else name
            self.param[key] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name: str, arr: NDArray) -> None:
        if name in self.param:
            saved = self.param[name]
            if arr.shape != saved.shape:
                raise InitializerError(
                    f"Parameter {name} cannot be initialized from loading. "
                    f"Shape mismatch, target {arr.shape} vs loaded {saved.shape}"
                )
            arr[:] = saved
            if self.verbose:
                logging.info("Initialized %s by loading", name)
        else:
            if self.default_init is None:
                raise InitializerError(
                    f"Cannot initialize {name}: not found in the loaded parameters and no default initializer given"
                )
            self.default_init(name, arr)
            if self.verbose:
                logging.info("Initialized %s by default", name)


class Mixed:
    """Pick the initializer by the first regular expression (``re.match``) that matches the name.

    ``Mixed(["bias", ".*"], [mx.init.Zero(), mx.init.Uniform(0.1)])``: end with ``".*"`` to
    catch every remaining name.
    """

    def __init__(self, patterns: Sequence[str], initializers: Sequence[Any]) -> None:
        if len(patterns) != len(initializers):
            raise InitializerError(
                f"Mixed: got {len(patterns)} patterns but {len(initializers)} initializers; they pair up one to one"
            )
        self.map = list(zip([re.compile(p) for p in patterns], initializers, strict=True))

    def __call__(self, name: str, arr: NDArray) -> None:
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise InitializerError(
            f"Parameter name {name} did not match any pattern. Consider adding a '.*' pattern at the end "
            "with a default Initializer."
        )


# ---------------------------------------------------------------------- concrete initializers
@register
@alias("zeros")
class Zero(Initializer):
    """Weights = 0."""

    def __init__(self) -> None:
        super().__init__()

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = 0


@register
@alias("ones")
class One(Initializer):
    """Weights = 1."""

    def __init__(self) -> None:
        super().__init__()

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = 1


@register
class Constant(Initializer):
    """Weights = ``value``: a number, or an array (NDArray, NumPy array, list) of the weight's shape."""

    def __init__(self, value: Any) -> None:
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, name: str, arr: NDArray) -> None:
        value = self.value
        if not isinstance(value, numbers.Number):
            shape = tuple(value.shape) if hasattr(value, "shape") else np.shape(value)
            if shape != arr.shape:
                raise InitializerError(
                    f"Constant: value of shape {shape} cannot initialise {name!r} of shape {arr.shape}"
                )
        arr[:] = value

    def dumps(self) -> str:
        value = self._kwargs["value"]
        if not np.isscalar(value):
            value = value.asnumpy().tolist() if isinstance(value, NDArray) else np.asarray(value).tolist()
        return json.dumps([type(self).__name__.lower(), {**self._kwargs, "value": value}])


@register
class Uniform(Initializer):
    """Weights drawn uniformly from ``[-scale, scale]``."""

    def __init__(self, scale: float = 0.07) -> None:
        super().__init__(scale=scale)
        self.scale = _positive(scale, "Uniform: scale")

    def _init_weight(self, _: str, arr: NDArray) -> None:
        _random.uniform(-self.scale, self.scale, arr.shape, out=arr)


@register
class Normal(Initializer):
    """Weights drawn from a normal distribution with mean 0 and standard deviation ``sigma``."""

    def __init__(self, sigma: float = 0.01) -> None:
        super().__init__(sigma=sigma)
        self.sigma = _positive(sigma, "Normal: sigma", allow_zero=False)

    def _init_weight(self, _: str, arr: NDArray) -> None:
        _random.normal(0, self.sigma, arr.shape, out=arr)


@register
class Orthogonal(Initializer):
    """An orthogonal matrix (rows or columns), times ``scale`` (Saxe et al., 2013).

    The matrix comes from the SVD of a random ``(shape[0], prod(shape[1:]))`` draw, uniform
    or normal (``rand_type``).
    """

    def __init__(self, scale: float = 1.414, rand_type: str = "uniform") -> None:
        super().__init__(scale=scale, rand_type=rand_type)
        if rand_type not in ("uniform", "normal"):
            raise InitializerError(f"Orthogonal: rand_type must be 'uniform' or 'normal', got {rand_type!r}")
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _: str, arr: NDArray) -> None:
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            tmp = _random.uniform(-1.0, 1.0, shape=(nout, nin)).asnumpy()
        else:
            tmp = _random.normal(0.0, 1.0, shape=(nout, nin)).asnumpy()
        u, _, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        arr[:] = self.scale * res.reshape(arr.shape)


_XAVIER_RND = ("uniform", "gaussian")
_XAVIER_FACTOR = ("avg", "in", "out")


@register
class Xavier(Initializer):
    """Glorot & Bengio's initialisation: keep the scale of activations and gradients per layer.

    ``fan_in = shape[1] * prod(shape[2:])`` and ``fan_out = shape[0] * prod(shape[2:])``;
    ``factor`` is their mean (``"avg"``), ``fan_in`` (``"in"``) or ``fan_out`` (``"out"``);
    ``scale = sqrt(magnitude / factor)``. Weights are uniform in ``[-scale, scale]``
    (``rnd_type="uniform"``) or normal with standard deviation ``scale`` (``"gaussian"``).
    """

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg", magnitude: float = 3) -> None:
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in _XAVIER_RND:
            raise InitializerError(f"Xavier: rnd_type must be one of {list(_XAVIER_RND)}, got {rnd_type!r}")
        if factor_type not in _XAVIER_FACTOR:
            raise InitializerError(f"Xavier: factor_type must be one of {list(_XAVIER_FACTOR)}, got {factor_type!r}")
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = _positive(magnitude, "Xavier: magnitude")

    def scale_for(self, shape: tuple[int, ...], name: str = "weight") -> float:
        """The bound (uniform) or standard deviation (gaussian) used for a weight of ``shape``."""
        if len(shape) < 2:
            raise InitializerError(
                f"Xavier initializer cannot be applied to vector {name}. It requires at least 2D (got shape {shape})."
            )
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        return math.sqrt(self.magnitude / factor)

    def _init_weight(self, name: str, arr: NDArray) -> None:
        scale = self.scale_for(arr.shape, name)
        if self.rnd_type == "uniform":
            _random.uniform(-scale, scale, arr.shape, out=arr)
        else:
            _random.normal(0, scale, arr.shape, out=arr)


@register
class MSRAPrelu(Xavier):
    """He et al.'s initialisation for (P)ReLU networks: Xavier, gaussian, ``magnitude = 2 / (1 + slope**2)``."""

    def __init__(self, factor_type: str = "avg", slope: float = 0.25) -> None:
        magnitude = 2.0 / (1 + slope**2)
        super().__init__("gaussian", factor_type, magnitude)
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """Weights of a bilinear upsampling filter, for ``Deconvolution`` layers."""

    def __init__(self) -> None:
        super().__init__()

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = _bilinear_kernel(arr.shape)


@register
class LSTMBias(Initializer):
    """LSTM biases: 0, except the forget gate's (the second quarter), set to ``forget_bias``."""

    def __init__(self, forget_bias: float = 1.0) -> None:
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name: str, arr: NDArray) -> None:
        if arr.shape[0] % 4:
            raise InitializerError(f"LSTMBias: {name!r} must hold 4 gates (first dim divisible by 4), got {arr.shape}")
        arr[:] = 0.0
        num_hidden = arr.shape[0] // 4
        arr[num_hidden : 2 * num_hidden] = self.forget_bias


#: MXNet's names of each gate in the unpacked fused-RNN weights (``l0_i2h_f_weight``).


@register
class FusedRNN(Initializer):
    """The packed ``parameters`` vector of a fused ``RNN``, one gate's matrix at a time.

    The vector is cut into each gate's weight and bias (MXNet's names: ``l0_i2h_f_weight``,
    ``r1_h2h_o_bias``...), so an initializer scaled by fan-in and fan-out (Xavier) sees one
    ``(H, inputs)`` matrix, not the whole vector. Weights get ``init`` (the global initializer
    when None), biases its bias rule, and an LSTM's forget-gate biases (both ``i2h`` and
    ``h2h``) ``forget_bias``.
    """

    def __init__(
        self,
        init: Initializer | str | None,
        num_hidden: int,
        num_layers: int,
        mode: str,
        bidirectional: bool = False,
        forget_bias: float = 1.0,
    ) -> None:
        if isinstance(init, str):
            init = create(init)
        if mode not in GATES:
            raise InitializerError(f"FusedRNN: mode must be one of {sorted(GATES)}, got {mode!r}")
        super().__init__(
            init=None if init is None else init.dumps(),
            num_hidden=num_hidden,
            num_layers=num_layers,
            mode=mode,
            bidirectional=bidirectional,
            forget_bias=forget_bias,
        )
        self._init = init
        self._spec = RNNShape(mode, int(num_layers), int(num_hidden), 0, bool(bidirectional))
        self._forget_bias = float(forget_bias)

    def _init_weight(self, desc: str, arr: NDArray) -> None:
        spec = self._spec
        input_size = input_size_from_param_size(spec, arr.size)
        if input_size is None:
            raise InitializerError(
                f"FusedRNN: {desc!r} has {arr.size} elements, which fits no input size for mode={spec.mode!r}, "
                f"num_layers={spec.num_layers}, num_hidden={spec.state_size}, bidirectional={spec.bidirectional}"
            )
        init = self._init if self._init is not None else getattr(desc, "global_init", None)
        if init is None:
            raise InitializerError(f"FusedRNN: {desc!r} needs init= or a global initializer to fall back to")
        packed = np.zeros(arr.size, dtype=arr.dtype)
        hidden = spec.state_size
        full = RNNShape(spec.mode, spec.num_layers, hidden, input_size, spec.bidirectional)
        for piece in gate_slices(full):
            rows = packed[piece.offset : piece.stop].reshape(piece.shape)
            if spec.mode == "lstm" and piece.name.endswith("_f_bias"):
                rows[...] = self._forget_bias
                continue
            part = zeros(rows.shape, dtype=arr.dtype)
            init(InitDesc(piece.name, global_init=getattr(desc, "global_init", None)), part)
            rows[...] = part.asnumpy()
        arr[:] = packed


__all__ = [
    "Bilinear",
    "Constant",
    "FusedRNN",
    "InitDesc",
    "Initializer",
    "InitializerError",
    "LSTMBias",
    "Load",
    "MSRAPrelu",
    "Mixed",
    "Normal",
    "One",
    "Orthogonal",
    "Uniform",
    "Xavier",
    "Zero",
    "alias",
    "create",
    "register",
]
