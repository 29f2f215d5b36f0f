"""The archive's outbox over in-memory adapters: a game ends, its record goes to the
outbox, the drainer writes it to the archive once; a failing archive leaves it waiting
(docs/archive.md, "The outbox")."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from crescent_wire import protocol as p
from server.core.archive import (
    Action,
    ArchiveBatch,
    ArchiveCounts,
    ArchivedDailyDay,
    ArchivedGame,
    ArchivedRacer,
    ArchivedTournament,
    ArchiveError,
    DailyPlacing,
    GameKind,
    RacerResult,
    TournamentPlacing,
    WriteReport,
)
from server.core.archive_records import decode_record, encode_record, record_id
from server.core.outbox import RECOVER_AFTER_MS, Archiver
from server.core.ports import OutboxEntry
from server.core.replay import replay_document, verify_game
from server.daily import Day, reveal_at
from server.game import Game
from server.lobby import Room
from server.storage.memory_archive import MemoryArchive
from server.storage.memory_outbox import MemoryOutbox
from tests.archive.games import WINNING_DEAL, greedy_actions, paced, race, winning_actions
from tests.server.core.test_core_act import act_slow
from tests.server.core_support import (
    COUNTDOWN_MS,
    DEAL,
    ManualClock,
    SettlingHub,
    connect,
    racing_room,
)


def first_moves(count: int) -> list[str]:
    game = Game.from_code(DEAL)
    moves = []
    for _ in range(count):
        move = str(next(iter(game.legal_moves())))
        game.apply(move)
        moves.append(move)
    return moves


def archiver_of(hub: SettlingHub) -> Archiver:
    assert hub.archiver is not None
    return hub.archiver


async def finished_race(hub: SettlingHub, clock: ManualClock, *, wait: bool = True) -> str:
    """Ada plays three moves 700 ms apart and resigns; Bo resigns at once: race over."""
    ada, bo = await connect(hub, "Ada"), await connect(hub, "Bo")
    code = await racing_room(hub, clock, [ada, bo])
    for seq, move in enumerate(first_moves(3), start=1):
        clock.advance(700)
        await act_slow(hub, ada, code, seq, move)
    await act_slow(hub, ada, code, 4, "resign")
    clock.advance(100)
    await act_slow(hub, bo, code, 1, "resign")
    await hub.progress.flush()  # every racer done: the flush ends the race
    await hub.settle()
    if wait:
        await wait_for_puts(hub)
    return code


async def wait_for_puts(hub: SettlingHub) -> None:
    archiver = archiver_of(hub)
    while archiver._puts:  # noqa: SLF001 (the test waits for the end's put)
        await next(iter(archiver._puts))  # noqa: SLF001


async def test_a_finished_race_is_put_in_the_outbox_and_archived_once(
    hub: SettlingHub, clock: ManualClock
) -> None:
    archiver = archiver_of(hub)
    await archiver.stop()  # the test drains by hand
    code = await finished_race(hub, clock)
    outbox = archiver.outbox
    assert isinstance(outbox, MemoryOutbox)
    (entry,) = outbox.entries.values()
    game = decode_record(entry.record)
    assert isinstance(game, ArchivedGame)
    assert game.id.startswith(f"{code}-1-") and game.kind == GameKind.ROOM
    assert game.origin == code and game.deal == DEAL and game.revealed_at == game.ended_at
    ada, bo = game.racers
    assert [a.a for a in ada.actions] == [*first_moves(3), "resign"]
    assert [a.t for a in ada.actions] == [700, 1400, 2100, 2100]  # ms after start_at
    assert ada.result.status == "resigned" and bo.result.status == "resigned"
    assert all(verdict.ok for verdict in verify_game(game)), verify_game(game)

    # The same end again (a retry) adds nothing; two drains write it once.
    assert await outbox.put([entry]) == 0
    assert await archiver.drain_once() == 1
    assert await archiver.drain_once() == 0
    assert archiver.written == 1 and not outbox.entries
    stored = await archiver.archive.game(game.id, now=clock())
    assert stored == game


async def test_a_failing_archive_leaves_games_waiting_and_logs_once(
    hub: SettlingHub, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "server.archive")
    archiver = archiver_of(hub)
    await archiver.stop()
    archive = DownArchive()
    archiver.drainer.archive = archive
    archiver.drainer.retry_s = (0.0,)
    await finished_race(hub, clock)
    clock.advance(5_000)
    lag = await archiver.lag()
    assert lag["pending"] == 1 and lag["oldest_pending_s"] >= 5.0

    archiver.drainer.lease_ms = 0  # each attempt claims it again at once
    archiver.start()
    while archive.attempts < 5:
        await archive.attempted()
    assert (await archiver.lag())["archive"] == "down"
    archive.down = False
    archiver.caught_up.clear()
    await archiver.caught_up.wait()
    await archiver.stop()
    assert (await archiver.lag())["pending"] == 0
    lines = [r.getMessage() for r in caplog.records if r.name == "server.archive"]
    assert lines.count("archive unavailable: finished games wait in the outbox") == 1
    assert lines.count("archive unavailable: finished games wait in the outbox: over") == 1
    assert len(archive.games) == 1 and hub.metrics.archive_pending._value.get() == 0  # noqa: SLF001


class DownArchive(MemoryArchive):
    """An archive whose writes fail while ``down`` (a database outage)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = True
        self.attempts = 0
        self._attempt = asyncio.Event()

    async def write(self, batch: ArchiveBatch) -> WriteReport:
        self.attempts += 1
        self._attempt.set()
        if self.down:
            raise ConnectionRefusedError("postgres is down")
        return await super().write(batch)

    async def attempted(self) -> None:
        self._attempt.clear()
        await self._attempt.wait()


async def test_claims_lease_entries_to_one_drainer() -> None:
    outbox = MemoryOutbox()
    entries: Sequence[OutboxEntry] = [OutboxEntry(f"g{i}", b"{}", 1_000 + i) for i in range(3)]
    assert await outbox.put(entries) == 3
    first = await outbox.claim(now=2_000, due_by=2_000, limit=2, lease_ms=60_000)
    assert [e.id for e in first] == ["g0", "g1"]
    second = await outbox.claim(now=2_000, due_by=2_000, limit=10, lease_ms=60_000)
    assert [e.id for e in second] == ["g2"]  # the others are leased
    assert await outbox.claim(now=2_000, due_by=500, limit=10, lease_ms=1) == []  # not due
    await outbox.remove(["g0"])
    again = await outbox.claim(now=70_000, due_by=70_000, limit=10, lease_ms=60_000)
    assert [e.id for e in again] == ["g1", "g2"]  # leases over: claimable again
    stats = await outbox.stats()
    assert stats.pending == 2 and stats.oldest_put_at == 1_001


async def test_a_daily_attempt_stays_sealed_and_the_day_is_archived_after_its_reveal(
    hub: SettlingHub, clock: ManualClock
) -> None:
    archiver = archiver_of(hub)
    await archiver.stop()
    day = Day.parse("2025-11-30")
    clock.now = day.starts_at - 3_600_000
    await hub.daily.prepare()  # the day's deal is committed ahead
    ada = await connect(hub, "Ada")
    clock.now = day.starts_at + 1000
    snapshot = await hub.handle(ada, p.DailyStart())
    assert isinstance(snapshot, p.RoomSnapshot)
    code = str(snapshot.room["code"])
    clock.advance(COUNTDOWN_MS + 900)
    await act_slow(hub, ada, code, 1, "resign")
    await hub.progress.flush()
    await hub.settle()
    await wait_for_puts(hub)
    assert await archiver.put_revealed_days() == []  # not revealed yet: nothing put
    assert await archiver.drain_once() == 1
    (game_id,) = archiver.archive.games  # type: ignore[attr-defined]
    reveal = reveal_at(day, archiver.daily_attempt_limit_ms)
    assert await archiver.archive.game(game_id, now=clock()) is None  # sealed
    history = await archiver.archive.history(ada.player.id, now=clock())  # type: ignore[union-attr]
    assert history.entries == ()

    clock.now = reveal
    game = await archiver.archive.game(game_id, now=clock())
    assert game is not None and game.kind == GameKind.DAILY and game.origin == str(day)
    assert game.racers[0].actions == (Action(900, "resign"),)
    # The 30th, and the 29th before it (committed ahead too, nobody played it).
    assert await archiver.put_revealed_days() == [f"daily:{day}", f"daily:{day.previous()}"]
    assert await archiver.put_revealed_days() == []  # once per process
    assert await archiver.drain_once() == 2
    archived = await archiver.archive.daily_day(str(day), now=clock())
    assert archived is not None and archived.deal == DEAL and archived.attempts == 1
    assert [(row.rank, row.name, row.status) for row in archived.board] == [(1, "Ada", "resigned")]


def test_records_go_through_the_outbox_unchanged() -> None:
    tournament = ArchivedTournament(
        id="TK7PQ2X",
        name="Cup",
        variant="N",
        started_at=1,
        ended_at=5,
        revealed_at=5,
        standings=(TournamentPlacing(1, "a", "Ada", 7), TournamentPlacing(2, "b", "Bo", 3)),
        games=("K7PQ2X-1-x", "K7PQ2Y-1-y"),
    )
    day = ArchivedDailyDay(
        day="2025-11-30",
        deal=DEAL,
        revealed_at=9,
        attempts=2,
        board=(DailyPlacing(1, "a", "Ada", "won", 90_000, 120),),
    )
    for record in (tournament, day):
        assert decode_record(encode_record(record)) == record
    assert record_id(tournament) == "tournament:TK7PQ2X" and record_id(day) == "daily:2025-11-30"
    with pytest.raises(ArchiveError) as err:
        decode_record(b'{"nothing": 1}')
    assert err.value.code == "bad_record"


def test_a_game_goes_through_the_outbox_compactly_and_the_old_form_still_reads() -> None:
    """A game's entry holds each racer's log as one text and a list of offsets (not an
    object per action); an entry an earlier version put (its replay document) still
    decodes, so a rolling restart drains what the old processes left."""
    game = race(
        "ABCD-1-x",
        WINNING_DEAL,
        {"a": greedy_actions(WINNING_DEAL), "b": paced(winning_actions()[:5])},
        revealed_at=1_800_000_000_000,
    )
    encoded = encode_record(game)
    assert decode_record(encoded) == game
    assert b'"t":' not in encoded  # no object per action
    (ada, _) = json.loads(encoded)["g"]["racers"]
    assert ada[2].split(" ") == [a.a for a in game.racers[0].actions]
    old = {"game": replay_document(game), "revealed_at": game.revealed_at}
    assert decode_record(json.dumps(old).encode()) == game


@pytest.mark.parametrize(
    ("racer", "why"),
    [
        (["a", "A", "p1-ad p2", [5], [1, "won", 9, 1, 8]], "offsets"),  # one offset short
        (["a", "A", "p1-ad", [5.5], [1, "won", 9, 1, 8]], "offsets"),  # not an int
        (["a", "A", "p1-ad", [-1], [1, "won", 9, 1, 8]], "bad action"),
        (["a", "A", "p1-ad", [5], [1, "won", 9, 1]], "RacerResult"),
        (["a", "A", "p1-ad", [5], [1, "won", None, 1, 8]], "result"),
    ],
)
def test_a_bad_game_entry_is_not_a_record(racer: list[Any], why: str) -> None:
    fields = {
        "id": "ABCD-1-x",
        "deal": WINNING_DEAL,
        "variant": "N",
        "origin": "ABCD",
        "start_at": 1,
        "ended_at": 2,
        "revealed_at": 2,
        "kind": "room",
        "racers": [racer],
    }
    with pytest.raises(ArchiveError) as err:
        decode_record(json.dumps({"g": fields}).encode())
    assert err.value.code in ("bad_record", "bad_game") and why in err.value.message


@pytest.mark.parametrize(
    "action", ["p1 ad", "", "x" * 17, "p1-ad\n", "é"], ids=["space", "empty", "long", "nl", "é"]
)
def test_an_action_that_is_not_an_actions_text_is_a_bad_game(action: str) -> None:
    racer = ArchivedRacer(
        "a",
        "Ada",
        (Action(0, "p1-ad"), Action(5, action), Action(9, "undo")),
        RacerResult(1, "locked", 0, 3, 0),
    )
    with pytest.raises(ArchiveError) as err:
        dataclasses.replace(race("ABCD-1-x", WINNING_DEAL, {"a": ()}), racers=(racer,))
    assert err.value.code == "bad_game" and f"bad action {action!r} at 5 ms" in err.value.message


async def test_the_retention_job_deletes_practice_after_30_days_rooms_after_a_year(
    hub: SettlingHub, clock: ManualClock
) -> None:
    archiver = archiver_of(hub)
    await archiver.stop()
    await finished_race(hub, clock)
    assert await archiver.drain_once() == 1
    (game,) = archiver.archive.games.values()  # type: ignore[attr-defined]
    day = 86_400_000
    old = [
        dataclasses.replace(game, id=f"{kind}-old", kind=kind, ended_at=clock() - age)
        for kind, age in (
            (GameKind.PRACTICE, 31 * day),
            (GameKind.ROOM, 31 * day),
            (GameKind.ROOM, 366 * day),
            (GameKind.DAILY, 999 * day),
        )
    ]
    old[2] = dataclasses.replace(old[2], id="room-older")
    await archiver.archive.write(ArchiveBatch(games=tuple(old)))
    assert await archiver.expire() == 2
    assert sorted(archiver.archive.games) == sorted(  # type: ignore[attr-defined]
        [game.id, "room-old", "daily-old"]
    )


async def test_a_tournament_ended_by_its_host_is_put_in_the_outbox(
    hub: SettlingHub, clock: ManualClock
) -> None:
    """The committer tells the archive of the tournament it finished (on_finished), once:
    its record lands in the outbox with the standings."""
    archiver = archiver_of(hub)
    await archiver.stop()  # the test reads the outbox
    host, ada = await connect(hub, "Host"), await connect(hub, "Ada")
    created = await hub.handle(
        host, p.TCreate(name="Cup", rounds=1, time_limit=60, max_players=8, id=1)
    )
    snapshot = p.decode_server(created) if isinstance(created, bytes) else created
    assert isinstance(snapshot, p.TournamentSnapshot)
    code = str(snapshot.tournament["code"])
    await hub.handle(ada, p.TJoin(tournament=code, id=2))
    outbox = archiver.outbox
    assert isinstance(outbox, MemoryOutbox) and not outbox.entries
    ended = await hub.handle(host, p.THost(tournament=code, op="end", id=3))
    assert isinstance(ended, p.Ok)
    await wait_for_puts(hub)
    records = [decode_record(entry.record) for entry in outbox.entries.values()]
    (tournament,) = [r for r in records if isinstance(r, ArchivedTournament)]
    assert tournament.id == code and tournament.name == "Cup"


async def test_a_race_whose_process_died_after_its_end_is_recovered(
    hub: SettlingHub, clock: ManualClock
) -> None:
    archiver = archiver_of(hub)
    await archiver.stop()
    # The process "dies" between the end's compare-and-set and putting the record.
    hub.rooms.on_finished = lambda room: None
    code = await finished_race(hub, clock)
    outbox = archiver.outbox
    assert isinstance(outbox, MemoryOutbox)
    assert list(outbox.entries) == [f"ending:{code}:1"]  # only the note of its end
    assert await archiver.drain_once() == 0  # not due yet: a live process may still put it
    clock.advance(RECOVER_AFTER_MS)
    assert await archiver.drain_once() == 1  # the note: the record is put again
    assert [entry_id.split("-")[0] for entry_id in outbox.entries] == [code]
    assert await archiver.drain_once() == 1 and archiver.written == 1
    (game,) = archiver.archive.games.values()  # type: ignore[attr-defined]
    assert all(verdict.ok for verdict in verify_game(game)) and not outbox.entries


async def test_a_race_whose_process_died_is_put_before_its_rematch(
    hub: SettlingHub, clock: ManualClock
) -> None:
    """The soak's case (docs/performance.md, "Soak"): the finishing process dies before
    it puts the record and the host rematches at once; the note, due 30 s later, would
    find the room in its next round. The rematch puts the record first."""
    archiver = archiver_of(hub)
    await archiver.stop()
    hub.rooms.on_finished = lambda room: None  # dies between the end and the put
    code = await finished_race(hub, clock)
    outbox = archiver.outbox
    assert isinstance(outbox, MemoryOutbox)
    assert list(outbox.entries) == [f"ending:{code}:1"]
    room = await hub.rooms.load(code)
    host = room.host
    assert host is not None
    await hub.rooms.transition(code, lambda r, now: r.rematch(host, DEAL, now=now))
    assert (await hub.rooms.load(code)).round == 2
    assert [entry_id.split("-")[:2] for entry_id in outbox.entries] == [[code, "1"]]
    assert await archiver.drain_once() == 1 and archiver.written == 1
    (game,) = archiver.archive.games.values()  # type: ignore[attr-defined]
    assert all(verdict.ok for verdict in verify_game(game)) and not outbox.entries


async def test_a_rematch_asked_at_once_waits_for_the_record_being_put(
    hub: SettlingHub, clock: ManualClock
) -> None:
    """A bot or a quick host rematches while this process is still putting the round's
    record: the rematch waits for that put rather than make the record a second time
    (it did, in most games of bench/load.py)."""
    archiver = archiver_of(hub)
    await archiver.stop()
    made: list[int] = []
    release = asyncio.Event()
    game_entry, put_entry = archiver.game_entry, archiver.put_entry

    async def counted(room: Room) -> OutboxEntry:
        made.append(room.round)
        return await game_entry(room)

    async def held(entry: OutboxEntry, *, replacing: Sequence[str] = ()) -> str:
        await release.wait()
        return await put_entry(entry, replacing=replacing)

    archiver.game_entry = counted  # type: ignore[method-assign]
    archiver.put_entry = held  # type: ignore[method-assign]
    code = await finished_race(hub, clock, wait=False)
    host = (await hub.rooms.load(code)).host
    assert host is not None
    rematch = asyncio.create_task(
        hub.rooms.transition(code, lambda r, now: r.rematch(host, DEAL, now=now))
    )
    release.set()
    await rematch
    await wait_for_puts(hub)
    assert (await hub.rooms.load(code)).round == 2
    assert made == [1]
    assert await archiver.drain_once() == 1 and archiver.written == 1


async def test_a_process_whose_writer_drains_elsewhere_only_puts(
    hub: SettlingHub, clock: ManualClock
) -> None:
    """``--archive-writer process``: a serving process puts its games in the outbox and
    runs neither the drainer nor the jobs; its /healthz still shows the lag."""
    archiver = archiver_of(hub)
    await archiver.stop()
    archiver.drains = False
    archiver.start()
    names = {task.get_name() for task in asyncio.all_tasks()}
    assert not names & {"archive-drainer", "archive-jobs", "archive-counts"}
    assert "archive-lag" in names  # the lag gauges, from Redis: also while the writer is down
    code = await finished_race(hub, clock)
    outbox = archiver.outbox
    assert isinstance(outbox, MemoryOutbox)
    assert [entry_id.split("-")[0] for entry_id in outbox.entries] == [code]
    assert archiver.written == 0
    lag = await archiver.lag()
    assert lag["pending"] == 1 and lag["archive"] == "up"
    await archiver.drainer.report_lag()
    assert hub.metrics.archive_pending._value.get() == 1  # noqa: SLF001 (the gauge's value)
    await archiver.stop()


async def test_a_note_of_an_end_never_stored_is_dropped(
    hub: SettlingHub, clock: ManualClock
) -> None:
    archiver = archiver_of(hub)
    await archiver.stop()
    ada = await connect(hub, "Ada")
    code = await racing_room(hub, clock, [ada])
    await archiver.before_finish(hub.rooms.local[code].room)  # then the CAS "failed"
    clock.advance(RECOVER_AFTER_MS)
    assert await archiver.drain_once() == 1
    assert archiver.written == 0 and not archiver.outbox.entries  # type: ignore[attr-defined]


async def test_the_archives_row_counts_reach_the_metrics(
    hub: SettlingHub, clock: ManualClock
) -> None:
    """Archive row counts in /metrics (docs/archive.md, "Metrics"): games by kind,
    racers, tournaments, daily days, from the archive's counts, by the counting loop."""
    archiver = archiver_of(hub)
    await archiver.stop()
    await finished_race(hub, clock)
    assert await archiver.drain_once() == 1
    await archiver.count_once()
    text = hub.metrics.render().decode()
    assert 'crescent_archive_games{kind="room"} 1.0' in text
    assert 'crescent_archive_games{kind="daily"} 0.0' in text
    assert "crescent_archive_racers 2.0" in text
    assert "crescent_archive_tournaments 0.0" in text and "crescent_archive_daily_days 0.0" in text
    # The loop the server runs (started with the drainer): counts again and again.
    counted: asyncio.Queue[ArchiveCounts] = asyncio.Queue()
    archiver.on_counts = counted.put_nowait
    archiver.counts_interval_s = 0.05
    archiver.start()
    await finished_race(hub, clock)
    async with asyncio.timeout(20):
        while (await counted.get()).games[GameKind.ROOM] != 2:
            pass
    await archiver.stop()
