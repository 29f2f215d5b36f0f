"""The archive's outbox on a Redis Cluster as the server runs it (docs/archive.md, "The
outbox"): through the storage's command pipe, which on a cluster is redis-py's cluster
pipeline. Every master's script cache is flushed first, so the first put meets
NOSCRIPT and loads the script (SCRIPT LOAD names no key: the pipeline cannot route it)."""

from __future__ import annotations

from server.core.ports import OutboxEntry
from server.storage.redis import RedisStorage
from server.storage.redis_outbox import RedisOutbox
from tests.support import delete_prefix, random_prefix


async def test_the_outbox_puts_claims_and_removes_on_a_cluster(redis_url: str) -> None:
    prefix = random_prefix("outbox")
    storage = RedisStorage(redis_url, prefix)
    await storage.start()
    try:
        await storage.redis.script_flush()  # on every master (redis-py's cluster client)
        outbox = RedisOutbox(storage.redis, prefix, run=storage.run_commands, guard=storage.guarded)
        note = OutboxEntry("ending:ABCD:1", b'{"ending": 1}', 31_000)
        assert await outbox.put([note]) == 1
        assert await outbox.holds(note.id)
        record = OutboxEntry("ABCD-1-x", b'{"g": 1}', 1_000)
        assert await outbox.put([record], replacing=[note.id]) == 1
        assert not await outbox.holds(note.id)
        stats = await outbox.stats()
        assert stats.pending == 1 and stats.oldest_put_at == 1_000
        (claimed,) = await outbox.claim(now=40_000, due_by=40_000, limit=10, lease_ms=60_000)
        assert claimed == record
        await outbox.remove([record.id])
        assert (await outbox.stats()).pending == 0
    finally:
        await storage.close()
        delete_prefix(prefix, redis_url)
