"""The TournamentStorage port on Redis (docs/tournaments.md, "Storage").

Keys (``P`` = the key prefix; ``{CODE}`` = the tournament's code in braces: one Redis
Cluster hash tag, so every key of a tournament lives on one slot and the Lua script
below touches one slot only):

==================================  ====================================================
``P:{CODE}:t``                      hash: ``ver`` (int) and ``blob`` (msgpack record)
``P:{CODE}:t:results``              hash: round number -> msgpack list of its rows
``P:{CODE}:t:spectators``           set of the spectators' player ids (at most 1,000)
``P:player:<id>:tournaments``       msgpack list: codes of the tournaments they created
==================================  ====================================================

Every write refreshes the TTL of the tournament's keys: 7 days while the tournament is
unfinished, 30 days once finished (the caller passes ``ttl_s``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from crescent_wire.errors import ConflictError, InternalError
from server.storage.records import pack_record, unpack_record
from server.tournament.model import Tournament
from server.tournament.scoring import RoundRow

DEADLINE_S = 2.0
UNAVAILABLE = (RedisConnectionError, RedisTimeoutError, ConnectionError, TimeoutError, OSError)

# KEYS: record hash, results hash, spectators set. ARGV: expected ver, new ver, blob, ttl,
# then optionally round, rows blob. Replies -2 when stored, else the stored version.
CAS = """
local cur = tonumber(redis.call('HGET', KEYS[1], 'ver') or '-1')
if cur ~= tonumber(ARGV[1]) then return cur end
redis.call('HSET', KEYS[1], 'ver', ARGV[2], 'blob', ARGV[3])
if #ARGV >= 6 then redis.call('HSET', KEYS[2], ARGV[5], ARGV[6]) end
for i = 1, 3 do
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('EXPIRE', KEYS[i], ARGV[4]) end
end
return -2
"""

# KEYS: spectators set. ARGV: player, limit, ttl. Replies 1 (in) or 0 (full).
ADD_SPECTATOR = """
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 1 end
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""


class RedisTournamentStorage:
    def __init__(self, redis: aioredis.Redis, prefix: str, *, deadline_s: float = DEADLINE_S):
        # redis-py's reply types are unions of every reply shape; these commands'
        # replies are known, so the client is untyped here (as in redis_daily).
        self.redis: Any = redis
        self.prefix = prefix
        self.deadline_s = deadline_s
        self._cas = redis.register_script(CAS)
        self._add_spectator = redis.register_script(ADD_SPECTATOR)

    def key(self, code: str, what: str = "") -> str:
        return f"{self.prefix}:{{{code}}}:t{what}"

    async def _call(self, call: Awaitable[Any]) -> Any:
        try:
            return await asyncio.wait_for(call, self.deadline_s)
        except UNAVAILABLE as exc:
            raise InternalError("The server's storage is not answering; retry") from exc

    async def load_tournament(self, code: str) -> Tournament | None:
        blob = await self._call(self.redis.hget(self.key(code), "blob"))
        return Tournament.from_record(unpack_record(blob)) if blob is not None else None

    async def cas_tournament(
        self,
        code: str,
        expected_ver: int,
        tournament: Tournament,
        *,
        ttl_s: int,
        round_rows: tuple[int, tuple[RoundRow, ...]] | None = None,
    ) -> None:
        args: list[Any] = [expected_ver, tournament.ver, pack_record(tournament.to_record()), ttl_s]
        if round_rows is not None:
            args += [round_rows[0], pack_record([row.to_record() for row in round_rows[1]])]
        keys = [self.key(code), self.key(code, ":results"), self.key(code, ":spectators")]
        result = await self._call(self._cas(keys=keys, args=args))
        if result != -2:
            raise ConflictError(f"tournament {code}: expected {expected_ver}, found {result}")

    async def round_results(self, code: str, round_: int) -> tuple[RoundRow, ...] | None:
        blob = await self._call(self.redis.hget(self.key(code, ":results"), str(round_)))
        return _rows_of(blob) if blob is not None else None

    async def all_results(self, code: str) -> dict[int, tuple[RoundRow, ...]]:
        blobs = await self._call(self.redis.hgetall(self.key(code, ":results")))
        return {int(n): _rows_of(b) for n, b in sorted(blobs.items(), key=lambda kv: int(kv[0]))}

    def _host_key(self, host: str) -> str:
        return f"{self.prefix}:player:{host}:tournaments"

    async def host_tournaments(self, host: str) -> list[str]:
        blob = await self._call(self.redis.get(self._host_key(host)))
        return list(unpack_record(blob)) if blob is not None else []

    async def set_host_tournaments(self, host: str, codes: Sequence[str], ttl_s: int) -> None:
        await self._call(self.redis.set(self._host_key(host), pack_record(list(codes)), ex=ttl_s))

    async def add_spectator(self, code: str, player_id: str, limit: int, ttl_s: int) -> bool:
        added = await self._call(
            self._add_spectator(
                keys=[self.key(code, ":spectators")], args=[player_id, limit, ttl_s]
            )
        )
        return bool(added)

    async def remove_spectator(self, code: str, player_id: str) -> None:
        await self._call(self.redis.srem(self.key(code, ":spectators"), player_id))

    async def spectator_count(self, code: str) -> int:
        return int(await self._call(self.redis.scard(self.key(code, ":spectators"))))


def _rows_of(blob: bytes) -> tuple[RoundRow, ...]:
    """A finished round's rows from their stored blob (the list of their records)."""
    return tuple([RoundRow.from_record(record) for record in unpack_record(blob)])
