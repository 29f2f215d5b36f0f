"""The archive's outbox on Redis (docs/archive.md, "The outbox"): the
:class:`~server.core.ports.Outbox` port.

Keys (``P`` the key prefix; one hash tag ``{archive}``, so the scripts touch one slot of
a Redis Cluster): ``P:{archive}:outbox`` a hash id → record, ``P:{archive}:outbox:due``
a sorted set id → when it may be claimed (its put time, then its lease's end), and
``P:{archive}:outbox:put`` a sorted set id → put time (the lag). No TTL: an entry waits
for as long as the archive is down.

Every call goes through a guard (server/storage/redis_base.py ``Guard``; in the server
``RedisStorage.guarded``): a Redis that does not answer is ``InternalError`` and counts in
its master's health, as for the rooms' calls, never a traceback of the drainer's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from server.core.ports import OutboxEntry, OutboxStats
from server.storage.redis_base import DEADLINE_S, Guard, plain_guard

# KEYS: records, due, put. ARGV: n, then (id, record, put_at) n times.
PUT = """
local added = 0
for i = 0, tonumber(ARGV[1]) - 1 do
  local id, record, put_at = ARGV[2 + i * 3], ARGV[3 + i * 3], ARGV[4 + i * 3]
  if redis.call('HSETNX', KEYS[1], id, record) == 1 then
    redis.call('ZADD', KEYS[2], put_at, id)
    redis.call('ZADD', KEYS[3], put_at, id)
    added = added + 1
  end
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


class RedisOutbox:
    def __init__(
        self,
        redis: aioredis.Redis | RedisCluster,
        prefix: str,
        *,
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
        self._put = redis.register_script(PUT)
        self._claim = redis.register_script(CLAIM)

    async def put(self, entries: Sequence[OutboxEntry]) -> int:
        if not entries:
            return 0
        args: list[Any] = [len(entries)]
        for entry in entries:
            args += [entry.id, entry.record, entry.put_at]
        added = int(await self.guard(self._put(keys=self.keys, args=args), self.keys[0]))
        if self.replicated is not None:
            await self.guard(self.replicated(self.sync_key), self.sync_key)
        return added

    async def claim(self, *, now: int, due_by: int, limit: int, lease_ms: int) -> list[OutboxEntry]:
        reply = await self.guard(
            self._claim(keys=self.keys, args=[due_by, limit, now + lease_ms]), self.keys[0]
        )
        return [
            OutboxEntry(reply[i].decode(), bytes(reply[i + 1]), int(float(reply[i + 2])))
            for i in range(0, len(reply), 3)
        ]

    async def remove(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        await self.guard(self._remove(ids), self.keys[0])

    async def _remove(self, ids: Sequence[str]) -> None:
        records, due, put = self.keys
        # The record first: an id left in the sorted sets is dropped by the next claim.
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hdel(records, *ids)
            pipe.zrem(due, *ids)
            pipe.zrem(put, *ids)
            await pipe.execute()

    async def holds(self, entry_id: str) -> bool:
        return bool(await self.guard(self.redis.hexists(self.keys[0], entry_id), self.keys[0]))

    async def stats(self) -> OutboxStats:
        pending, oldest = await self.guard(self._stats(), self.keys[0])
        return OutboxStats(int(pending), int(oldest[0][1]) if oldest else None)

    async def _stats(self) -> list[Any]:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hlen(self.keys[0])
            pipe.zrange(self.keys[2], 0, 0, withscores=True)
            return list(await pipe.execute())
