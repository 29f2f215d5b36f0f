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
import dataclasses
import json
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, NamedTuple

from server.core.archive import (
    EXPIRE_BATCH,
    RETENTION_MS,
    Action,
    Archive,
    ArchiveBatch,
    ArchivedDailyDay,
    ArchivedGame,
    ArchivedRacer,
    ArchivedTournament,
    ArchiveError,
    DailyPlacing,
    GameKind,
    RacerResult,
    TournamentPlacing,
)
from server.core.games import untimed
from server.core.periodic import run_periodically
from server.core.ports import BoardEntry, Clock, DailyStorage, Outbox, OutboxEntry, Storage
from server.core.replay import parse_replay, replay_document
from server.daily import DAY_MS, Day, reveal_at
from server.game import DealCode
from server.lobby import Room
from server.logs import RepeatedEvent
from server.tournament import Tournament

log = logging.getLogger("server.archive")

DRAIN_BATCH = 100  # records written by one archive transaction, at most
LEASE_MS = 60_000  # a claimed entry is another drainer's again after this
IDLE_S = 1.0  # with nothing due, look again after this (other processes' entries)
GATHER_S = 0.25  # after a wake, wait this long so that a batch gathers
REPORT_EVERY_S = 1.0  # the lag gauges are refreshed this often
RETRY_S = (0.5, 1.0, 2.0, 5.0)  # after a failed write; the last repeats
JOBS_INTERVAL_S = 60.0  # the revealed daily days and the retention job, this often
EXPIRE_EVERY_MS = 3_600_000  # the retention job, at most this often per process
EXPIRE_CALL = EXPIRE_BATCH  # games deleted by one call (one short transaction)
DAY_BOARD_ROWS = 1_000  # a daily day's record keeps its board's top rows
BOARDS = ("ranked", "late")
STOP_PUT_WAIT_S = 2.0  # at shutdown, games being put get this long
PUT_ATTEMPTS = 3  # a record that Redis refused this often is logged and given up
RECOVER_AFTER_MS = 30_000  # a race's end noted, its record not put this long after: put it


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
    results = {row.player: row for row in room.results}
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
                    rank=row.rank,
                    status=row.status,
                    time_ms=row.time_ms,
                    moves=row.moves,
                    foundation=row.foundation,
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


class Ending(NamedTuple):
    """A race about to end (noted before its end is stored): if the process dies
    between the end and putting the game's record, a drainer finds this note
    :data:`RECOVER_AFTER_MS` later and puts the record itself."""

    room: str
    round: int


Record = ArchivedGame | ArchivedTournament | ArchivedDailyDay


def ending_id(room: str, round_: int) -> str:
    return f"ending:{room}:{round_}"


def record_id(record: Record) -> str:
    """The outbox entry's id: the game's own; ``tournament:<code>``, ``daily:<day>``."""
    if isinstance(record, ArchivedGame):
        return record.id
    if isinstance(record, ArchivedTournament):
        return f"tournament:{record.id}"
    return f"daily:{record.day}"


def encode_record(record: Record) -> bytes:
    """An outbox entry's bytes (JSON): a game as its replay document with its
    ``revealed_at``; a finished tournament or daily day as its fields."""
    document: dict[str, Any]
    if isinstance(record, ArchivedGame):
        document = {"game": replay_document(record), "revealed_at": record.revealed_at}
    elif isinstance(record, ArchivedTournament):
        document = {
            "tournament": {
                **{f: getattr(record, f) for f in _TOURNAMENT_FIELDS},
                "standings": [dataclasses.astuple(s) for s in record.standings],
                "games": list(record.games),
            }
        }
    else:
        document = {
            "daily_day": {
                **{f: getattr(record, f) for f in _DAY_FIELDS},
                "board": [dataclasses.astuple(row) for row in record.board],
            }
        }
    return json.dumps(document, separators=(",", ":")).encode()


_TOURNAMENT_FIELDS = ("id", "name", "variant", "started_at", "ended_at", "revealed_at")
_DAY_FIELDS = ("day", "deal", "revealed_at", "attempts")


def decode_record(record: bytes) -> Record | Ending:
    """The record of an outbox entry (:class:`ArchiveError` ``bad_record`` if it is not
    one)."""
    try:
        document = json.loads(record)
        if "ending" in document:
            return Ending(str(document["ending"]["room"]), int(document["ending"]["round"]))
        if "game" in document:
            return parse_replay(document["game"], revealed_at=int(document["revealed_at"]))
        if "tournament" in document:
            t = document["tournament"]
            return ArchivedTournament(
                **{f: t[f] for f in _TOURNAMENT_FIELDS},
                standings=tuple(TournamentPlacing(*row) for row in t["standings"]),
                games=tuple(t["games"]),
            )
        day = document["daily_day"]
        return ArchivedDailyDay(
            **{f: day[f] for f in _DAY_FIELDS},
            board=tuple(DailyPlacing(*row) for row in day["board"]),
        )
    except ArchiveError:
        raise
    except (ValueError, TypeError, KeyError) as exc:
        raise ArchiveError("bad_record", f"not an outbox record: {exc!r}") from exc


def archived_tournament(t: Tournament, games: Sequence[str]) -> ArchivedTournament:
    """A finished tournament's record: its final standings (for time scoring,
    ``points`` holds the time charged in ms) and its rounds' game ids."""
    assert t.finished_at is not None
    return ArchivedTournament(
        id=t.code,
        name=t.name,
        variant=t.variant,
        started_at=t.created_at,
        ended_at=t.finished_at,
        revealed_at=t.finished_at,
        standings=tuple(
            TournamentPlacing(
                rank=int(row["rank"]),
                player=str(row["id"]),
                name=str(row["name"]),
                points=int(row.get("points") or row.get("time_charged_ms") or 0),
            )
            for row in t.standings()
        ),
        games=tuple(games),
    )


def archived_day(
    day: Day, deal: str, revealed_at: int, attempts: int, top: Sequence[BoardEntry]
) -> ArchivedDailyDay:
    """A revealed daily day's record: its deal, how many attempts, its ranked board's
    top rows (every attempt is an archived game too: the deal's board has them all)."""
    return ArchivedDailyDay(
        day=str(day),
        deal=deal,
        revealed_at=revealed_at,
        attempts=attempts,
        board=tuple(
            DailyPlacing(
                rank=row.rank,
                player=row.player_id,
                name=row.entry.name,
                status=row.entry.status,
                time_ms=row.entry.time_ms or 0,
                moves=row.entry.moves,
            )
            for row in top
        ),
    )


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
        daily_attempt_limit_ms: int = 3_600_000,
        jobs_interval_s: float = JOBS_INTERVAL_S,
        gather_s: float = GATHER_S,
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
        self.daily_attempt_limit_ms = daily_attempt_limit_ms  # a day's reveal, with it
        self.jobs_interval_s = jobs_interval_s
        self.gather_s = gather_s
        self._next_report = 0.0  # loop time of the next refresh of the lag gauges
        self.outage = RepeatedEvent(log, "archive unavailable: finished games wait in the outbox")
        self.written = 0  # games this process wrote to the archive (new ones)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._jobs_task: asyncio.Task[None] | None = None
        self._days_put: set[Day] = set()
        self._stopping = False
        self._failures = 0  # the drainer's failed passes in a row (its retry pause)
        self._last_expire: int | None = None  # the clock at the last retention job
        self.jobs_failing = RepeatedEvent(log, "archive jobs failing (daily days, retention)")
        self._puts: set[asyncio.Task[str]] = set()
        # Set after each pass of the drainer that left nothing due (tests wait on it).
        self.caught_up = asyncio.Event()

    # ------------------------------------------------------------------ the end of a game

    def on_room_finished(self, room: Room) -> None:
        """Told of every race this process finished (the end is stored already)."""
        if room.start_at is not None and room.finished_at is not None and room.results:
            self._track(self.put_room(room))

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
        """Put the finished race's record in the outbox (again: nothing added), then drop
        the note of its end; the record's id."""
        put = await self.put(await self.archived_game(room))
        await self.outbox.remove([ending_id(room.code, room.round)])
        return put

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
        await self.put(await self.archived_game(room))

    async def put(self, record: Record) -> str:
        """Put a record in the outbox (one already waiting under its id: nothing added),
        trying :data:`PUT_ATTEMPTS` times; its entry id."""
        entry = OutboxEntry(record_id(record), encode_record(record), self.clock())
        for attempt in range(PUT_ATTEMPTS):
            try:
                await self.outbox.put([entry])
                break
            except Exception:
                if attempt == PUT_ATTEMPTS - 1:
                    log.exception(
                        "a finished record could not be put in the outbox: not archived",
                        extra={"entry": entry.id},
                    )
                    raise
                await asyncio.sleep(self.retry_s[min(attempt, len(self.retry_s) - 1)])
        self._wake.set()
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

    def _track(self, coro: Coroutine[Any, Any, str]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._puts.add(task)
        task.add_done_callback(self._put_done)

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
        self._stopping = False
        loop = asyncio.get_running_loop()
        self._task = loop.create_task(self.run(), name="archive-drainer")
        self._jobs_task = loop.create_task(self.run_jobs(), name="archive-jobs")

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
        if self._stopping:  # a cancellation a library swallowed: end all the same
            raise asyncio.CancelledError
        await self.put_revealed_days()
        now = self.clock()
        if self._last_expire is None or now - self._last_expire >= EXPIRE_EVERY_MS:
            deleted = await self.expire()
            self._last_expire = now
            if deleted:
                log.info("archive retention", extra={"deleted": deleted})

    async def stop(self) -> None:
        """Wait a moment for games still being put in the outbox (a game that never
        reached it is lost), then stop the drainer: what is put waits for the next."""
        if self._puts:
            await asyncio.wait(set(self._puts), timeout=STOP_PUT_WAIT_S)
        # The flag and the wake end the drainer's loop even if a library swallowed the
        # cancellation (seen in the tests: a drainer left "cancelling" for good).
        self._stopping = True
        self._wake.set()
        for task in (self._task, self._jobs_task):
            while task is not None and not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=1.0)
        self._task = self._jobs_task = None

    async def run(self) -> None:
        """Drain until cancelled (server/core/periodic.py): at once while whole batches
        come, else when a put here wakes it or after ``idle_s`` (other processes'
        entries); after a failure, the next of ``retry_s``."""
        self._failures = 0
        self._next_report = 0.0
        await run_periodically(
            self.drain_step,
            self.idle_s,
            name="archive drainer",
            log=log,
            run_first=True,
            wait=self._pause,
            outage=self.outage,
        )

    async def drain_step(self) -> float:
        """One pass of the drainer; how long to wait for the next one."""
        if self._stopping:  # a cancellation a library swallowed: end all the same
            raise asyncio.CancelledError
        try:
            drained = await self.drain_once()
            now = asyncio.get_running_loop().time()
            if now >= self._next_report:  # the gauges, about once a second
                await self._report_lag()
                self._next_report = now + REPORT_EVERY_S
        except Exception:
            self._failures += 1
            raise
        self._failures = 0
        if drained < self.batch:
            self.caught_up.set()
            self._wake.clear()
            return self.idle_s
        return 0.0

    async def _pause(self, delay: float) -> None:
        if self._failures:
            await asyncio.sleep(self.retry_s[min(self._failures - 1, len(self.retry_s) - 1)])
            return
        if delay <= 0:
            await asyncio.sleep(0)
            return
        # Until a put here wakes it, or ``delay``. Not asyncio.wait_for: on 3.11 its inner
        # task could keep a cancelled drainer (the server's shutdown) waiting.
        timer = asyncio.get_running_loop().call_later(delay, self._wake.set)
        try:
            await self._wake.wait()
        finally:
            timer.cancel()
        # Woken by a put: let the games ending meanwhile join it, so that a busy server
        # writes batches (one transaction each), not a game at a time.
        if self.gather_s and not self._stopping:
            await asyncio.sleep(self.gather_s)

    async def drain_once(self) -> int:
        """Claim a batch of due entries, write it, remove it; how many were claimed."""
        now = self.clock()
        entries = await self.outbox.claim(
            now=now, due_by=now - self.drain_delay_ms, limit=self.batch, lease_ms=self.lease_ms
        )
        if not entries:
            return 0
        records: list[Record] = []
        for entry in entries:
            try:
                decoded = decode_record(entry.record)
                if isinstance(decoded, Ending):
                    await self.recover(decoded)
                else:
                    records.append(decoded)
            except ArchiveError as exc:  # never archivable: it would block the outbox
                log.error(
                    "outbox entry is not an archive record: dropped",
                    extra={"entry": entry.id, "error": exc.message},
                )
        report = await self.archive.write(
            ArchiveBatch(
                games=tuple(r for r in records if isinstance(r, ArchivedGame)),
                tournaments=tuple(r for r in records if isinstance(r, ArchivedTournament)),
                daily_days=tuple(r for r in records if isinstance(r, ArchivedDailyDay)),
            )
        )
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
