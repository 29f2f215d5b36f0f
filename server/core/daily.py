"""The daily challenge in the core (docs/daily.md): its requests, over its parts —
the days prepared and committed (:mod:`server.core.daily_days`), the boards shown and
pushed (:mod:`server.core.daily_boards`), the results put on them
(:mod:`server.core.daily_results`) — and the background loops that drive them.

A daily attempt is a one-seat room created by the server, its deal sealed until the
day is revealed; its end (won, locked, resigned, the time limit) puts it on the board.
The pure parts are :mod:`server.daily`; storage is the ``DailyStorage`` port, whose
records are typed values up to the wire's (:mod:`crescent_wire.daily`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any

from crescent_wire import protocol as p
from crescent_wire.daily import DaysData, ListedDay, TodayData, TodayYou
from crescent_wire.errors import ConflictError, DailyError, InternalError, ProtocolError
from server.config import Settings
from server.core import messages
from server.core.daily_boards import (
    DAILY_CHANNEL,
    Boards,
    Watch,
    board_row,
    daily_summary,
    disqualified,
    flagged,
    summary,
)
from server.core.daily_days import (
    PENDING_CHECK_S,
    DayKeeper,
    day_info,
    fixed_deal_source,
    solver_deal_source,
)
from server.core.daily_results import Results
from server.core.periodic import run_periodically
from server.core.ports import Clock, Connection, DailyStorage, DealSource, Storage
from server.core.room_codes import new_room_code
from server.core.rooms import Rooms
from server.core.session import Sessions, player_of
from server.daily import Day, DayRecord, InvalidDay, reveal_at
from server.daily.review import DISQUALIFIED
from server.lobby import Member, Room
from server.tasks import cancel_and_wait

log = logging.getLogger("server.daily")

DAILY_REQUESTS = (p.DailyToday, p.DailyStart, p.DailyBoard, p.DailyDays, p.DailyMe)


def attempt_limit_ms(time_limit_s: int, countdown_ms: int) -> int:
    """The longest a ranked attempt lasts, from its start: the day's deal is revealed
    this long after the day. Countdown included: a game started at 23:59:59 still ends
    before the reveal."""
    return time_limit_s * 1000 + countdown_ms


class Daily:
    """The daily challenge of one process: the requests, the background check (days
    prepared, stale attempts ended) and the push loop (boards, abandoned attempts)."""

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
        self.rooms = rooms
        self.sessions = sessions
        self.clock = clock
        self.time_limit_s = settings.daily_time_limit_s
        self.countdown_ms = settings.countdown_ms
        self.push_interval_s = settings.daily_push_interval_s
        self.check_interval_s = settings.daily_check_interval_s
        self.days_kept = DayKeeper(storage, clock, settings.daily_variant, deal_source)
        self.boards = Boards(storage, sessions, attempt_limit_ms=self.attempt_limit_ms)
        self.results = Results(
            storage,
            rooms_storage,
            rooms,
            sessions,
            clock,
            spawn,
            resign_offline_ms=round(settings.disconnect_resign_s * 1000),
        )
        # The parts' state, as the tests look at it.
        self.watchers = self.boards.watchers
        self.abandoned = self.results.abandoned
        self.resign_offline_ms = self.results.resign_offline_ms
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def attempt_limit_ms(self) -> int:
        return attempt_limit_ms(self.time_limit_s, self.countdown_ms)

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
        await self.days_kept.release_leases()

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
            wait=self.days_kept.wait_for_check,
        )

    async def check(self) -> float:
        """One check: the coming days prepared, stale attempts finished (even if the
        preparation failed). Returns the delay before the next."""
        self.days_kept.check_now.clear()
        delay = self.check_interval_s
        try:
            if not await self.prepare():
                delay = min(delay, PENDING_CHECK_S)
        finally:
            await self.results.sweep()
        return delay

    async def push_loop(self) -> None:
        """Push the boards that changed, at most once per ``push_interval_s``."""
        await run_periodically(
            self.push_and_resign, self.push_interval_s, name="daily push", log=log, run_first=True
        )

    async def push_and_resign(self) -> None:
        await self.push()
        await self.resign_abandoned()

    async def prepare(self) -> bool:
        """Today, tomorrow and the day after committed (:meth:`DayKeeper.prepare`)."""
        return await self.days_kept.prepare()

    async def record(self, day: Day) -> DayRecord | None:
        return await self.days_kept.record(day)

    async def push(self) -> None:
        await self.boards.push()

    async def resign_abandoned(self) -> None:
        await self.results.resign_abandoned()

    def on_bus(self, message: messages.DailyChanged) -> None:
        self.boards.on_bus(message)

    def on_room_finished(self, room: Room) -> None:
        """A race ended (called by Rooms for every finished room)."""
        self.results.on_room_finished(room)

    def forget(self, conn: Connection) -> None:
        """A socket closed (called before it is detached from its rooms)."""
        self.watchers.pop(conn, None)
        self.results.forget(conn)

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

    async def today(self, conn: Connection, msg: p.DailyToday) -> p.DailyReply:
        player = player_of(conn)
        today = await self.days_kept.today()
        tomorrow = await self.record(today.day.next())
        attempt = await self.storage.attempt_of(str(today.day), player.id)
        placed = await self.storage.board_entry(str(today.day), player.id)
        review = (await self.storage.reviews(str(today.day))).get(player.id) if attempt else None
        taken_off = review is not None and review.state == DISQUALIFIED
        # Stamped as the reply goes out, after every wait: a client sets its clock by it.
        now = self.clock()
        limit = self.attempt_limit_ms
        return TodayData(
            today=day_info(today, now, limit),
            tomorrow=day_info(tomorrow, now, limit) if tomorrow else None,
            time_limit=self.time_limit_s,
            server_time=now,
            you=TodayYou(
                attempt=attempt,
                # A disqualified attempt is off the board, and finished all the same.
                finished=placed is not None or taken_off,
                board=placed[0] if placed else None,
                result=board_row(placed[1]) if placed else None,
                disqualified=review.reason if review is not None and taken_off else None,
            ),
        ).reply(msg.id)

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
        record = await self.days_kept.today()
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
        data = await self.boards.board_data(watch, player.id, {})
        return replace(data, watching=msg.watch).reply(msg.id)

    async def days(self, msg: p.DailyDays) -> p.DailyReply:
        before = _parse_day(msg.before, "before") if msg.before is not None else None
        if before is None:
            before = Day.of(self.clock())
        # Not past the calendar's first day (0001-01-01 has no day before it).
        oldest = (before.date - Day.parse("0001-01-01").date).days
        wanted = [before.previous(i + 1) for i in range(min(msg.limit, oldest))]
        stored = await self.storage.load_days([str(d) for d in wanted])
        now = self.clock()
        limit = self.attempt_limit_ms
        days = [day_info(r, now, limit) for r in stored if r is not None]
        listed = []
        for day in days:  # a revealed day's reviews, beside its replays
            reviews = await self.storage.reviews(day.day) if day.code is not None else {}
            listed.append(ListedDay(day, flagged(reviews), disqualified(reviews)))
        return DaysData(tuple(listed)).reply(msg.id)

    async def me(self, conn: Connection, msg: p.DailyMe) -> p.DailyReply:
        player = player_of(conn)
        history = await self.storage.player_history(player.id)
        return summary(history, Day.of(self.clock())).reply(msg.id)


def _parse_day(text: str, field: str) -> Day:
    """The wire decoder lets only well-formed days through; this names the same fault
    (``bad_field``) for a message built in the process."""
    try:
        return Day.parse(text)
    except InvalidDay:
        raise ProtocolError("bad_field", f"Field '{field}' must be a day, YYYY-MM-DD") from None


__all__ = [
    "DAILY_CHANNEL",
    "DAILY_REQUESTS",
    "Daily",
    "DealSource",
    "daily_summary",
    "fixed_deal_source",
    "solver_deal_source",
]
