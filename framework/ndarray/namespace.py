"""Sub-namespaces of ``mx.nd`` keyed by operator-name prefix (``mx.nd.contrib``, ``mx.nd.linalg``).

MXNet registers ``_contrib_quadratic`` and exposes it as ``mx.nd.contrib.quadratic``;
the same prefix rule applies here.
"""

from __future__ import annotations

import types
from typing import Any

from ..operator import registry
from . import op


class OperatorNamespace(types.ModuleType):
    """A module whose attributes are the operators named ``<prefix><attribute>``."""

    def __init__(self, name: str, prefix: str) -> None:
        super().__init__(name)
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        full = self._prefix + name
        if name.startswith("__") or not registry.exists(full):
            raise AttributeError(f"{self.__name__} has no operator {name!r}")
        function = getattr(op, full)
        setattr(self, name, function)
        return function

    def __dir__(self) -> list[str]:
        return [n[len(self._prefix) :] for n in registry.list_operators() if n.startswith(self._prefix)]
