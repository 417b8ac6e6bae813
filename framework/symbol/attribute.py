"""``mx.attribute.AttrScope``: attributes every symbol created inside a ``with`` block gets.

Model parallelism in MXNet 1.x is written this way::

    with mx.AttrScope(ctx_group="dev1"):
        fc1 = mx.sym.FullyConnected(data, num_hidden=128)   # fc1 and its weights: dev1

and ``bind(group2ctx={"dev1": mx.gpu(1)})`` then places the ``ctx_group`` nodes. The scope
only decides *which attributes* a new node starts with: :func:`framework.symbol.symbol.create_symbol`
and ``Variable`` ask :func:`current_attrs` and let attributes given explicitly (``attr=``) win.
Scopes nest (the inner one adds to and overrides the outer one's attributes); each thread has
its own stack, as with :mod:`.naming`.
"""

from __future__ import annotations

import threading
from typing import Any

from ..base import ClassPropertyMetaClass, classproperty


class AttrScope(metaclass=ClassPropertyMetaClass):
    """Attributes (string to string) applied to the symbols created in the ``with`` block."""

    _state = threading.local()

    @classproperty
    def current(cls) -> AttrScope:
        """The innermost scope of this thread, as MXNet's ``AttrScope.current`` (also settable)."""
        return current()

    @current.setter
    def current(cls, scope: AttrScope) -> None:
        if not isinstance(scope, AttrScope):
            raise TypeError(f"AttrScope.current must be an AttrScope, got {type(scope).__name__}")
        AttrScope._state.value = scope

    def __init__(self, **kwargs: str) -> None:
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError(f"AttrScope: attribute {key!r} must be a string, got {value!r}")
        self._attr: dict[str, str] = dict(kwargs)
        self._old_scope: AttrScope | None = None

    def get(self, attr: dict[str, str] | None) -> dict[str, str]:
        """The scope's attributes updated with ``attr`` (the ones given at creation win)."""
        merged = dict(self._attr)
        merged.update(attr or {})
        return merged

    def __enter__(self) -> AttrScope:
        self._old_scope = current()
        # The inner scope carries the outer scope's attributes, overridden by its own.
        self._attr = {**self._old_scope._attr, **self._attr}
        AttrScope._state.value = self
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._old_scope is None:
            raise RuntimeError("AttrScope.__exit__ without __enter__")
        AttrScope._state.value = self._old_scope
        self._old_scope = None


def current() -> AttrScope:
    """The innermost AttrScope of this thread (an empty one outside every ``with`` block)."""
    scope = getattr(AttrScope._state, "value", None)
    if scope is None:
        scope = AttrScope._state.value = AttrScope()
    return scope


def current_attrs() -> dict[str, str]:
    """The attributes a symbol created now starts with."""
    return current().get(None)


__all__ = ["AttrScope", "current", "current_attrs"]
