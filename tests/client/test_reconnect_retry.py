"""The reconnect loop against a server whose storage fails while it resumes: a ``join``
answered ``internal_error`` ("retry", docs/protocol.md) is tried again on the next
attempt, not taken for a refusal (bench/soak.py found clients giving up for good
while a Redis master failed over).

The peer is a scripted WebSocket endpoint speaking the real codec (crescent_wire): it
answers ``hello`` and ``join``, closes the first connection after the first join (the
server died), and answers the second connection's join with ``internal_error``."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import WSMsgType, web

from crescent_client import connect
from crescent_wire.protocol import (
    Error,
    Hello,
    Join,
    RoomSnapshot,
    ServerMessage,
    Welcome,
    decode_client,
    encode,
)

ROOM = {"code": "ABCDEF", "ver": 1, "phase": "waiting", "round": 1, "host": "p1", "players": []}
YOU = {"role": "racer", "game": None, "last_seq": 0}


async def test_a_rejoin_answered_internal_error_is_tried_again(aiohttp_server: Any) -> None:
    joins = 0
    connections = 0

    async def peer(request: web.Request) -> web.WebSocketResponse:
        nonlocal joins, connections
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        connections += 1
        async for frame in ws:
            if frame.type != WSMsgType.BINARY:
                continue
            msg = decode_client(frame.data)
            reply: ServerMessage
            if isinstance(msg, Hello):
                reply = Welcome(
                    version=1,
                    player={"id": "p1", "name": "Ada"},
                    token="token-1",
                    server_time=time.time_ns() // 1_000_000,
                    id=msg.id,
                )
            elif isinstance(msg, Join):
                joins += 1
                if joins == 2:
                    reply = Error("internal_error", "storage not answering; retry", id=msg.id)
                else:
                    reply = RoomSnapshot(room=ROOM, you=YOU, id=msg.id)
            else:
                continue
            await ws.send_bytes(encode(reply))
            if joins == 1 and isinstance(msg, Join):
                await ws.close(code=1011)  # the server process died
        return ws

    app = web.Application()
    app.router.add_get("/ws", peer)
    server = await aiohttp_server(app)
    url = f"ws://127.0.0.1:{server.port}/ws"
    async with connect(url, name="Ada", reconnect_delays=(0.01, 0.02, 0.05)) as client:
        await client.join("ABCDEF")
        await client.wait_until(lambda: client.reconnects == 1, timeout=10)
        assert (connections, joins) == (3, 3)  # the attempt refused internal_error, then one more
        assert client.room("ABCDEF").phase == "waiting"
