"""The players of a dead process go offline with one log line per episode, not one per
player per presence tick (issue #20: 2,700 "presence lapsed" lines in 27 s). Two hubs
over one in-memory storage stand for two processes; ``other`` stops refreshing."""

from __future__ import annotations

import logging

import pytest

from crescent_wire import protocol as p
from server.storage.memory import MemoryStorage
from server.storage.memory_tournament import MemoryTournamentStorage
from tests.server.core.test_core_race import settle
from tests.server.core.test_core_tournament import ask, create, make_hub, start
from tests.server.core.test_core_trust import race_across
from tests.server.core_support import ManualClock, SettlingHub, connect, start_hub

LAPSED = "presence lapsed: marking offline the players of silent processes"


def presence_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "server.presence"]


async def judge_for_a_while(hub: SettlingHub, clock: ManualClock, ticks: int) -> None:
    for _ in range(ticks):
        clock.advance(hub.presence.stale_ms // 3)
        await hub.presence.tick()
        await settle(hub)


async def test_a_dead_process_s_players_are_logged_once(
    hub: SettlingHub, clock: ManualClock, storage: MemoryStorage, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="server.presence")
    other = await start_hub(storage, clock)
    hub.rooms.resign_offline_ms = 10**9
    pairs = [await race_across(hub, other) for _ in range(4)]
    await hub.presence.tick()
    await other.presence.tick()
    await judge_for_a_while(hub, clock, 30)  # ``other`` never refreshes again: it died
    for ada, bob, _code in pairs:
        offline = [e.data for e in ada.events("connected")]
        assert offline == [{"player": bob.player_id, "connected": False}]
    records = presence_records(caplog)
    assert [(r.levelno, r.getMessage()) for r in records] == [
        (logging.WARNING, LAPSED),
        (logging.INFO, LAPSED + ": over"),
    ]
    assert records[0].__dict__["count"] == 4 and records[0].__dict__["rooms"] == 4
    assert records[1].__dict__["count"] == 4
    await other.stop()


async def test_a_tournament_round_is_not_judged_at_every_tick(
    storage: MemoryStorage,
    clock: ManualClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A round does not track who is online: its players on a dead process stay as they
    are, with no line and no transition at each tick (before: one line per player per
    tick, for as long as the round lasted)."""
    caplog.set_level(logging.INFO, logger="server.presence")
    tstorage = MemoryTournamentStorage()
    hub = await make_hub(storage, tstorage, clock)
    other = await make_hub(storage, tstorage, clock)
    try:
        host = await connect(hub, "Host")
        # One racer on the surviving process (so the round is local there), five on
        # the one that dies.
        racers = [(hub, await connect(hub, "Here"))]
        racers += [(other, await connect(other, f"R{i}")) for i in range(5)]
        code = await create(hub, host, rounds=1, time_limit=3600)
        for process, racer in racers:
            await ask(process, racer, p.TJoin(tournament=code))
        room = (await start(hub, host, code))["room"]
        for process, racer in racers:
            await ask(process, racer, p.Join(room=room))
        await settle(hub)
        await settle(other)
        assert room in hub.rooms.local
        await hub.presence.tick()
        await other.presence.tick()
        versions = hub.rooms.local[room].room.ver
        await judge_for_a_while(hub, clock, 20)
        assert presence_records(caplog) == []
        assert hub.rooms.local[room].room.ver == versions  # no transition either
    finally:
        await hub.stop()
        await other.stop()
