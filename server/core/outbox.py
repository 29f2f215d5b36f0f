"""The archive's outbox: every finished game put in Redis by the process that finished
it, drained into the archive by a background task (docs/archive.md, "The outbox").

- :meth:`Archiver.on_room_finished` is told of every race this process finished (room
  races, daily attempts, tournament rounds, practice games: all are rooms, and every
  room ends in :meth:`server.core.rooms.Rooms.finish`). Right after the end's
  compare-and-set it reads the racers' logs and puts the game's record in the outbox,
  keyed by a stable id (``<room code>-<round>-<start_at in base 36>``), so a repeat of
  the same end adds nothing. Nothing on the act path waits for it, and nothing waits
  for PostgreSQL.
- :meth:`Archiver.run` (one per process) claims due entries with a lease (another
  process's drainer skips them meanwhile), writes them to the archive in one batch and
  removes them only once the write succeeded. The archive's write is idempotent by id,
  so a crash between the write and the removal writes nothing twice. A database outage
  leaves the entries waiting: one log line when it starts, one when it is over.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from server.core.archive import (
    Action,
    Archive,
    ArchiveBatch,
    ArchivedGame,
    ArchivedRacer,
    ArchiveError,
    GameKind,
    RacerResult,
)
from server.core.games import untimed
from server.core.ports import Clock, DailyStorage, Outbox, OutboxEntry, Storage
from server.core.replay import parse_replay, replay_document
from server.daily import Day
from server.game import DealCode
from server.lobby import Room
from server.logs import RepeatedEvent

log = logging.getLogger("server.archive")

DRAIN_BATCH = 100  # records written by one archive transaction, at most
LEASE_MS = 60_000  # a claimed entry is another drainer's again after this
IDLE_S = 1.0  # with nothing due, look again after this (other processes' entries)
RETRY_S = (0.5, 1.0, 2.0, 5.0)  # after a failed write; the last repeats
STOP_PUT_WAIT_S = 2.0  # at shutdown, games being put get this long
PUT_ATTEMPTS = 3  # a record that Redis refused this often is logged and given up


def game_id(room: Room) -> str:
    """The archived game's id: stable for one round's end (a retry makes the same), and
    new for a room code reused after its keys expired (the start time differs).

    >>> from dataclasses import replace
    >>> game_id(replace(_example_room(), round=2, start_at=1_764_590_400_000))
    'KQZTRW-2-min3kao0'
    """
    assert room.start_at is not None
    return f"{room.code}-{room.round}-{_base36(room.start_at)}"


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        number, digit = divmod(number, 36)
        text = digits[digit] + text
        if number == 0:
            return text


def kind_of(room: Room) -> GameKind:
    """A tournament's round, a daily attempt (or a practice game of the daily's sealed
    deal: :meth:`Archiver.archived_game` tells them apart), a practice game (one seat)
    or a room race."""
    if room.tournament is not None:
        return GameKind.TOURNAMENT
    if room.deal_sealed_until is not None:
        return GameKind.DAILY
    if room.seats == 1:
        return GameKind.PRACTICE
    return GameKind.ROOM


def archived_game(
    room: Room, logs: Sequence[Sequence[str]], *, kind: GameKind | None = None
) -> ArchivedGame:
    """The archive record of a finished room's race: ``logs`` are the entrants' stored
    action logs in seat order (``"p3-ad@5120"``: the action and its ms after the start;
    an action stored without its time gets the one before it)."""
    assert room.start_at is not None and room.finished_at is not None and room.results
    kind = kind or kind_of(room)
    results = {row["player"]: row for row in room.results}
    racers = []
    for (player, name), log_entries in zip(room.entrants, logs, strict=True):
        actions, last = [], 0
        for entry in log_entries:
            action, offset = untimed(entry)
            last = max(last, offset) if offset is not None else last
            actions.append(Action(last, action))
        row = results[player]
        racers.append(
            ArchivedRacer(
                player=player,
                name=name,
                actions=tuple(actions),
                result=RacerResult(
                    rank=row["rank"],
                    status=row["status"],
                    time_ms=row["time_ms"],
                    moves=row["moves"],
                    foundation=row["foundation"],
                ),
            )
        )
    revealed_at = room.finished_at
    origin = room.code
    if room.tournament is not None:
        origin = room.tournament
    elif room.deal_sealed_until is not None:  # a sealed day stays sealed in the archive
        revealed_at = max(revealed_at, room.deal_sealed_until)
        origin = str(Day.of(room.created_at))
    elif kind == GameKind.PRACTICE:
        origin = ""
    return ArchivedGame(
        id=game_id(room),
        kind=kind,
        deal=room.deal,
        variant=str(DealCode.parse(room.deal).variant),
        origin=origin,
        start_at=room.start_at,
        ended_at=room.finished_at,
        revealed_at=revealed_at,
        racers=tuple(racers),
    )


def encode_record(game: ArchivedGame) -> bytes:
    """An outbox entry's bytes: the replay document with its ``revealed_at``."""
    return json.dumps(
        {"game": replay_document(game), "revealed_at": game.revealed_at}, separators=(",", ":")
    ).encode()


def decode_record(record: bytes) -> ArchivedGame:
    """The game of an outbox entry (:class:`ArchiveError` if it is not one)."""
    try:
        document = json.loads(record)
    except ValueError as exc:
        raise ArchiveError("bad_record", f"not JSON: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("revealed_at"), int):
        raise ArchiveError("bad_record", "not an outbox record")
    game = parse_replay(document.get("game"))
    return dataclasses.replace(game, revealed_at=document["revealed_at"])


class Archiver:
    """Puts finished games in the outbox and drains it into the archive (one per
    process; module docstring)."""

    def __init__(
        self,
        storage: Storage,
        daily_storage: DailyStorage,
        outbox: Outbox,
        archive: Archive,
        clock: Clock,
        *,
        drain_delay_ms: int = 0,
        batch: int = DRAIN_BATCH,
        lease_ms: int = LEASE_MS,
        idle_s: float = IDLE_S,
        retry_s: Sequence[float] = RETRY_S,
        on_lag: Callable[[int, float], None] = lambda pending, oldest_s: None,
    ) -> None:
        self.storage = storage
        self.daily_storage = daily_storage
        self.outbox = outbox
        self.archive = archive
        self.clock = clock
        # Test only (CRESCENT_ARCHIVE_DRAIN_DELAY_S): an entry is drained once this old.
        self.drain_delay_ms = drain_delay_ms
        self.batch = batch
        self.lease_ms = lease_ms
        self.idle_s = idle_s
        self.retry_s = tuple(retry_s)
        self.on_lag = on_lag  # (entries waiting, age of the oldest in s): the gauges
        self.outage = RepeatedEvent(log, "archive unavailable: finished games wait in the outbox")
        self.written = 0  # games this process wrote to the archive (new ones)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._puts: set[asyncio.Task[str]] = set()
        # Set after each pass of the drainer that left nothing due (tests wait on it).
        self.caught_up = asyncio.Event()

    # ------------------------------------------------------------------ the end of a game

    def on_room_finished(self, room: Room) -> None:
        """Told of every race this process finished (the end is stored already)."""
        if room.start_at is not None and room.finished_at is not None and room.results:
            task = asyncio.get_running_loop().create_task(self.put_room(room))
            self._puts.add(task)
            task.add_done_callback(self._put_done)

    def _put_done(self, task: asyncio.Task[str]) -> None:
        self._puts.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.debug("outbox put failed", extra={"error": repr(task.exception())})

    async def put_room(self, room: Room) -> str:
        """Put the finished race's record in the outbox (again: nothing added); its id."""
        game = await self.archived_game(room)
        entry = OutboxEntry(game.id, encode_record(game), self.clock())
        for attempt in range(PUT_ATTEMPTS):
            try:
                await self.outbox.put([entry])
                break
            except Exception:
                if attempt == PUT_ATTEMPTS - 1:
                    log.exception(
                        "a finished game could not be put in the outbox: not archived",
                        extra={"game": game.id},
                    )
                    raise
                await asyncio.sleep(self.retry_s[min(attempt, len(self.retry_s) - 1)])
        self._wake.set()
        return game.id

    async def archived_game(self, room: Room) -> ArchivedGame:
        logs = [
            (await self.storage.load_game(room.code, room.round, player)).actions
            for player, _ in room.entrants
        ]
        kind = kind_of(room)
        if kind == GameKind.DAILY:  # the ranked attempt, or a practice of the day's deal
            player = room.entrants[0][0]
            day = str(Day.of(room.created_at))
            if await self.daily_storage.attempt_of(day, player) != room.code:
                kind = GameKind.PRACTICE
        return archived_game(room, logs, kind=kind)

    # ------------------------------------------------------------------ the drainer

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self.run(), name="archive-drainer")

    async def stop(self) -> None:
        """Wait a moment for games still being put in the outbox (a game that never
        reached it is lost), then stop the drainer: what is put waits for the next."""
        if self._puts:
            await asyncio.wait(set(self._puts), timeout=STOP_PUT_WAIT_S)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def run(self) -> None:
        failures = 0
        while True:
            try:
                drained = await self.drain_once()
                if failures:
                    self.outage.recovered()
                    failures = 0
                await self._report_lag()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.outage.occurred(error=repr(exc))
                await asyncio.sleep(self.retry_s[min(failures, len(self.retry_s) - 1)])
                failures += 1
                continue
            if drained < self.batch:
                self.caught_up.set()
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.idle_s)

    async def drain_once(self) -> int:
        """Claim a batch of due entries, write it, remove it; how many were claimed."""
        now = self.clock()
        entries = await self.outbox.claim(
            now=now, due_by=now - self.drain_delay_ms, limit=self.batch, lease_ms=self.lease_ms
        )
        if not entries:
            return 0
        games = []
        for entry in entries:
            try:
                games.append(decode_record(entry.record))
            except ArchiveError as exc:  # never archivable: it would block the outbox
                log.error(
                    "outbox entry is not an archive record: dropped",
                    extra={"entry": entry.id, "error": exc.message},
                )
        report = await self.archive.write(ArchiveBatch(games=tuple(games)))
        self.written += report.games
        await self.outbox.remove([entry.id for entry in entries])
        return len(entries)

    async def _report_lag(self) -> None:
        stats = await self.outbox.stats()
        oldest_s = 0.0
        if stats.oldest_put_at is not None:
            oldest_s = max(0.0, (self.clock() - stats.oldest_put_at) / 1000)
        self.on_lag(stats.pending, oldest_s)

    async def lag(self) -> dict[str, Any]:
        """For /healthz: entries waiting, the oldest one's age, whether the archive is
        answering (as the drainer last found it)."""
        stats = await self.outbox.stats()
        oldest_s = 0.0
        if stats.oldest_put_at is not None:
            oldest_s = max(0.0, (self.clock() - stats.oldest_put_at) / 1000)
        return {
            "pending": stats.pending,
            "oldest_pending_s": round(oldest_s, 3),
            "archive": "down" if self.outage.active else "up",
        }


def _example_room() -> Room:
    return Room(
        code="KQZTRW",
        host=None,
        variant="N",
        deal="CR1-N-AAAAAAB",
        deal_public=False,
        seats=2,
        time_limit=None,
    )
