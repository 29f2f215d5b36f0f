"""Progress frames: rooms with new progress are flushed every ``interval_s``.

One read of the progress of the rooms whose games are not all in this process's memory,
one publish of every frame (the local sockets get theirs at once). The same flush ends
races whose racers are all done, and about once a second the local deadlines are swept.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from crescent_wire import protocol as p
from crescent_wire.errors import InternalError
from server.core import messages
from server.core.games import Games
from server.core.ports import Storage
from server.core.rooms import Rooms
from server.lobby import Room, initial_progress, race_over, wire_progress

log = logging.getLogger("server.progress")

SWEEP_EVERY_S = 1.0


class ProgressFlusher:
    def __init__(
        self,
        storage: Storage,
        rooms: Rooms,
        games: Games,
        *,
        dirty: set[str],
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

    async def run(self) -> None:
        ticks = 0
        sweep_every = max(1, round(SWEEP_EVERY_S / self.interval_s))
        while True:
            await asyncio.sleep(self.interval_s)
            ticks += 1
            if ticks % sweep_every == 0:
                self.rooms.sweep()
            try:
                await self.flush()
            except asyncio.CancelledError:
                raise
            except InternalError:  # storage unavailable: logged once by the adapter
                log.debug("progress flush failed")
            except Exception:
                log.exception("progress flush failed")

    async def flush(self) -> None:
        """Publish the progress of every room marked dirty since the last flush."""
        if not self.dirty:
            return
        local = self.rooms.local
        rooms = [local[c].room for c in self.dirty if c in local]
        self.dirty.clear()
        # A tournament round's room sends no progress frames: its tournament's t_live
        # summarises it (server/core/tournaments.py), which also ends it when all are done.
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
    def _frame(room: Room, by_player: dict[str, dict[str, Any]], now: int) -> bytes:
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
