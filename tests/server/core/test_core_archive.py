"""The archive's outbox over in-memory adapters: a game ends, its record goes to the
outbox, the drainer writes it to the archive once; a failing archive leaves it waiting
(docs/archive.md, "The outbox")."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import pytest

from server.core.archive import ArchiveBatch, GameKind, WriteReport
from server.core.hub import Hub
from server.core.outbox import Archiver, decode_record
from server.core.ports import OutboxEntry
from server.core.replay import verify_game
from server.game import Game
from server.storage.memory_archive import MemoryArchive
from server.storage.memory_outbox import MemoryOutbox
from tests.server.core.test_core_act import act_slow
from tests.server.core_support import DEAL, ManualClock, connect, racing_room


def first_moves(count: int) -> list[str]:
    game = Game.from_code(DEAL)
    moves = []
    for _ in range(count):
        move = str(next(iter(game.legal_moves())))
        game.apply(move)
        moves.append(move)
    return moves


def archiver_of(hub: Hub) -> Archiver:
    assert hub.archiver is not None
    return hub.archiver


async def finished_race(hub: Hub, clock: ManualClock) -> str:
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
    await wait_for_puts(hub)
    return code


async def wait_for_puts(hub: Hub) -> None:
    archiver = archiver_of(hub)
    while archiver._puts:  # noqa: SLF001 (the test waits for the end's put)
        await next(iter(archiver._puts))  # noqa: SLF001


async def test_a_finished_race_is_put_in_the_outbox_and_archived_once(
    hub: Hub, clock: ManualClock
) -> None:
    archiver = archiver_of(hub)
    await archiver.stop()  # the test drains by hand
    code = await finished_race(hub, clock)
    outbox = archiver.outbox
    assert isinstance(outbox, MemoryOutbox)
    (entry,) = outbox.entries.values()
    game = decode_record(entry.record)
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
    hub: Hub, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "server.archive")
    archiver = archiver_of(hub)
    await archiver.stop()
    archive = DownArchive()
    archiver.archive = archive
    archiver.retry_s = (0.0,)
    await finished_race(hub, clock)
    clock.advance(5_000)
    lag = await archiver.lag()
    assert lag["pending"] == 1 and lag["oldest_pending_s"] >= 5.0

    archiver.lease_ms = 0  # each attempt claims it again at once
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
