"""``python -m exercises check quadratic``: the same commands as ``mxlab check|hint|solution|exercises``."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
