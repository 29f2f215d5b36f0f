"""The archive's outbox: every finished game put in Redis by the process that finished
it, drained into the archive by a background task (docs/archive.md, "The outbox").

- :meth:`Archiver.on_room_finished` is told of every race this process finished (room
  races, daily attempts, tournament rounds, practice games: all are rooms, and every
  room ends in :meth:`server.core.rooms.Rooms.finish`). Right after the end's
  compare-and-set it reads the racers' logs and puts the game's record in the outbox,
  keyed by a stable id (``<room code>-<round>-<start_at in base 36>``), so a repeat of
  the same end adds nothing. Nothing on the act path waits for it, and nothing waits
  for PostgreSQL. The records themselves: :mod:`server.core.archive_records`.
- The :class:`~server.core.outbox_drainer.Drainer` (one per process, owned by the
  :class:`Archiver`) writes what is put to the archive, exactly once.
- The archive's jobs (every minute): the revealed daily days' records, the retention.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from server.core.archive import (
    EXPIRE_BATCH,
    RETENTION_MS,
    Archive,
    ArchiveCounts,
    GameKind,
)
from server.core.archive_records import (
    Ending,
    Record,
    archived_day,
    archived_tournament,
    encode_game,
    encode_record,
    ending_id,
    game_fields,
    game_id,
    kind_of,
    record_id,
)
from server.core.outbox_drainer import REPORT_EVERY_S, RETRY_S, Drainer
from server.core.periodic import run_periodically
from server.core.ports import Clock, DailyStorage, Outbox, OutboxEntry, Storage
from server.daily import DAY_MS, Day, reveal_at
from server.lobby import Room
from server.logs import RepeatedEvent
from server.tournament import Tournament

log = logging.getLogger("server.archive")

JOBS_INTERVAL_S = 60.0  # the revealed daily days and the retention job, this often
EXPIRE_EVERY_MS = 3_600_000  # the retention job, at most this often per process
EXPIRE_CALL = EXPIRE_BATCH  # games deleted by one call (one short transaction)
DAY_BOARD_ROWS = 1_000  # a daily day's record keeps its board's top rows
BOARDS = ("ranked", "late")
STOP_PUT_WAIT_S = 2.0  # at shutdown, games being put get this long
PUT_ATTEMPTS = 3  # a record that Redis refused this often is logged and given up
RECOVER_AFTER_MS = 30_000  # a race's end noted, its record not put this long after: put it
# The archive's row counts for /metrics, this often: a few index-only counts (rows a
# second on a 1,000,000-game archive: docs/archive.md), for an operator's dashboard.
COUNTS_INTERVAL_S = 300.0


class Archiver:
    """Puts finished games in the outbox; its :class:`Drainer` drains it into the
    archive (one per process; module docstring)."""

    def __init__(
        self,
        storage: Storage,
        daily_storage: DailyStorage,
        outbox: Outbox,
        archive: Archive,
        clock: Clock,
        *,
        drain_delay_ms: int = 0,
        on_lag: Callable[[int, float], None] = lambda pending, oldest_s: None,
        daily_attempt_limit_ms: int = 3_600_000,
        jobs_interval_s: float = JOBS_INTERVAL_S,
        on_counts: Callable[[ArchiveCounts], None] | None = None,
        counts_interval_s: float = COUNTS_INTERVAL_S,
        put_delay_s: float = 0.0,
        drains: bool = True,
    ) -> None:
        self.storage = storage
        self.daily_storage = daily_storage
        self.outbox = outbox
        self.clock = clock
        self.drainer = Drainer(
            outbox,
            archive,
            clock,
            self.recover,
            drain_delay_ms=drain_delay_ms,
            on_lag=on_lag,
        )
        self.retry_s = RETRY_S  # between the attempts of a put, as between failed writes
        # Test only (CRESCENT_ARCHIVE_PUT_DELAY_S): a race's record is put this long
        # after its end (the crash test's window between the end and the put).
        self.put_delay_s = put_delay_s
        self.daily_attempt_limit_ms = daily_attempt_limit_ms  # a day's reveal, with it
        # False: another process drains the outbox and runs the jobs (the archive
        # writer, ``--archive-writer process``); this one only puts what it finishes.
        self.drains = drains
        self.jobs_interval_s = jobs_interval_s
        self._loops: list[asyncio.Task[None]] = []  # what start() runs, until stop()
        self.on_counts = on_counts  # the archive's row counts (the /metrics gauges)
        self.counts_interval_s = counts_interval_s
        self._days_put: set[Day] = set()
        self._last_expire: int | None = None  # the clock at the last retention job
        self.jobs_failing = RepeatedEvent(log, "archive jobs failing (daily days, retention)")
        self._puts: set[asyncio.Task[str]] = set()
        self._putting: dict[tuple[str, int], asyncio.Task[str]] = {}  # by (room, round)

    # The drainer's, as the server and the tests see them.

    @property
    def archive(self) -> Archive:
        return self.drainer.archive

    @property
    def written(self) -> int:
        """Games this process wrote to the archive (new ones)."""
        return self.drainer.written

    @property
    def caught_up(self) -> asyncio.Event:
        """Set after each pass of the drainer that left nothing due."""
        return self.drainer.caught_up

    async def drain_once(self) -> int:
        return await self.drainer.drain_once()

    async def lag(self) -> dict[str, Any]:
        """For /healthz: the outbox's lag, and whether the archive answers (as this
        process's drainer last found it, or, where the writer process drains, now)."""
        if self.drains:
            return await self.drainer.lag()
        pending, oldest_s = await self.drainer.waiting()
        return {
            "pending": pending,
            "oldest_pending_s": round(oldest_s, 3),
            "archive": "up" if await self.archive.ping() else "down",
        }

    # ------------------------------------------------------------------ the end of a game

    def on_room_finished(self, room: Room) -> None:
        """Told of every race this process finished (the end is stored already)."""
        if room.start_at is not None and room.finished_at is not None and room.results:
            key = (room.code, room.round)
            task = self._track(self.put_room(room))
            self._putting[key] = task
            task.add_done_callback(lambda _: self._putting.pop(key, None))

    def _put_done(self, task: asyncio.Task[str]) -> None:
        self._puts.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.debug("outbox put failed", extra={"error": repr(task.exception())})

    async def before_finish(self, room: Room) -> None:
        """Note in the outbox that the race is about to end (the note is due only
        :data:`RECOVER_AFTER_MS` later, and removed once the record is put). A note
        that cannot be put delays nothing: the end goes on, as before."""
        note = {"ending": {"room": room.code, "round": room.round}}
        entry = OutboxEntry(
            ending_id(room.code, room.round),
            json.dumps(note).encode(),
            self.clock() + RECOVER_AFTER_MS,
        )
        try:
            await self.outbox.put([entry])
        except Exception as exc:
            log.info("could not note a race's end for the archive", extra={"error": repr(exc)})

    async def put_room(self, room: Room) -> str:
        """Put the finished race's record in the outbox (again: nothing added) and drop
        the note of its end, in one step; the record's id."""
        if self.put_delay_s:
            await asyncio.sleep(self.put_delay_s)
        entry = await self.game_entry(room)
        return await self.put_entry(entry, replacing=[ending_id(room.code, room.round)])

    async def before_next_round(self, room: Room) -> None:
        """A finished race's room is about to move to its next round (a rematch): from
        then on its end cannot be recovered from the room. If the note of that end is
        still waiting (its process died before putting the record, or is still at it),
        put the record now from the room as it stands (a second put adds nothing). A
        failure (the outbox's Redis not answering) refuses the rematch with
        ``internal_error`` and the client asks again: the record is safe before the
        round it belongs to is gone."""
        if room.phase != "finished" or room.start_at is None or not room.results:
            return
        putting = self._putting.get((room.code, room.round))
        if putting is not None:
            # This process is putting that record already (a rematch asked for at once,
            # as a bot or a quick player does): wait for it rather than make it again.
            with contextlib.suppress(Exception):  # failed: the note decides, below
                await asyncio.shield(putting)
                return
        if await self.outbox.holds(ending_id(room.code, room.round)):
            log.info("archiving a race before its rematch", extra={"room": room.code})
            await self.put_room(room)

    async def recover(self, ending: Ending) -> None:
        """A race's end was noted and its record never put (the process died between):
        put it now if the room still shows that round finished."""
        room = await self.storage.load_room(ending.room)
        if room is not None and room.round == ending.round and room.underway:
            return  # the end was never stored: the race is still on (a new note comes)
        if (
            room is None
            or room.round != ending.round
            or room.phase != "finished"
            or room.start_at is None
            or room.finished_at is None
            or not room.results
        ):
            log.warning(
                "a finished race could not be recovered for the archive",
                extra={"room": ending.room, "round": ending.round},
            )
            return
        log.info("archiving a race whose process died", extra={"room": room.code})
        await self.put_entry(await self.game_entry(room))

    async def put(self, record: Record) -> str:
        """Put a record in the outbox (one already waiting under its id: nothing added);
        its entry id."""
        return await self.put_entry(
            OutboxEntry(record_id(record), encode_record(record), self.clock())
        )

    async def put_entry(self, entry: OutboxEntry, *, replacing: Sequence[str] = ()) -> str:
        """Put an entry, dropping the entries ``replacing`` names, trying
        :data:`PUT_ATTEMPTS` times; its id."""
        for attempt in range(PUT_ATTEMPTS):
            try:
                await self.outbox.put([entry], replacing=replacing)
                break
            except Exception:
                if attempt == PUT_ATTEMPTS - 1:
                    log.exception(
                        "a finished record could not be put in the outbox: not archived",
                        extra={"entry": entry.id},
                    )
                    raise
                await asyncio.sleep(self.retry_s[min(attempt, len(self.retry_s) - 1)])
        if self.drains:
            self.drainer.wake.set()
        return entry.id

    def on_tournament_finished(self, t: Tournament) -> None:
        """Told of every tournament this process finished: its standings and games."""
        if t.finished_at is not None:
            self._track(self.put_tournament(t))

    async def put_tournament(self, t: Tournament) -> str:
        games = []
        for summary in t.finished_rounds:  # a round's room gone from Redis: left out
            room = await self.storage.load_room(summary.room)
            if room is not None and room.start_at is not None and room.tournament == t.code:
                games.append(game_id(room))
        return await self.put(archived_tournament(t, games))

    async def put_revealed_days(self) -> list[str]:
        """Put every daily day revealed in the last two days and not put by this process
        yet (another process, or a restart, may put it again: written once all the same)."""
        now = self.clock()
        put = []
        for back in range(3):
            day = Day.of(now - back * DAY_MS)
            revealed = reveal_at(day, self.daily_attempt_limit_ms)
            if revealed > now or day in self._days_put:
                continue
            (stored,) = await self.daily_storage.load_days([str(day)])
            if stored is None:  # no challenge that day
                self._days_put.add(day)
                continue
            attempts = sum(
                [await self.daily_storage.board_size(str(day), board) for board in BOARDS]
            )
            top = await self.daily_storage.board_top(str(day), "ranked", DAY_BOARD_ROWS)
            deal = stored.commitment.code
            put.append(await self.put(archived_day(day, deal, revealed, attempts, top)))
            self._days_put.add(day)
        return put

    async def expire(self) -> int:
        """The retention job (docs/archive.md, "Retention"): delete the games past their
        kind's retention, a batch at a time; how many."""
        deleted = 0
        while True:
            batch = await self.archive.expire(RETENTION_MS, now=self.clock())
            deleted += batch
            if batch < EXPIRE_CALL:
                return deleted

    def _track(self, coro: Coroutine[Any, Any, str]) -> asyncio.Task[str]:
        task = asyncio.get_running_loop().create_task(coro)
        self._puts.add(task)
        task.add_done_callback(self._put_done)
        return task

    async def game_entry(self, room: Room) -> OutboxEntry:
        """The finished race's outbox entry (``archive_records.game_fields``)."""
        logs = await self.storage.load_logs(room.code, room.round, [p for p, _ in room.entrants])
        kind = kind_of(room)
        if kind == GameKind.DAILY:  # the ranked attempt, or a practice of the day's deal
            player = room.entrants[0][0]
            day = str(Day.of(room.created_at))
            if await self.daily_storage.attempt_of(day, player) != room.code:
                kind = GameKind.PRACTICE
        fields = game_fields(room, logs, kind=kind)
        return OutboxEntry(fields["id"], encode_game(fields), self.clock())

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Drain the outbox and run the archive's jobs in this process (unless another
        process does: ``drains`` False)."""
        loop = asyncio.get_running_loop()
        if not self.drains:
            # The lag gauges all the same, from Redis (every process reports the same
            # figures): were only the writer to report them, a writer that is down would
            # leave its last figures standing in /metrics, and no alert would fire.
            lag = run_periodically(
                self.drainer.report_lag, REPORT_EVERY_S, name="archive lag", log=log
            )
            self._loops = [loop.create_task(lag, name="archive-lag")]
            return
        self.drainer.stopping = False
        self._loops = [
            loop.create_task(self.drainer.run(), name="archive-drainer"),
            loop.create_task(self.run_jobs(), name="archive-jobs"),
        ]
        if self.on_counts is not None:
            self._loops.append(loop.create_task(self.run_counts(), name="archive-counts"))

    async def run_jobs(self) -> None:
        """Every ``jobs_interval_s``: put the revealed daily days, and the retention job
        (at most once an hour). Either failing (Redis or the database down) is logged
        once per outage and tried again at the next turn (server/core/periodic.py)."""
        await run_periodically(
            self.jobs_once,
            self.jobs_interval_s,
            name="archive jobs",
            log=log,
            run_first=True,
            outage=self.jobs_failing,
        )

    async def jobs_once(self) -> None:
        if self.drainer.stopping:  # a cancellation a library swallowed: end all the same
            raise asyncio.CancelledError
        await self.put_revealed_days()
        now = self.clock()
        if self._last_expire is None or now - self._last_expire >= EXPIRE_EVERY_MS:
            deleted = await self.expire()
            self._last_expire = now
            if deleted:
                log.info("archive retention", extra={"deleted": deleted})

    async def run_counts(self) -> None:
        """Every ``counts_interval_s``: the archive's row counts to ``on_counts`` (a
        failure is logged once per outage, server/core/periodic.py)."""

        async def step() -> None:
            if self.drainer.stopping:  # a cancellation a library swallowed: end all the same
                raise asyncio.CancelledError
            await self.count_once()

        await run_periodically(
            step, self.counts_interval_s, name="archive counts", log=log, run_first=True
        )

    async def count_once(self) -> None:
        """The archive's row counts to ``on_counts``, once."""
        counts = await self.archive.counts()
        if self.on_counts is not None:
            self.on_counts(counts)

    async def stop(self) -> None:
        """Wait a moment for games still being put in the outbox (a game that never
        reached it is lost), then stop the drainer: what is put waits for the next."""
        if self._puts:
            await asyncio.wait(set(self._puts), timeout=STOP_PUT_WAIT_S)
        # The flag and the wake end the drainer's loop even if a library swallowed the
        # cancellation (seen in the tests: a drainer left "cancelling" for good).
        self.drainer.stopping = True
        self.drainer.wake.set()
        for task in self._loops:
            while not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=1.0)
        self._loops = []
