"""Trust under faults and abuse, at the core (issue #10): in-memory storage, a manual
clock, no sockets. The end-to-end counterparts are tests/server/test_trust_*.py."""

from __future__ import annotations

import msgpack
import pytest

from crescent_wire import protocol as p
from crescent_wire.errors import ProtocolError, RoomError
from server.game import Game
from server.storage.memory import MemoryStorage
from tests.server.core.test_core_race import settle
from tests.server.core_support import (
    DEAL,
    ManualClock,
    RecordingConnection,
    SettlingHub,
    connect,
    racing_room,
    start_hub,
)

# --- point 14: one rule for room requests


async def test_every_room_request_but_join_answers_not_in_room(hub: SettlingHub) -> None:
    ada, bob = await connect(hub, "Ada"), await connect(hub, "Bob")
    snapshot = await hub.handle(ada, p.CreateRoom(deal=DEAL, seats=2))
    assert isinstance(snapshot, p.RoomSnapshot)
    code = str(snapshot.room["code"])
    for room in (code, "ZZZZZZ"):  # a room that exists and one that does not
        for request in (
            p.Leave(room=room),
            p.Ready(room=room, ready=True),
            p.Start(room=room),
            p.Sync(room=room),
            p.Rematch(room=room),
            p.Act(room=room, seq=1, action="redeal"),
        ):
            try:
                reply = await hub.handle(bob, request)
            except RoomError as err:
                code_seen = err.code
            else:
                assert isinstance(reply, bytes), (request, reply)
                error = p.decode_server(reply)
                assert isinstance(error, p.Error)
                code_seen = error.code
            assert code_seen == "not_in_room", (request, code_seen)
    with pytest.raises(RoomError) as refused:
        await hub.handle(bob, p.Join(room="ZZZZZZ"))
    assert refused.value.code == "room_not_found"


def test_ready_needs_its_ready_field() -> None:
    with pytest.raises(ProtocolError) as err:
        p.decode_client(msgpack.packb({"t": "ready", "room": "K7PQ2X"}))
    assert err.value.code == "bad_field" and "ready" in err.value.message
    decoded = p.decode_client(msgpack.packb({"t": "ready", "room": "K7PQ2X", "ready": False}))
    assert decoded == p.Ready(room="K7PQ2X", ready=False)


# --- point 11: a reused seq with a different action


async def act(hub: SettlingHub, conn: object, code: str, seq: int, action: str) -> p.ServerMessage:
    reply = await hub.handle(conn, p.Act(room=code, seq=seq, action=action))  # type: ignore[arg-type]
    assert isinstance(reply, bytes)
    return p.decode_server(reply)


async def test_a_reused_seq_with_another_action_is_a_seq_conflict(
    hub: SettlingHub, clock: ManualClock, storage: MemoryStorage
) -> None:
    ada = await connect(hub, "Ada")
    code = await racing_room(hub, clock, [ada])
    move = str(next(Game.from_code(DEAL).legal_moves()))
    assert isinstance(await act(hub, ada, code, 1, move), p.Ack)
    same = await act(hub, ada, code, 1, move)
    assert isinstance(same, p.Ack) and same.duplicate
    other = await act(hub, ada, code, 1, "redeal")
    assert isinstance(other, p.Error) and other.code == "seq_conflict"
    # The game is rebuilt from storage (another process, or after a restart): the same.
    again = await start_hub(storage, clock)
    twin = await connect(again, "Ada", token=None)
    twin.player = ada.player
    await again.handle(twin, p.Join(room=code))
    other = await act(again, twin, code, 1, "redeal")
    assert isinstance(other, p.Error) and other.code == "seq_conflict"
    same = await act(again, twin, code, 1, move)
    assert (
        isinstance(same, p.Ack)
        and same.duplicate
        and same.view is not None
        and same.view["moves"] == 1
    )
    redeal = await act(again, twin, code, 2, "redeal")  # the next seq is fine
    assert isinstance(redeal, p.Ack) and not redeal.duplicate
    await again.stop()


# --- point 13: the end of a race


async def test_host_ends_a_race_and_those_still_playing_time_out(
    hub: SettlingHub, clock: ManualClock
) -> None:
    ada, bob = await connect(hub, "Ada"), await connect(hub, "Bob")
    code = await racing_room(hub, clock, [ada, bob])
    move = str(next(Game.from_code(DEAL).legal_moves()))
    assert isinstance(await act(hub, ada, code, 1, move), p.Ack)
    assert isinstance(await act(hub, bob, code, 1, "resign"), p.Ack)
    with pytest.raises(RoomError) as err:
        await hub.handle(bob, p.EndRace(room=code))
    assert err.value.code == "not_host"
    clock.advance(5000)
    assert isinstance(await hub.handle(ada, p.EndRace(room=code)), p.Ok)
    finished = bob.events("finished")
    assert finished
    results = finished[-1].data["results"]
    assert {r["player"]: (r["status"], r["time_ms"]) for r in results} == {
        ada.player_id: ("timeout", 5000),
        bob.player_id: ("resigned", 0),
    }
    await settle(hub)
    await hub.progress.flush()
    last = p.decode_server(bob.progress[-1])
    assert isinstance(last, p.Progress)
    assert {r["player"]: r["status"] for r in last.racers} == {
        ada.player_id: "timeout",
        bob.player_id: "resigned",
    }
    with pytest.raises(RoomError) as err:
        await hub.handle(ada, p.EndRace(room=code))
    assert err.value.code == "wrong_phase"


async def test_racers_still_playing_at_the_deadline_time_out(
    hub: SettlingHub, clock: ManualClock
) -> None:
    ada, bob = await connect(hub, "Ada"), await connect(hub, "Bob")
    code = await racing_room(hub, clock, [ada, bob], time_limit=60)
    clock.advance(60_000)
    snapshot = await hub.handle(bob, p.Join(room=code))  # after the deadline, not ended yet
    assert isinstance(snapshot, p.RoomSnapshot)
    assert {pl["progress"]["status"] for pl in snapshot.room["players"]} == {"timeout"}
    hub.rooms.sweep()
    await settle(hub)
    results = bob.events("finished")[-1].data["results"]
    assert [r["status"] for r in results] == ["timeout", "timeout"]


async def test_a_racer_offline_too_long_is_resigned_and_the_race_ends(
    hub: SettlingHub, clock: ManualClock
) -> None:
    hub.rooms.resign_offline_ms = 10_000
    ada, bob = await connect(hub, "Ada"), await connect(hub, "Bob")
    code = await racing_room(hub, clock, [ada, bob])  # no time limit
    assert isinstance(await act(hub, ada, code, 1, "resign"), p.Ack)
    await hub.disconnect(bob)
    assert ada.events("connected")[-1].data == {
        "player": bob.player_id,
        "connected": False,
    }
    clock.advance(9_999)
    hub.rooms.sweep()
    await settle(hub)
    await hub.progress.flush()
    assert not ada.events("finished")  # not yet
    clock.advance(1)
    hub.rooms.sweep()
    await settle(hub)
    await hub.progress.flush()  # the resign is stored: every racer is done
    await settle(hub)
    results = ada.events("finished")[-1].data["results"]
    assert {r["player"]: r["status"] for r in results} == {
        ada.player_id: "resigned",
        bob.player_id: "resigned",
    }


async def test_a_racer_back_in_time_is_not_resigned(hub: SettlingHub, clock: ManualClock) -> None:
    hub.rooms.resign_offline_ms = 10_000
    ada, bob = await connect(hub, "Ada"), await connect(hub, "Bob")
    code = await racing_room(hub, clock, [ada, bob])
    await hub.disconnect(bob)
    clock.advance(5_000)
    back = await connect(hub, "Bob")
    back.player = bob.player
    await hub.handle(back, p.Join(room=code))
    clock.advance(20_000)
    hub.rooms.sweep()
    await settle(hub)
    move = str(next(Game.from_code(DEAL).legal_moves()))
    ack = await act(hub, back, code, 1, move)
    assert isinstance(ack, p.Ack) and ack.view is not None and ack.view["status"] == "playing"


# --- presence of a dead process: its players go offline within the staleness window


async def race_across(
    hub: SettlingHub, other: SettlingHub
) -> tuple[RecordingConnection, RecordingConnection, str]:
    """Ada on ``hub`` and Bob on ``other`` race in one room (its countdown running)."""
    ada, bob = await connect(hub, "Ada"), await connect(other, "Bob")
    snapshot = await hub.handle(ada, p.CreateRoom(deal=DEAL, seats=2))
    assert isinstance(snapshot, p.RoomSnapshot)
    code = str(snapshot.room["code"])
    await other.handle(bob, p.Join(room=code))
    for hub_of, conn in ((hub, ada), (other, bob)):
        await hub_of.handle(conn, p.Ready(room=code))
    await settle(hub)
    return ada, bob, code


async def test_players_of_a_silent_process_go_offline_and_come_back(
    hub: SettlingHub, clock: ManualClock, storage: MemoryStorage
) -> None:
    """``hub`` and ``other`` stand for two processes; ``other`` stops refreshing its
    presence (as if killed) while its player Bob is in a race with Ada."""
    other = await start_hub(storage, clock)
    stale = hub.presence.stale_ms
    hub.rooms.resign_offline_ms = 60_000
    ada, bob, code = await race_across(hub, other)
    await hub.presence.tick()
    await other.presence.tick()
    # Both refresh for a whole window: nobody lapses.
    for _ in range(3):
        clock.advance(stale // 3)
        await hub.presence.tick()
        await other.presence.tick()
    await settle(hub)
    assert not ada.events("connected")
    # ``other`` goes silent; just under the window Bob still counts as connected.
    clock.advance(stale)
    await hub.presence.tick()
    await settle(hub)
    assert not ada.events("connected")
    clock.advance(1)
    await hub.presence.tick()
    await settle(hub)
    bob_id = bob.player_id
    assert [e.data for e in ada.events("connected")] == [{"player": bob_id, "connected": False}]
    room = hub.rooms.local[code].room
    assert room.member(bob_id).disconnected_at == clock.now  # type: ignore[union-attr]
    # Ada's own presence is live: she is never marked offline.
    assert all(e.data["player"] == bob_id for e in ada.events("connected"))
    # ``other`` was only paused: its next refresh brings Bob back.
    await other.presence.tick()  # after a pause: it refreshes, judges after a window
    assert [e.data["connected"] for e in ada.events("connected")] == [False]
    for _ in range(3):
        clock.advance(stale // 3)
        await hub.presence.tick()
        await other.presence.tick()
    await settle(other)
    await settle(hub)
    assert [e.data["connected"] for e in ada.events("connected")] == [False, True]
    await other.stop()


async def test_the_disconnect_resign_clock_starts_when_presence_lapses(
    hub: SettlingHub, clock: ManualClock, storage: MemoryStorage
) -> None:
    other = await start_hub(storage, clock)
    stale = hub.presence.stale_ms
    hub.rooms.resign_offline_ms = 10_000
    ada, bob, code = await race_across(hub, other)
    await hub.presence.tick()
    for _ in range(4):  # ``other`` never refreshes again: it died
        clock.advance(stale // 3)
        await hub.presence.tick()
    await settle(hub)
    assert ada.events("connected")[-1].data["connected"] is False
    assert isinstance(await act(hub, ada, code, 1, "resign"), p.Ack)
    clock.advance(10_000)
    hub.rooms.sweep()
    await settle(hub)
    await hub.progress.flush()
    await settle(hub)
    results = ada.events("finished")[-1].data["results"]
    assert {r["player"]: r["status"] for r in results} == {
        ada.player_id: "resigned",
        bob.player_id: "resigned",
    }
    await other.stop()


# --- point 5: a quota of open rooms per player


async def test_open_rooms_per_player_are_limited(hub: SettlingHub) -> None:
    hub.sessions.max_open_rooms = 3
    ada, bob = await connect(hub, "Ada"), await connect(hub, "Bob")
    codes = []
    for _ in range(3):
        snapshot = await hub.handle(ada, p.CreateRoom(seats=2))
        assert isinstance(snapshot, p.RoomSnapshot)
        codes.append(str(snapshot.room["code"]))
    with pytest.raises(RoomError) as err:
        await hub.handle(ada, p.CreateRoom(seats=2))
    assert err.value.code == "too_many_rooms"
    assert isinstance(await hub.handle(bob, p.CreateRoom(seats=2)), p.RoomSnapshot)
    await hub.handle(ada, p.Leave(room=codes[0]))  # leaving one frees a place
    assert isinstance(await hub.handle(ada, p.CreateRoom(seats=2)), p.RoomSnapshot)
    with pytest.raises(RoomError) as err:
        await hub.handle(ada, p.CreateRoom(seats=2))
    assert err.value.code == "too_many_rooms"
