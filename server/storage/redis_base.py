"""What the Redis adapter's modules share: the key scheme, the health tracker, the
plain pipe, the bus's common part, the replication check, and :class:`RedisStore`, what
the bus, the pipes and the fast paths use of the storage.

Every other module of the Redis adapter builds on this module and it on none of them,
so their imports point one way (down; the fast path's internals confined to
``redis_fast.py``)::

    redis.py (RedisStorage, the plain bus) ──> redis_rooms.py, redis_games.py
        ──> redis_calls.py (RedisCalls) ──> redis_scripts.py
                           └──> redis_pipelines.py ──> redis_fast.py ──> redis_base.py
    redis_cluster.py ──> redis_base.py  (imported by redis.py, redis_calls.py,
                                          redis_games.py, redis_pipelines.py)

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
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

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


# How an adapter's call is made (``guard(call, key)``: ``key`` names the slot, so the
# master, it goes to): a Redis that does not answer becomes InternalError.
Guard = Callable[[Awaitable[Any], str | None], Awaitable[Any]]


def plain_guard(deadline_s: float) -> Guard:
    """A guard without a health tracker (a command-line tool's own client): a call not
    answered within ``deadline_s``, or whose connection is lost, is InternalError. The
    server's adapters take ``RedisStorage.guarded`` instead (the per-master health)."""

    async def guard(call: Awaitable[Any], key: str | None = None) -> Any:
        try:
            return await asyncio.wait_for(call, deadline_s)
        except Exception as exc:
            if not unavailable_error(exc):
                raise
            raise InternalError("The server's storage is not answering; retry") from exc

    return guard


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
    """Whether each Redis master answers, as the calls see it: per master, one WARNING
    when it stops answering and one INFO when it is back (with how many calls failed,
    and for how long), instead of a traceback per failed request. A single server is
    one master (``default``); in a Redis Cluster a call to one master succeeding says
    nothing of the others, so each has its own episode, named by its address
    (``host:port``, the ``master`` field of both lines).

    ``masters`` (a cluster): the addresses of the current masters. A master that is not
    one any more (killed, its replica promoted in its place) is back as far as the
    calls go: its slots answer elsewhere; its episode ends at the next call that
    succeeds, with ``replaced`` true. ``on_change(master, up)``: a master's state
    changed (the per-master gauge).

    ``sent``: the :attr:`epoch` a call read when it was sent. A reply to a call sent
    before an outage began (read from the socket after the failure was noticed: the
    event loop handles a dead server's sockets in any order) says nothing of the
    outage and does not end it; a call sent after it began does."""

    def __init__(
        self,
        default: str = "redis",
        *,
        masters: Callable[[], Collection[str]] | None = None,
        on_change: Callable[[str, bool], None] | None = None,
    ) -> None:
        self.default = default
        self.masters = masters
        self.on_change = on_change
        self.up = True  # every master answers (the hot path tests this one attribute)
        self._outages: dict[str, RepeatedEvent] = {}
        # How many outages have begun: a call reads it when it is sent (see ``sent``).
        self.epoch = 0
        self._began: dict[str, int] = {}  # each outage's epoch
        # The latest master replaced by its replica, and when (time.monotonic()).
        self.last_replaced: tuple[str, float] | None = None

    @property
    def down(self) -> list[str]:
        """The masters not answering, as last seen."""
        return sorted(self._outages)

    def ok(self, master: str | None = None, sent: int | None = None) -> None:
        if not self.up:  # the hot path: one attribute test while every master answers
            master = master or self.default
            if sent is not None and sent < self._began.get(master, 0):
                return  # sent before this outage began: an old reply, not a recovery
            self._recovered(master)

    def failed(self, exc: BaseException, master: str | None = None) -> None:
        """``master``: the address of the master that failed; by default the one the
        exception names (redis-py's cluster client and the fast paths set
        ``last_failed_node_name``), else ``default``."""
        master = master or failed_master(exc) or self.default
        outage = self._outages.get(master)
        if outage is None and self._former_master(master):
            # A call still in flight when the master was replaced: that outage is over.
            log.debug("call to a former master failed", extra={"master": master})
            return
        self.up = False
        if outage is None:
            self.epoch += 1
            self._began[master] = self.epoch
            outage = self._outages[master] = RepeatedEvent(
                log,
                "redis is not answering; requests get internal_error until it is back",
                over_message="redis is back",
            )
            if self.on_change is not None:
                self.on_change(master, False)
        outage.occurred(error=repr(exc), master=master)

    def unavailable(self, exc: BaseException, master: str | None = None) -> InternalError:
        """``exc`` (a lost, refused or timed-out call) as what the client is told."""
        self.failed(exc, master)
        error = InternalError("The server's storage is not answering; retry")
        error.__cause__ = exc
        return error

    def _recovered(self, master: str) -> None:
        self._end(master, replaced=False)
        if self._outages and self.masters is not None:
            try:
                current = set(self.masters())
            except Exception:  # the slot map is being read again: next time
                current = set(self._outages)
            for gone in [m for m in self._outages if m not in current]:
                self._end(gone, replaced=True)
        self.up = not self._outages

    def _former_master(self, master: str) -> bool:
        if self.masters is None or master == self.default:
            return False
        try:
            current = set(self.masters())
        except Exception:  # the slot map is being read again
            return False
        return bool(current) and master not in current

    def _end(self, master: str, *, replaced: bool) -> None:
        outage = self._outages.pop(master, None)
        self._began.pop(master, None)
        if outage is not None:
            outage.recovered(master=master, replaced=replaced)
            if replaced:
                self.last_replaced = (master, time.monotonic())
            if self.on_change is not None:
                self.on_change(master, True)


def server_address(url: str) -> str:
    """The ``host:port`` (or socket path) of a single Redis server's URL: its one master.

    >>> server_address("redis://:secret@10.0.0.5:6380/2"), server_address("unix:///r.sock")
    ('10.0.0.5:6380', '/r.sock')
    """
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return parts.path
    return f"{parts.hostname or 'localhost'}:{parts.port or 6379}"


def unavailable_error(exc: BaseException) -> bool:
    """Whether ``exc`` says Redis is not answering (the caller gets internal_error):
    one of UNAVAILABLE, or redis-py using a connection another task closed meanwhile
    (a master killed: its cluster client closes every connection after a failed
    pipeline) — ``AttributeError: 'NoneType' object has no attribute 'writelines'`` on
    its stream, or uvloop's ``RuntimeError`` "handler is closed"."""
    if isinstance(exc, UNAVAILABLE):
        return True
    text = str(exc)
    return (isinstance(exc, AttributeError) and text.startswith("'NoneType' object")) or (
        isinstance(exc, RuntimeError) and "handler is closed" in text
    )


def failed_master(exc: BaseException) -> str | None:
    """The address of the master a failed call went to, when the exception says it."""
    name = getattr(exc, "last_failed_node_name", None)
    return name if isinstance(name, str) else None


def name_master(exc: BaseException, master: str | None) -> BaseException:
    """``exc``, naming the master it came from (see :func:`failed_master`)."""
    if master is not None:
        with contextlib.suppress(AttributeError):  # a built-in exception without __dict__
            exc.last_failed_node_name = master  # type: ignore[attr-defined]
    return exc


class Pipe(Protocol):
    def run(self, *commands: Sequence[Any]) -> Awaitable[list[Any]]:
        """The commands' replies in order, an error reply as its exception object."""


class RedisStore(Protocol):
    """What the bus, the pipes and the fast paths use of the storage
    (:class:`server.storage.redis_calls.RedisCalls`): typed here so that they need not import
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
        self._channels: set[str] = set()
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

    async def _lost(self, exc: Exception, master: str | None = None) -> None:
        """The connection failed: close it; the reader reopens it after a pause."""
        # One WARNING per outage (the health tracker), not one per reconnect attempt.
        log.debug("bus read failed", extra={"error": repr(exc)})
        self.store.health.failed(exc, master)
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
