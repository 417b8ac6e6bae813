"""Symbol's methods that apply operators, installed on the class when ``mx.sym`` is imported.

``a + b``, ``a * 2``, ``2 - a``, ``a == b``, ``a.reshape(...)``, ``a.sum(axis=1)``: each adds one
operator node to the graph (``a + b`` is ``_Plus``, i.e. ``elemwise_add``; ``a * 2`` is
``_MulScalar``; ``2 - a`` is ``_RMinusScalar``, as in MXNet 1.x) and returns a new Symbol
made by :func:`~.symbol.call_op` / :func:`~.symbol.create_symbol`, which build Symbols: each side
needs the other. So :mod:`.symbol` defines the symbol itself (structure, attributes,
inference, serialization, binding, composition), and this module, which imports it, writes
the operator methods as an ordinary class body and copies them onto ``Symbol`` once
(:func:`install`, called below at import), as :mod:`framework.ndarray.methods` does for
NDArray. ``framework/symbol/__init__.py`` imports this module, so every ``Symbol`` a user sees
has them.

In-place operators (``+=``) and ``bool(sym)`` raise ``NotImplementedForSymbol``: a symbol
describes a computation, it holds no values; so do the NDArray-only methods MXNet defines on
Symbol (``asnumpy``, ``backward``, ...).
"""

from __future__ import annotations

import numbers
import types
from typing import Any

from ..ndarray.ndarray import NDArray
from ..operator.fluent import available_fluent_methods, fluent_doc
from ..operator.params import python_scalar
from .errors import NotImplementedForSymbol, SymbolTypeError
from .symbol import Symbol, call_op, create_symbol, split_v2


def _binary(lhs: Symbol, other: Any, sym_op: str, scalar_op: str, symbol: str) -> Symbol:
    other = python_scalar(other)  # a 0-d NumPy array is a number here, as np.float32(2) is
    if isinstance(other, Symbol):
        return call_op(sym_op, lhs, other)
    if isinstance(other, numbers.Number):
        return call_op(scalar_op, lhs, scalar=other)
    raise _unsupported(symbol, other)


def _unsupported(symbol: str, other: Any) -> SymbolTypeError:
    if isinstance(other, NDArray):
        return SymbolTypeError(
            f"Symbol {symbol} NDArray is not supported: a symbol only combines with symbols and numbers; "
            "make the array an input (mx.sym.Variable) and bind it to the executor"
        )
    return SymbolTypeError(f"Symbol {symbol} {type(other).__name__}: type {type(other)} not supported")


class OperatorMethods:
    """The methods :func:`install` copies onto ``Symbol`` (``self`` is always a Symbol)."""

    # ------------------------------------------------------------ arithmetic (MXNet 1.x)
    def __add__(self, other: Any) -> Symbol:
        return _binary(self, other, "_Plus", "_PlusScalar", "+")

    __radd__ = __add__

    def __sub__(self, other: Any) -> Symbol:
        return _binary(self, other, "_Minus", "_MinusScalar", "-")

    def __rsub__(self, other: Any) -> Symbol:
        if isinstance(other, Symbol):
            return other.__sub__(self)
        return _binary(self, other, "_Minus", "_RMinusScalar", "-")

    def __mul__(self, other: Any) -> Symbol:
        return _binary(self, other, "_Mul", "_MulScalar", "*")

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Symbol:
        return _binary(self, other, "_Div", "_DivScalar", "/")

    def __rtruediv__(self, other: Any) -> Symbol:
        if isinstance(other, Symbol):
            return other.__truediv__(self)
        return _binary(self, other, "_Div", "_RDivScalar", "/")

    def __mod__(self, other: Any) -> Symbol:
        return _binary(self, other, "_Mod", "_ModScalar", "%")

    def __rmod__(self, other: Any) -> Symbol:
        if isinstance(other, Symbol):
            return other.__mod__(self)
        return _binary(self, other, "_Mod", "_RModScalar", "%")

    def __pow__(self, other: Any) -> Symbol:
        return _binary(self, other, "_Power", "_PowerScalar", "**")

    def __rpow__(self, other: Any) -> Symbol:
        if isinstance(other, Symbol):
            return other.__pow__(self)
        return _binary(self, other, "_Power", "_rpower_scalar", "**")

    def __neg__(self) -> Symbol:
        return self.__mul__(-1.0)

    def __abs__(self) -> Symbol:
        return self.abs()

    def __eq__(self, other: Any) -> Symbol:  # type: ignore[override]
        return _binary(self, other, "_equal", "_equal_scalar", "==")

    def __ne__(self, other: Any) -> Symbol:  # type: ignore[override]
        return _binary(self, other, "_not_equal", "_not_equal_scalar", "!=")

    def __gt__(self, other: Any) -> Symbol:
        return _binary(self, other, "_greater", "_greater_scalar", ">")

    def __ge__(self, other: Any) -> Symbol:
        return _binary(self, other, "_greater_equal", "_greater_equal_scalar", ">=")

    def __lt__(self, other: Any) -> Symbol:
        return _binary(self, other, "_lesser", "_lesser_scalar", "<")

    def __le__(self, other: Any) -> Symbol:
        return _binary(self, other, "_lesser_equal", "_lesser_equal_scalar", "<=")

    __hash__ = None  # type: ignore[assignment] - like MXNet's, symbols compare into symbols

    def __bool__(self) -> bool:
        raise NotImplementedForSymbol("__bool__", "bool")

    def __iadd__(self, other: Any) -> Symbol:
        raise NotImplementedForSymbol("__iadd__", "+=")

    def __isub__(self, other: Any) -> Symbol:
        raise NotImplementedForSymbol("__isub__", "-=")

    def __imul__(self, other: Any) -> Symbol:
        raise NotImplementedForSymbol("__imul__", "*=")

    def __itruediv__(self, other: Any) -> Symbol:
        raise NotImplementedForSymbol("__itruediv__", "/=")

    # Python 2's names, which MXNet 1.x still defines.
    __div__ = __truediv__
    __rdiv__ = __rtruediv__
    __idiv__ = __itruediv__
    __nonzero__ = __bool__

    # Make numpy defer to the reflected operators (np.float64(2) * sym), as for NDArray.
    __array_priority__ = 1000.0

    # ------------------------------------------------------------ MXNet's shape-method variants
    def expand_dims(self, axis: int, inplace: bool = False, **kwargs: Any) -> Symbol:
        """``mx.sym.expand_dims(self, axis=axis)``; ``inplace`` only matters for NDArrays (MXNet ignores it here)."""
        return create_symbol("expand_dims", "expand_dims", (self,), {"axis": axis, **kwargs})

    def flatten(self, inplace: bool = False, **kwargs: Any) -> Symbol:
        """``mx.sym.flatten(self)``; ``inplace`` only matters for NDArrays."""
        return create_symbol("flatten", "flatten", (self,), kwargs)

    def squeeze(self, axis: Any = None, inplace: bool = False, **kwargs: Any) -> Symbol:
        """``mx.sym.squeeze(self, axis=axis)``; ``inplace`` only matters for NDArrays."""
        return create_symbol("squeeze", "squeeze", (self,), {"axis": axis, **kwargs})

    def diag(self, k: int = 0, **kwargs: Any) -> Symbol:
        """``mx.sym.diag(self, k=k)``."""
        return create_symbol("diag", "diag", (self,), {"k": k, **kwargs})

    def split_v2(self, *args: Any, **kwargs: Any) -> Symbol:
        """``mx.sym.split_v2(self, indices_or_sections, axis=0, squeeze_axis=False)``."""
        return split_v2(self, *args, **kwargs)

    # NDArray-only methods: MXNet defines them on Symbol to raise NotImplementedForSymbol.
    def as_in_context(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedForSymbol("as_in_context", "as_in_context")

    def asnumpy(self) -> Any:
        raise NotImplementedForSymbol("asnumpy", "asnumpy")

    def asscalar(self) -> Any:
        raise NotImplementedForSymbol("asscalar", "asscalar")

    def wait_to_read(self) -> Any:
        raise NotImplementedForSymbol("wait_to_read", "wait_to_read")

    def backward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedForSymbol("backward", "backward")

    def detach(self) -> Any:
        raise NotImplementedForSymbol("detach", "detach")

    def gradient(self, wrt: Any) -> Any:
        raise NotImplementedForSymbol("gradient", "gradient")


def _make_fluent(method_name: str, op_name: str) -> Any:
    def method(self: Symbol, *args: Any, **kwargs: Any) -> Symbol:
        name = kwargs.pop("name", None)
        attr = kwargs.pop("attr", None)
        return create_symbol(op_name, op_name, (self, *args), kwargs, name=name, attr=attr)

    method.__name__ = method_name
    method.__qualname__ = f"Symbol.{method_name}"
    method.__doc__ = fluent_doc(method_name, op_name, "mx.sym")
    return method


#: Class attributes of :class:`OperatorMethods` that are values, not methods, copied all the same.
_CLASS_VALUES = ("__hash__", "__array_priority__")


def install() -> None:
    """Copy every method of :class:`OperatorMethods` (and ``_CLASS_VALUES``) onto ``Symbol``, then
    generate the fluent methods (:mod:`framework.operator.fluent`) that are not written by hand.

    ``__hash__`` is copied as None on purpose: ``==`` builds a symbol, so symbols are not hashable
    (as in MXNet); Python only does that by itself for an ``__eq__`` inside the class statement.
    """
    for name, member in vars(OperatorMethods).items():
        if isinstance(member, types.FunctionType | property) or name in _CLASS_VALUES:
            setattr(Symbol, name, member)
    # The fluent methods (framework/operator/fluent.py, shared with NDArray) not written by hand.
    for method, op_name in available_fluent_methods():
        if method not in vars(Symbol):
            setattr(Symbol, method, _make_fluent(method, op_name))
    Symbol.astype = _make_fluent("astype", "cast")  # type: ignore[attr-defined] - MXNet: astype(dtype) is cast


install()
