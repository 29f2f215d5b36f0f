"""The server's core without sockets or Redis, for benchmarks and fast tests: a hub over
the in-memory storage, a manual clock and connections that record what they are sent.

``bench/act_cpu.py`` drives the act path with it; ``tests/server/core_support.py``
re-exports it for the core's tests (tests import from bench, never the other way).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from crescent_wire import protocol as p
from server.auth import Player, TokenSigner
from server.config import Settings
from server.core.daily import fixed_deal_source, solver_deal_source
from server.core.hub import Hub
from server.core.ports import (
    CpuRunner,
    DailyStorage,
    DealSource,
    InlineCpu,
    Parts,
    TournamentStorage,
)
from server.core.tournaments import CERTIFY_BUDGET_S
from server.metrics import Metrics
from server.storage.memory import MemoryStorage
from server.storage.memory_archive import MemoryArchive
from server.storage.memory_daily import MemoryDailyStorage
from server.storage.memory_outbox import MemoryOutbox
from server.storage.memory_tournament import MemoryTournamentStorage

COUNTDOWN_MS = 1000
DEAL = "CR1-N-AAAAAAB"


class ManualClock:
    """Server time that moves only when a test says so."""

    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


class SettlingHub(Hub):
    """A hub that can wait for the background tasks it started (tests, benchmarks)."""

    async def settle(self) -> None:
        """Wait until the background tasks started so far are done."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


class RecordingConnection:
    """A socket as the core sees it: keeps every frame it is sent."""

    def __init__(self) -> None:
        self.player: Player | None = None
        self.rooms: set[str] = set()
        self.frames: list[bytes] = []
        self.progress: list[bytes] = []

    @property
    def player_id(self) -> str:
        """The id of the player this connection said hello as."""
        assert self.player is not None
        return self.player.id

    def send(self, frame: bytes) -> None:
        self.frames.append(frame)

    def send_progress(self, frame: bytes) -> None:
        self.progress.append(frame)

    def events(self, kind: str | None = None) -> list[p.Event]:
        decoded = [p.decode_server(f) for f in self.frames]
        return [e for e in decoded if isinstance(e, p.Event) and kind in (None, e.kind)]


def memory_parts(
    storage: MemoryStorage,
    *,
    cpu: CpuRunner | None = None,
    daily_deals: DealSource | None = None,
    daily_storage: DailyStorage | None = None,
    tournament_storage: TournamentStorage | None = None,
    tournament_deals: DealSource | None = None,
) -> Parts:
    """The ports of one hub ("process") over ``storage`` (hubs sharing it stand for
    processes sharing a Redis), the in-memory daily and tournament storage beside it.
    Defaults: the solver inline in the event loop (deterministic, no process), the daily
    challenge on ``DEAL``, tournaments kept by this hub alone and their deals from the
    solver."""
    cpu = cpu or InlineCpu()
    return Parts(
        storage=storage,
        daily_storage=daily_storage or MemoryDailyStorage(storage.created.get),
        tournament_storage=tournament_storage or MemoryTournamentStorage(),
        cpu=cpu,
        daily_deals=daily_deals or fixed_deal_source(DEAL),
        tournament_deals=tournament_deals or solver_deal_source(cpu, CERTIFY_BUDGET_S),
        signer=TokenSigner("core-tests"),
        archive=MemoryArchive(),
        outbox=MemoryOutbox(),
    )


async def start_hub(storage: MemoryStorage, clock: ManualClock) -> SettlingHub:
    # The flush loop never runs on its own in these tests: they call flush().
    settings = Settings(
        countdown_ms=COUNTDOWN_MS,
        progress_interval_s=3600.0,
        daily_push_interval_s=3600.0,
        daily_check_interval_s=3600.0,
    )
    hub = SettlingHub(memory_parts(storage), settings, Metrics(), clock)
    await hub.start()
    return hub


async def connect(hub: Hub, name: str, token: str | None = None) -> RecordingConnection:
    conn = RecordingConnection()
    player, _ = await hub.hello(p.Hello(name=name, token=token))
    conn.player = player
    return conn


async def racing_room(
    hub: Hub,
    clock: ManualClock,
    conns: Sequence[RecordingConnection],
    *,
    deal: str = DEAL,
    time_limit: int | None = None,
) -> str:
    """A room whose racers are ``conns``, its countdown over: the race is on."""
    snapshot = await hub.handle(
        conns[0], p.CreateRoom(deal=deal, seats=len(conns), time_limit=time_limit)
    )
    assert isinstance(snapshot, p.RoomSnapshot)
    code = str(snapshot.room["code"])
    for conn in conns[1:]:
        await hub.handle(conn, p.Join(room=code))
    for conn in conns:
        await hub.handle(conn, p.Ready(room=code))
    clock.advance(COUNTDOWN_MS)
    return code
