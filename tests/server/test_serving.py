"""The socket-level settings of server/serving.py: permessage-deflate at a cheap zlib level."""

from __future__ import annotations

import json
import zlib

import httpx
from websockets.extensions import permessage_deflate
from websockets.extensions.permessage_deflate import PerMessageDeflate
from websockets.sync.client import connect

from server.frames import decode_frame
from server.serving import WS_DEFLATE_LEVEL


def test_the_stream_is_deflated_at_the_cheap_level_and_decodes_whole(live_server, monkeypatch):
    made: list[dict] = []
    real_compressobj = zlib.compressobj

    def recording_compressobj(*args, **kwargs):
        made.append(kwargs)
        return real_compressobj(*args, **kwargs)

    # the server runs in a thread of this process: its encoders are made through this module's zlib
    monkeypatch.setattr(permessage_deflate.zlib, "compressobj", recording_compressobj)
    _manager, port = live_server
    run = httpx.post(f"http://127.0.0.1:{port}/api/runs", json={"scenario": "flood", "params": {"events": 3000}}).json()
    received = []
    with connect(f"ws://127.0.0.1:{port}/api/runs/{run['id']}/events", max_size=None) as ws:
        assert [type(ext) for ext in ws.protocol.extensions] == [PerMessageDeflate]  # a browser asks for it too
        for text in ws:
            message = json.loads(text)
            if message["type"] == "frames":
                received += [event for frame in message["frames"] for event in decode_frame(frame)]
    metrics = [event for event in received if event["kind"] == "train.metric"]
    assert [event["value"] for event in metrics] == [float(i) for i in range(3000)]
    levels = {kwargs.get("level") for kwargs in made if "wbits" in kwargs and kwargs["wbits"] < 0}
    assert WS_DEFLATE_LEVEL == 1
    # the client's own encoder (for its messages, none here) is made with no level: only the server's sets one
    assert WS_DEFLATE_LEVEL in levels, made
    assert levels <= {WS_DEFLATE_LEVEL, None}, made
