"""The DailyStorage port on Redis (docs/daily.md, "Redis keys"): sorted sets for the
boards, Lua for the one-attempt claim and the once-only result.

Every call goes through a guard (server/storage/redis_base.py ``Guard``): in the server
the room storage's (``RedisStorage.guarded``), so a Redis that does not answer is
``InternalError`` (the client is told ``internal_error``; the periodic daily loops log
no traceback) and counts in that master's health (one WARNING and one INFO per outage,
docs/server.md "Timeouts and outages"), as for the rooms' calls."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, Final

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from server.core.ports import BoardEntry, BoardView, OpenAttempt
from server.daily import DayRecord, ResultEntry, player_of_member
from server.daily.review import Review
from server.storage.records import pack_record, unpack_record
from server.storage.redis_base import DEADLINE_S, Guard, plain_guard

RETENTION_S: Final = 400 * 86_400  # every day's board stays readable this long
BOARDS: Final = ("ranked", "late")

CLAIM = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[5])
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
  return false
end
return redis.call('HGET', KEYS[1], ARGV[1])
"""

# The day's certification lease: taken when free, renewed by its holder; both PX.
LEASE = """
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
"""

RECORD = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
local order = redis.call('INCR', KEYS[2])
local member = string.format('%010d:%s', order, ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[2], member)
redis.call('HSET', KEYS[4], ARGV[1], member)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[5], ARGV[4], ARGV[3])
redis.call('ZREM', KEYS[6], ARGV[6])
for i = 1, 5 do redis.call('EXPIRE', KEYS[i], ARGV[5]) end
return order
"""

# A player's name rewritten in one day's records (a deleted account's), compare-and-set
# on the blobs read before ('' for a record not there, left alone): the day's result,
# the same day in the player's history, and the day's review of it. Nothing is written
# if either blob changed since (-1). The boards' members hold no name: unchanged.
RENAME = """
if ARGV[3] ~= '' and redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[3] then return -1 end
if ARGV[5] ~= '' and redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[5] then return -1 end
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
  if redis.call('HGET', KEYS[2], ARGV[2]) == ARGV[3] then
    redis.call('HSET', KEYS[2], ARGV[2], ARGV[4])
  end
end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[3], ARGV[1], ARGV[6]) end
return 1
"""
RENAME_TRIES: Final = 3

# One daily_board in one round trip, O(log n + k): sizes, the top, the player's rank on
# either board (from their member), the rows around it on the board asked for, and the
# result blobs of every row shown.
VIEW = """
local board = ARGV[1] == 'late' and KEYS[2] or KEYS[1]
local top = {}
if tonumber(ARGV[3]) > 0 then top = redis.call('ZRANGE', board, 0, tonumber(ARGV[3]) - 1) end
local member = redis.call('HGET', KEYS[3], ARGV[2])
local you_board, you_rank, first, around = false, false, 0, {}
if member then
  you_rank = redis.call('ZRANK', KEYS[1], member)
  if you_rank then you_board = 'ranked' else
    you_rank = redis.call('ZRANK', KEYS[2], member)
    if you_rank then you_board = 'late' end
  end
  if you_rank and you_board == ARGV[1] then
    first = math.max(0, you_rank - tonumber(ARGV[4]))
    around = redis.call('ZRANGE', board, first, you_rank + tonumber(ARGV[4]))
  end
end
local function blobs(members)
  if #members == 0 then return {} end
  local players = {}
  for i, m in ipairs(members) do players[i] = string.sub(m, 12) end
  return redis.call('HMGET', KEYS[4], unpack(players))
end
local you_blob = false
if you_rank then you_blob = redis.call('HGET', KEYS[4], ARGV[2]) end
return {redis.call('ZCARD', board), redis.call('ZCARD', KEYS[2]), top, blobs(top), first,
        around, blobs(around), you_board, you_rank, you_blob}
"""


def open_member(day: str, player_id: str, room: str) -> str:
    return f"{day}|{player_id}|{room}"


class RedisDailyStorage:
    def __init__(
        self, redis: aioredis.Redis | RedisCluster, prefix: str, *, guard: Guard | None = None
    ) -> None:
        # redis-py's reply types are unions of every reply shape; these commands'
        # replies are known (bytes, lists of bytes, ints), so the client is untyped here.
        self.redis: Any = redis
        self.prefix = prefix
        # Without the server's guard (a command-line tool): unavailable → InternalError.
        self.guard = guard or plain_guard(DEADLINE_S * 2)
        # In a Redis Cluster every daily key shares the hash tag {daily}: the claim and
        # the result scripts touch a day's keys, the open attempts and the player's
        # history at once (one slot). A few writes per player and day: one slot is
        # enough. A single Redis keeps the per-day tags of before (no key moves).
        self.cluster = isinstance(redis, RedisCluster)
        self._claim = redis.register_script(CLAIM)
        self._lease = redis.register_script(LEASE)
        self._release = redis.register_script(RELEASE)
        self._record = redis.register_script(RECORD)
        self._view = redis.register_script(VIEW)
        self._rename = redis.register_script(RENAME)

    async def _call(self, call: Awaitable[Any], key: str) -> Any:
        """``call`` (its keys on ``key``'s slot) through the guard."""
        return await self.guard(call, key)

    def _day_key(self, day: str, what: str) -> str:
        if self.cluster:
            return f"{self.prefix}:{{daily}}:{day}:{what}"
        return f"{self.prefix}:{{daily:{day}}}:{what}"

    @property
    def _open_key(self) -> str:
        if self.cluster:
            return f"{self.prefix}:{{daily}}:open"
        return f"{self.prefix}:daily:open"

    def _history_key(self, player_id: str) -> str:
        if self.cluster:
            return f"{self.prefix}:{{daily}}:history:{player_id}"
        return f"{self.prefix}:daily:history:{player_id}"

    async def create_day(self, record: DayRecord) -> DayRecord:
        key = self._day_key(str(record.day), "deal")
        packed = pack_record(record.to_record())
        await self._call(self.redis.set(key, packed, nx=True, ex=RETENTION_S), key)
        stored = await self._call(self.redis.get(key), key)
        return DayRecord.from_record(unpack_record(stored))

    async def load_days(self, days: Sequence[str]) -> list[DayRecord | None]:
        if not days:
            return []
        keys = [self._day_key(d, "deal") for d in days]
        blobs = await self._call(self.redis.mget(keys), keys[0])
        return [DayRecord.from_record(unpack_record(b)) if b is not None else None for b in blobs]

    async def claim_certification(self, day: str, owner: str, ttl_ms: int) -> bool:
        key = self._day_key(day, "certifying")
        claimed = await self._call(self._lease(keys=[key], args=[owner, ttl_ms]), key)
        return bool(claimed)

    async def release_certification(self, day: str, owner: str) -> None:
        key = self._day_key(day, "certifying")
        await self._call(self._release(keys=[key], args=[owner]), key)

    async def claim_attempt(self, day: str, player_id: str, room: str, deadline: int) -> str | None:
        key = self._day_key(day, "attempts")
        existing = await self._call(
            self._claim(
                keys=[key, self._open_key],
                args=[player_id, room, open_member(day, player_id, room), deadline, RETENTION_S],
            ),
            key,
        )
        return existing.decode() if existing is not None else None

    async def attempt_of(self, day: str, player_id: str) -> str | None:
        key = self._day_key(day, "attempts")
        room = await self._call(self.redis.hget(key, player_id), key)
        return room.decode() if room is not None else None

    async def record_result(
        self, day: str, player_id: str, board: str, score: int, entry: ResultEntry
    ) -> bool:
        room = await self.attempt_of(day, player_id) or ""
        keys = [
            self._day_key(day, "results"),
            self._day_key(day, "seq"),
            self._day_key(day, board),
            self._day_key(day, "members"),
            self._history_key(player_id),
            self._open_key,
        ]
        args: list[str | int | bytes] = [
            player_id,
            score,
            pack_record(entry.on_board(board).to_record()),
            day,
            RETENTION_S,
            open_member(day, player_id, room),
        ]
        order = await self._call(self._record(keys=keys, args=args), keys[0])
        return bool(order)

    async def open_attempts(self, until: int) -> list[OpenAttempt]:
        key = self._open_key
        members = await self._call(self.redis.zrangebyscore(key, "-inf", until, 0, 100), key)
        out = []
        for member in members:
            day, player_id, room = member.decode().split("|")
            out.append(OpenAttempt(day, player_id, room))
        return out

    async def _entries(self, day: str, members: list[bytes], first_rank: int) -> list[BoardEntry]:
        if not members:
            return []
        players = [m.decode().split(":", 1)[1] for m in members]
        key = self._day_key(day, "results")
        blobs = await self._call(self.redis.hmget(key, players), key)
        return [
            BoardEntry(first_rank + i, pid, _entry(blob))
            for i, (pid, blob) in enumerate(zip(players, blobs, strict=True))
            if blob is not None
        ]

    async def board_top(self, day: str, board: str, count: int) -> list[BoardEntry]:
        if count <= 0:
            return []
        key = self._day_key(day, board)
        members = await self._call(self.redis.zrange(key, 0, count - 1), key)
        return await self._entries(day, members, 1)

    async def board_around(
        self, day: str, board: str, player_id: str, radius: int
    ) -> list[BoardEntry]:
        key = self._day_key(day, board)
        members_key = self._day_key(day, "members")
        member = await self._call(self.redis.hget(members_key, player_id), members_key)
        if member is None:
            return []
        rank = await self._call(self.redis.zrank(key, member), key)
        if rank is None:
            return []
        first = max(0, rank - radius)
        members = await self._call(self.redis.zrange(key, first, rank + radius), key)
        return await self._entries(day, members, first + 1)

    async def board_size(self, day: str, board: str) -> int:
        key = self._day_key(day, board)
        size: int = await self._call(self.redis.zcard(key), key)
        return size

    async def board_entry(self, day: str, player_id: str) -> tuple[str, BoardEntry] | None:
        key = self._day_key(day, "results")
        blob = await self._call(self.redis.hget(key, player_id), key)
        if blob is None:
            return None
        board = _entry(blob).board or ""
        rows = await self.board_around(day, board, player_id, 0)
        return (board, rows[0]) if rows else None

    async def board_view(
        self, day: str, board: str, player_id: str, top: int, around: int
    ) -> BoardView:
        (
            count,
            late_count,
            top_members,
            top_blobs,
            first,
            around_members,
            around_blobs,
            you_board,
            you_rank,
            you_blob,
        ) = await self._call(
            self._view(
                keys=[
                    self._day_key(day, "ranked"),
                    self._day_key(day, "late"),
                    self._day_key(day, "members"),
                    self._day_key(day, "results"),
                ],
                args=[board, player_id, max(top, 0), max(around, 0)],
            ),
            self._day_key(day, "ranked"),
        )

        def rows(
            members: list[bytes], blobs: list[bytes | None], first_rank: int
        ) -> list[BoardEntry]:
            return [
                BoardEntry(first_rank + i, player_of_member(m.decode()), _entry(b))
                for i, (m, b) in enumerate(zip(members, blobs, strict=True))
                if b is not None
            ]

        you = None
        if you_board is not None and you_blob is not None:
            you = (you_board.decode(), BoardEntry(you_rank + 1, player_id, _entry(you_blob)))
        return BoardView(
            count,
            late_count,
            rows(top_members, top_blobs, 1),
            rows(around_members, around_blobs, first + 1),
            you,
        )

    async def player_created(self, player_id: str) -> int | None:
        key = f"{self.prefix}:player:{player_id}"
        created = await self._call(self.redis.hget(key, "created"), key)
        return int(created) if created is not None else None

    async def player_history(self, player_id: str) -> dict[str, ResultEntry]:
        key = self._history_key(player_id)
        raw = await self._call(self.redis.hgetall(key), key)
        return {k.decode(): _entry(v) for k, v in raw.items()}

    async def reviews(self, day: str) -> dict[str, Review]:
        key = self._day_key(day, "review")
        stored = await self._call(self.redis.hgetall(key), key)
        return {
            player.decode(): Review.from_record(unpack_record(blob))
            for player, blob in stored.items()
        }

    async def set_review(self, day: str, player_id: str, review: Review) -> None:
        key = self._day_key(day, "review")
        await self._call(self._set_review(key, player_id, review), key)

    async def _set_review(self, key: str, player_id: str, review: Review) -> None:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(key, player_id, pack_record(review.to_record()))
            pipe.expire(key, RETENTION_S)
            await pipe.execute()

    async def remove_from_board(self, day: str, player_id: str) -> bool:
        members_key = self._day_key(day, "members")
        member = await self._call(self.redis.hget(members_key, player_id), members_key)
        if member is None:
            return False
        removed = 0
        for board in BOARDS:
            key = self._day_key(day, board)
            removed += await self._call(self.redis.zrem(key, member), key)
        return removed > 0

    async def rename_player(self, days: Sequence[str], player_id: str, name: str) -> int:
        changed = 0
        for day in days:
            keys = [
                self._day_key(day, "results"),
                self._history_key(player_id),
                self._day_key(day, "review"),
            ]
            for _ in range(RENAME_TRIES):
                result = await self._call(self.redis.hget(keys[0], player_id), keys[0])
                review = await self._call(self.redis.hget(keys[2], player_id), keys[2])
                args: list[str | bytes] = [player_id, day, *_renamed(result, _entry, name)]
                args += _renamed(review, _review, name)
                if args[2] == args[4] == b"":
                    break  # nothing of the player's that day, or already renamed
                if await self._call(self._rename(keys=keys, args=args), keys[0]) == 1:
                    changed += 1
                    break
        return changed


def _entry(blob: bytes) -> ResultEntry:
    """A stored result (a board row's, the player's history's)."""
    return ResultEntry.from_record(unpack_record(blob))


def _review(blob: bytes) -> Review:
    return Review.from_record(unpack_record(blob))


def _renamed(
    blob: bytes | None, read: Callable[[bytes], ResultEntry | Review], name: str
) -> list[bytes]:
    """(blob, the blob renamed) for the rename's compare-and-set; empty bytes for a
    record not there or already under ``name`` (left alone)."""
    if blob is None:
        return [b"", b""]
    stored = read(blob)
    if stored.name == name:
        return [b"", b""]
    return [blob, pack_record(replace(stored, name=name).to_record())]


__all__ = ["BOARDS", "RETENTION_S", "RedisDailyStorage"]
