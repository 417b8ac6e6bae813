"""What an initializer is: a callable that fills one parameter, chosen by the parameter's name.

:class:`Initializer` is called as ``init(desc, arr)`` and dispatches on the name's suffix
(``_init_weight`` for ``*weight``, 0 for ``*bias``...; the table is in the package's
docstring, :mod:`framework.initializer`); a variable's ``__init__`` attribute overrides the
rule. Initializers are registered by their lower-case class name (:func:`register`,
:func:`alias`), so that :func:`create` can turn a name or the JSON of :meth:`Initializer.dumps`
back into one: that is how a variable's ``__init__`` attribute becomes an initializer.
"""

from __future__ import annotations

import json
import logging
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import MXLabError
from ..ndarray import NDArray


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
        arr[:] = bilinear_kernel(arr.shape)

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


def bilinear_kernel(shape: tuple[int, ...]) -> np.ndarray:
    """Weights of a bilinear upsampling filter (Deconvolution), for a 4-d ``shape``."""
    if len(shape) != 4:
        raise InitializerError(f"Bilinear: the weight must be 4-d (out, in, h, w), got shape {shape}")
    f = math.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    x = np.arange(shape[3])
    y = np.arange(shape[2])
    kernel = np.outer(1 - np.abs(y / f - c), 1 - np.abs(x / f - c)).astype(np.float32)
    return np.broadcast_to(kernel, shape).copy()
