"""Every registered operator as an imperative function: ``mx.nd.op.<name>``.

Functions are generated on first access (module ``__getattr__``) and then cached here.
"""

from __future__ import annotations

from typing import Any

from ..operator import registry
from .register import make_nd_function


def __getattr__(name: str) -> Any:
    if name.startswith("__") or not registry.exists(name):
        raise AttributeError(f"module 'mx.nd' has no operator {name!r}")
    function = make_nd_function(registry.get(name))
    globals()[name] = function
    return function


def __dir__() -> list[str]:
    return registry.list_operators()
