"""What the Redis adapter's modules share: the key scheme, the health tracker, the
plain pipe, the bus's common part, the replication check, and :class:`RedisStore`, what
the bus, the pipes and the fast paths use of the storage.

:mod:`server.storage.redis` (the Storage port), :mod:`server.storage.redis_cluster`
(Redis Cluster) and :mod:`server.storage.redis_fast` (the fast paths) all build on this
module and it on none of them, so their imports point one way::

    redis.py ──> redis_fast.py ──> redis_cluster.py ──> redis_base.py
       └─────────────┴──────────────────────────────────────┘

Keys (``P`` = the key prefix, ``{CODE}`` = the room code in braces: a Redis Cluster
hash tag, so all keys of a room live on one slot):

==================================  ====================================================
``P:secret``                        the token secret, when none is configured (SET NX)
``P:player:<id>``                   hash: name, created (TTL 30 days)
``P:player:<id>:rooms``             msgpack list: codes of rooms they created (quota)
``P:{CODE}:room``                   hash: ``ver`` (int) and ``blob`` (msgpack room record)
``P:{CODE}:events``                 list of encoded ``event`` frames, last 200 (LTRIM)
``P:{CODE}:presence``               hash: ``process/player`` -> that process's open
                                    sockets of the player in the room
``P:{CODE}:alive``                  hash: process -> its last sign of life (server ms)
``P:{CODE}:r<round>:log:<player>``  list: the racer's actions, in order
``P:{CODE}:r<round>:seq``           hash: player -> last stored client ``seq``;
                                    ``player#seq`` -> its action (the latest 64)
``P:{CODE}:r<round>:progress``      hash: player -> msgpack progress record
``P:{CODE}:bus``                    pub/sub channel of the room (not a key; a shard
                                    channel in a Redis Cluster)
``P:{CODE}:sync``                   written before a WAIT when a game is loaded with
                                    ``wait_replicas`` > 0 (1 min TTL)
==================================  ====================================================

Every room key has a TTL (default 24 h) refreshed whenever it is written, so abandoned
rooms disappear on their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from crescent_wire.errors import InternalError
from server.core.ports import BusHandler
from server.logs import RepeatedEvent

log = logging.getLogger("server.storage.redis")

ROOM_TTL_S = 24 * 3600
PLAYER_TTL_S = 30 * 24 * 3600
EVENT_HISTORY = 200
MAX_REDIS_CONNECTIONS = 64
DEADLINE_S = 1.0  # the default deadline of every Redis call (Settings.redis_deadline_s)
WAIT_TIMEOUT_MS = 500  # WAIT's timeout (Settings.redis_wait_timeout_ms)
# What an unreachable, hung or restarting Redis raises (the callers get InternalError).
UNAVAILABLE = (RedisConnectionError, RedisTimeoutError, ConnectionError, TimeoutError, OSError)


class Keys:
    """Key names for one prefix (the table in the module docstring)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def secret(self) -> str:
        return f"{self.prefix}:secret"

    def player(self, player_id: str) -> str:
        return f"{self.prefix}:player:{player_id}"

    def player_rooms(self, player_id: str) -> str:
        return f"{self.prefix}:player:{player_id}:rooms"

    def room(self, code: str) -> str:
        return f"{self.prefix}:{{{code}}}:room"

    def events(self, code: str) -> str:
        return f"{self.prefix}:{{{code}}}:events"

    def presence(self, code: str) -> str:
        return f"{self.prefix}:{{{code}}}:presence"

    def alive(self, code: str) -> str:
        return f"{self.prefix}:{{{code}}}:alive"

    def bus(self, code: str) -> str:
        return f"{self.prefix}:{{{code}}}:bus"

    def sync(self, code: str) -> str:
        return f"{self.prefix}:{{{code}}}:sync"

    def log(self, code: str, round_: int, player_id: str) -> str:
        return f"{self.prefix}:{{{code}}}:r{round_}:log:{player_id}"

    def seqs(self, code: str, round_: int) -> str:
        return f"{self.prefix}:{{{code}}}:r{round_}:seq"

    def progress(self, code: str, round_: int) -> str:
        return f"{self.prefix}:{{{code}}}:r{round_}:progress"

    def code_from_bus(self, channel: str) -> str:
        # "P:{CODE}:bus" -> CODE
        return channel[len(self.prefix) + 2 : -5]


class RedisHealth:
    """Whether Redis answers, as the calls see it: one WARNING when it stops answering,
    one INFO when it is back (with how many calls failed, and for how long), instead of
    a traceback per failed request."""

    def __init__(self) -> None:
        self.up = True
        self.outage = RepeatedEvent(
            log,
            "redis is not answering; requests get internal_error until it is back",
            over_message="redis is back",
        )

    def ok(self) -> None:
        if not self.up:  # the hot path: one attribute test while Redis answers
            self.up = True
            self.outage.recovered()

    def failed(self, exc: BaseException) -> None:
        self.up = False
        self.outage.occurred(error=repr(exc))

    def unavailable(self, exc: BaseException) -> InternalError:
        """``exc`` (a lost, refused or timed-out call) as what the client is told."""
        self.failed(exc)
        error = InternalError("The server's storage is not answering; retry")
        error.__cause__ = exc
        return error


class Pipe(Protocol):
    def run(self, *commands: Sequence[Any]) -> Awaitable[list[Any]]:
        """The commands' replies in order, an error reply as its exception object."""


class RedisStore(Protocol):
    """What the bus, the pipes and the fast paths use of the storage
    (:class:`server.storage.redis.RedisStorage`): typed here so that they need not import
    the module that builds them."""

    # the client: a redis.asyncio.Redis, or a RedisCluster (their commands alike)
    redis: Any
    redis_url: str
    cluster: bool  # a Redis Cluster (server/storage/redis_cluster.py)
    keys: Keys
    health: RedisHealth
    deadline_s: float
    room_ttl_s: int
    wait_replicas: int
    wait_timeout_ms: int
    append_sha: str
    on_batch: Callable[[int, float], None] | None

    async def load_scripts(self) -> None: ...


class NotReplicated(InternalError):
    """WAIT answered with fewer replicas than ``wait_replicas``: the action is on the
    master only, so it is not acknowledged (the client retries; its duplicate is
    recognised)."""


def check_replicated(reply: Any, wanted: int, timeout_ms: int) -> None:
    if isinstance(reply, Exception):
        raise reply
    if int(reply) < wanted:
        raise NotReplicated(
            f"The action reached {int(reply)} of {wanted} replicas within {timeout_ms} ms; retry"
        )


class PlainPipe:
    """The frequent calls as redis-py pipelines (no transaction)."""

    def __init__(self, storage: RedisStore) -> None:
        self.storage = storage

    async def run(self, *commands: Sequence[Any]) -> list[Any]:
        async with self.storage.redis.pipeline(transaction=False) as pipe:
            for command in commands:
                pipe.execute_command(*command)
            return list(await pipe.execute(raise_on_error=False))


class BusBase:
    """What both buses share: the channels to (re)subscribe, the reader task, and
    subscribe/unsubscribe by room code. Subclasses open and close their connection,
    send a SUBSCRIBE or UNSUBSCRIBE (``_command``) and run the reader (``_run``)."""

    def __init__(self, store: RedisStore, handler: BusHandler) -> None:
        self.store = store
        self.handler = handler
        self._channels: set[str] = {f"{store.keys.prefix}:process-alive"}
        self._task: asyncio.Task[None] | None = None
        # A SUBSCRIBE/UNSUBSCRIBE that failed (the connection dropped): once per episode.
        self.command_failures = RepeatedEvent(
            log, "bus command failed; the bus reconnects and subscribes again"
        )

    async def start(self) -> None:
        await self._open()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="bus-reader")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._close()

    async def subscribe(self, code: str) -> None:
        channel = self.store.keys.bus(code)
        if channel not in self._channels:
            self._channels.add(channel)
            await self._command("SUBSCRIBE", channel)

    async def unsubscribe(self, code: str) -> None:
        channel = self.store.keys.bus(code)
        if channel in self._channels:
            self._channels.discard(channel)
            await self._command("UNSUBSCRIBE", channel)

    def _deliver(self, channel: bytes, payload: bytes) -> None:
        try:
            self.handler(self.store.keys.code_from_bus(channel.decode()), payload)
        except Exception:
            log.exception("bus handler failed")

    async def _lost(self, exc: Exception) -> None:
        """The connection failed: close it; the reader reopens it after a pause."""
        # One WARNING per outage (the health tracker), not one per reconnect attempt.
        log.debug("bus read failed", extra={"error": repr(exc)})
        self.store.health.failed(exc)
        await self._close()
        await asyncio.sleep(0.5)

    async def _open(self) -> None:
        raise NotImplementedError

    async def _close(self) -> None:
        raise NotImplementedError

    async def _command(self, verb: str, channel: str) -> None:
        raise NotImplementedError

    async def _run(self) -> None:
        raise NotImplementedError
