"""The end of a race, for :class:`~server.core.rooms.Rooms`: at its deadline (a timer, and
the sweep behind the timers), when every racer is done, when the host ends it, or when a
daily attempt or a tournament does; racers offline for too long resigned by the server.

A piece of ``Rooms``, not a service of its own: it reads and commits through the rooms
(the same compare-and-set, the same local rooms), which keep their public ``finish``,
``finish_soon``, ``end_race`` and ``sweep`` and call these.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from crescent_wire.errors import ConflictError, RoomError
from server.core.games import Games
from server.core.local_room import LocalRoom
from server.core.ports import Clock, Connection, Storage
from server.lobby import Room, Transition, initial_progress, race_over, rank
from server.metrics import Metrics

log = logging.getLogger("server.rooms")  # the rooms' logger, as before the carve

DEADLINE_SLACK_S = 0.005  # the deadline timer fires this late, so the deadline has passed


class RaceRooms(Protocol):
    """What the end of a race uses of :class:`~server.core.rooms.Rooms` (which imports
    this module, so it is named here by what it offers)."""

    storage: Storage
    games: Games
    metrics: Metrics
    clock: Clock
    spawn: Callable[[Coroutine[Any, Any, Any]], None]
    local: dict[str, LocalRoom]
    resign_offline_ms: int
    on_finished: Callable[[Room], None]
    before_finish: Callable[[Room], Awaitable[None]]

    async def load_or_none(self, code: str) -> Room | None: ...

    async def commit(self, before: Room, transition: Transition) -> None: ...

    def finish_soon(self, code: str, reason: str = ...) -> None: ...


class RaceEnds:
    def __init__(self, rooms: RaceRooms, *, attempts: int) -> None:
        self.rooms = rooms
        self.attempts = attempts  # a race's end is committed with compare-and-set

    def arm_deadline(self, local: LocalRoom) -> None:
        """(Re)set a local room's deadline timer: the race is finished once it passes."""
        if local.deadline_timer is not None:
            local.deadline_timer.cancel()
            local.deadline_timer = None
        room = local.room
        if room.underway and room.deadline is not None:
            delay_s = max(0.0, (room.deadline - self.rooms.clock()) / 1000) + DEADLINE_SLACK_S
            local.deadline_timer = asyncio.get_running_loop().call_later(
                delay_s, self.rooms.finish_soon, room.code
            )

    async def end_race(self, conn: Connection, code: str, player_id: str) -> None:
        """The host ends the race now (``end_race``): ranked as at a deadline."""
        if code not in conn.rooms:
            raise RoomError("not_in_room")
        await self.finish(code, "ended by the host", ended_by=player_id)

    async def finish(
        self, code: str, reason: str, *, ended_by: str | None = None, force: bool = False
    ) -> None:
        """End the race if it is over (all racers done, or the deadline passed), or at
        once if the host ``ended_by`` asks (RoomError if they may not) or ``force``
        (a tournament's host ends the tournament during a round)."""
        rooms = self.rooms
        for _ in range(self.attempts):
            room = await rooms.load_or_none(code)
            if ended_by is not None:
                if room is None:
                    raise RoomError("not_in_room")
                room.check_can_end(ended_by)
            if room is None or not room.underway or room.start_at is None:
                return
            now = rooms.clock()
            progress = (await rooms.storage.read_progress([(code, room.round)]))[0]
            entrant_progress = [
                progress.get(pid) or initial_progress(pid) for pid, _ in room.entrants
            ]
            if not (
                ended_by is not None
                or force
                or room.deadline_passed(now)
                or race_over(entrant_progress)
            ):
                return
            # A race nobody watched may be finished late: it still ended at its deadline.
            ended = min(now, room.deadline) if room.deadline is not None else now
            results = rank(room.entrants, progress, start_at=room.start_at, now=ended)
            transition = room.finish(results, now=ended)
            await rooms.before_finish(transition.room)
            try:
                await rooms.commit(room, transition)
            except ConflictError:
                rooms.metrics.cas_retries.labels(record="room").inc()
                continue
            rooms.on_finished(transition.room)
            log.info("race finished", extra={"room": code, "round": room.round, "reason": reason})
            return

    def sweep(self) -> None:
        """Finish local races whose deadline passed (backs up the timers, e.g. if the
        clock jumped or a timer was lost); resign racers offline for too long."""
        rooms = self.rooms
        now = rooms.clock()
        for code, local in rooms.local.items():
            if local.room.underway and local.room.deadline_passed(now):
                rooms.finish_soon(code)
            for player_id in local.room.offline_racers(now, rooms.resign_offline_ms):
                key = (local.room.round, player_id)
                if key not in local.resigned:
                    local.resigned.add(key)
                    rooms.spawn(self._resign_offline(local.room, player_id))

    async def _resign_offline(self, room: Room, player_id: str) -> None:
        """Resign a racer offline for too long, so the others are not kept waiting."""
        rooms = self.rooms
        try:
            await rooms.games.resign(room, player_id)
        except Exception as exc:
            local = rooms.local.get(room.code)
            if local is not None:  # try again at a later sweep
                local.resigned.discard((room.round, player_id))
            log.warning(
                "resigning an offline racer failed",
                extra={"room": room.code, "player": player_id, "error": repr(exc)},
            )
            return
        finally:
            local = rooms.local.get(room.code)
            if local is None or player_id not in local.player_conns:
                rooms.games.forget_player(room.code, player_id)
        log.info(
            "offline racer resigned",
            extra={"room": room.code, "player": player_id, "round": room.round},
        )
