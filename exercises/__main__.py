"""``python -m exercises check quadratic``: the same commands as ``mxlab check|hint|solution|exercises``."""

from __future__ import annotations

import os
import signal
import sys

from .cli import main

if __name__ == "__main__":
    try:
        status = main(sys.argv[1:])
    except BrokenPipeError:  # the reader closed the pipe (`... | head`): exit quietly, as mxlab does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 128 + signal.SIGPIPE
    raise SystemExit(status)
