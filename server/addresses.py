"""Where a server listens and the address it prints: shared by ``mxlab serve`` and attach mode.

Both entry points refuse a non-loopback host without a token, bind the socket themselves (so
``port=0`` can report the port the kernel picked) and print a URL a browser can open.
"""

from __future__ import annotations

import ipaddress
import socket


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def url_for(host: str, port: int, query: str = "") -> str:
    """The URL to open for a server on ``host:port``; a wildcard host is shown as 127.0.0.1."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    shown = "127.0.0.1" if shown in ("0.0.0.0", "[::]") else shown
    return f"http://{shown}:{port}/{('?' + query) if query else ''}"


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port=0``: a free port; read it with ``getsockname``).

    Raises OSError naming the address when it cannot be bound (in use, no such interface).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as err:
        sock.close()
        raise OSError(err.errno, f"cannot listen on {host}:{port}: {err.strerror or err}") from err
    sock.listen(128)
    return sock
