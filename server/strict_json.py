"""Strict JSON for untrusted request bodies: what Python's ``json`` accepts but must not pass.

Python's parser is lenient in three ways that later turn into 500s when the value is echoed
back or sent on (a response, a WebSocket message, a validation error):

* ``NaN``, ``Infinity`` and ``-Infinity`` are accepted as floats;
* a number too large for a float (``1e999``) silently becomes ``inf``;
* a ``\\ud800`` escape gives a string holding a lone surrogate, which no UTF-8 encoder
  (so no response and no WebSocket frame) can carry.

:func:`loads` refuses all three with :class:`StrictJSONError`, whose message says what and,
for a string, where (a JSON path such as ``$.traceEvents[3].name``). Surrogates can only come
from ``\\uD8xx``-``\\uDFxx`` escapes (raw UTF-8 bytes cannot encode them), so the walk over the
document to find them runs only when the text holds such an escape.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class StrictJSONError(ValueError):
    """Input that is not strict JSON; the message names the problem."""


def _refuse_constant(name: str) -> Any:
    raise StrictJSONError(f"{name} is not allowed")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise StrictJSONError(f"the number {text[:40]} is too large for a 64-bit float")
    return value


def _surrogate_path(value: Any, path: str = "$") -> str | None:
    """The JSON path of the first string (key or value) holding a lone surrogate, else None."""
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return where
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                if _SURROGATE.search(key):
                    return f"{where} (a key)"
                stack.append((child, f"{where}.{key}"))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in reversed(list(enumerate(item))))
    return None


def loads(text: str) -> Any:
    """Parse ``text``; raises StrictJSONError (bad constant, overflowing number, lone surrogate)
    or ``json.JSONDecodeError``/``RecursionError``/``ValueError`` as ``json.loads`` does."""
    document = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    if _SURROGATE_ESCAPE.search(text):
        where = _surrogate_path(document)
        if where is not None:
            raise StrictJSONError(f"the string at {where} holds a lone UTF-16 surrogate (not valid Unicode)")
    return document
