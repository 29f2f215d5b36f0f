"""redis-py internals, confined here: the server's Redis fast paths.

redis-py's client costs ~100 µs of Python per call and its PubSub tens of µs per
message; every stored action and every bus message pass through Redis. So, with the
``redis`` fast path on (``Settings.fast_paths``, the default):

- :class:`ActionWriter`: actions from all games go out as one pipeline per turn of the
  event loop with one EVALSHA per room and round (every key of one call shares the
  room's hash tag), several pipelines in flight, each caller's callback called as soon
  as its pipeline's replies are read (see :class:`_Pipeliner`);
- :class:`CommandPipe`: the other frequent calls share one pipelined raw connection;
- :class:`FastBus`: pub/sub on its own raw reader.

The internals used: a connected redis-py connection's transport (``conn._writer``)
and parser (``conn._parser._reader``, hiredis) are taken over, and hiredis's
``NOT_ENOUGH_DATA`` sentinel (``redis._parsers.hiredis``). :data:`WRITTEN_FOR` names
the redis-py version this was written against; tests/server/test_pins.py fails,
naming it, when the installed version differs. With the fast path off,
:mod:`server.storage.redis` uses redis-py's public API only.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from redis._parsers.hiredis import NOT_ENOUGH_DATA as _NOT_ENOUGH_DATA
from redis.crc import key_slot
from redis.exceptions import AskError, NoScriptError, ResponseError

from server.core.ports import APPEND_CONFLICT, AppendCallback, AppendResult, BusHandler
from server.lobby import RacerProgress
from server.storage import redis_cluster
from server.storage.records import pack_record
from server.storage.redis_base import (
    BusBase,
    PlainPipe,
    RedisStore,
    check_replicated,
    name_master,
    unavailable_error,
)

log = logging.getLogger("server.storage.redis_fast")

WRITTEN_FOR = ("redis", "8.1.0")  # (distribution, exact version): see tests/server/test_pins.py
MAX_BATCH = 512
MAX_IN_FLIGHT = 4  # pipelines sent and not yet answered, per pipeliner


def _resp_bulk(value: Any) -> bytes:
    data = value if isinstance(value, bytes) else str(value).encode()
    return b"$%d\r\n%s\r\n" % (len(data), data)


def _resp_bulks(values: Sequence[Any]) -> bytes:
    """Several RESP bulk strings, concatenated (one action's arguments, packed once)."""
    return b"".join([_resp_bulk(v) for v in values])


def pack_command(*args: Any) -> bytes:
    """One Redis command in RESP (what redis-py's pack_command does, without its overhead)."""
    return b"*%d\r\n" % len(args) + b"".join(_resp_bulk(a) for a in args)


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


class _Pipeliner:
    """What ActionWriter and CommandPipe share: a queue of items (each a tuple whose
    last element is the caller's future or callback) and one dedicated Redis connection.

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
        self._inflight: collections.deque[tuple[list[Any], Any, int, list[Any], float]] = (
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
        for batch, _, _, _, _ in failed:
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
            self._inflight.append((batch, plan, expected, [], loop.time()))
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
            _BACKGROUND.add(task)
            task.add_done_callback(_BACKGROUND.discard)

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
            batch, plan, expected, replies, _ = inflight[0]
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
            self.store.health.ok(self.master)
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
            _BACKGROUND.add(task)
            task.add_done_callback(_BACKGROUND.discard)
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


async def _disconnect_quietly(conn: Any) -> None:
    with contextlib.suppress(Exception):
        await conn.disconnect()


class _ReplyReader(asyncio.Protocol):
    """Takes over the socket of a connected redis-py connection: every byte Redis sends
    goes to the connection's hiredis reader and the pipeliner is told at once (see
    _Pipeliner). Writes go straight to the transport."""

    def __init__(self, pipeliner: _Pipeliner, conn: Any) -> None:
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


class ActionWriter(_Pipeliner):
    """Batches action appends from every game into pipelines (see _Pipeliner).

    Callers queue (keys, args) with a future or a callback. The sender takes everything
    queued (up to ``MAX_BATCH``) and sends it as one pipeline of EVALSHA calls; the
    reader resolves each item from its own reply. One round trip serves many actions,
    so storing every action before its ack stays cheap.

    The pipeline is packed here (RESP) and written on the writer's own connection:
    redis-py's generic Pipeline costs several times more Python time per command, and
    this is the server's hottest path.
    """

    task_name = "action-writer"

    def __init__(self, store: RedisStore, node: Any = None) -> None:
        super().__init__(store, node)
        # In a cluster: where appends answered by a redirection (MOVED, ASK, TRYAGAIN,
        # CLUSTERDOWN: the script did not run) go to be routed again, each with its own.
        self.on_redirect: Callable[[list[tuple[_Pending, BaseException]]], None] | None = None

    def submit(
        self,
        group: tuple[str, str],
        log_key: bytes,
        args: bytes,
        new_last_seq: int,
        outcome: asyncio.Future[AppendResult] | _Callback,
    ) -> None:
        """Queue one append; ``group`` = the round's (seq hash, progress hash) keys,
        ``log_key`` and ``args`` already RESP bulk strings (the log's key; the 6 arguments
        of _APPEND_ACTIONS), so the batch only concatenates. ``outcome`` (a future, or a
        _Callback) gets the AppendResult or the exception."""
        self._enqueue(_Pending(group, log_key, args, new_last_seq, -1, 0, False, outcome))

    def queue(self, item: _Pending) -> None:
        """Queue an append already packed (a cluster's routing)."""
        self._enqueue(item)

    async def _again(self, items: list[_Pending]) -> None:
        try:
            await self.store.load_scripts()
        except Exception as exc:
            self._fail(items, exc)
            return
        for item in items:
            self._enqueue(item)

    def _pack(self, batch: list[_Pending]) -> tuple[bytes, Any, int]:
        """One EVALSHA per room and round in the batch (its keys share the room's hash
        tag: Redis Cluster compatible). In a cluster, appends sent here after an ASK
        (their slot is being migrated to this master) form their own EVALSHA, with
        ``ASKING`` before it."""
        groups: dict[tuple[str, str], list[int]] = {}
        asking: dict[tuple[str, str], list[int]] = {}
        for i, item in enumerate(batch):
            into = asking if item.asking else groups
            members = into.get(item.group)
            if members is None:
                into[item.group] = [i]
            else:
                members.append(i)
        head = _resp_bulk("EVALSHA") + _resp_bulk(self.store.append_sha)
        ttl = _resp_bulk(self.store.room_ttl_s)
        commands = []
        for grouped, asked in ((groups, False), (asking, True)):
            for group, members in grouped.items():
                n = len(members)
                if asked:
                    commands.append(_ASKING)
                # EVALSHA sha numkeys seq-key progress-key log-keys… ttl 6 args per action…
                commands.append(b"*%d\r\n" % (6 + 7 * n))
                commands.append(head)
                commands.append(_resp_bulk(2 + n))
                commands.append(_resp_bulks(group))
                commands.extend([batch[i].log_key for i in members])
                commands.append(ttl)
                commands.extend([batch[i].args for i in members])
        replies = len(groups) + 2 * len(asking)
        if self.store.wait_replicas > 0:  # acknowledged once replicated (docs/server.md)
            commands.append(
                pack_command("WAIT", self.store.wait_replicas, self.store.wait_timeout_ms)
            )
            replies += 1
        return b"".join(commands), (groups, asking, time.perf_counter()), replies

    def _resolve(self, batch: list[_Pending], plan: Any, group_replies: list[Any]) -> None:
        groups, asking, started = plan
        not_replicated: BaseException | None = None
        if self.store.wait_replicas > 0:
            waited = group_replies.pop()
            try:
                check_replicated(waited, self.store.wait_replicas, self.store.wait_timeout_ms)
            except Exception as exc:
                not_replicated = exc
        replies: list[Any] = [None] * len(batch)
        # The replies come in _pack's order: one per group, then two per asking group
        # (ASKING's, then the script's).
        in_order = iter(group_replies)
        answered = [(members, next(in_order)) for members in groups.values()]
        for members in asking.values():
            asked, reply = next(in_order), next(in_order)
            answered.append((members, asked if isinstance(asked, Exception) else reply))
        for members, reply in answered:
            if isinstance(reply, ResponseError):  # this room's script failed
                reply = [reply] * len(members)
            for i, value in zip(members, reply, strict=True):
                replies[i] = value
        again = []
        redirected: list[tuple[_Pending, BaseException]] = []
        for item, reply in zip(batch, replies, strict=True):
            fut = item.future
            if fut.done():
                continue
            if isinstance(reply, NoScriptError):
                again.append(item)
            elif isinstance(reply, _REDIRECTED) and self.on_redirect is not None:
                redirected.append((item, reply))
            elif isinstance(reply, Exception):
                fut.set_exception(reply)
            elif reply < 0:
                fut.set_result(_CONFLICT)
            elif not_replicated is not None:
                fut.set_exception(not_replicated)
            else:
                fut.set_result(AppendResult(True, int(reply), item.new_last_seq))
        if redirected and self.on_redirect is not None:
            self.on_redirect(redirected)
        if again:
            # Scripts were flushed (Redis restarted): load them and send those appends
            # again. Safe: a script that did not run changed nothing, and no later
            # action of the same game is queued before one is answered.
            task = (self._loop or asyncio.get_running_loop()).create_task(self._again(again))
            _BACKGROUND.add(task)
            task.add_done_callback(_BACKGROUND.discard)
        on_batch = self.store.on_batch
        if on_batch is not None:
            on_batch(len(batch), time.perf_counter() - started)


class CommandPipe(_Pipeliner):
    """Pipelines the short requests of every caller (room reads and writes, presence,
    progress, game loads) over one connection (see _Pipeliner).

    ``await pipe.run(cmd, cmd, …)`` queues the commands (packed to RESP here) and returns
    their replies in order, with an error reply as its exception object in its place. A
    request's commands are sent together and in order, but other requests' commands may
    run between them (no MULTI): none of the callers needs more. redis-py's client costs
    ~100 µs of Python per call or pipeline; this costs a few µs per command, and one
    round trip serves every request queued meanwhile. A lost connection fails the
    requests of the batch in flight (``ConnectionError``) and the next batch reconnects.
    """

    task_name = "redis-pipe"

    def run(self, *commands: Sequence[Any]) -> asyncio.Future[list[Any]]:
        fut: asyncio.Future[list[Any]] = (self._loop or asyncio.get_running_loop()).create_future()
        packed = b"".join([b"*%d\r\n%s" % (len(c), _resp_bulks(c)) for c in commands])
        self._enqueue((packed, len(commands), fut))
        return fut

    def _pack(
        self, batch: list[tuple[bytes, int, asyncio.Future[list[Any]]]]
    ) -> tuple[bytes, Any, int]:
        return (
            b"".join([packed for packed, _, _ in batch]),
            None,
            sum(count for _, count, _ in batch),
        )

    def _resolve(
        self,
        batch: list[tuple[bytes, int, asyncio.Future[list[Any]]]],
        plan: Any,
        replies: list[Any],
    ) -> None:
        at = 0
        for _, count, fut in batch:
            if not fut.done():
                fut.set_result(replies[at : at + count])
            at += count


class _Callback:
    """Looks like the future a pipeliner resolves but calls a function at once, so the
    act fast path (Hub.act_now) gets its result without a task waking up."""

    __slots__ = ("_done", "_fn")

    def __init__(self, fn: Callable[[Any], None]) -> None:
        self._fn = fn
        self._done = False

    def done(self) -> bool:
        return self._done

    def set_result(self, result: Any) -> None:
        self._call(result)

    def set_exception(self, exc: BaseException) -> None:
        self._call(exc)

    def _call(self, outcome: Any) -> None:
        self._done = True
        try:
            self._fn(outcome)
        except Exception:  # a caller's bug must not fail the other appends of the batch
            log.exception("append callback failed")


class _Pending(NamedTuple):
    """One queued append (a named tuple: built once per action, on the hot path)."""

    group: tuple[str, str]
    log_key: bytes  # RESP bulk string
    args: bytes  # RESP bulk strings: the 6 arguments of _APPEND_ACTIONS for this action
    new_last_seq: int
    slot: int  # in a cluster: the room's hash slot (else -1)
    attempt: int  # in a cluster: how often it was redirected
    asking: bool  # in a cluster: sent after an ASK (the slot is migrating to this master)
    future: asyncio.Future[AppendResult] | _Callback  # last: see _Pipeliner._fail


_CONFLICT = APPEND_CONFLICT
_ASKING = b"*1\r\n" + _resp_bulk("ASKING")
_REDIRECTED = redis_cluster.REDIRECTED
MAX_REDIRECTS = 5


class ClusterWriter:
    """The ActionWriter of a Redis Cluster: one ActionWriter (one pipelined connection)
    per master, each append routed by its room's hash slot through redis-py's slot map.

    A redirection (MOVED after a failover or resharding, ASK or TRYAGAIN during a slot
    migration, CLUSTERDOWN while a master fails over) means the script did not run: the
    append is routed again, :data:`MAX_REDIRECTS` times at most, then fails
    (``internal_error``; the client sends it again). After an ASK (the room's keys have
    already moved to the master importing the slot) it goes to the master the ASK names,
    with ``ASKING`` before it; after the others, by the slot map, read again. A lost or refused
    connection fails what was in flight on it, as with one Redis, and makes the slot map
    be re-read (at most every 0.25 s), so that appends go to the promoted replica once
    the cluster has failed over."""

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        self.cluster: Any = store.redis
        self._writers: dict[str, ActionWriter] = {}
        self._refreshing: asyncio.Task[None] | None = None
        self._refreshed_at = -math.inf
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()

    async def stop(self) -> None:
        self._stopping = True
        for writer in list(self._writers.values()):
            await writer.stop()
        if self._refreshing is not None:
            self._refreshing.cancel()
            with contextlib.suppress(BaseException):
                await self._refreshing

    def writer_for_slot(self, slot: int) -> ActionWriter:
        return self.writer_for_node(self.cluster.nodes_manager.get_node_from_slot(slot))

    def writer_for_node(self, node: Any) -> ActionWriter:
        writer = self._writers.get(node.name)
        if writer is None:
            writer = self._writers[node.name] = ActionWriter(self.store, node)
            writer.on_trouble = self.refresh
            writer.on_redirect = self._redirected
            writer.start()
        return writer

    def submit(self, item: _Pending) -> None:
        try:
            writer = self.writer_for_slot(item.slot)
        except Exception as exc:  # the slot is not served right now (failing over)
            self.refresh()
            if not item.future.done():
                item.future.set_exception(ConnectionError(f"no master for the room ({exc})"))
            return
        writer.queue(item)

    def refresh(self) -> None:
        """Re-read the slot map soon (once at a time, at most every 0.25 s)."""
        loop = self._loop or asyncio.get_running_loop()
        if self._stopping or self._refreshing is not None:
            return
        if loop.time() - self._refreshed_at < 0.25:
            return
        self._refreshing = loop.create_task(self._refresh(), name="cluster-slots-refresh")

    async def _refresh(self) -> None:
        try:
            await redis_cluster.refresh_slots(self.cluster)
        finally:
            self._refreshed_at = (self._loop or asyncio.get_running_loop()).time()
            self._refreshing = None

    def _redirected(self, redirected: list[tuple[_Pending, BaseException]]) -> None:
        again: list[tuple[_Pending, BaseException]] = []
        for item, error in redirected:
            if item.attempt >= MAX_REDIRECTS:
                item.future.set_exception(error)
            elif type(error) is AskError:  # MovedError is an AskError too
                self._ask(item, error)
            else:
                again.append((item, error))
        if again:
            loop = self._loop or asyncio.get_running_loop()
            task = loop.create_task(self._route_again(again))
            _BACKGROUND.add(task)
            task.add_done_callback(_BACKGROUND.discard)

    def _ask(self, item: _Pending, error: AskError) -> None:
        """Send an append at once to the master importing its slot, ASKING first."""
        node = self.cluster.get_node(host=error.host, port=int(error.port))
        if node is None:  # a master the slot map does not know yet: read it again
            self.refresh()
            item.future.set_exception(error)
            return
        self.writer_for_node(node).queue(item._replace(attempt=item.attempt + 1, asking=True))

    async def _route_again(self, redirected: list[tuple[_Pending, BaseException]]) -> None:
        """MOVED, TRYAGAIN, CLUSTERDOWN: wait a little, read the slot map, route again."""
        attempt = max(item.attempt for item, _ in redirected) + 1
        await asyncio.sleep(0.02 * attempt)
        if self._refreshing is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._refreshing)
        else:
            await redis_cluster.refresh_slots(self.cluster)
        for item, _ in redirected:
            if not item.future.done():
                self.submit(item._replace(attempt=item.attempt + 1, asking=False))


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


class FastPaths:
    """The fast pieces of one RedisStorage: the write batcher, the command pipe and the
    bus."""

    def __init__(self, storage: RedisStore) -> None:
        self.storage = storage
        self.writer = ActionWriter(storage)
        self.pipe: CommandPipe | PlainPipe = CommandPipe(storage)
        # In a cluster: appends per master (ClusterWriter); the other calls through
        # redis-py's cluster pipeline, which routes each command to its slot's master.
        self.cluster_writer: ClusterWriter | None = None
        if storage.cluster:
            self.cluster_writer = ClusterWriter(storage)
            self.pipe = PlainPipe(storage)
        # (room, round, player) -> the append's keys, packed, and the room's slot
        # (cleared when it grows big)
        self._game_keys: dict[tuple[str, int, str], tuple[tuple[str, str], bytes, bytes, int]] = {}

    def start(self) -> None:
        if self.cluster_writer is not None:
            self.cluster_writer.start()
        else:
            self.writer.start()
        if isinstance(self.pipe, CommandPipe):
            self.pipe.start()

    async def stop(self) -> None:
        if self.cluster_writer is not None:
            await self.cluster_writer.stop()
        else:
            await self.writer.stop()
        if isinstance(self.pipe, CommandPipe):
            await self.pipe.stop()

    def bus(self, handler: BusHandler) -> FastBus:
        return FastBus(self.storage, handler)

    def append(
        self,
        code: str,
        round_: int,
        player_id: str,
        expected_len: int,
        expected_last_seq: int,
        seq: int,
        action: str,
        progress: RacerProgress,
        then: AppendCallback,
    ) -> None:
        game = (code, round_, player_id)
        keys = self._game_keys.get(game)
        if keys is None:
            if len(self._game_keys) >= 100_000:
                self._game_keys.clear()
            k = self.storage.keys
            seqs = k.seqs(code, round_)
            keys = self._game_keys[game] = (
                (seqs, k.progress(code, round_)),
                _resp_bulk(k.log(code, round_, player_id)),
                _resp_bulk(player_id),
                key_slot(seqs.encode()) if self.cluster_writer is not None else -1,
            )
        group, log_key, player, slot = keys
        expected = b"%d" % expected_len, b"%d" % expected_last_seq, b"%d" % seq
        action_bytes = action.encode()
        progress_bytes = pack_record(progress.to_record())
        # The 6 arguments of the append script for this action, as RESP bulk strings.
        args = b"$%d\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n%s$%d\r\n%s\r\n" % (
            len(expected[0]),
            expected[0],
            len(expected[1]),
            expected[1],
            len(expected[2]),
            expected[2],
            len(action_bytes),
            action_bytes,
            player,
            len(progress_bytes),
            progress_bytes,
        )
        health = self.storage.health

        def outcome(result: AppendResult | BaseException) -> None:
            if isinstance(result, BaseException) and unavailable_error(result):
                result = health.unavailable(result)
            then(result)

        if self.cluster_writer is not None:
            self.cluster_writer.submit(
                _Pending(
                    group,
                    log_key,
                    args,
                    max(seq, expected_last_seq),
                    slot,
                    0,
                    False,
                    _Callback(outcome),
                )
            )
            return
        self.writer.submit(group, log_key, args, max(seq, expected_last_seq), _Callback(outcome))
