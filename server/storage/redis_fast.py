"""redis-py internals, confined here: the redis fast path's connections.

redis-py's client costs ~100 µs of Python per call and its PubSub tens of µs per
message; every stored action and every bus message pass through Redis. So, with the
``redis`` fast path on (``Settings.fast_paths``, the default), the frequent calls go over
connections this module takes over from redis-py:

- :class:`Pipeliner`: a queue of requests written as one pipeline per turn of the event
  loop on one dedicated connection, several pipelines in flight, each caller's callback
  called as soon as its pipeline's replies are read; :mod:`server.storage.redis_pipelines`
  builds the write batcher (``ActionWriter``) and the command pipe (``CommandPipe``) on
  it, with RESP packed by :func:`resp_bulk` and :func:`pack_command`;
- :class:`FastBus`: pub/sub on its own raw reader.

The internals used: a connected redis-py connection's transport (``conn._writer``)
and parser (``conn._parser._reader``, hiredis) are taken over, and hiredis's
``NOT_ENOUGH_DATA`` sentinel (``redis._parsers.hiredis``). :data:`WRITTEN_FOR` names
the redis-py version this was written against; tests/server/test_pins.py fails,
naming it, when the installed version differs. No other module touches redis-py's
internals: :mod:`server.storage.redis_pipelines` uses only what this module offers and
redis-py's public API. With the fast path off, :mod:`server.storage.redis` uses
redis-py's public API only.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

from redis._parsers.hiredis import NOT_ENOUGH_DATA as _NOT_ENOUGH_DATA
from redis.exceptions import ResponseError

from server.core.ports import BusHandler
from server.storage.redis_base import BusBase, RedisStore, name_master, unavailable_error

log = logging.getLogger("server.storage.redis_fast")

WRITTEN_FOR = ("redis", "8.1.0")  # (distribution, exact version): see tests/server/test_pins.py
MAX_BATCH = 512
MAX_IN_FLIGHT = 4  # pipelines sent and not yet answered, per pipeliner


def resp_bulk(value: Any) -> bytes:
    data = value if isinstance(value, bytes) else str(value).encode()
    return b"$%d\r\n%s\r\n" % (len(data), data)


def resp_bulks(values: Sequence[Any]) -> bytes:
    """Several RESP bulk strings, concatenated (one action's arguments, packed once)."""
    return b"".join([resp_bulk(v) for v in values])


def pack_command(*args: Any) -> bytes:
    """One Redis command in RESP (what redis-py's pack_command does, without its overhead)."""
    return b"*%d\r\n" % len(args) + b"".join(resp_bulk(a) for a in args)


async def read_reply(conn: Any) -> Any:
    """The next reply on a redis-py connection, read with its hiredis reader directly.

    redis-py's ``read_response`` costs several µs of Python per reply (timeouts, health
    and push-message handling), and every stored action's reply passes here. An error
    reply comes back as its exception object (``ResponseError``, ``NoScriptError``…),
    as redis-py's parsers build it; a closed connection raises ``ConnectionError``. The
    caller sets the timeout. Without hiredis (a dependency), redis-py's own path."""
    parser = conn._parser  # noqa: SLF001
    reader = getattr(parser, "_reader", None)
    if reader is None or not hasattr(reader, "gets"):
        try:
            return await conn.read_response(timeout=math.inf)
        except ResponseError as err:
            return err
    reply = reader.gets()
    while reply is _NOT_ENOUGH_DATA:
        data = await parser._stream.read(65536)  # noqa: SLF001
        if not data:
            raise ConnectionError("Redis closed the connection")
        reader.feed(data)
        reply = reader.gets()
    if isinstance(reply, ConnectionError):
        raise reply
    return reply


class Pipeliner:
    """What ActionWriter and CommandPipe (:mod:`server.storage.redis_pipelines`) share: a
    queue of items (each a tuple whose last element is the caller's future or callback)
    and one dedicated Redis connection.

    Everything queued during a turn of the event loop goes out at the end of that turn
    as one pipeline (up to ``MAX_BATCH`` items), without waiting for the replies of the
    pipelines before it (up to ``MAX_IN_FLIGHT`` of them). The connection is opened by
    redis-py (address, password, database, client name), then its socket is taken over
    by a :class:`_ReplyReader`: replies are parsed (hiredis) as they arrive, inside the
    event loop's read callback, and each batch is resolved as soon as its last reply is
    in, in order (Redis answers one connection's commands in order). So an action's ack
    leaves in the same turn as Redis's reply, with no task woken on the way. A lost
    connection fails every batch in flight on it; the next batch reconnects. Subclasses
    say how a batch is packed and how many replies it gets (``_pack``) and how the
    replies resolve it (``_resolve``)."""

    task_name = "redis-pipeliner"

    def __init__(self, store: RedisStore, node: Any = None) -> None:
        self.store = store
        # In a cluster: the redis-py ClusterNode (a master) this pipeliner writes to.
        self.node = node
        # The master's address for the health tracker (None: the single server).
        self.master: str | None = node.name if node is not None else None
        # Called when the connection fails or cannot be made (a cluster re-reads its
        # slot map: the node may have failed over).
        self.on_trouble: Callable[[], None] | None = None
        self._queue: list[Any] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._conn: Any = None  # the redis-py connection whose socket _reader reads
        self._reader: _ReplyReader | None = None
        self._connecting: asyncio.Task[None] | None = None
        self._scheduled = False
        self._stopping = False
        # (batch, plan, replies expected, replies so far, loop time sent), oldest first
        self._inflight: collections.deque[tuple[list[Any], Any, int, list[Any], float, int]] = (
            collections.deque()
        )
        # Checks that the oldest pipeline in flight is answered within the deadline.
        self._watchdog: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()  # looked up once: see WsConnection.loop

    async def stop(self) -> None:
        # Let queued work finish (graceful shutdown stores what it acknowledged).
        for _ in range(50):
            if not self._queue and not self._inflight:
                break
            await asyncio.sleep(0.02)
        self._stopping = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self._connecting is not None:
            self._connecting.cancel()
            with contextlib.suppress(BaseException):
                await self._connecting
        shutting_down = ConnectionError("server shutting down")
        self._fail_in_flight(shutting_down)
        self._fail(self._queue, shutting_down)
        self._queue.clear()
        await self._drop()

    def _enqueue(self, item: Any) -> None:
        self._queue.append(item)
        if not self._scheduled:
            self._scheduled = True
            (self._loop or asyncio.get_running_loop()).call_soon(self._send)

    @staticmethod
    def _fail(batch: list[Any], exc: BaseException) -> None:
        for item in batch:
            if not item[-1].done():
                item[-1].set_exception(exc)

    def _fail_in_flight(self, exc: BaseException) -> None:
        failed = list(self._inflight)
        self._inflight.clear()
        for batch, *_ in failed:
            self._fail(batch, exc)

    def _send(self) -> None:
        """Write what is queued as pipelines (at the end of the loop's turn)."""
        self._scheduled = False
        if self._stopping:
            return
        reader = self._reader
        if reader is not None and not reader.lost and reader.transport.is_closing():
            return  # the socket is closing (Redis went away): on_lost sends the queue again
        if reader is None or reader.lost:
            if self._connecting is None and self._queue:
                self._connecting = (self._loop or asyncio.get_running_loop()).create_task(
                    self._connect(), name=self.task_name + "-connect"
                )
            return
        while self._queue and len(self._inflight) < MAX_IN_FLIGHT:
            batch = self._queue[:MAX_BATCH]
            del self._queue[:MAX_BATCH]
            try:
                payload, plan, expected = self._pack(batch)
            except Exception as exc:  # a bug: fail this batch, not the others
                log.exception("packing a pipeline failed")
                self._fail(batch, exc)
                continue
            loop = self._loop or asyncio.get_running_loop()
            # the health's epoch: a reply to a batch sent before an outage began does not end it
            self._inflight.append((batch, plan, expected, [], loop.time(), self.store.health.epoch))
            try:
                reader.transport.write(payload)
            except RuntimeError as exc:  # uvloop: the handler closed under us (a kill -9)
                reader.transport.abort()  # on_lost fails what is in flight, reconnects
                log.debug("write on a closed redis connection", extra={"error": repr(exc)})
                return
            if self._watchdog is None:
                self._watchdog = loop.call_later(self.store.deadline_s, self._check_deadline)

    def _check_deadline(self) -> None:
        """A pipeline unanswered for longer than the deadline (Redis hangs): fail it and
        everything queued behind it (internal_error, at once, not when Redis wakes up),
        drop the connection; the next batch reconnects."""
        self._watchdog = None
        if not self._inflight:
            return
        loop = self._loop or asyncio.get_running_loop()
        waited = loop.time() - self._inflight[0][4]
        if waited < self.store.deadline_s:
            self._watchdog = loop.call_later(self.store.deadline_s - waited, self._check_deadline)
            return
        error = name_master(
            TimeoutError(f"no reply from Redis within {self.store.deadline_s} s"), self.master
        )
        self.store.health.failed(error)
        reader, conn = self._reader, self._conn
        self._reader = self._conn = None
        self._fail_in_flight(error)
        self._fail(self._queue, error)
        self._queue.clear()
        if reader is not None:
            reader.lost = True
            reader.transport.abort()
        if conn is not None:
            task = loop.create_task(_disconnect_quietly(conn))
            in_background(task)

    def _make_connection(self) -> Any:
        if self.node is not None:
            return self.node.connection_class(**self.node.connection_kwargs)
        return self.store.redis.connection_pool.make_connection()

    async def _connect(self) -> None:
        try:
            conn = self._make_connection()
            try:
                await conn.connect()
                reader = _ReplyReader(self, conn)
            except BaseException:
                # Cancelled or failed half-way (e.g. shutdown): never leak the socket.
                with contextlib.suppress(Exception):
                    await conn.disconnect()
                raise
            self._conn, self._reader = conn, reader
        except Exception as exc:  # Redis down: every caller queued meanwhile is told
            # Logged once per outage, not per attempt; the callers' errors name the master.
            if not unavailable_error(exc):
                exc = ConnectionError(f"connecting to Redis failed ({exc!r})")
            self.store.health.failed(name_master(exc, self.master))
            if self.on_trouble is not None:
                self.on_trouble()
            self._fail(self._queue, exc)
            self._queue.clear()
        finally:
            self._connecting = None
        if self._queue:
            self._send()

    def on_replies(self, reader: _ReplyReader) -> None:
        """Replies arrived: resolve every batch whose replies are all in."""
        gets = reader.parser.gets
        inflight = self._inflight
        while inflight:
            batch, plan, expected, replies, _, sent = inflight[0]
            while len(replies) < expected:
                try:
                    reply = gets()
                except Exception:  # not RESP: close; what is in flight fails, we reconnect
                    log.exception("unreadable reply on a redis pipeline")
                    reader.transport.close()
                    return
                if reply is _NOT_ENOUGH_DATA:
                    return
                replies.append(reply)
            inflight.popleft()
            self.store.health.ok(self.master, sent)
            try:
                self._resolve(batch, plan, replies)
            except Exception as exc:  # a bug: fail this batch, not the connection
                log.exception("resolving a pipeline failed")
                self._fail(batch, exc)
            if self._queue and not self._scheduled:
                self._scheduled = True
                (self._loop or asyncio.get_running_loop()).call_soon(self._send)

    def on_lost(self, reader: _ReplyReader, exc: BaseException | None) -> None:
        if reader is not self._reader:
            return
        error = name_master(ConnectionError(f"lost the Redis connection ({exc!r})"), self.master)
        if self._inflight:
            self.store.health.failed(error)
        if self.on_trouble is not None:
            self.on_trouble()
        self._fail_in_flight(error)
        self._reader = None
        conn, self._conn = self._conn, None
        if conn is not None and not self._stopping:
            task = (self._loop or asyncio.get_running_loop()).create_task(_disconnect_quietly(conn))
            in_background(task)
        if self._queue and not self._stopping:
            self._send()

    async def _drop(self) -> None:
        """Close the connection (at stop, or in tests to break it)."""
        reader, conn = self._reader, self._conn
        self._reader = self._conn = None
        if reader is not None:
            reader.lost = True
            reader.transport.close()
        if conn is not None:
            await _disconnect_quietly(conn)

    def _pack(self, batch: list[Any]) -> tuple[bytes, Any, int]:
        """The batch as one RESP payload, what ``_resolve`` needs, and how many replies
        Redis sends for it."""
        raise NotImplementedError

    def _resolve(self, batch: list[Any], plan: Any, replies: list[Any]) -> None:
        """Resolve the batch's items from its replies (error replies are exception
        objects)."""
        raise NotImplementedError


_BACKGROUND: set[asyncio.Task[None]] = set()  # strong references to clean-up tasks


def in_background(task: asyncio.Task[None]) -> None:
    """Keep a strong reference to a clean-up task until it is done."""
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


async def _disconnect_quietly(conn: Any) -> None:
    with contextlib.suppress(Exception):
        await conn.disconnect()


class _ReplyReader(asyncio.Protocol):
    """Takes over the socket of a connected redis-py connection: every byte Redis sends
    goes to the connection's hiredis reader and the pipeliner is told at once (see
    Pipeliner). Writes go straight to the transport."""

    def __init__(self, pipeliner: Pipeliner, conn: Any) -> None:
        parser = getattr(conn._parser, "_reader", None)  # noqa: SLF001
        if parser is None or not hasattr(parser, "gets"):
            raise RuntimeError("the write pipelines need hiredis (pip install hiredis)")
        self.pipeliner = pipeliner
        self.parser = parser
        self.transport: asyncio.Transport = conn._writer.transport  # noqa: SLF001
        # redis-py's own protocol still learns when the socket closes (its disconnect()
        # waits for that) and about flow control.
        self.original: Any = self.transport.get_protocol()
        self.lost = False
        self.transport.set_protocol(self)

    def data_received(self, data: bytes) -> None:
        self.parser.feed(data)
        self.pipeliner.on_replies(self)

    def eof_received(self) -> bool | None:
        return None  # close the transport: connection_lost follows

    def pause_writing(self) -> None:
        self.original.pause_writing()

    def resume_writing(self) -> None:
        self.original.resume_writing()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.lost = True
        try:
            self.pipeliner.on_lost(self, exc)
        finally:
            self.original.connection_lost(exc)


class FastBus(BusBase):
    """Pub/sub: this process's subscriptions to the rooms it has local sockets in.

    Messages arrive on one reader task and go to ``handler(code, payload)``. The reader
    uses its own raw connection (RESP2, where a message is a plain array) and hiredis
    directly: redis-py's PubSub costs tens of µs of Python per message, and every room
    event and progress frame passes here. A lost connection is reopened and every
    channel subscribed again (messages published meanwhile are lost, as with any
    pub/sub; the progress flush and ``sync`` recover). A connection silent for
    ``PING_AFTER_S`` is pinged; one that stays silent is reopened.
    """

    PING_AFTER_S = 30.0

    def __init__(self, store: RedisStore, handler: BusHandler) -> None:
        super().__init__(store, handler)
        self._conn: Any = None

    async def _open(self) -> None:
        pool = self.store.redis.connection_pool
        conn = pool.connection_class(
            **{
                **pool.connection_kwargs,
                "protocol": 2,
                "client_name": f"{self.store.keys.prefix}:bus",
            }
        )
        try:
            await conn.connect()
            if self._channels:
                await conn.send_packed_command(
                    pack_command("SUBSCRIBE", *sorted(self._channels)), check_health=False
                )
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.disconnect()
            raise
        self._conn = conn

    async def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.disconnect()

    async def _command(self, verb: str, channel: str) -> None:
        if self._conn is None:
            return  # the reader reconnects and subscribes to every channel
        try:
            await self._conn.send_packed_command(pack_command(verb, channel), check_health=False)
        except Exception as exc:  # the reader notices too and reconnects
            self.command_failures.occurred(error=repr(exc))
        else:
            self.command_failures.recovered()

    async def _run(self) -> None:
        pinged = False
        while True:
            try:
                if self._conn is None:
                    await self._open()
                    pinged = False
                conn = self._conn
                try:
                    async with asyncio.timeout(self.PING_AFTER_S):
                        message = await read_reply(conn)
                except TimeoutError:
                    if pinged:
                        raise ConnectionError("no reply to PING") from None
                    pinged = True
                    await conn.send_packed_command(pack_command("PING"), check_health=False)
                    continue
                pinged = False
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # connection lost: reopen and subscribe again
                await self._lost(exc)
                continue
            if type(message) is not list or len(message) != 3 or message[0] != b"message":
                continue  # subscribe/unsubscribe confirmations, pong
            self._deliver(message[1], message[2])


__all__ = [
    "MAX_BATCH",
    "WRITTEN_FOR",
    "FastBus",
    "Pipeliner",
    "in_background",
    "pack_command",
    "read_reply",
    "resp_bulk",
    "resp_bulks",
]
