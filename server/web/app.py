"""The application factory: `create_app` (its typed keys, the resources opened and closed
with it, the route table)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from aiohttp import web

from server.config import Settings
from server.core.hub import Hub
from server.core.ports import wall_clock_ms
from server.logs import RepeatedEvent
from server.metrics import Metrics
from server.web.account_routes import add_account_routes
from server.web.archive_routes import add_archive_routes
from server.web.collector import FullCollections
from server.web.http_routes import healthz, index, metrics_handler, static_file, tournament_export
from server.web.keys import (
    BUILD_PARTS,
    CLEANUPS,
    CLOCK,
    COLLECTOR,
    HUB,
    LAG_PROBE,
    METRICS,
    PARTS,
    QUOTAS,
    REFUSALS,
    SETTINGS,
    SOCKETS,
    PartsFactory,
)
from server.web.lag import EventLoopLagProbe
from server.web.limits import AddressQuotas
from server.web.websocket import (
    _close_revoked,
    _close_sockets,
    _heartbeat_loop,
    client_address,
    ws_handler,
)

log = logging.getLogger("server.web")


async def _resources(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    metrics = app[METRICS]
    async with app[BUILD_PARTS](settings, metrics) as parts:
        hub = Hub(parts, settings, metrics, clock=app[CLOCK])
        await hub.start()
        app[PARTS] = parts
        app[HUB] = hub
        hub.accounts.on_revoked = lambda ids: _close_revoked(app, ids)
        heartbeat = asyncio.get_running_loop().create_task(_heartbeat_loop(app), name="heartbeat")
        yield
        heartbeat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await heartbeat
        cleanups = app[CLEANUPS]
        pending = set(cleanups)
        if pending:  # socket clean-ups still talking to storage: let them finish first
            await asyncio.wait(pending, timeout=5)
        await hub.stop()
    # leaving build_parts closed the CPU runners, then the storage


def create_app(
    settings: Settings, parts: PartsFactory, *, clock: Callable[[], int] = wall_clock_ms
) -> web.Application:
    """The application over the ports ``parts`` builds when it starts (and closes when
    it stops): :func:`server.compose.build_parts` for Redis, a Redis Cluster or memory,
    as ``settings`` say. ``clock`` (server ms) is injectable so tests can move time."""
    app = web.Application()
    app[SETTINGS] = settings
    app[BUILD_PARTS] = parts
    app[CLOCK] = clock
    app[METRICS] = Metrics()
    app[SOCKETS] = set()
    app[CLEANUPS] = set()
    app[REFUSALS] = RepeatedEvent(
        log, "refusing connections: too many from one address", quiet_s=60.0
    )
    app[QUOTAS] = AddressQuotas(
        settings.max_connections_per_address, settings.new_players_per_address_per_min
    )
    app[COLLECTOR] = FullCollections(
        settings.gc_after_closed,
        settings.gc_interval_s,
        lambda callback: asyncio.get_running_loop().call_soon(callback),
    )
    app.cleanup_ctx.append(_resources)
    app[LAG_PROBE] = EventLoopLagProbe(app[METRICS])
    app.cleanup_ctx.append(app[LAG_PROBE].context)
    app.on_shutdown.append(_close_sockets)
    app.router.add_get("/ws", ws_handler)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_handler)
    app.router.add_get("/", index)
    app.router.add_get("/r/{code}", index)
    app.router.add_get("/daily", index)
    app.router.add_get("/t/{code}", index)
    app.router.add_get("/g/{game}", index)  # the replay viewer (docs/browser.md)
    app.router.add_get("/me/games", index)  # the player's games
    app.router.add_get("/me", index)  # the account page (docs/accounts.md)
    app.router.add_get("/u/{handle}", index)  # a public profile
    app.router.add_get("/api/tournaments/{name}", tournament_export)
    add_archive_routes(app.router, lambda request: request.app[HUB].archive_reads)
    add_account_routes(
        app.router,
        lambda request: request.app[HUB].accounts,
        lambda request: client_address(request, request.app[SETTINGS].trust_forwarded_for),
    )
    app.router.add_get("/{path:.+}", static_file)
    return app


__all__ = [
    "BUILD_PARTS",
    "CLEANUPS",
    "CLOCK",
    "COLLECTOR",
    "HUB",
    "LAG_PROBE",
    "METRICS",
    "PARTS",
    "QUOTAS",
    "REFUSALS",
    "SETTINGS",
    "SOCKETS",
    "PartsFactory",
    "create_app",
]
