"""NDArray's methods that run operators, installed on the class when ``mx.nd`` is imported.

``a + b``, ``a.reshape(...)``, ``a.T``, ``a[1:3]`` on a recorded array, ``a.sum(axis=1)`` and
``a.backward()`` all go through the imperative path (:func:`~.imperative.invoke`), and that
path builds its outputs as NDArrays: each side needs the other. So :mod:`.ndarray` defines
the array itself (storage, views, copies, waiting), and this module, which imports both,
writes the operator-running methods as an ordinary class body and copies them onto
``NDArray`` once (:func:`install`, called below at import). ``framework/ndarray/__init__.py``
imports this module, so every ``NDArray`` a user sees has them.
"""

from __future__ import annotations

import numbers
import types
from typing import Any

import numpy as np

from .. import autograd
from ..base import MXLabError
from ..operator import registry
from ..operator.tensor.shape import reshape_shape
from ..operator.tensor.slicing import encode_index
from . import imperative, op
from .creation import zeros
from .ndarray import NDArray, _advanced_get, _is_basic_index, _view_key, normalize_dtype

# Operators reachable as NDArray methods (MXNet 1.x's NDArray methods).
METHOD_OPS = frozenset(
    """abs sign exp log log1p expm1 sqrt rsqrt square reciprocal sin cos tan arcsin arccos arctan sinh cosh tanh
    floor ceil round rint fix sigmoid relu softmax log_softmax sum mean prod max min argmax argmin norm nansum
    transpose swapaxes flatten expand_dims squeeze clip tile repeat split slice slice_axis take pick one_hot topk
    sort argsort broadcast_to broadcast_like zeros_like ones_like softsign dot""".split()
)


#: The scalar types of ``a + 1``, ``a * 0.5``: recognised by type before the slower ABC check.
_PLAIN_NUMBERS = frozenset({int, float})


def _call(name: str, inputs: list[NDArray], params: dict[str, Any], out: NDArray | None = None) -> NDArray:
    """Python operators' short path to ``invoke`` (skips the generated function's argument
    handling: the arguments of ``a + 1`` need no sorting out)."""
    operator = registry.get(name)
    return imperative.invoke(operator, inputs, out=out, attrs=imperative.parse_attrs(operator, params))[0]


class OperatorMethods:
    """The methods :func:`install` copies onto ``NDArray`` (``self`` is always an NDArray)."""

    __hash__ = object.__hash__  # arrays hash by identity although ``==`` is elementwise

    @property
    def T(self) -> NDArray:
        return op.transpose(self)

    # ------------------------------------------------------------------ conversions and shapes
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

    def reshape_like(self, other: NDArray) -> NDArray:
        return self.reshape(other.shape)

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, key: Any) -> NDArray:
        if _is_basic_index(key):
            view = self._data[_view_key(key)]
            if self._entry is not None:
                return op._basic_index(self, key=encode_index(key))  # recorded: an operator
            return NDArray(self._chunk, view)
        return _advanced_get(self, key)

    # ------------------------------------------------------------------ autograd
    def attach_grad(self, grad_req: str = "write", stype: str | None = None) -> None:
        """Allocate ``.grad`` and mark this array as a variable to differentiate against."""
        autograd.mark_variables([self], [zeros(self.shape, self.context, self.dtype)], grad_reqs=grad_req)

    def backward(self, out_grad: NDArray | None = None, retain_graph: bool = False, train_mode: bool = True) -> None:
        autograd.backward([self], [out_grad] if out_grad is not None else None, retain_graph, train_mode)

    # ------------------------------------------------------------------ arithmetic (MXNet 1.x rules)
    def _binary(self, other: Any, nd_op: str, scalar_op: str, rscalar_op: str | None, reverse: bool = False):
        if isinstance(other, NDArray):
            lhs, rhs = (other, self) if reverse else (self, other)
            return _call(nd_op, [lhs, rhs], {})
        # Plain int/float first: the abstract-class check below costs ten times more.
        if type(other) in _PLAIN_NUMBERS or isinstance(other, numbers.Number | np.generic):
            name = rscalar_op if reverse and rscalar_op else scalar_op
            return _call(name, [self], {"scalar": float(other)})
        return NotImplemented

    def _inplace(self, other: Any, nd_op: str, scalar_op: str) -> NDArray:
        if isinstance(other, NDArray):
            _call(nd_op, [self, other], {}, out=self)
        elif type(other) in _PLAIN_NUMBERS or isinstance(other, numbers.Number | np.generic):
            _call(scalar_op, [self], {"scalar": float(other)}, out=self)
        else:
            return NotImplemented
        return self

    def __add__(self, o):
        return self._binary(o, "broadcast_add", "_plus_scalar", None)

    def __radd__(self, o):
        return self._binary(o, "broadcast_add", "_plus_scalar", None, reverse=True)

    def __sub__(self, o):
        return self._binary(o, "broadcast_sub", "_minus_scalar", None)

    def __rsub__(self, o):
        return self._binary(o, "broadcast_sub", "_minus_scalar", "_rminus_scalar", reverse=True)

    def __mul__(self, o):
        return self._binary(o, "broadcast_mul", "_mul_scalar", None)

    def __rmul__(self, o):
        return self._binary(o, "broadcast_mul", "_mul_scalar", None, reverse=True)

    def __truediv__(self, o):
        return self._binary(o, "broadcast_div", "_div_scalar", None)

    def __rtruediv__(self, o):
        return self._binary(o, "broadcast_div", "_div_scalar", "_rdiv_scalar", reverse=True)

    def __mod__(self, o):
        return self._binary(o, "broadcast_mod", "_mod_scalar", None)

    def __rmod__(self, o):
        return self._binary(o, "broadcast_mod", "_mod_scalar", "_rmod_scalar", reverse=True)

    def __pow__(self, o):
        return self._binary(o, "broadcast_power", "_power_scalar", None)

    def __rpow__(self, o):
        return self._binary(o, "broadcast_power", "_power_scalar", "_rpower_scalar", reverse=True)

    def __eq__(self, o):  # type: ignore[override]
        return self._binary(o, "broadcast_equal", "_equal_scalar", None)

    def __ne__(self, o):  # type: ignore[override]
        return self._binary(o, "broadcast_not_equal", "_not_equal_scalar", None)

    def __gt__(self, o):
        return self._binary(o, "broadcast_greater", "_greater_scalar", None)

    def __ge__(self, o):
        return self._binary(o, "broadcast_greater_equal", "_greater_equal_scalar", None)

    def __lt__(self, o):
        return self._binary(o, "broadcast_lesser", "_lesser_scalar", None)

    def __le__(self, o):
        return self._binary(o, "broadcast_lesser_equal", "_lesser_equal_scalar", None)

    def __neg__(self):
        return op.negative(self)

    def __abs__(self):
        return op.abs(self)

    def __iadd__(self, o):
        return self._inplace(o, "broadcast_add", "_plus_scalar")

    def __isub__(self, o):
        return self._inplace(o, "broadcast_sub", "_minus_scalar")

    def __imul__(self, o):
        return self._inplace(o, "broadcast_mul", "_mul_scalar")

    def __itruediv__(self, o):
        return self._inplace(o, "broadcast_div", "_div_scalar")

    def __getattr__(self, name: str) -> Any:
        """Operators as methods (``x.sum(axis=1)``, ``x.exp()``): the array is the first input."""
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in METHOD_OPS or not registry.exists(name):
            raise AttributeError(f"'NDArray' object has no attribute {name!r}")
        function = getattr(op, name)
        return lambda *args, **kwargs: function(self, *args, **kwargs)


def install() -> None:
    """Copy every method and property of :class:`OperatorMethods` onto ``NDArray``.

    Assigning ``__eq__`` after the class exists keeps NDArrays hashable by identity: Python
    only sets ``__hash__`` to None when ``__eq__`` is defined inside the class statement.
    """
    for name, member in vars(OperatorMethods).items():
        if isinstance(member, types.FunctionType | property):
            setattr(NDArray, name, member)


install()
