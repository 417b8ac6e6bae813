"""Where the server's token comes from: ``--token``, ``--token-file PATH`` or ``MXLAB_TOKEN``.

A secret on the command line is visible to every user of the machine in ``ps``; a file
(readable by its owner only) or an environment variable (readable only by the process's
owner, in ``/proc/<pid>/environ``) is not. ``mxlab serve`` and ``mxlab attach`` take the first
of: ``--token``, the first line of ``--token-file``, the ``MXLAB_TOKEN`` variable (read through
:mod:`framework.config`, like every MXLab variable); none of them means no token.
"""

from __future__ import annotations

from pathlib import Path

from framework import config

MAX_TOKEN_FILE_BYTES = 4096  # a token is a line, not a document


class TokenSourceError(ValueError):
    """The token options contradict each other, or the token file is unusable; the message says which."""


def resolve_token(token: str | None, token_file: Path | None) -> str | None:
    """The token to require, or None; raises TokenSourceError naming the problem."""
    if token is not None and token_file is not None:
        raise TokenSourceError("give --token or --token-file, not both")
    if token is not None:
        if not token.strip():
            raise TokenSourceError("--token must not be empty")
        return token
    if token_file is not None:
        try:
            with token_file.open("rb") as handle:
                data = handle.read(MAX_TOKEN_FILE_BYTES + 1)
        except OSError as err:
            raise TokenSourceError(f"cannot read --token-file {str(token_file)!r}: {err.strerror or err}") from None
        if len(data) > MAX_TOKEN_FILE_BYTES:
            raise TokenSourceError(f"--token-file {str(token_file)!r} is over {MAX_TOKEN_FILE_BYTES} bytes")
        try:
            lines = data.decode("utf-8").splitlines()
        except UnicodeDecodeError:
            raise TokenSourceError(f"--token-file {str(token_file)!r} is not UTF-8 text") from None
        first = lines[0].strip() if lines else ""
        if not first:
            raise TokenSourceError(f"--token-file {str(token_file)!r} is empty (the token is its first line)")
        return first
    from_environment = config.get("MXLAB_TOKEN")
    return from_environment.strip() if from_environment else None
