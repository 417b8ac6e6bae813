"""A direct channel between a worker and a server on one host: small requests over a Unix socket.

With the arrays in shared memory (:mod:`.shared_blocks`), a ``dist_sync`` message is a few
names, yet a Ray actor call still costs about a millisecond of several processes' CPU (Ray's
task submission, gRPC, the actor's scheduling). On one host a Unix socket carries the same
request for a few tens of microseconds. Ray still starts the job, finds the servers and
carries every other call; this channel carries only the shared-memory verbs.

The protocol is one *frame* per request and per answer: a 4-byte length, then a pickle.

* request ``(call_id, method, args)``: the server runs ``await server.method(*args)`` as a task
  of its event loop, so a push held for the other workers does not block the next request;
* answer ``(call_id, ok, value)``: the method's result, or the exception's text when it raised.

The worker's side (:class:`Channel`) writes requests from any thread and returns a
``concurrent.futures.Future`` per call; one reader thread resolves them as answers arrive (in
the order the rounds complete, not the order sent). When the server's end closes (the server
died), every pending and later call fails with a :class:`KVStoreError`: nothing waits forever.
"""

from __future__ import annotations

import asyncio
import itertools
import pickle
import socket
import struct
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any

from .base import KVStoreError

HEADER = struct.Struct("!I")  # a frame's length, in bytes


class ChannelClosed(KVStoreError):
    """The connection to the server is gone (the server died, or this worker closed it)."""


def encode(message: Any) -> bytes:
    """One frame: the message's pickle behind its length."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


# ----------------------------------------------------------------------------- the server's end
async def serve(path: str, handlers: dict[str, Callable[..., Awaitable[Any]]]) -> asyncio.AbstractServer:
    """Listen on the Unix socket ``path``; answer each request with ``handlers[method](*args)``."""

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        tasks: set[asyncio.Task] = set()  # keep the running requests referenced until they answer
        try:
            while True:
                (length,) = HEADER.unpack(await reader.readexactly(HEADER.size))
                call_id, method, args = pickle.loads(await reader.readexactly(length))
                task = asyncio.ensure_future(_answer(writer, call_id, handlers.get(method), method, args))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        except (asyncio.IncompleteReadError, ConnectionError):  # the worker closed its end
            writer.close()

    return await asyncio.start_unix_server(client, path=path)


async def _answer(writer: asyncio.StreamWriter, call_id: int, handler: Any, method: str, args: tuple) -> None:
    try:
        if handler is None:
            raise KVStoreError(f"channel: the server has no shared-memory verb {method!r}")
        frame = encode((call_id, True, await handler(*args)))
    except Exception as err:  # the worker raises it, with the server's message
        frame = encode((call_id, False, str(err) if isinstance(err, KVStoreError) else f"{type(err).__name__}: {err}"))
    if not writer.is_closing():
        writer.write(frame)  # one write per frame: frames of concurrent answers never interleave


# ----------------------------------------------------------------------------- the worker's end
class Channel:
    """The worker's connection to one server: :meth:`call` from any thread, a future per call."""

    def __init__(self, path: str, describe: str) -> None:
        self._describe = describe  # how errors name the server, e.g. "KVStore server 0 (mxlab-kv-server-0)"
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(path)
        except OSError as err:
            self._sock.close()
            raise KVStoreError(f"channel: cannot connect to {describe} at {path!r}: {err}") from None
        self._send_lock = threading.Lock()
        self._pending: dict[int, Future] = {}
        self._ids = itertools.count()
        self._closed: str | None = None  # why the channel no longer works
        self._reader = threading.Thread(target=self._read, name=f"kvstore-channel-{path}", daemon=True)
        self._reader.start()

    def call(self, method: str, *args: Any) -> Future:
        """Send ``method(*args)`` to the server; the future holds its answer or a KVStoreError."""
        future: Future = Future()
        call_id = next(self._ids)
        with self._send_lock:
            if self._closed is not None:
                future.set_exception(ChannelClosed(self._closed))
                return future
            self._pending[call_id] = future
            try:
                self._sock.sendall(encode((call_id, method, args)))
            except OSError as err:
                self._pending.pop(call_id, None)
                future.set_exception(ChannelClosed(f"channel: cannot send to {self._describe}: {err}"))
        return future

    def close(self) -> None:
        """Close the connection; pending calls fail."""
        self._fail("channel: closed by this worker")
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            self._sock.close()

    def _read(self) -> None:
        """The reader thread: resolve each answer's future; on end of stream fail the rest."""
        stream = self._sock.makefile("rb")
        reason = f"{self._describe} closed its channel (the server died?)"
        try:
            while True:
                header = stream.read(HEADER.size)
                if len(header) < HEADER.size:
                    break
                (length,) = HEADER.unpack(header)
                call_id, ok, value = pickle.loads(stream.read(length))
                with self._send_lock:
                    future = self._pending.pop(call_id, None)
                if future is None:
                    continue
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(KVStoreError(value))
        except (OSError, EOFError, pickle.UnpicklingError) as err:  # a broken stream ends like a closed one
            reason = f"the channel to {self._describe} broke: {type(err).__name__}: {err}"
        finally:
            stream.close()
            self._fail(reason)
            self._sock.close()

    def _fail(self, reason: str) -> None:
        with self._send_lock:
            if self._closed is None:
                self._closed = reason
            pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(ChannelClosed(reason))


__all__ = ["Channel", "ChannelClosed", "encode", "serve"]
