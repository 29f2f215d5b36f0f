"""The daily challenge's results (docs/daily.md): an attempt's end put on its board (the
main or the late one) once, its pace reviewed, and the attempts no process finished
(their player left) ended: the abandoned ones of this process, the stale ones of any.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from server.core import messages
from server.core.archive_records import game_id
from server.core.daily_boards import DAILY_CHANNEL
from server.core.games import untimed
from server.core.ports import Clock, Connection, DailyStorage, Storage
from server.core.rooms import Rooms
from server.core.session import Sessions
from server.daily import Day, Result, ResultEntry, is_late_identity
from server.daily.review import UNDER_REVIEW, Review, assess
from server.lobby import Room

log = logging.getLogger("server.daily")

# What an attempt that never got a result counts as: resigned, nothing moved.
RESIGNED: Result = Result("resigned", None, 0, 8)


class Results:
    """Puts attempts on their boards (called by Rooms for every finished room, and by
    the sweeps)."""

    def __init__(
        self,
        storage: DailyStorage,
        rooms_storage: Storage,
        rooms: Rooms,
        sessions: Sessions,
        clock: Clock,
        spawn: Callable[[Coroutine[Any, Any, Any]], None],
        *,
        resign_offline_ms: int,
    ) -> None:
        self.storage = storage
        self.rooms_storage = rooms_storage
        self.rooms = rooms
        self.sessions = sessions
        self.clock = clock
        self.spawn = spawn
        self.resign_offline_ms = resign_offline_ms
        # Attempts whose last socket on this process closed (room code → player): once
        # the player has been offline for resign_offline_ms they are resigned here, since
        # Rooms' own sweep only sees rooms that still have a socket on this process.
        self.abandoned: dict[str, str] = {}

    def on_room_finished(self, room: Room) -> None:
        """A race ended: a daily attempt's result goes to its board."""
        if room.deal_sealed_until is not None and room.round == 1 and room.entrants:
            self.spawn(self.record_room(room))

    async def record_room(self, room: Room) -> None:
        player_id, name = room.entrants[0]
        day = Day.of(room.created_at)
        if await self.storage.attempt_of(str(day), player_id) != room.code:
            return  # a practice game
        row = next((r for r in room.results or () if r.player == player_id), None)
        result = Result.from_race(row) if row is not None else RESIGNED
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
        review = Review(
            state=UNDER_REVIEW,
            name=name,
            reason=reason,
            game=game_id(room) if room.start_at is not None else None,
            flagged_at=self.clock(),
        )
        await self.storage.set_review(str(day), player_id, review)
        log.warning(
            "daily result under review",
            extra={"day": str(day), "player": player_id, "reason": reason},
        )
        await self.changed(day)

    async def put_on_board(
        self, day: Day, player_id: str, name: str, result: Result, finished_at: int
    ) -> None:
        board = await self.board_of(player_id, day)
        entry = ResultEntry.of(result, name, finished_at)
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
            await self.changed(day)

    async def changed(self, day: Day) -> None:
        """Tell every process (the daily channel) that the day's boards changed."""
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

    async def sweep(self) -> None:
        """Attempts past their time limit that no process finished (their player left
        every socket): end them and put them on the board as they stand."""
        for day, player_id, code in await self.storage.open_attempts(self.clock()):
            room = await self.rooms.load_or_none(code)
            if room is not None and room.underway:
                await self.rooms.finish(code, "daily")
                room = await self.rooms.load_or_none(code)
            if room is None:  # claimed, then the process died before storing the room
                await self.put_on_board(Day.parse(day), player_id, "", RESIGNED, self.clock())
            elif room.phase == "finished":
                await self.record_room(room)

    def forget(self, conn: Connection) -> None:
        """A socket closed (called before it is detached from its rooms): an attempt it
        was the last socket of here is watched for its player's return."""
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
        """Resign attempts left offline longer than ``resign_offline_ms``: the race
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


__all__ = ["RESIGNED", "Results"]
