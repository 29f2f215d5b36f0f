"""The core's facade for the web layer: one per process, holding the core's pieces
that :mod:`server.core.wiring` builds over the ports it is given
(:class:`~server.core.ports.Parts`).

Dependencies point one way: ``Hub`` → :class:`~server.core.session.Sessions` →
:class:`~server.core.rooms.Rooms` → :class:`~server.core.games.Games` →
:mod:`server.core.act` → the pure lobby; :class:`~server.core.progress.ProgressFlusher`
reads rooms and games. Storage and the bus are ports (:mod:`server.core.ports`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from crescent_wire import protocol as p
from crescent_wire.errors import InternalError, RoomError
from server.auth import Player
from server.config import Settings
from server.core import messages
from server.core.account_requests import ACCOUNTS_CHANNEL
from server.core.daily import DAILY_CHANNEL, DAILY_REQUESTS, Daily
from server.core.games import ActRequest, error_frame
from server.core.ports import Clock, Connection, Parts, wall_clock_ms
from server.core.practice import Practice
from server.core.session import player_of
from server.core.tournaments import (
    PUSH_INTERVAL_S,
    TOURNAMENT_REQUESTS,
    Tournaments,
    is_tournament_code,
)
from server.core.wiring import build_archive, build_rooms
from server.game import DealCode
from server.lobby import Room, Transition
from server.logs import RepeatedEvent
from server.metrics import Metrics
from server.tasks import cancel_and_wait

log = logging.getLogger("server.hub")


class Hub:
    def __init__(
        self,
        parts: Parts,
        settings: Settings,
        metrics: Metrics,
        clock: Clock = wall_clock_ms,
        *,
        tournament_tick_s: float = PUSH_INTERVAL_S,
    ) -> None:
        """``parts``: the ports this process runs on, injected (the composition root
        :func:`server.compose.build_parts` builds them from the settings; the core's
        tests over the in-memory adapters, ``bench/_support.py``)."""
        self.storage = parts.storage
        self.metrics = metrics
        self.clock = clock
        self._tasks: set[asyncio.Task[Any]] = set()
        self._flusher: asyncio.Task[None] | None = None
        self._presence_task: asyncio.Task[None] | None = None
        # A bus message this process cannot take (an unknown kind from a newer process, a
        # malformed payload): dropped, logged once per minute of them.
        self.bad_bus_messages = RepeatedEvent(log, "bus message dropped", quiet_s=60.0)
        self._purge_task: asyncio.Task[None] | None = None
        self.bus = parts.storage.bus(self._on_bus)
        rooms = build_rooms(parts, settings, metrics, clock, self.bus, self._spawn)
        self.games, self.rooms, self.presence = rooms.games, rooms.rooms, rooms.presence
        self.sessions, self.progress = rooms.sessions, rooms.progress
        self.practice = Practice(self.rooms, self.games, parts.cpu, clock)
        self._build_daily_and_tournaments(parts, settings, tournament_tick_s)
        self.rooms.on_finished = self._on_room_finished
        archive = build_archive(
            parts, settings, clock, rooms, self.daily, self.tournaments, metrics
        )
        self.archiver, self.archive_reads = archive.archiver, archive.archive_reads
        self.accounts = archive.accounts

    def _build_daily_and_tournaments(
        self, parts: Parts, settings: Settings, tournament_tick_s: float
    ) -> None:
        """The daily challenge (server/core/daily.py) and tournaments
        (server/core/tournaments/, docs/tournaments.md), on the rooms built before."""
        self.daily = Daily(
            parts.daily_storage,
            parts.storage,
            self.rooms,
            self.sessions,
            settings,
            self.clock,
            parts.daily_deals,
            self._spawn,
        )
        self.tournaments = Tournaments(
            parts.tournament_storage,
            parts.storage,
            self.bus,
            self.rooms,
            self.games,
            self.clock,
            spawn=self._spawn,
            deals=parts.tournament_deals,
            countdown_ms=settings.countdown_ms,
            tick_s=tournament_tick_s,
            metrics=self.metrics,
        )

    def _on_room_finished(self, room: Room) -> None:
        if self.archiver is not None:
            self.archiver.on_room_finished(room)
        self.daily.on_room_finished(room)
        self.tournaments.on_room_finished(room)

    @property
    def closing(self) -> bool:
        return self.rooms.closing

    @closing.setter
    def closing(self, value: bool) -> None:
        """Graceful shutdown: sockets go, players are not marked offline."""
        self.rooms.closing = value

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        await self.bus.start()
        await self.bus.subscribe(DAILY_CHANNEL)
        await self.bus.subscribe(ACCOUNTS_CHANNEL)
        await self.daily.start()
        await self.tournaments.start()
        self._flusher = asyncio.get_running_loop().create_task(
            self.progress.run(), name="progress-flush"
        )
        self._presence_task = asyncio.get_running_loop().create_task(
            self.presence.run(), name="presence"
        )
        self._purge_task = asyncio.get_running_loop().create_task(
            self.accounts.purge_forever(), name="accounts-purge"
        )
        if self.archiver is not None:
            self.archiver.start()

    async def stop(self) -> None:
        for loop_task in (self._flusher, self._presence_task, self._purge_task):
            if loop_task is not None:
                await cancel_and_wait(loop_task)
        await self.daily.stop()
        await self.tournaments.stop()
        self.rooms.stop()
        if self.archiver is not None:
            # A finished game still being put in the outbox gets a moment to get there
            # (else it is lost: it never reached Redis); what is put waits for a drainer.
            await self.archiver.stop()
        for task in list(self._tasks):
            task.cancel()
        await self.bus.stop()

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if isinstance(exc, InternalError):  # storage unavailable: logged once by the adapter
            log.debug("background task failed", extra={"error": repr(exc)})
        elif exc is not None:
            log.error("background task failed", exc_info=exc)

    # ------------------------------------------------------------------ requests

    async def hello(self, msg: p.Hello, current: Player | None = None) -> tuple[Player, p.Welcome]:
        return await self.sessions.hello(msg, current)

    async def disconnect(self, conn: Connection) -> None:
        self.daily.forget(conn)
        self.tournaments.forget(conn)
        await self.sessions.disconnect(conn)

    async def handle(self, conn: Connection, msg: p.ClientMessage) -> p.ServerMessage | bytes:
        """Answer one request of an authenticated connection (raises ServerError); an
        ``act``'s reply comes already encoded (bytes), any other as its message."""
        if isinstance(msg, p.Act):
            return await self.act(conn, msg)
        if isinstance(msg, p.Ping):
            return p.Pong(server_time=self.clock(), id=msg.id)
        if isinstance(msg, DAILY_REQUESTS):
            return await self.daily.handle(conn, msg)
        if isinstance(msg, TOURNAMENT_REQUESTS):
            return await self.tournaments.handle(conn, msg)
        if isinstance(msg, p.Replay):
            return p.ReplayReply(
                game=msg.game, replay=await self.archive_reads.replay(msg.game), id=msg.id
            )
        if isinstance(msg, p.Join):
            return await self.sessions.join(conn, msg)
        if isinstance(msg, p.CreateRoom):
            return await self.sessions.create_room(conn, msg)
        if isinstance(msg, p.Sync):
            return await self.sessions.sync(conn, msg)
        if isinstance(msg, p.Leave):
            await self.sessions.leave(conn, msg.room)
            return p.Ok(id=msg.id)
        player_id = player_of(conn).id
        if isinstance(msg, p.Hint):
            return await self.practice.hint(conn, player_id, msg)
        if isinstance(msg, p.Winnable):
            return await self.practice.winnable(conn, msg)
        if isinstance(msg, p.EndRace):
            await self.rooms.end_race(conn, msg.room, player_id)
            return p.Ok(id=msg.id)
        change: Callable[[Room, int], Transition]
        if isinstance(msg, p.Ready):
            ready = msg.ready
            change = lambda room, now: room.set_ready(player_id, ready, now=now)  # noqa: E731
        elif isinstance(msg, p.Start):
            change = lambda room, now: room.start(player_id, now=now)  # noqa: E731
        elif isinstance(msg, p.Rematch):
            new_deal: str | None = None

            def change(room: Room, now: int) -> Transition:
                nonlocal new_deal  # one deal for every compare-and-set attempt
                new_deal = new_deal or str(DealCode.random(room.variant))
                return room.rematch(player_id, new_deal, now=now)
        else:
            raise InternalError(f"no handler for {type(msg).__name__}")
        await self.rooms.transition(msg.room, change, conn=conn)
        return p.Ok(id=msg.id)

    def handle_apart(
        self,
        conn: Connection,
        msg: p.Hint | p.Winnable | p.Replay,
        respond: Callable[[bytes], None],
    ) -> None:
        """Answer a solver (or archive) request in a task of its own: the solver may take
        seconds, the archive waits for PostgreSQL, and
        the connection's other requests (acts, pings) must not wait for it. ``respond``
        gets the encoded reply or error (cancelled at :meth:`stop`)."""

        async def answer() -> None:
            try:
                reply = await self.handle(conn, msg)
                frame = reply if isinstance(reply, bytes) else p.encode(reply)
            except Exception as exc:
                frame = self.error_frame(exc, msg.id)
            respond(frame)

        self._spawn(answer())

    async def act(self, conn: Connection, msg: p.Act) -> bytes:
        """The encoded reply to an ``act``: ``ack``, ``refused`` or ``error``."""
        player = player_of(conn)
        if msg.room not in conn.rooms:
            raise RoomError("not_in_room")
        room = self.rooms.joined(conn, msg.room)
        act = ActRequest(room, player.id, msg.seq, msg.action, msg.id)
        return await self.games.act(act, now=self.clock())

    def act_now(self, conn: Connection, msg: p.Act, respond: Callable[[bytes], None]) -> bool:
        """The fast path of ``act``, with no task and no await (see
        :meth:`server.core.games.Games.act_now`); False: call :meth:`handle`."""
        player = conn.player
        if player is None or msg.room not in conn.rooms:
            return False
        local = self.rooms.local.get(msg.room)
        if local is None:
            return False
        act = ActRequest(local.room, player.id, msg.seq, msg.action, msg.id)
        return self.games.act_now(act, respond)

    def error_frame(self, exc: BaseException, msg_id: int | None) -> bytes:
        return error_frame(self.metrics, exc, msg_id)

    # ------------------------------------------------------------------ the bus

    def _on_bus(self, code: str, payload: bytes) -> None:
        if code == DAILY_CHANNEL:
            changed = self._decode_bus(code, payload)
            if isinstance(changed, messages.DailyChanged):
                self.daily.on_bus(changed)
            return
        if code == ACCOUNTS_CHANNEL:
            revoked = self._decode_bus(code, payload)
            if isinstance(revoked, messages.SessionsRevoked):
                self.accounts.on_bus(revoked)
            return
        if is_tournament_code(code):
            ticked = self._decode_bus(code, payload)
            if isinstance(ticked, messages.TournamentChanged):
                self.tournaments.on_bus(code, ticked)
            return
        if code not in self.rooms.local:
            return
        message = self._decode_bus(code, payload)
        if isinstance(message, messages.RoomEvents):
            self.rooms.on_events(code, message)
        elif isinstance(message, messages.ProgressFrame):
            self.progress.on_bus(code, message)

    def _decode_bus(self, code: str, payload: bytes) -> messages.BusMessage | None:
        try:
            return messages.decode(payload)
        except messages.BadBusMessage as exc:
            self.bad_bus_messages.occurred(channel=code, error=str(exc))
            return None


__all__ = ["Hub"]
