"""NDArray's methods that run operators, installed on the class when ``mx.nd`` is imported.

``a + b``, ``a.reshape(...)``, ``a.T``, ``a[1:3]`` on a recorded array and ``a.sum(axis=1)``
all go through the imperative path (:func:`~.imperative.invoke`), and that
path builds its outputs as NDArrays: each side needs the other. So :mod:`.ndarray` defines
the array itself (storage, views, copies, waiting), and this module, which imports both,
writes the operator-running methods as an ordinary class body and copies them onto
``NDArray`` once (:func:`install`, called below at import). ``framework/ndarray/__init__.py``
imports this module, so every ``NDArray`` a user sees has them. ``attach_grad`` and
``backward`` are autograd's, which sits above this package: framework/autograd.py installs
them the same way.
"""

from __future__ import annotations

import numbers
import types
from typing import Any

import numpy as np

from ..base import MXLabError
from ..context import Context
from ..errors import check_stype
from ..operator import registry
from ..operator.fluent import available_fluent_methods, fluent_doc
from ..operator.params import python_scalar
from ..operator.tensor.shape import reshape_shape
from ..operator.tensor.slicing import encode_index
from . import functions, imperative, op
from .ndarray import NDArray, _advanced_get, _is_basic_index, _view_key, assign_index, copy_values, normalize_dtype

#: MXNet's refusal of ``y[...] = v`` for an array recorded in the graph (the gradient would use the old value).
ASSIGN_IN_GRAPH = (
    "Assigning to NDArrays that are already in a computational graph will cause undefined behavior when "
    "evaluating gradients. Please call backward first to clear the graph or do this out side of a record section."
)

#: The scalar types of ``a + 1``, ``a * 0.5``: recognised by type before the slower ABC check.
_PLAIN_NUMBERS = frozenset({int, float})


def _call(name: str, inputs: list[NDArray], params: dict[str, Any], out: NDArray | None = None) -> NDArray:
    """Python operators' short path to ``invoke`` (skips the generated function's argument
    handling: the arguments of ``a + 1`` need no sorting out)."""
    operator = registry.get(name)
    attrs = imperative.parse_attrs(operator, params)
    if out is None and len(inputs) == 1:  # ``a + 1``: the one-input path without out=
        return imperative.invoke_single(operator, attrs, inputs[0])
    # positional arguments: (op, inputs, kwargs, out, ctx, attrs), cheaper to pass than keywords
    return imperative.invoke(operator, inputs, None, out, None, attrs)[0]


def _arithmetic(nd_op: str, scalar_op: str, rscalar_op: str | None = None, reverse: bool = False) -> Any:
    """``__add__`` and its kin: ``self <op> other`` (``other <op> self`` when ``reverse``), MXNet 1.x rules.

    ``a + 1`` (a plain int or float) goes straight to the one-input path, a frame shorter than
    passing through ``_binary``, which handles every other operand (arrays, NumPy scalars).
    """
    name = rscalar_op if reverse and rscalar_op else scalar_op

    def method(self: NDArray, other: Any) -> Any:
        kind = type(other)
        if kind is float or kind is int:  # the common case first, before any conversion
            operator = registry.get(name)
            return imperative.invoke_single(operator, imperative.scalar_attrs(operator, float(other)), self)
        return self._binary(other, nd_op, scalar_op, rscalar_op, reverse)

    return method


def _in_place(nd_op: str, scalar_op: str) -> Any:
    """``__iadd__`` and its kin: ``self <op>= other``, written into ``self``'s memory.

    ``a += 1`` goes straight to the in-place path; ``_inplace`` handles every other operand.
    """

    def method(self: NDArray, other: Any) -> Any:
        kind = type(other)
        if kind is float or kind is int:  # the common case first, before any conversion
            operator = registry.get(scalar_op)
            imperative.invoke_in_place(operator, imperative.scalar_attrs(operator, float(other)), self)
            return self
        return self._inplace(other, nd_op, scalar_op)

    return method


class OperatorMethods:
    """The methods :func:`install` copies onto ``NDArray`` (``self`` is always an NDArray)."""

    __hash__ = object.__hash__  # arrays hash by identity although ``==`` is elementwise

    @property
    def T(self) -> NDArray:
        return op.transpose(self)

    # ------------------------------------------------------------------ conversions and shapes
    def copyto(self, other: NDArray | Context) -> NDArray:
        """Copy into ``other`` (an array of the same shape) or onto a context; returns the copy.

        Inside ``autograd.record()`` the copy goes on the tape as MXNet's ``_copyto`` (its
        gradient is the copy's gradient), so ``x.copy()``, ``x.copyto(ctx)`` and
        ``x.as_in_context(other_ctx)`` keep ``x`` differentiable, as in MXNet.
        """
        target = copy_values(self, other)
        if imperative.STATE.recording and imperative.tape_hook is not None:
            operator = registry.get("_copyto")
            imperative.tape_hook(operator, imperative.parse_attrs(operator, {}), [self], [target])
        return target

    def astype(self, dtype: Any, copy: bool = True) -> NDArray:
        dtype = normalize_dtype(dtype, "astype")
        if not copy and dtype == self.dtype:
            return self
        return op.cast(self, dtype=dtype.name)

    def reshape(self, *shape: Any, **kwargs: Any) -> NDArray:
        """A view with a new shape; accepts MXNet's special codes (0, -1, -2, -3, -4)."""
        if len(shape) == 1 and isinstance(shape[0], list | tuple):
            shape = tuple(shape[0])
        if "shape" in kwargs:
            shape = tuple(kwargs.pop("shape"))
        reverse = bool(kwargs.pop("reverse", False))
        if kwargs:
            raise MXLabError(f"reshape: unknown argument(s) {sorted(kwargs)}")
        new_shape = reshape_shape(self.shape, shape, reverse)
        if self._data.flags.c_contiguous and self._entry is None:
            return NDArray(self._chunk, self._data.reshape(new_shape))
        return op.reshape(self, shape=new_shape)

    def reshape_like(self, *args: Any, **kwargs: Any) -> NDArray:
        """This array's values in the shape of ``rhs`` (``x.reshape_like(y)``), as a view when it can be."""
        (other,) = _one_array("reshape_like", "rhs", args, kwargs)
        return self.reshape(other.shape)

    def expand_dims(self, axis: int, inplace: bool = False) -> NDArray:
        """A new axis of length 1 at ``axis``; ``inplace=True`` returns a view sharing this array's memory."""
        if inplace:
            shape = list(self.shape)
            position = int(axis) + len(shape) + 1 if int(axis) < 0 else int(axis)
            shape.insert(position, 1)
            return self.reshape(shape)
        return op.expand_dims(self, axis=axis)

    def flatten(self, inplace: bool = False) -> NDArray:
        """Collapse every axis after the first (MXNet's ``Flatten``); ``inplace=True`` returns a view."""
        if inplace:
            return self.reshape((self.shape[0], -1) if self.ndim else (1, 1))
        return op.flatten(self)

    def squeeze(self, axis: int | tuple[int, ...] | None = None, inplace: bool = False) -> NDArray:
        """Drop axes of length 1 (all of them, or those in ``axis``); ``inplace=True`` returns a view."""
        if inplace:
            axes = range(self.ndim) if axis is None else [a % self.ndim for a in _as_tuple(axis)]
            shape = [d for i, d in enumerate(self.shape) if not (i in axes and d == 1)]
            return self.reshape(shape or [1])
        return op.squeeze(self, axis=axis)

    def broadcast_to(self, shape: Any) -> NDArray:
        """This array repeated along its length-1 axes to ``shape`` (0 in ``shape`` keeps the axis).

        As MXNet's method (not its operator), a shorter array gets leading axes of length 1 first:
        ``mx.nd.ones((3,)).broadcast_to((2, 3))``.
        """
        shape = tuple(shape)
        if len(shape) > self.ndim:
            return op.broadcast_to(self.reshape((1,) * (len(shape) - self.ndim) + self.shape), shape=shape)
        return op.broadcast_to(self, shape=shape)

    def broadcast_like(self, other: NDArray) -> NDArray:
        """This array broadcast to ``other``'s shape (leading axes added as :meth:`broadcast_to` adds them)."""
        if other.ndim > self.ndim:
            return self.broadcast_to(other.shape)
        return op.broadcast_like(self, other)

    def diag(self, k: int = 0, **kwargs: Any) -> NDArray:
        """``mx.nd.diag(self, k=k)``: a vector's matrix with it on diagonal ``k``, or a matrix's diagonal ``k``."""
        return op.diag(self, k=k, **kwargs)

    def split_v2(self, *args: Any, **kwargs: Any) -> list[NDArray] | NDArray:
        """``mx.nd.split_v2(self, indices_or_sections, axis=0, squeeze_axis=False)``."""
        return functions.split_v2(self, *args, **kwargs)

    def tostype(self, stype: str) -> NDArray:
        """A copy in storage type ``stype``: only ``"default"`` (dense) exists in MXLab."""
        check_stype(stype, "tostype")
        return self.copy()

    def slice_assign(self, rhs: NDArray, begin: Any, end: Any, step: Any) -> NDArray:
        """Write ``rhs`` into ``self[begin:end:step]`` (per axis; None means the whole axis); returns self."""
        self[_slices(begin, end, step)] = rhs
        return self

    def slice_assign_scalar(self, value: float, begin: Any, end: Any, step: Any) -> NDArray:
        """Fill ``self[begin:end:step]`` with ``value``; returns self."""
        self[_slices(begin, end, step)] = float(value)
        return self

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, key: Any) -> NDArray:
        if _is_basic_index(key):
            view = self._data[_view_key(key)]
            if self._entry is not None:
                return op._basic_index(self, key=encode_index(key))  # recorded: an operator
            return NDArray(self._chunk, view)
        return _advanced_get(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        """``self[key] = value`` (basic or advanced key); refused inside ``record()`` for an array
        on the tape, whose recorded value the write would change behind autograd's back."""
        if self._entry is not None and imperative.STATE.recording:
            raise MXLabError(ASSIGN_IN_GRAPH)
        assign_index(self, key, value)

    # ------------------------------------------------------------------ arithmetic (MXNet 1.x rules)
    # ``__add__``, ``__iadd__``, ... are made by _arithmetic and _in_place below: each handles a
    # plain int/float itself and leaves every other operand to these two.
    def _binary(self, other: Any, nd_op: str, scalar_op: str, rscalar_op: str | None, reverse: bool = False):
        other = python_scalar(other)  # a 0-d NumPy array is a number here, as np.float32(2) is
        if isinstance(other, NDArray):
            lhs, rhs = (other, self) if reverse else (self, other)
            return _call(nd_op, [lhs, rhs], {})
        # Plain int/float first: the abstract-class check below costs ten times more.
        if type(other) in _PLAIN_NUMBERS or isinstance(other, numbers.Number | np.generic):
            name = rscalar_op if reverse and rscalar_op else scalar_op
            return _call(name, [self], {"scalar": float(other)})
        return NotImplemented

    def _inplace(self, other: Any, nd_op: str, scalar_op: str) -> NDArray:
        other = python_scalar(other)
        if isinstance(other, NDArray):
            _call(nd_op, [self, other], {}, out=self)
        elif type(other) in _PLAIN_NUMBERS or isinstance(other, numbers.Number | np.generic):
            _call(scalar_op, [self], {"scalar": float(other)}, out=self)
        else:
            return NotImplemented
        return self

    __add__ = _arithmetic("broadcast_add", "_plus_scalar")
    __radd__ = _arithmetic("broadcast_add", "_plus_scalar", reverse=True)
    __sub__ = _arithmetic("broadcast_sub", "_minus_scalar")
    __rsub__ = _arithmetic("broadcast_sub", "_minus_scalar", "_rminus_scalar", reverse=True)
    __mul__ = _arithmetic("broadcast_mul", "_mul_scalar")
    __rmul__ = _arithmetic("broadcast_mul", "_mul_scalar", reverse=True)
    __truediv__ = _arithmetic("broadcast_div", "_div_scalar")
    __rtruediv__ = _arithmetic("broadcast_div", "_div_scalar", "_rdiv_scalar", reverse=True)
    __mod__ = _arithmetic("broadcast_mod", "_mod_scalar")
    __rmod__ = _arithmetic("broadcast_mod", "_mod_scalar", "_rmod_scalar", reverse=True)
    __pow__ = _arithmetic("broadcast_power", "_power_scalar")
    __rpow__ = _arithmetic("broadcast_power", "_power_scalar", "_rpower_scalar", reverse=True)
    __eq__ = _arithmetic("broadcast_equal", "_equal_scalar")
    __ne__ = _arithmetic("broadcast_not_equal", "_not_equal_scalar")
    __gt__ = _arithmetic("broadcast_greater", "_greater_scalar")
    __ge__ = _arithmetic("broadcast_greater_equal", "_greater_equal_scalar")
    __lt__ = _arithmetic("broadcast_lesser", "_lesser_scalar")
    __le__ = _arithmetic("broadcast_lesser_equal", "_lesser_equal_scalar")

    def __neg__(self):
        return op.negative(self)

    def __abs__(self):
        return op.abs(self)

    __iadd__ = _in_place("broadcast_add", "_plus_scalar")
    __isub__ = _in_place("broadcast_sub", "_minus_scalar")
    __imul__ = _in_place("broadcast_mul", "_mul_scalar")
    __itruediv__ = _in_place("broadcast_div", "_div_scalar")
    __imod__ = _in_place("broadcast_mod", "_mod_scalar")

    # Python 2's names, which MXNet 1.x still defines.
    __div__ = __truediv__
    __rdiv__ = __rtruediv__
    __idiv__ = __itruediv__


def _one_array(method: str, name: str, args: tuple, kwargs: dict) -> tuple[NDArray]:
    """The single NDArray argument of a method taking MXNet's ``(*args, **kwargs)``."""
    if len(args) + len(kwargs) != 1 or (kwargs and name not in kwargs):
        raise MXLabError(f"{method}: expected one array argument ({name}), got args={args!r} kwargs={sorted(kwargs)}")
    value = args[0] if args else kwargs[name]
    if not isinstance(value, NDArray):
        raise MXLabError(f"{method}: {name} must be an NDArray, got {type(value).__name__}")
    return (value,)


def _as_tuple(value: Any) -> tuple:
    return tuple(value) if isinstance(value, list | tuple) else (value,)


def _slices(begin: Any, end: Any, step: Any) -> tuple[slice, ...]:
    """MXNet's (begin, end, step) tuples as one slice per axis (a missing step is 1)."""
    begin, end = _as_tuple(begin), _as_tuple(end)
    step = _as_tuple(step) if step not in (None, ()) else (None,) * len(begin)
    if not len(begin) == len(end) == len(step):
        raise MXLabError(f"slice_assign: begin {begin}, end {end} and step {step} must have the same length")
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step, strict=True))


def _make_fluent(method: str, op_name: str) -> Any:
    def fluent(self: NDArray, *args: Any, **kwargs: Any) -> Any:
        return getattr(op, op_name)(self, *args, **kwargs)

    fluent.__name__ = method
    fluent.__qualname__ = f"NDArray.{method}"
    fluent.__doc__ = fluent_doc(method, op_name, "mx.nd")
    return fluent


def install() -> None:
    """Copy every method and property of :class:`OperatorMethods` onto ``NDArray``, then generate
    the fluent methods (:mod:`framework.operator.fluent`) that are not written by hand.

    Assigning ``__eq__`` after the class exists keeps NDArrays hashable by identity: Python
    only sets ``__hash__`` to None when ``__eq__`` is defined inside the class statement.
    """
    for name, member in vars(OperatorMethods).items():
        if isinstance(member, types.FunctionType | property):
            setattr(NDArray, name, member)
    for method, op_name in available_fluent_methods():
        if method not in vars(OperatorMethods):
            setattr(NDArray, method, _make_fluent(method, op_name))


install()
