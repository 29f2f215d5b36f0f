"""The outbox port on both adapters (docs/archive.md, "The outbox"): put once by id,
a put that replaces the note of a race's end drops it in the same step, claims lease
entries to one drainer, and the lag."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from server.core.ports import Outbox, OutboxEntry
from server.storage.memory_outbox import MemoryOutbox
from server.storage.redis import RedisStorage
from server.storage.redis_outbox import RedisOutbox
from tests.support import delete_prefix, random_prefix, redis_test_url


@pytest.fixture(params=["memory", "redis", "redis-pipe"])
async def outbox(request: pytest.FixtureRequest) -> AsyncIterator[Outbox]:
    """In memory; on Redis through redis-py; on Redis through the storage's command
    pipe, as the server runs it (a fresh Redis script cache: NOSCRIPT, then loaded)."""
    if request.param == "memory":
        yield MemoryOutbox()
        return
    prefix = random_prefix("outbox")
    client = aioredis.Redis.from_url(redis_test_url())
    storage = RedisStorage(redis_test_url(), prefix) if request.param == "redis-pipe" else None
    try:
        if storage is not None:
            await storage.start()
            await client.script_flush()
            yield RedisOutbox(storage.redis, prefix, run=storage.run_commands)
        else:
            yield RedisOutbox(client, prefix)
    finally:
        if storage is not None:
            await storage.close()
        await client.aclose()
        delete_prefix(prefix)


async def test_a_put_replacing_the_note_of_an_end_drops_it(outbox: Outbox) -> None:
    note = OutboxEntry("ending:ABCD:1", b'{"ending": 1}', 31_000)
    assert await outbox.put([note]) == 1
    assert await outbox.put([note]) == 0  # put once by id
    record = OutboxEntry("ABCD-1-x", b'{"g": 1}', 1_000)
    assert await outbox.put([record], replacing=[note.id]) == 1
    assert await outbox.put([record], replacing=[note.id]) == 0  # a retry: nothing more
    stats = await outbox.stats()
    assert stats.pending == 1 and stats.oldest_put_at == 1_000
    (claimed,) = await outbox.claim(now=40_000, due_by=40_000, limit=10, lease_ms=60_000)
    assert claimed == record
    assert await outbox.claim(now=40_000, due_by=40_000, limit=10, lease_ms=60_000) == []
    await outbox.remove([record.id])
    assert (await outbox.stats()).pending == 0
