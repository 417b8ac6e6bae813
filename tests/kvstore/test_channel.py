"""The worker-to-server Unix-socket channel, without Ray: a server on an event loop in a thread."""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest

from framework.kvstore.base import KVStoreError
from framework.kvstore.channel import HEADER, Channel, ChannelClosed, serve


class LoopThread:
    """An event loop running in a helper thread, as a Ray actor's loop does."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=10)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


@pytest.fixture
def served(tmp_path):
    """A server whose 'hold' answers only once 'release' was called: answers leave out of order."""
    loop = LoopThread()
    gate: dict[str, asyncio.Future] = {}

    async def hold(value):
        gate["open"] = asyncio.get_running_loop().create_future()
        await gate["open"]
        return value * 2

    async def release():
        gate["open"].set_result(None)
        return "released"

    async def refuse(key):
        raise KVStoreError(f"push({key!r}): no such key")

    async def broken():
        return 1 / 0

    path = str(tmp_path / "server.sock")
    server = loop.run(serve(path, {"hold": hold, "release": release, "refuse": refuse, "broken": broken}))
    yield loop, server, path

    async def close_server():  # on the server's own loop: asyncio's Server is not thread-safe
        server.close()
        await asyncio.sleep(0.1)  # the closed connections' client coroutines see the end of stream and finish

    loop.run(close_server())
    loop.stop()


def test_calls_are_answered_by_id_in_any_order(served):
    _, _, path = served
    channel = Channel(path, "KVStore server 0 (test)")
    held = channel.call("hold", 21)
    assert channel.call("release").result(timeout=10) == "released"  # answered while 'hold' still waits
    assert held.result(timeout=10) == 42
    channel.close()


def test_errors_come_back_with_the_servers_message(served):
    _, _, path = served
    channel = Channel(path, "KVStore server 0 (test)")
    with pytest.raises(KVStoreError, match=r"push\('w'\): no such key"):
        channel.call("refuse", "w").result(timeout=10)
    with pytest.raises(KVStoreError, match="ZeroDivisionError: division by zero"):
        channel.call("broken").result(timeout=10)
    with pytest.raises(KVStoreError, match="the server has no shared-memory verb 'init'"):
        channel.call("init").result(timeout=10)
    channel.close()


def test_a_dying_server_fails_pending_and_later_calls_instead_of_hanging(tmp_path):
    # a stand-in server that takes one request and dies before answering it
    path = str(tmp_path / "dying.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def die_after_one_request() -> None:
        conn, _ = listener.accept()
        conn.recv(HEADER.size)
        conn.close()

    dying = threading.Thread(target=die_after_one_request)
    dying.start()
    channel = Channel(path, "KVStore server 0 (test)")
    pending = channel.call("pushpull_shared", 0, [("w", 0)])
    dying.join(timeout=10)
    # end of stream or a reset connection, depending on what the dying end left unread
    named = r"KVStore server 0 \(test\) (closed its channel|broke: ConnectionResetError)"
    with pytest.raises(ChannelClosed, match=named):
        pending.result(timeout=10)
    with pytest.raises(ChannelClosed, match=named):
        channel.call("pull_shared", [("w", 0)]).result(timeout=10)
    listener.close()


def test_connecting_to_nothing_is_named(tmp_path):
    with pytest.raises(KVStoreError, match=r"cannot connect to KVStore server 3 \(test\) at '.*nothing.sock'"):
        Channel(str(tmp_path / "nothing.sock"), "KVStore server 3 (test)")
