"""The daily challenge in the core (docs/daily.md): preparing and committing days, the
one ranked attempt per player and day, leaderboards with live updates, streaks.

A daily attempt is a one-seat room created by the server, its deal sealed until the
day is revealed; its end (won, locked, resigned, the time limit) puts it on the board.
The pure parts are :mod:`server.daily`; storage is the ``DailyStorage`` port.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, replace
from typing import Any, Final

from crescent_wire import protocol as p
from crescent_wire.errors import ConflictError, DailyError, InternalError, ProtocolError
from server.config import Settings
from server.core import messages
from server.core.archive_records import game_id
from server.core.daily_board import board_data, board_row, review_lists, top_rows
from server.core.games import untimed
from server.core.periodic import run_periodically
from server.core.ports import (
    Clock,
    Connection,
    CpuBusy,
    CpuRunner,
    DailyStorage,
    Storage,
)
from server.core.room_codes import new_room_code
from server.core.rooms import Rooms
from server.core.session import Sessions, player_of
from server.daily import (
    Commitment,
    Day,
    DayRecord,
    InvalidDay,
    Result,
    days_to_prepare,
    is_late_identity,
    reveal_at,
    streaks,
)
from server.daily.review import DISQUALIFIED, UNDER_REVIEW, assess
from server.lobby import Member, Room
from server.tasks import cancel_and_wait

log = logging.getLogger("server.daily")

# The bus channel of the daily boards: a "room code" no room can have (lower case).
DAILY_CHANNEL: Final = "daily"
HISTORY_SHOWN: Final = 30
# A day's certification is leased to one process at a time (across processes, in
# storage): the others read its stored record instead of running the solver too. The
# holder renews the lease while the solver runs; a dead holder's lease lapses.
CERTIFY_LEASE_MS: Final = 30_000
CERTIFY_RENEW_S: Final = 10.0
# While a coming day has no record yet (another process is certifying it, or a try
# failed), the check comes back this soon instead of after daily_check_interval_s.
PENDING_CHECK_S: Final = 1.0
DealSource = Callable[[str], Awaitable[str]]
DAILY_REQUESTS = (p.DailyToday, p.DailyStart, p.DailyBoard, p.DailyDays, p.DailyMe)


def certify(variant: str, max_seconds: float) -> str:
    """A deal code the solver proved winnable (run in a worker process)."""
    from server.solver import certified_deal

    return str(certified_deal(variant, max_seconds=max_seconds).code)


def solver_deal_source(
    cpu: CpuRunner, max_seconds: float, *, wait_when_busy_s: float | None = None
) -> DealSource:
    """Deals the solver proved winnable, each drawn by ``cpu`` (off the event loop in the
    server: the compiled search holds the GIL for its whole run). When the runner is
    full, ``wait_when_busy_s`` None raises :class:`CpuBusy` at once (the caller has a
    fallback); otherwise it tries again after that many seconds (the daily must have a
    certified deal, and the jobs ahead of it are bounded by their own budgets)."""

    async def draw(variant: str) -> str:
        while True:
            try:
                return await cpu.run(certify, variant, max_seconds)
            except CpuBusy:
                if wait_when_busy_s is None:
                    raise
            await asyncio.sleep(wait_when_busy_s)

    return draw


def fixed_deal_source(code: str) -> DealSource:
    async def draw(variant: str) -> str:
        return code

    return draw


@dataclass
class Watch:
    day: Day
    board: str
    top: int
    around: int


class Daily:
    def __init__(
        self,
        storage: DailyStorage,
        rooms_storage: Storage,
        rooms: Rooms,
        sessions: Sessions,
        settings: Settings,
        clock: Clock,
        deal_source: DealSource,
        spawn: Callable[[Coroutine[Any, Any, Any]], None],
    ) -> None:
        self.storage = storage
        self.rooms_storage = rooms_storage
        self.rooms = rooms
        self.sessions = sessions
        self.clock = clock
        self.variant = settings.daily_variant
        self.time_limit_s = settings.daily_time_limit_s
        self.countdown_ms = settings.countdown_ms
        self.push_interval_s = settings.daily_push_interval_s
        self.check_interval_s = settings.daily_check_interval_s
        self.resign_offline_ms = round(settings.disconnect_resign_s * 1000)
        # Attempts whose last socket on this process closed (room code → player): once
        # the player has been offline for resign_offline_ms they are resigned here, since
        # Rooms' own sweep only sees rooms that still have a socket on this process.
        self.abandoned: dict[str, str] = {}
        self.deal_source = deal_source
        self.spawn = spawn
        self.watchers: dict[Connection, Watch] = {}
        self.dirty: set[str] = set()
        self._records: dict[Day, DayRecord] = {}
        self._preparing = asyncio.Lock()
        self._check_now = asyncio.Event()  # a request found a coming day missing
        self.owner = secrets.token_hex(8)  # this process, as a certification lease holder
        self._leases: set[str] = set()  # days this process is certifying right now
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def attempt_limit_ms(self) -> int:
        # Countdown included: a game started at 23:59:59 still ends before the reveal.
        return self.time_limit_s * 1000 + self.countdown_ms

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self.check_loop(), name="daily-check"),
            loop.create_task(self.push_loop(), name="daily-push"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            await cancel_and_wait(task)
        # A certification cut short: hand its lease back so another process (or this
        # one restarted) takes the day over at once rather than when the lease lapses.
        for day in list(self._leases):
            with contextlib.suppress(Exception):
                await self.storage.release_certification(day, self.owner)
        self._leases.clear()

    async def check_loop(self) -> None:
        """Prepare the coming days and finish stale attempts now and then. The solver
        runs here, never on a request's path (requests read stored records); its own
        task, so board pushes do not wait for it. A day still missing (certified by
        another process right now) is looked for again after ``PENDING_CHECK_S``."""
        await run_periodically(
            self.check,
            self.check_interval_s,
            name="daily check",
            log=log,
            run_first=True,
            wait=self._wait_for_check,
        )

    async def check(self) -> float:
        """One check: the coming days prepared, stale attempts finished (even if the
        preparation failed). Returns the delay before the next."""
        self._check_now.clear()
        delay = self.check_interval_s
        try:
            if not await self.prepare():
                delay = min(delay, PENDING_CHECK_S)
        finally:
            await self.sweep()
        return delay

    async def _wait_for_check(self, delay: float) -> None:
        # A request finding a day missing brings the next check forward, but never
        # to less than PENDING_CHECK_S after this one (a flood of requests must not
        # make the check spin).
        await asyncio.sleep(min(delay, PENDING_CHECK_S))
        if delay > PENDING_CHECK_S:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._check_now.wait(), delay - PENDING_CHECK_S)

    async def push_loop(self) -> None:
        """Push the boards that changed, at most once per ``push_interval_s``."""
        await run_periodically(
            self.push_and_resign, self.push_interval_s, name="daily push", log=log, run_first=True
        )

    async def push_and_resign(self) -> None:
        await self.push()
        await self.resign_abandoned()

    async def prepare(self) -> bool:
        """Make sure today, tomorrow and the day after have a committed deal (the
        background check's work; tests call it to run a check now). True when all three
        have a record. Each day is certified by one process at a time (a lease in
        storage) and stored once (SET NX); a process that finds the lease taken leaves
        the day to its holder and reads the stored record at a later check."""
        async with self._preparing:
            days = days_to_prepare(self.clock())
            stored = await self.storage.load_days([str(d) for d in days])
            ready = True
            for day, record in zip(days, stored, strict=True):  # today first
                parsed = (
                    DayRecord.from_record(record)
                    if record is not None
                    else await self._certify(day)
                )
                if parsed is None:
                    ready = False
                else:
                    self._records[day] = parsed
            return ready

    async def _certify(self, day: Day) -> DayRecord | None:
        """Draw, commit and store the day's deal if this process gets the day's lease;
        None when another process holds it."""
        key = str(day)
        if not await self.storage.claim_certification(key, self.owner, CERTIFY_LEASE_MS):
            return None
        self._leases.add(key)
        renew = asyncio.get_running_loop().create_task(self._renew_lease(key))
        try:
            # The lease's last holder may have stored the day between our look and claim.
            (record,) = await self.storage.load_days([key])
            if record is None:
                code = await self.deal_source(self.variant)
                fresh = DayRecord(
                    day, self.variant, Commitment.make(code), committed_at=self.clock()
                )
                record = await self.storage.create_day(key, fresh.to_record())
                if record == fresh.to_record():
                    log.info(
                        "daily committed",
                        extra={"day": key, "commitment": fresh.commitment.digest},
                    )
            return DayRecord.from_record(record)
        finally:
            await cancel_and_wait(renew)
            # Cut short here (shutdown), the day stays in _leases: stop() releases it.
            await self.storage.release_certification(key, self.owner)
            self._leases.discard(key)

    async def _renew_lease(self, day: str) -> None:
        while True:
            await asyncio.sleep(CERTIFY_RENEW_S)
            with contextlib.suppress(Exception):  # a lapse costs a duplicate draw at worst
                await self.storage.claim_certification(day, self.owner, CERTIFY_LEASE_MS)

    async def record(self, day: Day) -> DayRecord | None:
        """The day's record from this process's cache or storage, never computed here:
        None when it does not exist (yet). A coming day that is missing wakes the
        background check."""
        cached = self._records.get(day)
        if cached is not None:
            return cached
        (stored,) = await self.storage.load_days([str(day)])
        if stored is None:
            if day in days_to_prepare(self.clock()):
                self._check_now.set()
            return None
        parsed = self._records[day] = DayRecord.from_record(stored)
        return parsed

    # ------------------------------------------------------------------ requests

    async def handle(self, conn: Connection, msg: p.ClientMessage) -> p.ServerMessage:
        if isinstance(msg, p.DailyToday):
            return await self.today(conn, msg)
        if isinstance(msg, p.DailyStart):
            return await self.start_attempt(conn, msg)
        if isinstance(msg, p.DailyBoard):
            return await self.board(conn, msg)
        if isinstance(msg, p.DailyDays):
            return await self.days(msg)
        if isinstance(msg, p.DailyMe):
            return await self.me(conn, msg)
        raise InternalError(f"no daily handler for {type(msg).__name__}")

    async def _today_record(self) -> DayRecord:
        record = await self.record(Day.of(self.clock()))
        if record is None:
            raise DailyError("day_not_ready")
        return record

    async def today(self, conn: Connection, msg: p.DailyToday) -> p.DailyReply:
        player = player_of(conn)
        today = await self._today_record()
        tomorrow = await self.record(today.day.next())
        attempt = await self.storage.attempt_of(str(today.day), player.id)
        placed = await self.storage.board_entry(str(today.day), player.id)
        review = (await self.storage.reviews(str(today.day))).get(player.id) if attempt else None
        disqualified = review is not None and review.get("state") == DISQUALIFIED
        # Stamped as the reply goes out, after every wait: a client sets its clock by it.
        now = self.clock()
        you: dict[str, Any] = {
            "attempt": attempt,
            # A disqualified attempt is off the board, and finished all the same.
            "finished": placed is not None or disqualified,
            "board": placed[0] if placed else None,
            "result": board_row(placed[1]).to_wire() if placed else None,
            "disqualified": str(review.get("reason", "")) if review and disqualified else None,
        }
        limit = self.attempt_limit_ms
        return p.DailyReply(
            "daily",
            {
                "today": today.public_dict(now, limit),
                "tomorrow": tomorrow.public_dict(now, limit) if tomorrow else None,
                "time_limit": self.time_limit_s,
                "server_time": now,
                "you": you,
            },
            id=msg.id,
        )

    async def start_attempt(self, conn: Connection, msg: p.DailyStart) -> p.RoomSnapshot:
        player = player_of(conn)
        now = self.clock()
        today = Day.of(now)
        if msg.day is not None:
            asked = _parse_day(msg.day, "day")
            if asked < today:
                raise DailyError("day_over")
            if asked > today:
                raise DailyError("day_not_found", "That day has not started yet")
        record = await self._today_record()
        day = str(today)
        code = new_room_code()
        if msg.practice:
            if await self.storage.attempt_of(day, player.id) is None:
                raise DailyError("wrong_phase", "Play today's ranked attempt first")
        else:
            deadline = now + self.attempt_limit_ms
            earlier = await self.storage.claim_attempt(day, player.id, code, deadline)
            if earlier is not None:
                raise DailyError("already_played")
        room = Room.create(
            code,
            host=Member(player.id, player.name),
            variant=record.variant,
            deal=record.commitment.code,
            deal_public=False,
            seats=1,
            time_limit=self.time_limit_s,
            now=now,
            countdown_ms=self.countdown_ms,
        )
        room = replace(room, deal_sealed_until=reveal_at(today, self.attempt_limit_ms))
        try:
            await self.rooms.create(room)
        except ConflictError:
            raise InternalError("Could not find a free room code; retry") from None
        log.info(
            "daily started",
            extra={"day": day, "player": player.id, "room": code, "practice": msg.practice},
        )
        await self.rooms.attach(conn, player.id, room)
        room = await self.rooms.transition(
            code, lambda room, now: room.start(player.id, now=now), conn=conn
        )
        return await self.sessions.snapshot(conn, room, msg.id)

    async def board(self, conn: Connection, msg: p.DailyBoard) -> p.DailyReply:
        player = player_of(conn)
        today = Day.of(self.clock())
        day = _parse_day(msg.day, "day") if msg.day is not None else today
        if day > today:
            raise DailyError("day_not_found")
        if await self.record(day) is None:
            raise DailyError("day_not_ready" if day == today else "day_not_found")
        watch = Watch(day, "late" if msg.late else "ranked", msg.top, msg.around)
        if msg.watch:
            self.watchers[conn] = watch
        else:
            self.watchers.pop(conn, None)
        data = await self.board_data(watch, player.id, {})
        data["watching"] = msg.watch
        return p.DailyReply("daily_board", data, id=msg.id)

    async def board_data(
        self, watch: Watch, player_id: str, tops: dict[tuple[Day, str, int], list[dict[str, Any]]]
    ) -> dict[str, Any]:
        """A board as a client sees it (server/core/daily_board.py); ``tops`` shares the
        top lists' rows within one push."""
        day = str(watch.day)
        view = await self.storage.board_view(day, watch.board, player_id, watch.top, watch.around)
        reviews = await self.storage.reviews(day)
        top = tops.setdefault((watch.day, watch.board, watch.top), top_rows(view, reviews))
        return board_data(
            day,
            watch.board,
            view,
            reviews,
            ranks=self.main_board_ranks,
            reveal_at=reveal_at(watch.day, self.attempt_limit_ms),
            top=top,
        )

    async def days(self, msg: p.DailyDays) -> p.DailyReply:
        before = _parse_day(msg.before, "before") if msg.before is not None else None
        if before is None:
            before = Day.of(self.clock())
        # Not past the calendar's first day (0001-01-01 has no day before it).
        oldest = (before.date - Day.parse("0001-01-01").date).days
        wanted = [before.previous(i + 1) for i in range(min(msg.limit, oldest))]
        stored = await self.storage.load_days([str(d) for d in wanted])
        now = self.clock()
        days = [
            DayRecord.from_record(r).public_dict(now, self.attempt_limit_ms)
            for r in stored
            if r is not None
        ]
        for listed in days:  # a revealed day's reviews, beside its replays
            revealed = listed["code"] is not None
            listed.update(
                review_lists(await self.storage.reviews(listed["day"]) if revealed else {})
            )
        return p.DailyReply("daily_days", {"days": days}, id=msg.id)

    async def me(self, conn: Connection, msg: p.DailyMe) -> p.DailyReply:
        player = player_of(conn)
        history = await self.storage.player_history(player.id)
        return p.DailyReply(
            "daily_me",
            daily_summary(history, Day.of(self.clock())),
            id=msg.id,
        )

    def forget(self, conn: Connection) -> None:
        """A socket closed (called before it is detached from its rooms)."""
        self.watchers.pop(conn, None)
        if conn.player is None:
            return
        for code in conn.rooms:
            local = self.rooms.local.get(code)
            if (
                local is not None
                and local.room.deal_sealed_until is not None
                and local.room.underway
                and local.conns == {conn}
            ):
                self.abandoned[code] = conn.player.id

    async def resign_abandoned(self) -> None:
        """Resign attempts left offline longer than ``disconnect_resign_s``: the race
        then ends (the progress flush) and goes to the board as it stands."""
        now = self.clock()
        for code, player_id in list(self.abandoned.items()):
            room = await self.rooms.load_or_none(code)
            member = room.member(player_id) if room is not None else None
            if room is None or member is None or not room.underway or member.connected:
                self.abandoned.pop(code, None)  # over, or the player came back
            elif player_id in room.offline_racers(now, self.resign_offline_ms):
                self.abandoned.pop(code, None)
                await self.rooms.games.resign(room, player_id)
                # No socket here, so the progress flush does not look at this room.
                await self.rooms.finish(code, "daily attempt abandoned")
                log.info("daily attempt abandoned", extra={"room": code, "player": player_id})

    # ------------------------------------------------------------------ results

    def on_room_finished(self, room: Room) -> None:
        """A race ended (called by Rooms for every finished room): a daily attempt's
        result goes to its board."""
        if room.deal_sealed_until is not None and room.round == 1 and room.entrants:
            self.spawn(self._record_room(room))

    async def _record_room(self, room: Room) -> None:
        player_id, name = room.entrants[0]
        day = Day.of(room.created_at)
        if await self.storage.attempt_of(str(day), player_id) != room.code:
            return  # a practice game
        row = next((r for r in room.results or () if r.player == player_id), None)
        result = Result.from_race(row) if row is not None else Result("resigned", None, 0, 8)
        await self.put_on_board(day, player_id, name, result, room.finished_at or 0)
        await self.review_pace(day, room, player_id, name)

    async def review_pace(self, day: Day, room: Room, player_id: str, name: str) -> None:
        """Flag the attempt for review if its pace is implausible for a human
        (server/daily/review.py): shown "under review" on the board until an operator
        confirms or disqualifies it."""
        stored = await self.rooms_storage.load_game(room.code, room.round, player_id)
        offsets = [t for t in (untimed(entry)[1] for entry in stored.actions) if t is not None]
        reason = assess(offsets)
        if reason is None or player_id in await self.storage.reviews(str(day)):
            return
        review = {
            "state": UNDER_REVIEW,
            "name": name,
            "reason": reason,
            "game": game_id(room) if room.start_at is not None else None,
            "flagged_at": self.clock(),
        }
        await self.storage.set_review(str(day), player_id, review)
        log.warning(
            "daily result under review",
            extra={"day": str(day), "player": player_id, "reason": reason},
        )
        changed = messages.encode(messages.DailyChanged(day=str(day)))
        await self.rooms_storage.publish_many([(DAILY_CHANNEL, changed)])

    async def put_on_board(
        self, day: Day, player_id: str, name: str, result: Result, finished_at: int
    ) -> None:
        board = await self.board_of(player_id, day)
        entry = {**result.to_dict(), "name": name, "finished_at": finished_at}
        if await self.storage.record_result(str(day), player_id, board, result.sort_score(), entry):
            log.info(
                "daily result",
                extra={
                    "day": str(day),
                    "player": player_id,
                    "board": board,
                    "status": result.status,
                },
            )
            changed = messages.encode(messages.DailyChanged(day=str(day)))
            await self.rooms_storage.publish_many([(DAILY_CHANNEL, changed)])

    async def board_of(self, player_id: str, day: Day) -> str:
        """The board a result goes to (docs/daily.md, "Leaderboard"). With accounts the
        main (``ranked``) board ranks accounts that existed before the day, and every
        other player (guests, accounts made that day) goes to the other (``late``: the
        guest board); without accounts, identities first seen before the day."""
        accounts = self.sessions.accounts
        if accounts is not None:
            account = await accounts.account(player_id)
            if account is None or account.handle is None:
                return "late"
            return "ranked" if account.created_at < day.starts_at else "late"
        created = await self.storage.player_created(player_id)
        return "late" if is_late_identity(created, day) else "ranked"

    @property
    def main_board_ranks(self) -> str:
        """What the main board ranks: ``accounts`` or ``identities`` (no accounts)."""
        return "identities" if self.sessions.accounts is None else "accounts"

    async def sweep(self) -> None:
        """Attempts past their time limit that no process finished (their player left
        every socket): end them and put them on the board as they stand."""
        for day, player_id, code in await self.storage.open_attempts(self.clock()):
            room = await self.rooms.load_or_none(code)
            if room is not None and room.underway:
                await self.rooms.finish(code, "daily")
                room = await self.rooms.load_or_none(code)
            if room is None:  # claimed, then the process died before storing the room
                await self.put_on_board(
                    Day.parse(day), player_id, "", Result("resigned", None, 0, 8), self.clock()
                )
            elif room.phase == "finished":
                await self._record_room(room)

    # ------------------------------------------------------------------ live boards

    def on_bus(self, message: messages.DailyChanged) -> None:
        self.dirty.add(message.day)

    async def push(self) -> None:
        if not self.dirty:
            return
        dirty, self.dirty = self.dirty, set()
        tops: dict[tuple[Day, str, int], list[dict[str, Any]]] = {}
        for conn, watch in list(self.watchers.items()):
            if str(watch.day) not in dirty or conn.player is None:
                continue
            data = await self.board_data(watch, conn.player.id, tops)
            data["watching"] = True
            if conn in self.watchers:
                conn.send(p.encode(p.DailyReply("daily_board", data)))


def _parse_day(text: str, field: str) -> Day:
    """The wire decoder lets only well-formed days through; this names the same fault
    (``bad_field``) for a message built in the process."""
    try:
        return Day.parse(text)
    except InvalidDay:
        raise ProtocolError("bad_field", f"Field '{field}' must be a day, YYYY-MM-DD") from None


def daily_summary(history: dict[str, dict[str, Any]], today: Day) -> dict[str, Any]:
    """A player's daily record (``daily_me``, and the account page and public profile
    of docs/accounts.md): streaks, best times, counts and the latest results."""
    streak = streaks(((Day.parse(d), e["status"]) for d, e in history.items()), today)
    won_times = [
        e["time_ms"]
        for e in history.values()
        if e["status"] == "won" and e.get("time_ms") is not None
    ]
    rows = [
        {
            "day": d,
            "board": e.get("board"),
            "status": e["status"],
            "time_ms": e.get("time_ms"),
            "moves": e["moves"],
            "foundation": e["foundation"],
        }
        for d, e in sorted(history.items(), reverse=True)[:HISTORY_SHOWN]
    ]
    return {
        "streak_played": streak.played,
        "streak_won": streak.won,
        "best_time_ms": min(won_times) if won_times else None,
        "best_times": sorted(won_times)[:5],
        "days_played": len(history),
        "days_won": sum(1 for e in history.values() if e["status"] == "won"),
        "history": rows,
    }


__all__ = [
    "DAILY_CHANNEL",
    "DAILY_REQUESTS",
    "Daily",
    "DealSource",
    "daily_summary",
    "fixed_deal_source",
    "solver_deal_source",
]
