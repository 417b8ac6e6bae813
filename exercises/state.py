"""The learner's small state files under ``~/.mxlab`` (or ``$MXLAB_HOME``): hint levels, check status.

Both are tiny JSON objects keyed by exercise name. A missing file is an empty state; a
malformed one is an error that names the file (never silently reset: it is the learner's).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from framework import config


class StateError(ValueError):
    """A state file exists but cannot be read as the JSON object it should be."""


def home() -> Path:
    """``$MXLAB_HOME`` if set, else ``~/.mxlab``."""
    configured = config.get("MXLAB_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".mxlab"


def load(filename: str) -> dict[str, Any]:
    path = home() / filename
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise StateError(f"cannot read {path}: {err}; fix or delete the file") from None
    if not isinstance(data, dict):
        raise StateError(f"{path} should hold a JSON object, found {type(data).__name__}; fix or delete the file")
    return data


def save(filename: str, data: dict[str, Any]) -> Path:
    """Write ``data`` (write to a temporary file, then rename: never a half-written state)."""
    path = home() / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    temporary.replace(path)
    return path
