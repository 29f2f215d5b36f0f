"""Redis: the calls every part of the Storage port makes (:class:`RedisCalls`): the
client (one Redis or a Redis Cluster), the Lua scripts loaded, the calls with their
deadline and an unreachable Redis told as ``internal_error`` (the master to blame
named to the health tracker), and the fast paths switched on or off.

:class:`server.storage.redis.RedisStorage` is this plus its areas:
:mod:`server.storage.redis_rooms` (players, rooms, presence) and
:mod:`server.storage.redis_games` (actions, progress, publishing).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.crc import key_slot
from redis.exceptions import RedisError

from server.core.ports import StartUpError
from server.storage import redis_cluster
from server.storage.redis_base import (
    DEADLINE_S,
    MAX_REDIS_CONNECTIONS,
    ROOM_TTL_S,
    WAIT_TIMEOUT_MS,
    Keys,
    Pipe,
    PlainPipe,
    RedisHealth,
    failed_master,
    server_address,
    unavailable_error,
)
from server.storage.redis_pipelines import FastPaths
from server.storage.redis_scripts import (
    APPEND_ACTIONS,
    CAS_ROOM,
    PRESENCE_CHANGE,
    PRESENCE_LAPSED,
)


class RedisCalls:
    """One process's Redis client and how every call goes: what the bus, the pipes and
    the fast paths use of the storage (:class:`~server.storage.redis_base.RedisStore`).

    ``fast``: the frequent calls go through :mod:`server.storage.redis_pipelines`; else
    through redis-py's public API only (slower, same behaviour)."""

    def __init__(
        self,
        redis_url: str,
        prefix: str,
        *,
        room_ttl_s: int = ROOM_TTL_S,
        fast: bool = True,
        deadline_s: float = DEADLINE_S,
        wait_replicas: int = 0,
        wait_timeout_ms: int = WAIT_TIMEOUT_MS,
    ) -> None:
        self.redis_url = redis_url
        # A Redis Cluster (a redis+cluster:// URL; server/storage/redis_cluster.py).
        self.cluster = redis_cluster.is_cluster_url(redis_url)
        # Every append is acknowledged only once this many replicas have it (WAIT).
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms
        self.keys = Keys(prefix)
        self.room_ttl_s = room_ttl_s
        # Every call fails within about this long if Redis hangs (internal_error).
        self.deadline_s = deadline_s
        # The client: a redis.asyncio.Redis, or a RedisCluster (their commands alike).
        self.redis: Any
        self.node_clients: redis_cluster.NodeClients | None = None
        self._open_client()
        # One outage per master: the cluster's are named by their addresses (a call
        # whose master is unknown counts as the pseudo-master "cluster").
        self.health = (
            RedisHealth("cluster", masters=self._masters)
            if self.cluster
            else RedisHealth(server_address(redis_url))
        )
        # Sharded pub/sub in a cluster: a room's messages stay on its slot's master.
        self.publish = "SPUBLISH" if self.cluster else "PUBLISH"
        self.cas_sha = ""
        self.append_sha = ""
        self.presence_change_sha = ""
        self.presence_lapsed_sha = ""
        # (size, seconds) of each batch of appends: metrics
        self.on_batch: Callable[[int, float], None] | None = None
        self.fast_paths: FastPaths | None = None  # the redis fast path, if on
        self.pipe: Pipe = PlainPipe(self)
        if fast:
            self.fast_paths = FastPaths(self)
            self.pipe = self.fast_paths.pipe
        self._background: set[asyncio.Task[None]] = set()

    def _open_client(self) -> None:
        """``redis`` (and ``node_clients`` in a cluster), from the URL and the deadline."""
        deadline_s = self.deadline_s
        options: dict[str, Any] = {
            "decode_responses": False,
            "health_check_interval": 30,
            "socket_timeout": deadline_s,
            "socket_connect_timeout": deadline_s,
        }
        if not self.redis_url.startswith("unix:"):
            options["socket_keepalive"] = True
        if self.cluster:
            del options["health_check_interval"]
            self.redis = redis_cluster.cluster_client(
                self.redis_url, max_connections=MAX_REDIS_CONNECTIONS, **options
            )
            # Appends go to the master of the room's slot on one connection (WAIT).
            self.node_clients = redis_cluster.NodeClients(
                self.redis, MAX_REDIS_CONNECTIONS, max(5.0, deadline_s)
            )
            return
        # A bounded pool that waits for a free connection: a burst of thousands of
        # requests (e.g. every client reconnecting after a deploy) queues up instead of
        # opening thousands of Redis connections or failing with "Too many connections".
        pool = aioredis.BlockingConnectionPool.from_url(
            self.redis_url,
            max_connections=MAX_REDIS_CONNECTIONS,
            timeout=max(5.0, deadline_s),
            **options,
        )
        self.redis = aioredis.Redis(connection_pool=pool)

    async def start(self) -> None:
        try:
            await self.load_scripts()
        except (RedisError, OSError) as exc:  # the first call: nothing answers there
            where = (
                "the Redis Cluster"
                if self.cluster
                else f"Redis at {server_address(self.redis_url)}"
            )
            raise StartUpError(
                f"{where} does not answer ({exc}): start it, correct"
                " --redis-url (CRESCENT_REDIS_URL), or leave that unset for an embedded"
                " Redis"
            ) from exc
        if self.fast_paths is not None:
            self.fast_paths.start()

    async def close(self) -> None:
        if self.fast_paths is not None:
            await self.fast_paths.stop()
        for _ in range(250):  # let plain appends in flight finish (graceful shutdown)
            if not self._background:
                break
            await asyncio.sleep(0.02)
        if self.node_clients is not None:
            await self.node_clients.close()
        if self.cluster:
            await self.redis.aclose()
        else:
            await self.redis.aclose(close_connection_pool=True)

    async def load_scripts(self) -> None:
        # In a cluster redis-py loads each script on every master.
        self.cas_sha = await self.redis.script_load(CAS_ROOM.replace("PUBLISH", self.publish))
        self.append_sha = await self.redis.script_load(APPEND_ACTIONS)
        self.presence_change_sha = await self.redis.script_load(PRESENCE_CHANGE)
        self.presence_lapsed_sha = await self.redis.script_load(PRESENCE_LAPSED)

    async def ping(self) -> bool:
        sent = self.health.epoch
        try:
            answered = bool(await asyncio.wait_for(self.redis.ping(), self.deadline_s))
        except (TimeoutError, RedisError, OSError) as exc:
            self.health.failed(exc)
            return False
        self.health.ok(sent=sent)
        return answered

    async def _run(self, *commands: Sequence[Any]) -> list[Any]:
        """The frequent calls (see Pipe), with an unreachable Redis as InternalError:
        also when a cluster pipeline answers a lost connection in place of a reply."""
        started, sent = time.monotonic(), self.health.epoch
        try:
            replies = await asyncio.wait_for(self.pipe.run(*commands), self.deadline_s * 2)
        except Exception as exc:
            if not unavailable_error(exc):
                raise
            culprit = self._culprit(exc, self._masters_of(commands), started)
            raise self.health.unavailable(exc, culprit) from exc
        for command, reply in zip(commands, replies, strict=False):
            # also uvloop's "handler is closed" RuntimeError in place of a reply (a
            # connection the outage closed under the pipeline; seen in the soak)
            if isinstance(reply, BaseException) and unavailable_error(reply):
                culprit = self._culprit(reply, {self._owner(None, key_of(command))}, started)
                raise self.health.unavailable(reply, culprit) from reply
        if not self.health.up:  # every master the call went to answered
            for master in self._masters_of(commands):
                self.health.ok(master, sent)
            self.health.ok(sent=sent)  # and a failure no master could be blamed for is over
        return replies

    def _masters_of(self, commands: Sequence[Sequence[Any]]) -> set[str | None]:
        """The masters a call's commands go to (a cluster pipeline may span several)."""
        if not self.cluster:
            return {None}
        return {self._owner(None, key_of(command)) for command in commands}

    def _culprit(self, exc: BaseException, masters: set[str | None], started: float) -> str | None:
        """The master to blame for a failed call to ``masters`` (made at ``started``,
        time.monotonic()): the one the exception names, else one of them already down;
        else, in a cluster, a master down now or replaced by its replica since the call
        started (while a master is unreachable the cluster client stalls re-reading its
        slot map and closes its other connections: calls to the other masters fail
        too, and that is the same outage); else the call's only master; else none known
        (the health's default)."""
        named = failed_master(exc)
        if named is not None:
            return named
        down = self.health.down
        blamed = sorted(m for m in masters if m is not None and m in down)
        if blamed:
            return blamed[0]
        if self.cluster:
            if down:
                return down[0]
            replaced = self.health.last_replaced
            if replaced is not None and replaced[1] >= started:
                return replaced[0]
        return next(iter(masters)) if len(masters) == 1 else None

    async def guarded(self, call: Awaitable[Any], key: str | None = None) -> Any:
        """:meth:`_call` for the other adapters on this client (the daily storage's
        ``Guard``): their outages count in the same per-master health."""
        return await self._call(call, key)

    async def run_commands(self, *commands: Sequence[Any]) -> list[Any]:
        """Commands for another adapter on this Redis (the archive's outbox), through
        the command pipe: a few µs a command instead of redis-py's ~100 µs a call. Error
        replies come back in their place (as exceptions); an unreachable Redis raises
        InternalError (counted in the same per-master health)."""
        return await self._run(*commands)

    async def _call(self, call: Awaitable[Any], key: str | None = None) -> Any:
        """A redis-py call (on ``key``'s master in a cluster, if it names one), with an
        unreachable Redis as InternalError."""
        started, sent = time.monotonic(), self.health.epoch
        try:
            reply = await asyncio.wait_for(call, self.deadline_s * 2)
        except Exception as exc:
            if not unavailable_error(exc):
                raise
            culprit = self._culprit(exc, {self._owner(None, key)}, started)
            raise self.health.unavailable(exc, culprit) from exc
        if not self.health.up:
            self.health.ok(self._owner(None, key), sent)
        return reply

    def _owner(self, exc: BaseException | None, key: Any) -> str | None:
        """The address of the master a call went to (None: the health's default): the
        one the exception names, else the one the slot map gives ``key``'s slot."""
        master = failed_master(exc) if exc is not None else None
        if master is not None or not self.cluster or key is None:
            return master
        try:
            raw = key if isinstance(key, bytes) else str(key).encode()
            return str(self.redis.nodes_manager.get_node_from_slot(key_slot(raw)).name)
        except Exception:  # no slot map yet, or the slot is not covered
            return None

    def _masters(self) -> list[str]:
        """The current masters' addresses, as the cluster client's slot map has them."""
        nodes = self.redis.nodes_manager.get_nodes_by_server_type("primary")
        return [str(node.name) for node in nodes]


def pairs(reply: Any) -> Any:
    """An HGETALL reply's (field, value) pairs: a map in RESP3, a flat list in RESP2."""
    if isinstance(reply, dict):
        return reply.items()
    return zip(reply[::2], reply[1::2], strict=True)


def key_of(command: Sequence[Any]) -> Any:
    """The first key a command names (all keys of one call share a slot), or None."""
    if command[0] == "EVALSHA":
        return command[3] if len(command) > 3 and int(command[2]) > 0 else None
    return command[1] if len(command) > 1 else None


def raise_errors(replies: list[Any]) -> list[Any]:
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply
    return replies


__all__ = ["RedisCalls", "key_of", "pairs", "raise_errors"]
