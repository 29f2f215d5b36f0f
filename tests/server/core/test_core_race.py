"""Rooms and whole races through the hub over in-memory storage: no sockets, no Redis,
an injected clock; two hubs sharing one storage stand for two server processes."""

from __future__ import annotations

import asyncio

import pytest

from crescent_wire import protocol as p
from crescent_wire.errors import RoomError
from server.game import Game
from server.storage.memory import MemoryStorage
from tests.server.core_support import (
    COUNTDOWN_MS,
    DEAL,
    ManualClock,
    SettlingHub,
    connect,
    racing_room,
    start_hub,
)


async def settle(*hubs: SettlingHub) -> None:
    """Let bus deliveries (call_soon) and spawned tasks run."""
    for _ in range(3):
        await asyncio.sleep(0)
        for hub in hubs:
            await hub.settle()


async def act(hub: SettlingHub, conn: object, code: str, seq: int, action: str) -> p.ServerMessage:
    reply = await hub.handle(conn, p.Act(room=code, seq=seq, action=action))  # type: ignore[arg-type]
    assert isinstance(reply, bytes)
    return p.decode_server(reply)


async def test_a_whole_race_from_creation_to_rematch(
    hub: SettlingHub, clock: ManualClock, storage: MemoryStorage
) -> None:
    ada, bob = await connect(hub, "Ada"), await connect(hub, "Bob")
    snapshot = await hub.handle(ada, p.CreateRoom(deal=DEAL, seats=2))
    assert isinstance(snapshot, p.RoomSnapshot) and snapshot.room["phase"] == "waiting"
    code = snapshot.room["code"]
    joined = await hub.handle(bob, p.Join(room=code))
    assert isinstance(joined, p.RoomSnapshot) and len(joined.room["players"]) == 2
    await hub.handle(ada, p.Ready(room=code))
    await hub.handle(bob, p.Ready(room=code))  # every seat ready: the countdown starts
    countdown = ada.events("countdown")
    assert countdown and countdown[0].data["start_at"] == clock.now + COUNTDOWN_MS
    early = await act(hub, ada, code, 1, "redeal")
    assert isinstance(early, p.Error) and early.code == "not_started"

    clock.advance(COUNTDOWN_MS)
    racing = await hub.handle(bob, p.Join(room=code))  # a fresh snapshot
    assert isinstance(racing, p.RoomSnapshot) and racing.room["phase"] == "racing"
    assert racing.you["game"] is not None and racing.you["last_seq"] == 0
    move = str(next(Game.from_code(DEAL).legal_moves()))
    assert isinstance(await act(hub, ada, code, 1, move), p.Ack)
    await hub.progress.flush()
    progress = [p.decode_server(f) for f in bob.progress]
    assert any(
        isinstance(m, p.Progress) and any(r["moves"] == 1 for r in m.racers) for m in progress
    )

    assert isinstance(await act(hub, ada, code, 2, "resign"), p.Ack)
    clock.advance(500)
    assert isinstance(await act(hub, bob, code, 1, "resign"), p.Ack)
    await hub.progress.flush()  # every racer done: the flush ends the race
    await settle(hub)
    finished = ada.events("finished")
    assert finished, [e.kind for e in ada.events()]
    results = finished[0].data["results"]
    # Neither won, same cards on the foundations: fewer moves ranks first.
    assert [(r["rank"], r["player"], r["moves"]) for r in results] == [
        (1, bob.player_id, 0),
        (2, ada.player_id, 1),
    ]

    with pytest.raises(RoomError) as err:
        await hub.handle(bob, p.Rematch(room=code))
    assert err.value.code == "not_host"
    await hub.handle(ada, p.Rematch(room=code))
    room = hub.rooms.local[code].room
    assert room.round == 2 and room.phase == "waiting" and room.deal != DEAL
    assert hub.games.find(code, 1, ada.player_id) is None


async def test_the_deadline_ends_the_race(hub: SettlingHub, clock: ManualClock) -> None:
    ada = await connect(hub, "Ada")
    code = await racing_room(hub, clock, [ada], time_limit=60)
    clock.advance(60_000)
    late = await act(hub, ada, code, 1, "redeal")
    assert isinstance(late, p.Error) and late.code == "race_over"
    await settle(hub)  # the late act asked for the finish
    assert hub.rooms.local[code].room.phase == "finished"
    results = ada.events("finished")[0].data["results"]
    assert results[0]["time_ms"] == 60_000 and results[0]["status"] == "timeout"


async def test_events_reach_the_sockets_of_another_process(
    storage: MemoryStorage, clock: ManualClock
) -> None:
    one, two = await start_hub(storage, clock), await start_hub(storage, clock)
    try:
        ada, bob = await connect(one, "Ada"), await connect(two, "Bob")
        snapshot = await one.handle(ada, p.CreateRoom(deal=DEAL, seats=2))
        assert isinstance(snapshot, p.RoomSnapshot)
        code = str(snapshot.room["code"])
        await two.handle(bob, p.Join(room=code))
        await settle(one, two)
        assert [e.kind for e in ada.events()] == ["joined"]
        await one.handle(ada, p.Ready(room=code))
        await settle(one, two)
        assert [e.kind for e in bob.events()][-1] == "ready"
        versions = [e.ver for e in bob.events()]
        assert versions == sorted(set(versions))  # each version once, in order
        assert two.rooms.local[code].room.ver == one.rooms.local[code].room.ver
    finally:
        await one.stop()
        await two.stop()


async def test_requests_about_a_room_need_the_socket_in_it(hub: SettlingHub) -> None:
    ada, bob = await connect(hub, "Ada"), await connect(hub, "Bob")
    snapshot = await hub.handle(ada, p.CreateRoom(deal=DEAL, seats=2))
    assert isinstance(snapshot, p.RoomSnapshot)
    code = str(snapshot.room["code"])
    with pytest.raises(RoomError) as err:
        await hub.handle(bob, p.Ready(room=code))
    assert err.value.code == "not_in_room"
    with pytest.raises(RoomError) as err:
        await hub.handle(bob, p.Ready(room="ZZZZZZ"))
    assert err.value.code == "not_in_room"  # one rule: only join says room_not_found
