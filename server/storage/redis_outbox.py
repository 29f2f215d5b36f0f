"""The archive's outbox on Redis (docs/archive.md, "The outbox"): the
:class:`~server.core.ports.Outbox` port.

Keys (``P`` the key prefix; one hash tag ``{archive}``, so the scripts touch one slot of
a Redis Cluster): ``P:{archive}:outbox`` a hash id → record, ``P:{archive}:outbox:due``
a sorted set id → when it may be claimed (its put time, then its lease's end), and
``P:{archive}:outbox:put`` a sorted set id → put time (the lag). No TTL: an entry waits
for as long as the archive is down.

Every call is guarded (in the server: the storage's command pipe,
``RedisStorage.run_commands``, and ``RedisStorage.guarded`` for the WAIT; else a
server/storage/redis_base.py ``Guard``): a Redis that does not answer is
``InternalError`` and counts in its master's health, as for the rooms' calls, never a
traceback of the drainer's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import NoScriptError

from server.core.ports import OutboxEntry, OutboxStats
from server.storage.redis_base import DEADLINE_S, Guard, plain_guard

# KEYS: records, due, put. ARGV: n, then (id, record, put_at) n times, then the ids of
# the entries it replaces (dropped).
PUT = """
local n = tonumber(ARGV[1])
local added = 0
for i = 0, n - 1 do
  local id, record, put_at = ARGV[2 + i * 3], ARGV[3 + i * 3], ARGV[4 + i * 3]
  if redis.call('HSETNX', KEYS[1], id, record) == 1 then
    redis.call('ZADD', KEYS[2], put_at, id)
    redis.call('ZADD', KEYS[3], put_at, id)
    added = added + 1
  end
end
for i = 2 + n * 3, #ARGV do
  redis.call('HDEL', KEYS[1], ARGV[i])
  redis.call('ZREM', KEYS[2], ARGV[i])
  redis.call('ZREM', KEYS[3], ARGV[i])
end
return added
"""

# KEYS: records, due, put. ARGV: due_by, limit, lease end. Returns id, record, put_at...
CLAIM = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
local out = {}
for _, id in ipairs(ids) do
  local record = redis.call('HGET', KEYS[1], id)
  if record then
    redis.call('ZADD', KEYS[2], ARGV[3], id)
    out[#out + 1] = id
    out[#out + 1] = record
    out[#out + 1] = redis.call('ZSCORE', KEYS[3], id)
  else  -- removed meanwhile: forget its leftovers
    redis.call('ZREM', KEYS[2], id)
    redis.call('ZREM', KEYS[3], id)
  end
end
return out
"""


Run = Callable[..., Awaitable[list[Any]]]  # commands in, replies (or their errors) out


class RedisOutbox:
    """``run``: the storage's command pipe (``RedisStorage.run_commands``), a few µs a
    command: each finished race makes two scripts (the note of its end, its record) and
    each drain two calls, and redis-py's own client costs ~100 µs of Python a call. The
    pipe is guarded already (an unreachable Redis is InternalError, in the per-master
    health). Without it (the tests' and tools' bare client) redis-py's, through
    ``guard``."""

    def __init__(
        self,
        redis: aioredis.Redis | RedisCluster,
        prefix: str,
        *,
        run: Run | None = None,
        guard: Guard | None = None,
        replicated: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.redis: Any = redis  # replies are known shapes; redis-py types them as unions
        self.guard = guard or plain_guard(DEADLINE_S * 2)
        # With --redis-wait-replicas: a put returns once the replicas have it (WAIT
        # behind a write of ``P:{archive}:sync``), so a master killed right after it
        # cannot take a note or a record with it (NotReplicated: the caller retries).
        self.replicated = replicated
        self.sync_key = f"{prefix}:{{archive}}:sync"
        self.keys = [
            f"{prefix}:{{archive}}:outbox",
            f"{prefix}:{{archive}}:outbox:due",
            f"{prefix}:{{archive}}:outbox:put",
        ]
        self._run = run if run is not None else self._run_plain
        self._sha = {script: hashlib.sha1(script.encode()).hexdigest() for script in (PUT, CLAIM)}

    async def put(self, entries: Sequence[OutboxEntry], *, replacing: Sequence[str] = ()) -> int:
        if not entries and not replacing:
            return 0
        args: list[Any] = [len(entries)]
        for entry in entries:
            args += [entry.id, entry.record, entry.put_at]
        added = int(await self._script(PUT, [*args, *replacing]))
        if self.replicated is not None:
            await self.guard(self.replicated(self.sync_key), self.sync_key)
        return added

    async def claim(self, *, now: int, due_by: int, limit: int, lease_ms: int) -> list[OutboxEntry]:
        reply = await self._script(CLAIM, [due_by, limit, now + lease_ms])
        return [
            OutboxEntry(reply[i].decode(), bytes(reply[i + 1]), int(float(reply[i + 2])))
            for i in range(0, len(reply), 3)
        ]

    async def remove(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        records, due, put = self.keys
        # The record first: an id left in the sorted sets is dropped by the next claim.
        _raised(await self._run(("HDEL", records, *ids), ("ZREM", due, *ids), ("ZREM", put, *ids)))

    async def holds(self, entry_id: str) -> bool:
        (held,) = _raised(await self._run(("HEXISTS", self.keys[0], entry_id)))
        return bool(held)

    async def stats(self) -> OutboxStats:
        pending, oldest = _raised(
            await self._run(("HLEN", self.keys[0]), ("ZRANGE", self.keys[2], 0, 0, "WITHSCORES"))
        )
        if oldest and isinstance(oldest[0], list):  # RESP3: [[member, score]]
            oldest = oldest[0]
        return OutboxStats(int(pending), int(float(oldest[1])) if oldest else None)

    async def _script(self, script: str, args: Sequence[Any]) -> Any:
        """EVALSHA, and after a NOSCRIPT (a fresh or restarted Redis, a promoted replica)
        SCRIPT LOAD and again, once. The load goes through redis-py's own call, not the
        pipe: a Redis Cluster's pipeline cannot route SCRIPT LOAD (it names no key), and
        redis-py's cluster client loads the script on every master."""
        command = ("EVALSHA", self._sha[script], len(self.keys), *self.keys, *args)
        (reply,) = await self._run(command)
        if isinstance(reply, NoScriptError):
            await self.guard(self.redis.script_load(script), self.keys[0])
            (reply,) = await self._run(command)
        return _raised([reply])[0]

    async def _run_plain(self, *commands: Sequence[Any]) -> list[Any]:
        return list(await self.guard(self._pipeline(commands), self.keys[0]))

    async def _pipeline(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        async with self.redis.pipeline(transaction=False) as pipe:
            for command in commands:
                pipe.execute_command(*command)
            replies: list[Any] = await pipe.execute(raise_on_error=False)
        return replies


def _raised(replies: list[Any]) -> list[Any]:
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply
    return replies
