"""Rooms: stored with compare-and-set, and the local rooms this process serves.

- Transitions: load the room, run the pure transition, compare-and-set it into storage
  (history + bus message in the same step); on a lost race, reload and rerun.
- Local rooms: for every room with sockets here, the latest room, its sockets, a
  deadline timer and a bus subscription. Committed events go to the local sockets at
  once and through the bus to the other processes, each version once and in order.
- The end of a race: at its deadline, or when every racer is done (its piece:
  :mod:`server.core.race_ends`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from crescent_wire import protocol as p
from crescent_wire.errors import RoomError
from server.core import messages
from server.core.cas import compare_and_set
from server.core.dirty_rooms import DirtyRooms
from server.core.games import Games
from server.core.local_room import LocalRoom
from server.core.ports import Bus, Clock, Connection, Storage
from server.core.race_ends import RaceEnds
from server.core.room_codes import is_room_code
from server.lobby import Room, Transition
from server.metrics import Metrics

log = logging.getLogger("server.rooms")

MAX_CAS_ATTEMPTS = 10  # a room's compare-and-set, run by server/core/cas.py

Change = Callable[[Room, int], Transition]


async def _nothing(room: Room) -> None:
    return None


class Rooms:
    def __init__(
        self,
        storage: Storage,
        bus: Bus,
        games: Games,
        metrics: Metrics,
        clock: Clock,
        *,
        dirty: DirtyRooms,
        spawn: Callable[[Coroutine[Any, Any, Any]], None],
        resign_offline_ms: int = 120_000,
        process: str = "local",
        presence_stale_ms: int = 30_000,
    ) -> None:
        self.storage = storage
        self.bus = bus
        self.games = games
        self.metrics = metrics
        self.clock = clock
        self.dirty = dirty  # rooms whose progress must be flushed
        self.spawn = spawn
        self.local: dict[str, LocalRoom] = {}
        self.closing = False  # graceful shutdown: players are not marked offline
        # A racer offline this long during a race is resigned by the server.
        self.resign_offline_ms = resign_offline_ms
        # Presence is kept per process (server/core/presence.py): this process's id, and
        # how long a process may stay silent before its players count as gone.
        self.process = process
        self.presence_stale_ms = presence_stale_ms
        # Told of every race this process finished (the daily challenge's results).
        self.on_finished: Callable[[Room], None] = lambda room: None
        # Awaited just before a race's end is stored (the archive notes that the race
        # is ending, so a crash right after the end still archives it: core/outbox.py).
        self.before_finish: Callable[[Room], Awaitable[None]] = _nothing
        # Awaited just before a finished race's room moves to its next round (a
        # rematch): the archive puts a record its finishing process left unput.
        self.before_next_round: Callable[[Room], Awaitable[None]] = _nothing
        self.ends = RaceEnds(self, attempts=MAX_CAS_ATTEMPTS)

    def stop(self) -> None:
        for local in self.local.values():
            if local.deadline_timer is not None:
                local.deadline_timer.cancel()

    # ------------------------------------------------------------------ reading

    async def load_or_none(self, code: str) -> Room | None:
        if not is_room_code(code):
            return None
        return await self.storage.load_room(code)

    async def load(self, code: str) -> Room:
        room = await self.load_or_none(code)
        if room is None:
            raise RoomError("room_not_found")
        return room

    def joined(self, conn: Connection, code: str) -> Room:
        """The room ``conn`` is in (the cached copy, kept current by the bus)."""
        local = self.local.get(code)
        if local is None or code not in conn.rooms:
            raise RoomError("not_in_room")
        return local.room

    # ------------------------------------------------------------------ transitions

    async def create(self, room: Room) -> None:
        """Store a new room; ConflictError if its code is taken."""
        await self.storage.cas_room(room.code, -1, room, (), None)

    async def transition(self, code: str, change: Change, conn: Connection | None = None) -> Room:
        """Run a pure transition against the stored room with compare-and-set, retrying."""
        if conn is not None and code not in conn.rooms:
            # Requests about a room need the socket to be in it (join first); whether
            # the room exists or not, as for every room request but ``join``.
            raise RoomError("not_in_room")
        local = self.local.get(code)
        if local is None:
            return await self._transition_cas(code, change)
        async with local.lock:
            return await self._transition_cas(code, change)

    async def _transition_cas(self, code: str, change: Change) -> Room:
        async def attempt(n: int) -> Room:
            local = self.local.get(code)
            if n == 0 and local is not None:
                # The cached room is kept current by the bus; if it is stale after all,
                # the compare-and-set fails and the next attempt reads storage.
                room = local.room
            else:
                room = await self.load(code)
            transition = change(room, self.clock())
            if not transition.changed:
                self.remember(room)
                return room
            if transition.room.round != room.round and room.phase == "finished":
                await self.before_next_round(room)
            await self.commit(room, transition)
            return transition.room

        return await compare_and_set(
            attempt,
            record="room",
            key=code,
            attempts=MAX_CAS_ATTEMPTS,
            metrics=self.metrics,
            log=log,
        )

    async def commit(self, before: Room, transition: Transition) -> None:
        """Store ``transition`` over ``before`` (ConflictError if it moved on), publish its
        events and forward them to this process's sockets."""
        room = transition.room
        frames = tuple(
            p.encode(p.Event(room=room.code, ver=e.ver, kind=e.kind, data=e.data.to_wire()))
            for e in transition.events
        )
        first_ver = transition.events[0].ver
        await self.storage.cas_room(
            room.code,
            before.ver,
            room,
            frames,
            messages.encode(messages.RoomEvents(room=room, frames=frames, first_ver=first_ver)),
        )
        # This process's sockets get the events at once (before the request's reply), not
        # after a trip through the bus; the bus copy is skipped by version. Only if they
        # follow the last forwarded version: else an event from another process is still
        # on its way, and the bus delivers all of them in order.
        local = self.local.get(room.code)
        if local is not None and first_ver == local.sent_ver + 1:
            self._forward_events(local, frames, first_ver)
        for event in transition.events:  # debug: one line per event is too many under load
            log.debug(
                "room event",
                extra={
                    "room": room.code,
                    "ver": event.ver,
                    "kind": event.kind,
                    "round": room.round,
                },
            )
        self.remember(room)

    def remember(self, room: Room) -> None:
        """Keep the newest version of a local room and react to its changes."""
        local = self.local.get(room.code)
        if local is None or room.ver < local.room.ver:
            return
        old = local.room
        local.room = room
        if old.round != room.round:
            self.games.forget_other_rounds(room.code, room.round)
        if room.phase != old.phase or room.deadline != old.deadline:
            self.ends.arm_deadline(local)
            if room.phase == "finished":
                self.dirty.add(room.code)  # a last progress: who ran out of time
        if room.underway and any(
            m.connected != o.connected for m, o in zip(room.members, old.members, strict=False)
        ):
            self.dirty.add(room.code)

    # The end of a race (server/core/race_ends.py): at its deadline, when every racer is
    # done, by the host, or by a daily or tournament; the sweep behind the timers.

    def finish_soon(self, code: str, reason: str = "deadline") -> None:
        self.spawn(self.ends.finish(code, reason))

    async def end_race(self, conn: Connection, code: str, player_id: str) -> None:
        """The host ends the race now (``end_race``): ranked as at a deadline."""
        await self.ends.end_race(conn, code, player_id)

    async def finish(
        self, code: str, reason: str, *, ended_by: str | None = None, force: bool = False
    ) -> None:
        """End the race if it is over: :meth:`RaceEnds.finish`."""
        await self.ends.finish(code, reason, ended_by=ended_by, force=force)

    def sweep(self) -> None:
        """Finish overdue local races, resign long-offline racers: :meth:`RaceEnds.sweep`."""
        self.ends.sweep()

    # ------------------------------------------------------------------ local sockets

    async def attach(self, conn: Connection, player_id: str, room: Room) -> None:
        if room.code in conn.rooms:
            self.remember(room)
            return
        local = self.local.get(room.code)
        if local is None:
            local = self.local[room.code] = LocalRoom(room, sent_ver=room.ver)
            self.metrics.rooms_local.set(len(self.local))
            await self.bus.subscribe(room.code)
            self.ends.arm_deadline(local)
        else:
            self.remember(room)
        local.conns.add(conn)
        conn.rooms.add(room.code)
        local.player_conns[player_id] = local.player_conns.get(player_id, 0) + 1
        await self.storage.presence_change(
            room.code,
            player_id,
            +1,
            process=self.process,
            now=self.clock(),
            stale_ms=self.presence_stale_ms,
        )

    async def detach(
        self, conn: Connection, player_id: str, code: str, *, update_presence: bool
    ) -> None:
        if code not in conn.rooms:
            return
        conn.rooms.discard(code)
        local = self.local.get(code)
        if local is None:
            return
        local.conns.discard(conn)
        left = local.player_conns.get(player_id, 1) - 1
        if left > 0:
            local.player_conns[player_id] = left
        else:
            local.player_conns.pop(player_id, None)
            self.games.forget_player(code, player_id)
        # On a graceful shutdown clients reconnect at once (close 1001): no offline flicker
        # for every player of every room, and no burst of room writes during a deploy.
        # This process's presence is left as it is: it lapses once the process stops
        # refreshing it, and a player who has not come back elsewhere by then is marked
        # offline by another process (server/core/presence.py).
        if self.closing:
            remaining = 1
        else:
            remaining = await self.storage.presence_change(
                code,
                player_id,
                -1,
                process=self.process,
                now=self.clock(),
                stale_ms=self.presence_stale_ms,
            )
        if update_presence and remaining <= 0:
            await self.set_connected(code, player_id, False)
        if not local.conns and self.local.get(code) is local:
            if local.deadline_timer is not None:
                local.deadline_timer.cancel()
            del self.local[code]
            self.metrics.rooms_local.set(len(self.local))
            await self.bus.unsubscribe(code)

    async def set_connected(self, code: str, player_id: str, connected: bool) -> None:
        """Mark a member online or offline (an event; no-op if already so or gone).
        Offline only if none of their sockets is here, online only if one is: decided
        under the room's lock, so it cannot overtake this process's own attach or
        detach."""

        def change(room: Room, now: int) -> Transition:
            local = self.local.get(code)
            here = local is not None and player_id in local.player_conns
            if here != connected:
                return Transition(room)
            return room.set_connected(player_id, connected, now=now)

        with contextlib.suppress(RoomError):
            await self.transition(code, change)

    # ------------------------------------------------------------------ the bus

    def on_events(self, code: str, message: messages.RoomEvents) -> None:
        local = self.local.get(code)
        if local is None:
            return
        self.remember(message.room)
        self._forward_events(local, message.frames, message.first_ver)

    def send_progress(self, code: str, frame: bytes) -> None:
        local = self.local.get(code)
        if local is not None:
            for conn in list(local.conns):
                conn.send_progress(frame)

    def _forward_events(self, local: LocalRoom, frames: tuple[bytes, ...], first_ver: int) -> None:
        """Send event frames to the room's local sockets, each version once, in order."""
        skip = max(0, local.sent_ver - first_ver + 1)
        fresh = frames[skip:]
        if not fresh:
            return
        local.sent_ver = first_ver + len(frames) - 1
        for conn in list(local.conns):
            for frame in fresh:
                conn.send(frame)
