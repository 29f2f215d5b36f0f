"""The application's typed keys: what the app factory stores and the handlers read."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from aiohttp import web

from server.config import Settings
from server.core.hub import Hub
from server.core.ports import Parts
from server.logs import RepeatedEvent
from server.metrics import Metrics
from server.web.collector import FullCollections
from server.web.connection import WsConnection
from server.web.lag import EventLoopLagProbe
from server.web.limits import AddressQuotas

# Builds the ports from the settings, open while the context lasts (the composition
# root: server.compose.build_parts).
PartsFactory = Callable[[Settings, Metrics], AbstractAsyncContextManager[Parts]]

SETTINGS = web.AppKey("settings", Settings)
BUILD_PARTS = web.AppKey[PartsFactory]("build_parts")
PARTS = web.AppKey("parts", Parts)
HUB = web.AppKey("hub", Hub)
METRICS = web.AppKey("metrics", Metrics)
SOCKETS = web.AppKey[set[WsConnection]]("sockets")
CLOCK = web.AppKey[Callable[[], int]]("clock")
# running socket clean-ups (strong references)
CLEANUPS = web.AppKey[set[asyncio.Task[None]]]("cleanups")
QUOTAS = web.AppKey("quotas", AddressQuotas)
# Connections refused for too many from one address: a client that keeps retrying, or a
# crowd behind one address, is one line per episode (summed up after a quiet minute).
REFUSALS = web.AppKey("refusals", RepeatedEvent)
COLLECTOR = web.AppKey("collector", FullCollections)
LAG_PROBE = web.AppKey("lag_probe", EventLoopLagProbe)
