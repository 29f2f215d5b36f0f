"""The bytes the client sends, compared with golden frames recorded from the client
before its split into a sans-I/O session and a websockets adapter (issue #21).

A scripted WebSocket server (real sockets, ``websockets``) answers every request with a
fixed reply and records every frame it receives, connection by connection. The script
drives every request method once, drops the connection while an action waits for its
ack (close 1001, as a deploy does), and lets the client reconnect: ``hello`` with the
token, ``join`` of its room, ``t_join`` of its tournament and the action resent.
``tests/client/golden_frames.json`` holds what the old client sent; regenerate it only
for a deliberate wire change (``CRESCENT_WRITE_GOLDEN=1``), and say so in the commit.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from websockets.asyncio.server import ServerConnection, serve

from crescent_client import Ack, connect
from crescent_wire.protocol import (
    Act,
    ClientMessage,
    CreateRoom,
    DailyBoard,
    DailyDays,
    DailyMe,
    DailyReply,
    DailyStart,
    DailyToday,
    Event,
    Events,
    Hello,
    Join,
    Ok,
    Ping,
    Pong,
    RoomSnapshot,
    ServerMessage,
    Sync,
    TCreate,
    TGet,
    TGetResults,
    TGetStandings,
    TJoin,
    TournamentSnapshot,
    TResults,
    TStandings,
    Welcome,
    decode_client,
    encode,
)

GOLDEN = Path(__file__).with_name("golden_frames.json")
CODE = "K7PQ2X"
T_CODE = "TK7PQ2X"
ROOM: dict[str, Any] = {
    "code": CODE,
    "ver": 3,
    "phase": "racing",
    "round": 1,
    "host": "p1",
    "start_at": 1,
    "deadline": None,
    "players": [{"id": "p1", "name": "Ada", "role": "racer", "ready": True}],
}
TOURNAMENT: dict[str, Any] = {
    "code": T_CODE,
    "name": "Cup",
    "phase": "registration",
    "ver": 1,
    "round": 0,
    "rounds": 2,
    "current": None,
    "standings": [],
}


def reply_to(msg: ClientMessage, last_seq: int) -> ServerMessage:
    """The scripted server's answer to one request (``last_seq``: the highest acked)."""
    if isinstance(msg, Hello):
        player = {"id": "p1", "name": msg.name or "Ada"}
        return Welcome(version=1, player=player, token="tok-1", server_time=0, id=msg.id)
    if isinstance(msg, CreateRoom | Join | DailyStart):
        you = {"role": "racer", "game": {"piles": []}, "last_seq": last_seq}
        return RoomSnapshot(room=ROOM, you=you, id=msg.id)
    if isinstance(msg, Act):
        return Ack(room=msg.room, seq=msg.seq, view={"seq": msg.seq}, id=msg.id)
    if isinstance(msg, Sync):
        event = Event(room=msg.room, ver=msg.since + 1, kind="host", data={"player": "p1"})
        return Events(room=msg.room, events=(event,), id=msg.id)
    if isinstance(msg, Ping):
        return Pong(server_time=0, id=msg.id)
    if isinstance(msg, DailyToday | DailyBoard | DailyDays | DailyMe):
        return DailyReply(kind="daily", data={"asked": msg.TYPE}, id=msg.id)
    if isinstance(msg, TCreate | TJoin | TGet):
        return TournamentSnapshot(tournament=TOURNAMENT, you={"role": "player"}, id=msg.id)
    if isinstance(msg, TGetResults):
        return TResults(tournament=msg.tournament, round=msg.round, deal=None, rows=(), id=msg.id)
    if isinstance(msg, TGetStandings):
        return TStandings(tournament=msg.tournament, final=False, rows=(), id=msg.id)
    return Ok(id=msg.id)


class ScriptedServer:
    """Records every frame per connection; drops the first connection at ``seq`` 3."""

    def __init__(self) -> None:
        self.connections: list[list[bytes]] = []
        self.dropped = False
        self.last_seq = 0

    async def handler(self, ws: ServerConnection) -> None:
        frames: list[bytes] = []
        self.connections.append(frames)
        async for frame in ws:
            assert isinstance(frame, bytes)
            frames.append(frame)
            msg = decode_client(frame)
            if isinstance(msg, Act) and msg.seq == 3 and not self.dropped:
                self.dropped = True
                await ws.close(1001, "going away")
                return
            if isinstance(msg, Act):
                self.last_seq = max(self.last_seq, msg.seq)
            await ws.send(encode(reply_to(msg, self.last_seq)))

    @asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        async with serve(self.handler, "127.0.0.1", 0, compression=None) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            yield f"ws://127.0.0.1:{port}/ws"


async def scripted_session() -> list[list[str]]:
    script = ScriptedServer()
    async with (
        script.running() as url,
        connect(url, name="Ada", reconnect_delays=(0.01,), pace=None) as client,
    ):
        await client.ping()
        await client.create_room(variant="F", deal="CR1-F-AAAAAAB", seats=2, time_limit=120)
        await client.join(CODE, as_="racer")
        await client.ready()
        await client.ready(CODE, ready=False)
        await client.start()
        await client.sync()
        assert isinstance(await client.act("p10-p14"), Ack)
        assert isinstance(await client.act("redeal"), Ack)
        await client.daily()
        await client.daily_board(day="2026-01-02", top=5, around=2, late=True, watch=True)
        await client.daily_days(before="2026-01-02", limit=3)
        await client.daily_me()
        await client.daily_start(practice=True)
        await client.create_tournament(
            "Cup", rounds=2, time_limit=60, max_players=8, deals=["CR1-N-AAAAAAB"] * 2
        )
        await client.join_tournament(T_CODE, as_="player")
        await client.host(T_CODE, "remove", player="p9")
        await client.host(None, "start_round")
        await client.tournament(T_CODE)
        await client.tournament_results(T_CODE, 1)
        await client.standings()
        await client.withdraw()
        await client.join_tournament(T_CODE)
        # The third action (seq 3) is where the server drops the connection: its ack
        # comes after the reconnect, to the resent copy.
        reply = await client.act("undo")
        assert isinstance(reply, Ack) and client.reconnects == 1
        await client.rematch()
        await client.unwatch()
        await client.leave()
    return [[frame.hex() for frame in frames] for frames in script.connections]


async def test_the_client_sends_the_golden_frames() -> None:
    recorded = await asyncio.wait_for(scripted_session(), 30)
    if os.environ.get("CRESCENT_WRITE_GOLDEN"):
        GOLDEN.write_text(json.dumps(recorded, indent=1) + "\n")
    golden = json.loads(GOLDEN.read_text())
    assert len(recorded) == 2, "one connection, then one after the reconnect"
    for number, (got, want) in enumerate(zip(recorded, golden, strict=True)):
        for index, (frame, expected) in enumerate(zip(got, want, strict=False)):
            assert frame == expected, (number, index, decode_client(bytes.fromhex(frame)))
        assert len(got) == len(want), (number, len(got), len(want))
