"""The progress flush in slices: each tick flushes the dirty rooms of one slice, so one
event-loop turn writes a fraction of the frames, and every dirty room is flushed within
one interval (``FLUSH_SLICES`` ticks)."""

from __future__ import annotations

from crescent_wire import protocol as p
from server.core.dirty_rooms import FLUSH_SLICES, DirtyRooms
from server.game import Game
from tests.server.core_support import DEAL, ManualClock, SettlingHub, connect, racing_room


def test_dirty_rooms_are_taken_one_slice_at_a_time() -> None:
    dirty = DirtyRooms(slices=4)
    codes = {f"ROOM{i}" for i in range(40)}
    for code in codes:
        dirty.add(code)
        dirty.add(code)  # marked twice, flushed once
    assert len(dirty) == 40 and "ROOM7" in dirty
    slices = [dirty.take(tick) for tick in range(4)]
    assert set().union(*slices) == codes
    assert sum(map(len, slices)) == 40  # no room in two slices
    assert max(map(len, slices)) < 40  # 40 codes do not all hash to one slice
    assert len(dirty) == 0 and not dirty.take(5)
    dirty.add("ROOM1")
    (index,) = [i for i, s in enumerate(slices) if "ROOM1" in s]
    assert dirty.take(index + 4) == {"ROOM1"}  # a room stays in its slice; ticks wrap
    dirty.add("ROOM2")
    assert dirty.take() == {"ROOM2"} and len(dirty) == 0  # no tick: every slice


async def test_a_tick_flushes_only_its_slice_and_an_interval_flushes_all(
    hub: SettlingHub, clock: ManualClock
) -> None:
    rooms = []
    for i in range(12):
        ada, bob = await connect(hub, f"Ada{i}"), await connect(hub, f"Bob{i}")
        code = await racing_room(hub, clock, [ada, bob])
        move = str(next(Game.from_code(DEAL).legal_moves()))
        reply = await hub.handle(ada, p.Act(room=code, seq=1, action=move))
        assert isinstance(reply, bytes) and isinstance(p.decode_server(reply), p.Ack)
        rooms.append((code, bob))
    assert len(hub.progress.dirty) == 12
    flushed_per_tick = []
    for tick in range(FLUSH_SLICES):
        before = {code: len(bob.progress) for code, bob in rooms}
        await hub.progress.flush(tick)
        flushed_per_tick.append({code for code, bob in rooms if len(bob.progress) > before[code]})
    assert set().union(*flushed_per_tick) == {code for code, _ in rooms}
    assert sum(map(len, flushed_per_tick)) == 12  # each room once per interval
    assert max(map(len, flushed_per_tick)) < 12  # the work is spread over the ticks
    for _, bob in rooms:
        (frame,) = bob.progress
        progress = p.decode_server(frame)
        assert isinstance(progress, p.Progress)
        assert sorted(r["moves"] for r in progress.racers) == [0, 1]
    assert len(hub.progress.dirty) == 0
