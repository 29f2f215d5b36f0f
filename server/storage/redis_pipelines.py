"""The redis fast path's pipelines, built on :class:`server.storage.redis_fast.Pipeliner`
(the connections taken over from redis-py, confined there):

- :class:`ActionWriter`: actions from all games go out as one pipeline per turn of the
  event loop with one EVALSHA per room and round (every key of one call shares the
  room's hash tag), several pipelines in flight, each caller's callback called as soon
  as its pipeline's replies are read;
- :class:`CommandPipe`: the other frequent calls share one pipelined raw connection;
- :class:`ClusterWriter`: in a Redis Cluster, one ActionWriter per master;
- :class:`FastPaths`: the three (and the :class:`~server.storage.redis_fast.FastBus`)
  as one :class:`~server.storage.redis.RedisStorage` uses them.

Only redis-py's public API is used here (exceptions, ``key_slot``, the cluster client's
slot map).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from redis.crc import key_slot
from redis.exceptions import AskError, NoScriptError, ResponseError

from server.core.ports import APPEND_CONFLICT, AppendCallback, AppendResult, BusHandler
from server.lobby import RacerProgress
from server.storage import redis_cluster
from server.storage.records import pack_record
from server.storage.redis_base import PlainPipe, RedisStore, check_replicated, unavailable_error
from server.storage.redis_fast import (
    FastBus,
    Pipeliner,
    in_background,
    pack_command,
    resp_bulk,
    resp_bulks,
)

# The fast path's one logger (its lines read the same wherever the code sits).
log = logging.getLogger("server.storage.redis_fast")


class Callback:
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


class Pending(NamedTuple):
    """One queued append (a named tuple: built once per action, on the hot path)."""

    group: tuple[str, str]
    log_key: bytes  # RESP bulk string
    args: bytes  # RESP bulk strings: the 6 arguments of APPEND_ACTIONS for this action
    new_last_seq: int
    slot: int  # in a cluster: the room's hash slot (else -1)
    attempt: int  # in a cluster: how often it was redirected
    asking: bool  # in a cluster: sent after an ASK (the slot is migrating to this master)
    future: asyncio.Future[AppendResult] | Callback  # last: see Pipeliner._fail


_CONFLICT = APPEND_CONFLICT
_ASKING = b"*1\r\n" + resp_bulk("ASKING")
_REDIRECTED = redis_cluster.REDIRECTED
MAX_REDIRECTS = 5


class ActionWriter(Pipeliner):
    """Batches action appends from every game into pipelines (see Pipeliner).

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
        self.on_redirect: Callable[[list[tuple[Pending, BaseException]]], None] | None = None

    def submit(
        self,
        group: tuple[str, str],
        log_key: bytes,
        args: bytes,
        new_last_seq: int,
        outcome: asyncio.Future[AppendResult] | Callback,
    ) -> None:
        """Queue one append; ``group`` = the round's (seq hash, progress hash) keys,
        ``log_key`` and ``args`` already RESP bulk strings (the log's key; the 6 arguments
        of APPEND_ACTIONS), so the batch only concatenates. ``outcome`` (a future, or a
        Callback) gets the AppendResult or the exception."""
        self._enqueue(Pending(group, log_key, args, new_last_seq, -1, 0, False, outcome))

    def queue(self, item: Pending) -> None:
        """Queue an append already packed (a cluster's routing)."""
        self._enqueue(item)

    async def _again(self, items: list[Pending]) -> None:
        try:
            await self.store.load_scripts()
        except Exception as exc:
            self._fail(items, exc)
            return
        for item in items:
            self._enqueue(item)

    def _pack(self, batch: list[Pending]) -> tuple[bytes, Any, int]:
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
        head = resp_bulk("EVALSHA") + resp_bulk(self.store.append_sha)
        ttl = resp_bulk(self.store.room_ttl_s)
        commands = []
        for grouped, asked in ((groups, False), (asking, True)):
            for group, members in grouped.items():
                n = len(members)
                if asked:
                    commands.append(_ASKING)
                # EVALSHA sha numkeys seq-key progress-key log-keys… ttl 6 args per action…
                commands.append(b"*%d\r\n" % (6 + 7 * n))
                commands.append(head)
                commands.append(resp_bulk(2 + n))
                commands.append(resp_bulks(group))
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

    def _resolve(self, batch: list[Pending], plan: Any, group_replies: list[Any]) -> None:
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
        redirected: list[tuple[Pending, BaseException]] = []
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
            in_background(task)
        on_batch = self.store.on_batch
        if on_batch is not None:
            on_batch(len(batch), time.perf_counter() - started)


class CommandPipe(Pipeliner):
    """Pipelines the short requests of every caller (room reads and writes, presence,
    progress, game loads) over one connection (see Pipeliner).

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
        packed = b"".join([b"*%d\r\n%s" % (len(c), resp_bulks(c)) for c in commands])
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

    def submit(self, item: Pending) -> None:
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

    def _redirected(self, redirected: list[tuple[Pending, BaseException]]) -> None:
        again: list[tuple[Pending, BaseException]] = []
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
            in_background(task)

    def _ask(self, item: Pending, error: AskError) -> None:
        """Send an append at once to the master importing its slot, ASKING first."""
        node = self.cluster.get_node(host=error.host, port=int(error.port))
        if node is None:  # a master the slot map does not know yet: read it again
            self.refresh()
            item.future.set_exception(error)
            return
        self.writer_for_node(node).queue(item._replace(attempt=item.attempt + 1, asking=True))

    async def _route_again(self, redirected: list[tuple[Pending, BaseException]]) -> None:
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


# A game's append keys: (seq hash, progress hash), the log's key and the player as RESP
# bulk strings, the room's hash slot (-1 unless in a cluster).
_GameKeys = tuple[tuple[str, str], bytes, bytes, int]


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
        self._game_keys: dict[tuple[str, int, str], _GameKeys] = {}

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

    def _keys_of(self, game: tuple[str, int, str]) -> _GameKeys:
        """A game's append keys, packed once (the cache is cleared when it grows big)."""
        if len(self._game_keys) >= 100_000:
            self._game_keys.clear()
        code, round_, player_id = game
        k = self.storage.keys
        seqs = k.seqs(code, round_)
        keys = self._game_keys[game] = (
            (seqs, k.progress(code, round_)),
            resp_bulk(k.log(code, round_, player_id)),
            resp_bulk(player_id),
            key_slot(seqs.encode()) if self.cluster_writer is not None else -1,
        )
        return keys

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
            keys = self._keys_of(game)
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
                Pending(
                    group,
                    log_key,
                    args,
                    max(seq, expected_last_seq),
                    slot,
                    0,
                    False,
                    Callback(outcome),
                )
            )
            return
        self.writer.submit(group, log_key, args, max(seq, expected_last_seq), Callback(outcome))


__all__ = ["ActionWriter", "ClusterWriter", "CommandPipe", "FastPaths"]
