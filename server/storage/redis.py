"""Redis: the Storage port (:class:`RedisStorage`), its Lua scripts and the plain bus.

The key scheme, the health tracker and what the bus, the pipes and the fast paths share
are in :mod:`server.storage.redis_base` (with the table of keys); a Redis Cluster's
client, per-node clients and sharded bus in :mod:`server.storage.redis_cluster`.

Writes that must not race are Lua scripts: ``cas_room`` stores a room only if its
version is still the one the caller read (and appends its events to the history and
publishes them on the bus in the same step); ``append_actions`` appends each action
only if its log length and last seq are still what the calling process expected, so
two connections or two processes can never corrupt a game.

This module uses redis-py's public API only; with the ``redis`` fast path on
(``Settings.fast_paths``, the default) the frequent calls go through
:mod:`server.storage.redis_fast` instead (pipelines on sockets taken over from
redis-py, replies read with hiredis directly), which is the only module touching
redis-py's internals.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.crc import key_slot
from redis.exceptions import NoScriptError, RedisError

from crescent_wire.errors import ConflictError
from server.core.ports import (
    APPEND_CONFLICT,
    SEQ_WINDOW,
    AppendCallback,
    AppendResult,
    Bus,
    BusHandler,
    StoredGame,
)
from server.lobby import RacerProgress, Room
from server.storage import redis_cluster
from server.storage.records import pack_record, unpack_record
from server.storage.redis_base import (
    DEADLINE_S,
    EVENT_HISTORY,
    MAX_REDIS_CONNECTIONS,
    PLAYER_TTL_S,
    ROOM_TTL_S,
    UNAVAILABLE,
    WAIT_TIMEOUT_MS,
    BusBase,
    Keys,
    NotReplicated,
    Pipe,
    PlainPipe,
    RedisHealth,
    check_replicated,
    failed_master,
    server_address,
    unavailable_error,
)
from server.storage.redis_fast import FastPaths

_CAS_ROOM = """
local cur = tonumber(redis.call('HGET', KEYS[1], 'ver') or '-1')
if cur ~= tonumber(ARGV[1]) then return cur end
redis.call('HSET', KEYS[1], 'ver', ARGV[2], 'blob', ARGV[3])
if #ARGV >= 6 then
  for i = 6, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
  redis.call('LTRIM', KEYS[2], -EVENT_HISTORY, -1)
  redis.call('EXPIRE', KEYS[2], ARGV[4])
end
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[3], ARGV[4])
if ARGV[5] ~= '' then redis.call('PUBLISH', KEYS[4], ARGV[5]) end
return -2
""".replace("EVENT_HISTORY", str(EVENT_HISTORY))  # one constant for Python and the script

_PRESENCE_CHANGE = """
-- KEYS[1] presence hash (process/player -> sockets), KEYS[2] alive hash (process -> ms).
-- ARGV: process, player, delta, now, stale_ms, ttl. Replies the player's sockets over the
-- processes alive within stale_ms.
local field = ARGV[1] .. '/' .. ARGV[2]
local n = redis.call('HINCRBY', KEYS[1], field, ARGV[3])
if n <= 0 then redis.call('HDEL', KEYS[1], field) end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[6])
local now = tonumber(ARGV[4])
local stale = tonumber(ARGV[5])
local total = 0
local alive = redis.call('HGETALL', KEYS[2])
for i = 1, #alive, 2 do
  if now - tonumber(alive[i + 1]) <= stale then
    local count = tonumber(redis.call('HGET', KEYS[1], alive[i] .. '/' .. ARGV[2]) or '0')
    if count > 0 then total = total + count end
  end
end
return total
"""

_PRESENCE_LAPSED = """
-- KEYS[1] presence hash, KEYS[2] alive hash; ARGV: now, stale_ms, forget_ms.
-- Replies the players whose sockets are all on processes silent for more than stale_ms;
-- drops the processes silent for more than forget_ms.
local now, stale, forget = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local age_of = {}
local alive = redis.call('HGETALL', KEYS[2])
for i = 1, #alive, 2 do
  local age = now - tonumber(alive[i + 1])
  if age > forget then redis.call('HDEL', KEYS[2], alive[i]) else age_of[alive[i]] = age end
end
local live, lapsed = {}, {}
local entries = redis.call('HGETALL', KEYS[1])
for i = 1, #entries, 2 do
  local sep = string.find(entries[i], '/', 1, true)
  local age = age_of[string.sub(entries[i], 1, sep - 1)]
  local player = string.sub(entries[i], sep + 1)
  if age == nil then redis.call('HDEL', KEYS[1], entries[i])
  elseif age <= stale then live[player] = true
  else lapsed[player] = true end
end
local out = {}
for player in pairs(lapsed) do
  if not live[player] then out[#out + 1] = player end
end
return out
"""

_APPEND_ACTIONS = """
-- Appends several actions of one room and round (one call per room per batch).
-- KEYS[1] seq hash, KEYS[2] progress hash, KEYS[2+i] log of the i-th action's racer.
-- ARGV[1] ttl, then 6 per action: expected_len, expected_last_seq, seq, action, player,
-- progress. Each action is appended only if its log length and last seq are what the
-- caller expected; the reply per action is the new log length, or -1 (not appended).
local ttl = ARGV[1]
local out = {}
local n = (#ARGV - 1) / 6
for i = 1, n do
  local a = 1 + (i - 1) * 6
  local log = KEYS[2 + i]
  local player = ARGV[a + 5]
  local len = redis.call('LLEN', log)
  local last = tonumber(redis.call('HGET', KEYS[1], player) or '0')
  if len ~= tonumber(ARGV[a + 1]) or last ~= tonumber(ARGV[a + 2]) then
    out[i] = -1
  else
    redis.call('RPUSH', log, ARGV[a + 4])
    local seq = tonumber(ARGV[a + 3])
    if seq > last then
      -- the action of each of the latest client seqs (seq_conflict), SEQ_WINDOW of them
      redis.call('HSET', KEYS[1], player, seq, player .. '#' .. seq, ARGV[a + 4])
      redis.call('HDEL', KEYS[1], player .. '#' .. (seq - SEQ_WINDOW))
    end
    redis.call('HSET', KEYS[2], player, ARGV[a + 6])
    redis.call('EXPIRE', log, ttl)
    out[i] = len + 1
  end
end
redis.call('EXPIRE', KEYS[1], ttl)
redis.call('EXPIRE', KEYS[2], ttl)
return out
""".replace("SEQ_WINDOW", str(SEQ_WINDOW))


class RedisStorage:
    """Async access to the server's Redis data (one per process): the Storage port.

    ``fast``: the frequent calls go through :mod:`server.storage.redis_fast`; else
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
        options: dict[str, Any] = {
            "decode_responses": False,
            "health_check_interval": 30,
            "socket_timeout": deadline_s,
            "socket_connect_timeout": deadline_s,
        }
        if not redis_url.startswith("unix:"):
            options["socket_keepalive"] = True
        # The client: a redis.asyncio.Redis, or a RedisCluster (their commands alike).
        self.redis: Any
        self.node_clients: redis_cluster.NodeClients | None = None
        if self.cluster:
            del options["health_check_interval"]
            self.redis = redis_cluster.cluster_client(
                redis_url, max_connections=MAX_REDIS_CONNECTIONS, **options
            )
            # Appends go to the master of the room's slot on one connection (WAIT).
            self.node_clients = redis_cluster.NodeClients(
                self.redis, MAX_REDIS_CONNECTIONS, max(5.0, deadline_s)
            )
        else:
            # A bounded pool that waits for a free connection: a burst of thousands of
            # requests (e.g. every client reconnecting after a deploy) queues up instead
            # of opening thousands of Redis connections or failing with "Too many
            # connections".
            pool = aioredis.BlockingConnectionPool.from_url(
                redis_url,
                max_connections=MAX_REDIS_CONNECTIONS,
                timeout=max(5.0, deadline_s),
                **options,
            )
            self.redis = aioredis.Redis(connection_pool=pool)
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

    async def start(self) -> None:
        await self.load_scripts()
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
        self.cas_sha = await self.redis.script_load(_CAS_ROOM.replace("PUBLISH", self.publish))
        self.append_sha = await self.redis.script_load(_APPEND_ACTIONS)
        self.presence_change_sha = await self.redis.script_load(_PRESENCE_CHANGE)
        self.presence_lapsed_sha = await self.redis.script_load(_PRESENCE_LAPSED)

    def bus(self, handler: BusHandler) -> Bus:
        if self.cluster:
            return redis_cluster.ShardedBus(self, handler, self.redis)
        if self.fast_paths is not None:
            return self.fast_paths.bus(handler)
        return PlainBus(self, handler)

    async def ping(self) -> bool:
        try:
            answered = bool(await asyncio.wait_for(self.redis.ping(), self.deadline_s))
        except (TimeoutError, RedisError, OSError) as exc:
            self.health.failed(exc)
            return False
        self.health.ok()
        return answered

    async def run_commands(self, *commands: Sequence[Any]) -> list[Any]:
        """Commands for another adapter on this Redis (the archive's outbox), through
        the command pipe: a few µs a command instead of redis-py's ~100 µs a call. Error
        replies come back in their place (as exceptions); an unreachable Redis raises."""
        return await self._run(*commands)

    async def _run(self, *commands: Sequence[Any]) -> list[Any]:
        """The frequent calls (see Pipe), with an unreachable Redis as InternalError:
        also when a cluster pipeline answers a lost connection in place of a reply."""
        started = time.monotonic()
        try:
            replies = await asyncio.wait_for(self.pipe.run(*commands), self.deadline_s * 2)
        except Exception as exc:
            if not unavailable_error(exc):
                raise
            culprit = self._culprit(exc, self._masters_of(commands), started)
            raise self.health.unavailable(exc, culprit) from exc
        for command, reply in zip(commands, replies, strict=False):
            if isinstance(reply, UNAVAILABLE):
                culprit = self._culprit(reply, {self._owner(None, _key_of(command))}, started)
                raise self.health.unavailable(reply, culprit) from reply
        if not self.health.up:  # every master the call went to answered
            for master in self._masters_of(commands):
                self.health.ok(master)
            self.health.ok()  # and a failure no master could be blamed for is over
        return replies

    def _masters_of(self, commands: Sequence[Sequence[Any]]) -> set[str | None]:
        """The masters a call's commands go to (a cluster pipeline may span several)."""
        if not self.cluster:
            return {None}
        return {self._owner(None, _key_of(command)) for command in commands}

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

    async def _call(self, call: Awaitable[Any], key: str | None = None) -> Any:
        """A redis-py call (on ``key``'s master in a cluster, if it names one), with an
        unreachable Redis as InternalError."""
        started = time.monotonic()
        try:
            reply = await asyncio.wait_for(call, self.deadline_s * 2)
        except Exception as exc:
            if not unavailable_error(exc):
                raise
            culprit = self._culprit(exc, {self._owner(None, key)}, started)
            raise self.health.unavailable(exc, culprit) from exc
        if not self.health.up:
            self.health.ok(self._owner(None, key))
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

    # --- secret and players

    async def ensure_secret(self, candidate: str) -> str:
        """The shared secret: ``candidate`` if no process stored one yet (SET NX)."""
        await self.redis.set(self.keys.secret(), candidate, nx=True)
        stored = await self.redis.get(self.keys.secret())
        if isinstance(stored, bytes):
            return stored.decode()
        return stored or candidate

    async def save_player(self, player_id: str, name: str, now: int) -> None:
        key = self.keys.player(player_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(key, mapping={"name": name, "seen": now})
            pipe.hsetnx(key, "created", now)
            pipe.expire(key, PLAYER_TTL_S)
            await self._call(pipe.execute(), key)

    # --- rooms

    async def player_rooms(self, player_id: str) -> list[str]:
        (blob,) = _raise_errors(await self._run(("GET", self.keys.player_rooms(player_id))))
        return list(unpack_record(blob)) if blob is not None else []

    async def set_player_rooms(self, player_id: str, codes: Sequence[str]) -> None:
        _raise_errors(
            await self._run(
                (
                    "SET",
                    self.keys.player_rooms(player_id),
                    pack_record(list(codes)),
                    "EX",
                    self.room_ttl_s,
                )
            )
        )

    async def load_room(self, code: str) -> Room | None:
        (blob,) = _raise_errors(await self._run(("HGET", self.keys.room(code), "blob")))
        return Room.from_record(unpack_record(blob)) if blob is not None else None

    async def cas_room(
        self,
        code: str,
        expected_ver: int,
        room: Room,
        event_frames: Sequence[bytes],
        bus_payload: bytes | None,
    ) -> None:
        """Store ``room`` if the stored version is ``expected_ver`` (-1: must not exist).

        Appends ``event_frames`` to the history and publishes ``bus_payload`` in the same
        atomic step. Raises ``ConflictError`` if another writer got there first.
        """
        keys = [
            self.keys.room(code),
            self.keys.events(code),
            self.keys.presence(code),
            self.keys.bus(code),
        ]
        args = [
            expected_ver,
            room.ver,
            pack_record(room.to_record()),
            self.room_ttl_s,
            bus_payload or b"",
            *event_frames,
        ]
        (result,) = await self._run(("EVALSHA", self.cas_sha, len(keys), *keys, *args))
        if isinstance(result, NoScriptError):  # Redis restarted or SCRIPT FLUSH: load, once
            await self.load_scripts()
            (result,) = await self._run(("EVALSHA", self.cas_sha, len(keys), *keys, *args))
        if isinstance(result, Exception):
            raise result
        if result != -2:
            raise ConflictError(f"room {code}: expected version {expected_ver}, found {result}")

    async def read_events(self, code: str) -> list[bytes]:
        key = self.keys.events(code)
        frames = await self._call(self.redis.lrange(key, 0, -1), key)
        return [f if isinstance(f, bytes) else f.encode() for f in frames]

    async def presence_change(
        self, code: str, player_id: str, delta: int, *, process: str, now: int, stale_ms: int
    ) -> int:
        """Add ``delta`` to the player's open sockets on ``process`` in the room, mark the
        process alive there; the player's sockets over the processes alive within
        ``stale_ms``."""
        (count,) = await self._eval_scripts(
            lambda: [
                (
                    "EVALSHA",
                    self.presence_change_sha,
                    2,
                    self.keys.presence(code),
                    self.keys.alive(code),
                    process,
                    player_id,
                    delta,
                    now,
                    stale_ms,
                    self.room_ttl_s,
                )
            ]
        )
        return int(count)

    async def presence_refresh(self, process: str, codes: Sequence[str], now: int) -> None:
        """Mark ``process`` alive at ``now`` in each of the rooms (and keep their presence
        keys from expiring)."""
        commands: list[tuple[Any, ...]] = []
        for code in codes:
            alive = self.keys.alive(code)
            commands += [
                ("HSET", alive, process, now),
                ("EXPIRE", alive, self.room_ttl_s),
                ("EXPIRE", self.keys.presence(code), self.room_ttl_s),
            ]
        if commands:
            _raise_errors(await self._run(*commands))

    async def presence_lapsed(
        self, codes: Sequence[str], now: int, stale_ms: int, forget_ms: int
    ) -> list[list[str]]:
        """Per room: the players whose sockets are all on processes silent for more than
        ``stale_ms``; processes silent for more than ``forget_ms`` are dropped."""
        if not codes:
            return []
        replies = await self._eval_scripts(
            lambda: [
                (
                    "EVALSHA",
                    self.presence_lapsed_sha,
                    2,
                    self.keys.presence(code),
                    self.keys.alive(code),
                    now,
                    stale_ms,
                    forget_ms,
                )
                for code in codes
            ]
        )
        return [sorted(p.decode() for p in reply) for reply in replies]

    async def _eval_scripts(self, commands: Callable[[], Sequence[Sequence[Any]]]) -> list[Any]:
        """Run EVALSHA commands (built by ``commands`` with the current script hashes);
        after a NOSCRIPT (Redis restarted), load the scripts and run them again, once: a
        script that did not run changed nothing."""
        replies = await self._run(*commands())
        if any(isinstance(r, NoScriptError) for r in replies):
            await self.load_scripts()
            replies = await self._run(*commands())
        return _raise_errors(replies)

    # --- games

    async def load_game(self, code: str, round_: int, player_id: str) -> StoredGame:
        if self.wait_replicas > 0:
            # What is loaded may include actions whose WAIT failed (never acknowledged):
            # a retry of one is acknowledged as a duplicate, so first make sure the
            # replicas have everything the master has.
            await self._call(self._replicated_so_far(code), self.keys.sync(code))
        actions, last_seq, progress = _raise_errors(
            await self._run(
                ("LRANGE", self.keys.log(code, round_, player_id), 0, -1),
                ("HGET", self.keys.seqs(code, round_), player_id),
                ("HGET", self.keys.progress(code, round_), player_id),
            )
        )
        last = int(last_seq or 0)
        seq_actions: dict[int, str] = {}
        if last > 0:
            seqs = range(max(1, last - SEQ_WINDOW + 1), last + 1)
            (stored,) = _raise_errors(
                await self._run(
                    ("HMGET", self.keys.seqs(code, round_), *(f"{player_id}#{seq}" for seq in seqs))
                )
            )
            seq_actions = {
                seq: action.decode()
                for seq, action in zip(seqs, stored, strict=True)
                if action is not None
            }
        return StoredGame(
            actions=[a.decode() for a in actions],
            last_seq=last,
            progress=RacerProgress.from_record(unpack_record(progress)) if progress else None,
            seq_actions=seq_actions,
        )

    async def load_logs(self, code: str, round_: int, players: Sequence[str]) -> list[list[str]]:
        if not players:
            return []
        if self.wait_replicas > 0:  # as load_game: nothing a replica may not have
            await self._call(self._replicated_so_far(code), self.keys.sync(code))
        logs = _raise_errors(
            await self._run(
                *(("LRANGE", self.keys.log(code, round_, player), 0, -1) for player in players)
            )
        )
        return [[action.decode() for action in log] for log in logs]

    async def read_progress(
        self, rooms: Sequence[tuple[str, int]]
    ) -> list[dict[str, RacerProgress]]:
        """Every racer's progress record, for several (room, round) at once."""
        if not rooms:
            return []
        replies = _raise_errors(
            await self._run(
                *(("HGETALL", self.keys.progress(code, round_)) for code, round_ in rooms)
            )
        )
        return [
            {k.decode(): RacerProgress.from_record(unpack_record(v)) for k, v in _pairs(reply)}
            for reply in replies
        ]

    async def publish_many(self, messages: Sequence[tuple[str, bytes]]) -> None:
        if not messages:
            return
        _raise_errors(
            await self._run(
                *((self.publish, self.keys.bus(code), payload) for code, payload in messages)
            )
        )

    def append_action_then(
        self,
        code: str,
        round_: int,
        player_id: str,
        *,
        expected_len: int,
        expected_last_seq: int,
        seq: int,
        action: str,
        progress: RacerProgress,
        then: AppendCallback,
    ) -> None:
        """Queue an append; ``then`` gets the result or the exception, later."""
        if self.fast_paths is not None:
            self.fast_paths.append(
                code,
                round_,
                player_id,
                expected_len,
                expected_last_seq,
                seq,
                action,
                progress,
                then,
            )
            return
        task = asyncio.get_running_loop().create_task(
            self._append_plain(
                code,
                round_,
                player_id,
                expected_len,
                expected_last_seq,
                seq,
                action,
                progress,
                then,
            )
        )
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _append_plain(
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
        keys = (
            self.keys.seqs(code, round_),
            self.keys.progress(code, round_),
            self.keys.log(code, round_, player_id),
        )
        args = (
            self.room_ttl_s,
            expected_len,
            expected_last_seq,
            seq,
            action,
            player_id,
            pack_record(progress.to_record()),
        )
        try:
            reply = await self._call(self._append_replicated(keys, args), keys[0])
            if isinstance(reply, NoScriptError):  # Redis restarted or SCRIPT FLUSH: load, once
                await self._call(self.load_scripts())
                reply = await self._call(self._append_replicated(keys, args), keys[0])
            if isinstance(reply, Exception):
                raise reply
        except Exception as exc:
            outcome: AppendResult | BaseException = exc
        else:
            reply = int(reply)
            outcome = (
                AppendResult(True, reply, max(seq, expected_last_seq))
                if reply >= 0
                else APPEND_CONFLICT
            )
        if self.on_batch is not None:
            self.on_batch(1, 0.0)
        then(outcome)

    async def _replicated_so_far(self, code: str) -> None:
        """Return once ``wait_replicas`` replicas have every write the master of the
        room's slot has made so far (a write of the room's ``sync`` key, then WAIT, on
        one connection: replication is in order); NotReplicated if they do not within
        the WAIT timeout."""
        key = self.keys.sync(code)
        commands = [
            ("SET", key, "1", "PX", 60_000),
            ("WAIT", self.wait_replicas, self.wait_timeout_ms),
        ]
        if self.node_clients is not None:
            replies = await redis_cluster.run_on_owner(self.node_clients, key, commands)
        else:  # a pooled connection of its own: WAIT must not hold up the shared pipe
            async with self.redis.pipeline(transaction=False) as pipe:
                for command in commands:
                    pipe.execute_command(*command)
                replies = list(await pipe.execute(raise_on_error=False))
        _raise_errors(replies[:1])
        check_replicated(replies[1], self.wait_replicas, self.wait_timeout_ms)

    async def _append_replicated(self, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """The append script's reply (an error reply as its exception), after WAIT when
        ``wait_replicas`` asks for it: one pipeline on one connection to the master of
        the room's slot."""
        commands: list[Sequence[Any]] = [("EVALSHA", self.append_sha, len(keys), *keys, *args)]
        if self.wait_replicas > 0:
            commands.append(("WAIT", self.wait_replicas, self.wait_timeout_ms))
        if self.node_clients is not None:
            replies = await redis_cluster.run_on_owner(self.node_clients, keys[0], commands)
        else:
            async with self.redis.pipeline(transaction=False) as pipe:
                for command in commands:
                    pipe.execute_command(*command)
                replies = list(await pipe.execute(raise_on_error=False))
        if isinstance(replies[0], UNAVAILABLE):
            raise replies[0]  # the master is not answering (_call says so)
        if isinstance(replies[0], Exception):
            return replies[0]
        if self.wait_replicas > 0:
            check_replicated(replies[1], self.wait_replicas, self.wait_timeout_ms)
        return replies[0][0]


def _pairs(reply: Any) -> Any:
    """An HGETALL reply's (field, value) pairs: a map in RESP3, a flat list in RESP2."""
    if isinstance(reply, dict):
        return reply.items()
    return zip(reply[::2], reply[1::2], strict=True)


def _key_of(command: Sequence[Any]) -> Any:
    """The first key a command names (all keys of one call share a slot), or None."""
    if command[0] == "EVALSHA":
        return command[3] if len(command) > 3 and int(command[2]) > 0 else None
    return command[1] if len(command) > 1 else None


def _raise_errors(replies: list[Any]) -> list[Any]:
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply
    return replies


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
