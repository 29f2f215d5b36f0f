"""The tournament service's facade: what the hub and the web layer call, over its
parts (docs/tournaments.md):

- :mod:`.committer`: tournaments stored with compare-and-set by version in the
  ``TournamentStorage`` port, one group committer per tournament and process;
- :mod:`.requests`: what a connection asks;
- :mod:`.rounds`: rounds run in race rooms, results recorded once, the tick's sweep;
- :mod:`.live`: subscriptions and throttled pushes to subscribers on every process
  (each committed change is announced on the tournament's bus channel, its code);
- :mod:`.export`: the JSON and CSV exports.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from crescent_wire import protocol as p
from server.core import messages
from server.core.games import Games
from server.core.periodic import run_periodically
from server.core.ports import Bus, Clock, Connection, Storage, TournamentStorage
from server.core.rooms import Rooms
from server.core.tournaments.base import CERTIFY_WAIT_S, PUSH_INTERVAL_S, DealSource
from server.core.tournaments.committer import Committer, Transition
from server.core.tournaments.export import export, to_csv
from server.core.tournaments.live import Live
from server.core.tournaments.requests import Requests
from server.core.tournaments.rounds import Rounds
from server.lobby import Room
from server.metrics import Metrics
from server.tasks import cancel_and_wait
from server.tournament import Tournament

log = logging.getLogger("server.tournaments")


class Tournaments:
    def __init__(
        self,
        storage: TournamentStorage,
        room_storage: Storage,
        bus: Bus,
        rooms: Rooms,
        games: Games,
        clock: Clock,
        *,
        spawn: Callable[[Coroutine[Any, Any, Any]], None],
        deals: DealSource,
        countdown_ms: int,
        metrics: Metrics | None = None,
        push_interval_s: float = PUSH_INTERVAL_S,
        tick_s: float = PUSH_INTERVAL_S,
        certify_wait_s: float = CERTIFY_WAIT_S,
    ) -> None:
        self.storage = storage
        self.clock = clock
        self.tick_s = tick_s
        self.metrics = metrics if metrics is not None else Metrics()
        self.live = Live(
            storage, room_storage, bus, clock, spawn=spawn, push_interval_s=push_interval_s
        )
        self.committer = Committer(storage, self.live, clock, self.metrics, spawn=spawn)
        self.rounds = Rounds(
            self.committer,
            self.live,
            room_storage,
            rooms,
            games,
            clock,
            spawn=spawn,
            deals=deals,
            countdown_ms=countdown_ms,
            certify_wait_s=certify_wait_s,
        )
        self.requests = Requests(storage, self.committer, self.live, self.rounds, clock)
        self._loop_task: asyncio.Task[None] | None = None

    @property
    def push_interval_s(self) -> float:
        return self.live.push_interval_s

    @push_interval_s.setter
    def push_interval_s(self, value: float) -> None:
        self.live.push_interval_s = value

    @property
    def on_finished(self) -> Callable[[Tournament], None]:
        """Told of every tournament this process finished (the archive, hub.py)."""
        return self.committer.on_finished

    @on_finished.setter
    def on_finished(self, value: Callable[[Tournament], None]) -> None:
        self.committer.on_finished = value

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self._loop_task = asyncio.get_running_loop().create_task(self.run(), name="tournament-tick")

    async def stop(self) -> None:
        if self._loop_task is not None:
            await cancel_and_wait(self._loop_task)
        self.live.stop()

    async def run(self) -> None:
        await run_periodically(self.tick, self.tick_s, name="tournament tick", log=log)

    async def tick(self) -> None:
        await self.rounds.tick()

    # ------------------------------------------------------------------ the hub's calls

    async def handle(self, conn: Connection, msg: p.ClientMessage) -> p.ServerMessage | bytes:
        return await self.requests.handle(conn, msg)

    def forget(self, conn: Connection) -> None:
        self.live.forget(conn)

    def on_bus(self, code: str, message: messages.TournamentChanged) -> None:
        self.live.on_bus(code, message)

    def on_room_finished(self, room: Room) -> None:
        self.rounds.on_room_finished(room)

    # ------------------------------------------------------------------ records

    async def load_or_none(self, code: str) -> Tournament | None:
        return await self.committer.load_or_none(code)

    async def load(self, code: str) -> Tournament:
        return await self.committer.load(code)

    async def transition(self, code: str, change: Transition) -> Tournament:
        return await self.committer.transition(code, change)

    async def record(self, code: str, room_code: str) -> Tournament:
        return await self.rounds.record(code, room_code)

    # ------------------------------------------------------------------ export

    async def export(self, code: str) -> dict[str, Any]:
        return await export(self.storage, code, self.clock)

    async def export_csv(self, code: str) -> str:
        return to_csv(await self.export(code))
