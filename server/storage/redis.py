"""Redis: the Storage port (:class:`RedisStorage`) and the plain bus.

:class:`RedisStorage` is put together from its parts, each on
:class:`~server.storage.redis_calls.RedisCalls` (the client, the deadlines, the
health): :mod:`server.storage.redis_rooms` (players, rooms, presence) and
:mod:`server.storage.redis_games` (games, progress, appends); the Lua scripts are in
:mod:`server.storage.redis_scripts`. The key scheme, the health tracker and what the
bus, the pipes and the fast paths share are in :mod:`server.storage.redis_base` (with
the table of keys); a Redis Cluster's client, per-node clients and sharded bus in
:mod:`server.storage.redis_cluster`. Every module of the adapter points down to
``redis_base``, none back up (the picture of their imports is in its docstring).

This module uses redis-py's public API only; with the ``redis`` fast path on
(``Settings.fast_paths``, the default) the frequent calls go through
:mod:`server.storage.redis_pipelines` instead (pipelines on sockets taken over from
redis-py, replies read with hiredis directly), built on :mod:`server.storage.redis_fast`,
the only module touching redis-py's internals.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import redis.asyncio as aioredis

from server.core.ports import Bus, BusHandler
from server.storage import redis_cluster
from server.storage.redis_base import (
    DEADLINE_S,
    EVENT_HISTORY,
    PLAYER_TTL_S,
    ROOM_TTL_S,
    BusBase,
    NotReplicated,
)
from server.storage.redis_games import RedisGames
from server.storage.redis_rooms import RedisRooms


class RedisStorage(RedisRooms, RedisGames):
    """Async access to the server's Redis data (one per process): the Storage port.

    ``fast``: the frequent calls go through :mod:`server.storage.redis_pipelines`; else
    through redis-py's public API only (slower, same behaviour)."""

    def bus(self, handler: BusHandler) -> Bus:
        if self.cluster:
            return redis_cluster.ShardedBus(self, handler, self.redis)
        if self.fast_paths is not None:
            return self.fast_paths.bus(handler)
        return PlainBus(self, handler)


class PlainBus(BusBase):
    """Pub/sub with redis-py's PubSub, on its own connection (client name
    ``<prefix>:bus``). A lost connection is reopened and every channel subscribed again
    (messages published meanwhile are lost, as with any pub/sub; the progress flush and
    ``sync`` recover)."""

    def __init__(self, store: RedisStorage, handler: BusHandler) -> None:
        super().__init__(store, handler)
        self._client: aioredis.Redis | None = None
        self._pubsub: Any = None
        # Set by each SUBSCRIBE: a PubSub subscribed to nothing has nothing to read.
        self._subscribed = asyncio.Event()

    async def _open(self) -> None:
        self._client = aioredis.Redis.from_url(
            self.store.redis_url, client_name=f"{self.store.keys.prefix}:bus", protocol=2
        )
        self._pubsub = self._client.pubsub(ignore_subscribe_messages=True)
        if self._channels:
            await self._pubsub.subscribe(*sorted(self._channels))

    async def _close(self) -> None:
        pubsub, client, self._pubsub, self._client = self._pubsub, self._client, None, None
        with contextlib.suppress(Exception):
            if pubsub is not None:
                await pubsub.aclose()
            if client is not None:
                await client.aclose()

    async def _command(self, verb: str, channel: str) -> None:
        if self._pubsub is None:
            return  # the reader reconnects and subscribes to every channel
        try:
            if verb == "SUBSCRIBE":
                await self._pubsub.subscribe(channel)
                self._subscribed.set()
            else:
                await self._pubsub.unsubscribe(channel)
        except Exception as exc:  # the reader notices too and reconnects
            self.command_failures.occurred(error=repr(exc))
        else:
            self.command_failures.recovered()

    async def _run(self) -> None:
        while True:
            try:
                if self._pubsub is None:
                    await self._open()
                if not self._pubsub.subscribed:
                    self._subscribed.clear()
                    await self._subscribed.wait()
                    continue
                message = await self._pubsub.get_message(timeout=30.0)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # connection lost: reopen and subscribe again
                await self._lost(exc)
                continue
            if message is not None and message.get("type") == "message":
                self._deliver(message["channel"], message["data"])


__all__ = [
    "DEADLINE_S",
    "EVENT_HISTORY",
    "PLAYER_TTL_S",
    "ROOM_TTL_S",
    "NotReplicated",
    "PlainBus",
    "RedisStorage",
]
