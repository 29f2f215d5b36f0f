"""Progress frames: rooms with new progress are flushed every ``interval_s``.

One read of the progress of the rooms whose games are not all in this process's memory,
one publish of every frame (the local sockets get theirs at once). The same flush ends
races whose racers are all done, and about once a second the local deadlines are swept.

The rooms are spread over ``FLUSH_SLICES`` slices by their code, and the flusher wakes
``FLUSH_SLICES`` times per interval to flush one slice: each room still gets at most
one frame per interval, but one loop turn writes a tenth of the frames. Flushing every
room in one turn held the event loop for tens of milliseconds with a few hundred rooms
(2,000 human-paced racers: 500 rooms, 2,500 sockets), and every ack that arrived meanwhile
waited: the ack p99 tracked the flush (docs/performance.md, "Human-paced capacity").
"""

from __future__ import annotations

import logging

from crescent_wire import protocol as p
from server.core import messages
from server.core.dirty_rooms import FLUSH_SLICES, DirtyRooms
from server.core.games import Games
from server.core.periodic import run_periodically
from server.core.ports import Storage
from server.core.rooms import Rooms
from server.lobby import RacerProgress, Room, initial_progress, race_over, wire_progress

log = logging.getLogger("server.progress")

SWEEP_EVERY_S = 1.0


class ProgressFlusher:
    def __init__(
        self,
        storage: Storage,
        rooms: Rooms,
        games: Games,
        *,
        dirty: DirtyRooms,
        interval_s: float,
        origin: bytes,
    ) -> None:
        self.storage = storage
        self.rooms = rooms
        self.games = games
        self.dirty = dirty
        self.interval_s = interval_s
        # Tags this process's progress messages on the bus: local sockets get them
        # directly, so the copy that comes back through the bus is skipped.
        self.origin = origin
        self.ticks = 0
        self.sweep_every = max(1, round(SWEEP_EVERY_S * FLUSH_SLICES / self.interval_s))

    async def run(self) -> None:
        # A fixed schedule, not a sleep after each flush: the flush's own time would
        # otherwise stretch every room's interval (progress p99 is judged against
        # it). Behind by more than an interval (a stalled loop): start afresh.
        await run_periodically(
            self.tick,
            self.interval_s / FLUSH_SLICES,
            name="progress flush",
            log=log,
            fixed=True,
            max_lag_s=self.interval_s,
        )

    async def tick(self) -> None:
        """One slice's flush; about once a second, the local deadlines' sweep first."""
        self.ticks += 1
        if self.ticks % self.sweep_every == 0:
            self.rooms.sweep()
        await self.flush(self.ticks)

    async def flush(self, tick: int | None = None) -> None:
        """Publish the progress of the rooms marked dirty since their last flush: those
        of the slice ``tick`` (modulo the slices), or all of them."""
        codes = self.dirty.take(tick)
        if not codes:
            return
        local = self.rooms.local
        rooms = [local[c].room for c in codes if c in local]
        # A tournament round's room sends no progress frames: its tournament's t_live
        # summarises it (server/core/tournaments/), which also ends it when all are done.
        rooms = [r for r in rooms if r.phase != "waiting" and r.tournament is None]
        known = [self.games.progress_here(room) for room in rooms]
        unknown = [room for room, by_player in zip(rooms, known, strict=True) if by_player is None]
        if unknown:
            stored = iter(await self.storage.read_progress([(r.code, r.round) for r in unknown]))
            known = [by_player if by_player is not None else next(stored) for by_player in known]
        published = []
        for room, by_player in zip(rooms, known, strict=True):
            assert by_player is not None
            frame = self._frame(room, by_player, self.rooms.clock())
            self.rooms.send_progress(room.code, frame)
            published.append(
                (
                    room.code,
                    messages.encode(messages.ProgressFrame(frame=frame, origin=self.origin)),
                )
            )
            if room.underway and race_over(
                [by_player.get(pid) or initial_progress(pid) for pid, _ in room.entrants]
            ):
                self.rooms.finish_soon(room.code, "all done")
        await self.storage.publish_many(published)

    @staticmethod
    def _frame(room: Room, by_player: dict[str, RacerProgress], now: int) -> bytes:
        connected = {m.id: m.connected for m in room.members}
        over = room.race_ended(now)
        racers = tuple(
            wire_progress(
                by_player.get(pid) or initial_progress(pid), connected.get(pid, False), over=over
            )
            for pid, _ in room.entrants
        )
        return p.encode(p.Progress(room=room.code, round=room.round, racers=racers))

    def on_bus(self, code: str, message: messages.ProgressFrame) -> None:
        if message.origin != self.origin:  # our own was sent to the local sockets already
            self.rooms.send_progress(code, message.frame)
