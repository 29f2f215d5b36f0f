"""The Redis board view (one Lua call) against the in-memory port, on the real Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from server.daily import Result, ResultEntry
from server.storage.memory_daily import MemoryDailyStorage
from server.storage.redis_daily import RedisDailyStorage
from tests.support import delete_prefix, random_prefix, require_redis

DAY = "2025-11-30"


@pytest.fixture
async def redis_storage() -> AsyncIterator[RedisDailyStorage]:
    url = require_redis()
    prefix = random_prefix("daily-board")
    client = aioredis.from_url(url)
    try:
        yield RedisDailyStorage(client, prefix)
    finally:
        await client.aclose()
        delete_prefix(prefix, url)


async def test_board_view_matches_the_memory_port(redis_storage: RedisDailyStorage) -> None:
    memory = MemoryDailyStorage(lambda _player: None)
    for i in range(30):
        board = "late" if i % 5 == 0 else "ranked"
        result = (
            Result("won", 60_000 + (i * 37) % 500, 100 + i, 104)
            if i % 3
            else Result("locked", None, 90, i)
        )
        entry = ResultEntry.of(result, f"P{i}", i)
        for storage in (redis_storage, memory):
            assert await storage.record_result(DAY, f"p{i}", board, result.sort_score(), entry)
    cases = [
        ("ranked", "p7", 3, 2),
        ("ranked", "p10", 5, 0),
        ("late", "p10", 2, 1),
        ("ranked", "p1", 0, 3),
        ("late", "nobody", 4, 2),
        ("ranked", "p29", 30, 25),
    ]
    for board, player, top, around in cases:
        got = await redis_storage.board_view(DAY, board, player, top, around)
        want = await memory.board_view(DAY, board, player, top, around)
        assert got == want, (board, player)
        assert got.size == (24 if board == "ranked" else 6)
    mine = await redis_storage.board_view(DAY, "ranked", "p10", 1, 1)
    assert mine.you is not None and mine.you[0] == "late" and mine.around == []


async def test_certification_lease(redis_storage: RedisDailyStorage) -> None:
    """One holder at a time, renewed by its holder, released only by it (both ports)."""
    memory = MemoryDailyStorage(lambda _player: None)
    for storage in (redis_storage, memory):
        assert await storage.claim_certification(DAY, "one", 30_000)
        assert not await storage.claim_certification(DAY, "two", 30_000)
        assert await storage.claim_certification(DAY, "one", 30_000)  # renewed
        assert await storage.claim_certification("2025-12-01", "two", 30_000)  # per day
        await storage.release_certification(DAY, "two")  # not theirs: nothing
        assert not await storage.claim_certification(DAY, "two", 30_000)
        await storage.release_certification(DAY, "one")
        assert await storage.claim_certification(DAY, "two", 30_000)
    # On Redis the lease lapses by itself (a dead holder never releases it).
    key = f"{redis_storage.prefix}:{{daily:{DAY}}}:certifying"
    assert 0 < await redis_storage.redis.pttl(key) <= 30_000
