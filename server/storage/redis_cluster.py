"""Redis Cluster: the cluster URL, the cluster client, per-node clients and the sharded
bus (docs/server.md, "Redis Cluster").

A cluster is selected by a ``redis+cluster://host:port[,host:port…]`` URL (``rediss+``
for TLS; user and password as in ``redis://``), or by ``CRESCENT_REDIS_CLUSTER=1`` with a
plain ``redis://`` URL naming one node. Every key of a room shares the room's hash tag
``{CODE}`` and every Lua script touches one room (one slot), so each call goes to the
master of the room's slot; the bus is sharded pub/sub (``SSUBSCRIBE``/``SPUBLISH``,
Redis 7): a room's messages go only through the master (and replicas) of its slot.

Only public redis-py API is used here (``RedisCluster``, its nodes' host, port and
connection settings, ``Connection``); :mod:`server.storage.redis_pipelines` routes its
pipelines per node, on connections :mod:`server.storage.redis_fast` takes over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.exceptions import AskError, ClusterDownError, TryAgainError

from server.core.ports import BusHandler
from server.storage.redis_base import BusBase, RedisStore

log = logging.getLogger("server.storage.redis_cluster")

CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://")
# Redirections and transient cluster states: the call is sent again (it did not run).
REDIRECTED = (AskError, TryAgainError, ClusterDownError)
PING_AFTER_S = 30.0  # a bus connection silent this long is pinged


def is_cluster_url(url: str) -> bool:
    return url.lower().startswith(CLUSTER_SCHEMES)


def parse_cluster_url(url: str) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """The startup nodes and connection options of a cluster URL.

    >>> parse_cluster_url("redis+cluster://u:p%40ss@a:7000,b:7001/0")
    ([('a', 7000), ('b', 7001)], {'username': 'u', 'password': 'p@ss'})
    >>> parse_cluster_url("rediss+cluster://h")
    ([('h', 6379)], {'ssl': True})
    """
    if not is_cluster_url(url):
        raise ValueError(f"not a cluster URL: {url!r}")
    scheme, _, rest = url.partition("://")
    rest = rest.split("?", 1)[0]
    netloc, _, path = rest.partition("/")
    if path.strip("/") not in ("", "0"):
        raise ValueError("a Redis Cluster has only database 0")
    options: dict[str, Any] = {}
    if scheme.lower().startswith("rediss"):
        options["ssl"] = True
    auth, at, hosts = netloc.rpartition("@")
    if at:
        user, colon, password = auth.partition(":")
        if user:
            options["username"] = unquote(user)
        if colon:
            options["password"] = unquote(password)
    nodes = []
    for part in hosts.split(","):
        host, colon, port = part.strip().rpartition(":")
        if not colon:
            host, port = port, "6379"
        if not host:
            raise ValueError(f"no host in {url!r}")
        nodes.append((host.strip("[]"), int(port)))
    return nodes, options


def cluster_client(url: str, **options: Any) -> RedisCluster:
    """A redis-py cluster client for a cluster URL (``options``: connection settings)."""
    nodes, auth = parse_cluster_url(url)
    return RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in nodes],
        require_full_coverage=False,  # rooms on the other masters keep playing
        **auth,
        **options,
    )


def node_options(node: ClusterNode) -> dict[str, Any]:
    """What a plain client or connection to ``node`` needs (host, port, password…)."""
    return dict(node.connection_kwargs)


async def refresh_slots(cluster: RedisCluster) -> None:
    """Re-read the slot map from the live nodes (after a failover moved slots); a
    failure is left to the caller's next attempt."""
    with contextlib.suppress(Exception):
        await cluster.nodes_manager.initialize()


class NodeClients:
    """A plain ``redis.asyncio.Redis`` per cluster node (bounded pools, made on first
    use): for calls that must share one connection, like an append and the ``WAIT``
    behind it (``WAIT`` counts the writes of its own connection)."""

    def __init__(self, cluster: RedisCluster, max_connections: int, timeout: float) -> None:
        self.cluster = cluster
        self.max_connections = max_connections
        self.timeout = timeout
        self._clients: dict[str, aioredis.Redis] = {}

    def for_key(self, key: str) -> aioredis.Redis:
        node = self.cluster.get_node_from_key(key)
        if node is None:
            raise ClusterDownError(f"no node serves {key!r}")
        return self.for_address(node.host, int(node.port))

    def for_address(self, host: str, port: int) -> aioredis.Redis:
        name = f"{host}:{port}"
        client = self._clients.get(name)
        if client is None:
            node = self.cluster.get_node(host=host, port=port)
            options = node_options(node) if node is not None else {}
            options.update(host=host, port=port)
            for unusable in ("retry", "event_dispatcher", "connection_pool"):
                options.pop(unusable, None)
            pool = aioredis.BlockingConnectionPool(
                max_connections=self.max_connections, timeout=self.timeout, **options
            )
            client = self._clients[name] = aioredis.Redis(connection_pool=pool)
        return client

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            with contextlib.suppress(Exception):
                await client.aclose(close_connection_pool=True)


async def run_on_owner(
    clients: NodeClients, key: str, commands: Sequence[Sequence[Any]], attempts: int = 5
) -> list[Any]:
    """Run ``commands`` (all of ``key``'s slot) as one pipeline on the master serving
    ``key``, on one connection; after a MOVED or ASK the pipeline goes to the node named
    (with ``ASKING`` first after an ASK), after TRYAGAIN or CLUSTERDOWN it is sent again
    a moment later, ``attempts`` times at most. The replies, error replies in place."""
    client = clients.for_key(key)
    asking = False
    replies: list[Any] = []
    for attempt in range(attempts):
        async with client.pipeline(transaction=False) as pipe:
            if asking:
                pipe.execute_command("ASKING")
            for command in commands:
                pipe.execute_command(*command)
            replies = list(await pipe.execute(raise_on_error=False))
        if asking:
            replies = replies[1:]
        redirect = next((r for r in replies if isinstance(r, REDIRECTED)), None)
        if redirect is None:
            return replies
        if isinstance(redirect, AskError):  # MovedError is an AskError too
            asking = type(redirect) is AskError
            client = clients.for_address(redirect.host, int(redirect.port))
            if not asking:  # the slot moved for good: re-read the slot map
                await refresh_slots(clients.cluster)
        else:
            await asyncio.sleep(0.05 * (attempt + 1))
            await refresh_slots(clients.cluster)
            client = clients.for_key(key)
            asking = False
    return replies


class ShardedBus(BusBase):
    """The bus on a cluster: sharded pub/sub, one connection per master that serves a
    subscribed room (``SSUBSCRIBE`` takes channels of one slot, so one per channel),
    each read by its own task. A lost connection, or a ``sunsubscribe`` the server sent
    unasked (the slot moved: failover or resharding), makes the bus re-read the slot map
    and subscribe every channel again where it now lives; messages published meanwhile
    are lost, as with any pub/sub (the progress flush and ``sync`` recover)."""

    def __init__(self, store: RedisStore, handler: BusHandler, cluster: RedisCluster) -> None:
        super().__init__(store, handler)
        self.cluster = cluster
        self._conns: dict[str, Any] = {}  # node name -> its redis-py Connection
        self._readers: dict[str, asyncio.Task[None]] = {}
        self._node_of: dict[str, str] = {}  # channel -> node name
        self._broken = asyncio.Event()
        self._lock = asyncio.Lock()
        self._lost_node: str | None = None  # the master whose connection was lost

    async def _open(self) -> None:
        self._broken.clear()
        async with self._lock:
            for channel in sorted(self._channels):
                await self._subscribe_locked(channel)

    async def _connection(self, node: ClusterNode) -> Any:
        conn = self._conns.get(node.name)
        if conn is None:
            options = node_options(node)
            options.update(protocol=2, client_name=f"{self.store.keys.prefix}:bus")
            for unusable in ("retry", "event_dispatcher", "connection_pool"):
                options.pop(unusable, None)
            conn = aioredis.Connection(**options)
            await conn.connect()  # type: ignore[no-untyped-call]
            self._conns[node.name] = conn
            self._readers[node.name] = asyncio.get_running_loop().create_task(
                self._read(node.name, conn), name=f"bus-reader-{node.name}"
            )
        return conn

    async def _subscribe_locked(self, channel: str) -> None:
        node = self.cluster.get_node_from_key(channel)
        if node is None:
            raise ClusterDownError(f"no node serves {channel!r}")
        conn = await self._connection(node)
        self._node_of[channel] = node.name
        await conn.send_command("SSUBSCRIBE", channel, check_health=False)

    async def _close(self) -> None:
        readers, self._readers = list(self._readers.values()), {}
        conns, self._conns = list(self._conns.values()), {}
        self._node_of.clear()
        for task in readers:
            task.cancel()
        for task in readers:
            with contextlib.suppress(BaseException):
                await task
        for conn in conns:
            with contextlib.suppress(Exception):
                await conn.disconnect()

    async def _command(self, verb: str, channel: str) -> None:
        if self._broken.is_set():
            return  # the bus is reopening: it subscribes every channel
        try:
            async with self._lock:
                if verb == "SUBSCRIBE":
                    await self._subscribe_locked(channel)
                else:
                    name = self._node_of.pop(channel, None)
                    conn = self._conns.get(name) if name is not None else None
                    if conn is not None:
                        await conn.send_command("SUNSUBSCRIBE", channel, check_health=False)
        except Exception as exc:  # reopen everything
            self.command_failures.occurred(error=repr(exc))
            self._broken.set()
        else:
            self.command_failures.recovered()

    async def _read(self, name: str, conn: Any) -> None:
        pinged = False
        try:
            while True:
                # None after PING_AFTER_S of silence: ping; still silent: reopen.
                message = await conn.read_response(timeout=PING_AFTER_S)
                if message is None:
                    if pinged:
                        raise ConnectionError(f"no reply to PING from {name}")
                    pinged = True
                    await conn.send_command("PING", check_health=False)
                    continue
                pinged = False
                if type(message) is not list or len(message) != 3:
                    continue
                kind = message[0]
                if kind == b"smessage":
                    self._deliver(message[1], message[2])
                elif kind == b"sunsubscribe":
                    channel = message[1].decode()
                    if channel in self._channels and self._node_of.get(channel) == name:
                        # not asked for: the slot moved (failover, resharding)
                        raise ConnectionError(f"{channel} moved away from {name}")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.debug("bus connection lost", extra={"node": name, "error": repr(exc)})
            self._lost_node = name
            self._broken.set()

    async def _run(self) -> None:
        while True:
            try:
                await self._broken.wait()
                lost = self._lost_node
                await self._lost(ConnectionError("a bus connection was lost"), lost)
                await self._refresh_slots()
                await self._open()
                # Every channel is subscribed where the slot map says it lives now; the
                # lost master's outage ends with the next call to it, or once its
                # replica is promoted (the health tracker sees it in the slot map).
                self._lost_node = None
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._broken.set()
                log.debug("reopening the bus failed", extra={"error": repr(exc)})

    async def _refresh_slots(self) -> None:
        await refresh_slots(self.cluster)


__all__ = [
    "CLUSTER_SCHEMES",
    "NodeClients",
    "ShardedBus",
    "cluster_client",
    "is_cluster_url",
    "parse_cluster_url",
    "refresh_slots",
    "run_on_owner",
]
