"""The Redis board view (one Lua call) against the in-memory port, on the real Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from server.daily import Result, ResultEntry
from server.daily.review import UNDER_REVIEW, Review
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


async def test_rename_player_rewrites_one_players_results(
    redis_storage: RedisDailyStorage,
) -> None:
    await check_rename_player(redis_storage)


async def check_rename_player(redis_storage: RedisDailyStorage) -> None:
    """A deleted account's name (both ports): the player's result on the days given, in
    the board rows, the player's own entry and history and the day's review; the other
    players' rows, the order and a day not given stay as they were. (Also run on a
    Redis Cluster: tests/server/cluster/test_daily_cluster.py.)"""
    memory = MemoryDailyStorage(lambda _player: None)
    days = ["2025-11-28", "2025-11-29", DAY]
    for storage in (redis_storage, memory):
        for day in days:
            for i, player in enumerate(("ada", "gone", "bob")):
                result = Result("won", 60_000 + i * 1000, 100, 104)
                entry = ResultEntry.of(result, player.title(), i)
                board = "late" if player == "bob" else "ranked"
                assert await storage.record_result(day, player, board, result.sort_score(), entry)
        await storage.set_review(DAY, "gone", Review(UNDER_REVIEW, "Gone", "fast", game="G1"))
        await storage.set_review(DAY, "ada", Review(UNDER_REVIEW, "Ada", "fast", game="G2"))

        assert await storage.rename_player([DAY, "2025-11-29", "2025-11-01"], "gone", "x") == 2
        assert await storage.rename_player([DAY], "gone", "x") == 0  # already renamed

        for day in (DAY, "2025-11-29"):
            top = await storage.board_top(day, "ranked", 10)
            assert [(r.rank, r.player_id, r.entry.name) for r in top] == [
                (1, "ada", "Ada"),
                (2, "gone", "x"),
            ]
            assert top[1].entry.time_ms == 61_000 and top[1].entry.board == "ranked"
            late = await storage.board_top(day, "late", 10)
            assert [r.entry.name for r in late] == ["Bob"]
            mine = await storage.board_entry(day, "gone")
            assert mine is not None and mine[0] == "ranked" and mine[1].entry.name == "x"
            view = await storage.board_view(day, "ranked", "gone", 10, 1)
            assert view.you is not None and view.you[1].entry.name == "x"
            assert [r.entry.name for r in view.around] == ["Ada", "x"]
        kept = await storage.board_top("2025-11-28", "ranked", 10)
        assert [r.entry.name for r in kept] == ["Ada", "Gone"]
        history = await storage.player_history("gone")
        assert {d: e.name for d, e in history.items()} == {
            "2025-11-28": "Gone",
            "2025-11-29": "x",
            DAY: "x",
        }
        assert {d: e.name for d, e in (await storage.player_history("ada")).items()} == {
            d: "Ada" for d in days
        }
        reviews = await storage.reviews(DAY)
        assert reviews["gone"] == Review(UNDER_REVIEW, "x", "fast", game="G1")
        assert reviews["ada"].name == "Ada"
    # The Redis keys keep their expiry (a rename is no new write of the day).
    tag = "{daily}:" + DAY if redis_storage.cluster else "{daily:" + DAY + "}"
    key = f"{redis_storage.prefix}:{tag}:results"
    assert await redis_storage.redis.ttl(key) > 0
