"""Automatic node names: ``fullyconnected0``, ``fullyconnected1``, ``_plus0``, ...

Every operator node needs a name: it prefixes the variables created for the node's missing
inputs (``fc1_weight``), and it labels the node's outputs (``fc1_output``). When the caller
gives no ``name=``, MXNet makes one from a *hint* (the lower-cased name of the function
that was called: ``FullyConnected`` -> ``fullyconnected``) and a counter per hint.

The counters live in the current :class:`NameManager`. ``with NameManager():`` starts
fresh counters for a block (tests use it to get stable names); ``with Prefix("net1_"):``
also puts a prefix in front of every name, given or automatic. Managers nest; each thread
has its own stack.
"""

from __future__ import annotations

import threading
from typing import Any


class _ManagerType(type):
    """Gives the class a ``current`` property, as MXNet's ``NameManager.current``."""

    @property
    def current(cls) -> NameManager:
        state = NameManager._state
        if not hasattr(state, "value"):
            state.value = NameManager()
        return state.value


class NameManager(metaclass=_ManagerType):
    """Hands out ``<hint><counter>`` names; one counter per hint."""

    _state = threading.local()

    def __init__(self) -> None:
        self._counter: dict[str, int] = {}
        self._old_manager: NameManager | None = None

    def get(self, name: str | None, hint: str) -> str:
        """``name`` itself when given, else the hint followed by the hint's next number."""
        if name:
            return name
        count = self._counter.get(hint, 0)
        self._counter[hint] = count + 1
        return f"{hint}{count}"

    def __enter__(self) -> NameManager:
        self._old_manager = NameManager.current
        NameManager._state.value = self
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._old_manager is not None, "NameManager.__exit__ without __enter__"
        NameManager._state.value = self._old_manager
        self._old_manager = None


class Prefix(NameManager):
    """A name manager that puts ``prefix`` in front of every name it returns."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self._prefix = prefix

    def get(self, name: str | None, hint: str) -> str:
        return self._prefix + super().get(name, hint)


def current() -> NameManager:
    """The name manager of this thread (the innermost ``with`` block's)."""
    return NameManager.current
