"""How the app is put on a socket: uvicorn's settings, shared by ``mxlab serve``, attach mode,
the tests and the benchmarks, and a WebSocket protocol that frees a stalled client's socket and
compresses cheaply.

Why a protocol of our own: when the app gives up on a client that stopped reading (a send
blocked for ``send_timeout``, :func:`server.streaming.stream_run`), uvicorn closes the
transport, and asyncio's ``close()`` first waits for the write buffer to drain, which it
never does when the peer never reads: the socket, its buffer and its descriptor stayed
forever. :class:`DroppingWebSocketProtocol` gives such a connection ``ABORT_GRACE_S`` after
the app has returned, then resets it: asyncio's buffer and the kernel's are discarded and the
descriptor is closed.

Why the compression level: browsers (and Python's ``websockets`` clients) ask for
permessage-deflate, and uvicorn grants it with zlib's default level 6. The event stream is
column JSON that level 1 already shrinks to about a third (17.8 kB for a message of 666
operations, against 16.9 kB at level 6), at a quarter of the CPU: 0.35 against 1.46 us per
no-op operation, which the server process spends on the same two cores as the watched program
(docs/performance.md, "The server's live stream").
"""

from __future__ import annotations

import socket
import struct
from typing import Any

import uvicorn
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory

ABORT_GRACE_S = 2.0  # after the app returned, the time a peer has to take the closing bytes
WS_MAX_MESSAGE_BYTES = 64 * 1024  # a browser never has a reason to send more
WS_DEFLATE_LEVEL = 1  # zlib's level for permessage-deflate (uvicorn's default is zlib's 6)


class DroppingWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol, plus: a connection still unflushed ``ABORT_GRACE_S`` after
    the app returned is aborted rather than left waiting for a peer that does not read; and
    permessage-deflate at :data:`WS_DEFLATE_LEVEL`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # uvicorn offers permessage-deflate through the factory it hands its ServerProtocol; the
        # factory's compress_settings are zlib.compressobj's keywords for every connection it grants.
        for factory in self.conn.available_extensions or ():
            if isinstance(factory, ServerPerMessageDeflateFactory):
                factory.compress_settings = {**factory.compress_settings, "level": WS_DEFLATE_LEVEL}

    async def run_asgi(self) -> None:
        await super().run_asgi()
        self.loop.call_later(ABORT_GRACE_S, self._abort_if_stuck)

    def _abort_if_stuck(self) -> None:
        transport = self.transport
        if transport.get_write_buffer_size() > 0 or not transport.is_closing():
            sock = transport.get_extra_info("socket")
            if sock is not None:
                # Linger 0: closing resets the connection and discards what the kernel still
                # buffers for the peer, instead of trying to deliver it for minutes.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()


def uvicorn_config(app: Any, **settings: Any) -> uvicorn.Config:
    """A uvicorn Config for ``app`` with MXLab's settings; ``settings`` override or add to them."""
    defaults: dict[str, Any] = {
        "log_level": "warning",
        "ws": DroppingWebSocketProtocol,
        "ws_max_size": WS_MAX_MESSAGE_BYTES,
    }
    return uvicorn.Config(app, **{**defaults, **settings})
