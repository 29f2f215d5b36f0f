"""The adapters beside the rooms' while their Redis is down: the daily challenge
(server/storage/redis_daily.py) and the archive's outbox (server/storage/redis_outbox.py).

A daily request is answered with the coded error ``internal_error``, the daily loops'
steps and the outbox's calls fail with ``InternalError`` (a periodic loop's outage is
then logged once, without a traceback: periodic.py), and the outage is the Redis health
tracker's one WARNING, as for the rooms' calls (docs/server.md, "Timeouts and
outages"). Before, both let redis-py's ``ConnectionError`` through: an ERROR ``request
failed`` with a full traceback per daily request, and a traceback from each loop (the
soak's server logs showed the archive drainer's)."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.devclient import open_client
from crescent_wire import protocol as p
from crescent_wire.errors import InternalError
from server.compose import build_parts
from server.config import Settings
from server.core.ports import OutboxEntry
from server.storage.redis import RedisStorage
from server.storage.redis_outbox import RedisOutbox
from server.web import create_app
from server.web.keys import HUB
from tests.support import DEV_SECRET

DOWN = "redis is not answering; requests get internal_error until it is back"


async def test_a_redis_outage_is_internal_error_for_daily_requests_and_loops(
    private_redis: Callable[[], subprocess.Popen[bytes]],
    tmp_path: Path,
    aiohttp_client: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    proc = private_redis()
    socket = tmp_path / "redis.sock"
    settings = Settings(
        redis_url=f"unix://{socket}",
        key_prefix="dailyout",
        secret=DEV_SECRET,
        redis_deadline_s=0.5,
        daily_deal="CR1-N-AAAAAAB",  # no solver
    )
    client = await aiohttp_client(create_app(settings, build_parts))
    # Today's record is prepared in the background at start-up: before it, DailyToday
    # answers day_not_ready (a CI run once got there first). Prepared here, awaited.
    assert await client.app[HUB].daily.prepare()
    ada = await open_client(client, "/ws", name="Ada")
    assert isinstance(await ada.call(p.DailyToday()), p.DailyReply)  # Redis answers
    assert isinstance(await ada.call(p.DailyBoard(watch=True)), p.DailyReply)
    daily = client.app[HUB].daily
    (watch,) = daily.watchers.values()

    proc.kill()  # kill -9
    proc.wait(10)
    socket.unlink(missing_ok=True)  # a killed redis-server leaves its socket file
    for request in (p.DailyToday(), p.DailyStart(), p.DailyMe(), p.DailyBoard(watch=True)):
        reply = await ada.call(request)
        assert isinstance(reply, p.Error) and reply.code == "internal_error", reply
    for step in (daily.check, daily.results.sweep):
        with pytest.raises(InternalError):
            await step()
    daily.boards.dirty.add(str(watch.day))  # a board to push (no await before push reads it)
    with pytest.raises(InternalError):
        await daily.push()
    await ada.close()

    with_traceback = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.exc_info]
    assert with_traceback == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    warnings = [r for r in caplog.records if r.getMessage() == DOWN]
    assert len(warnings) == 1 and warnings[0].levelname == "WARNING"


async def test_a_redis_outage_is_internal_error_for_the_outbox(
    private_redis: Callable[[], subprocess.Popen[bytes]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    proc = private_redis()
    socket = tmp_path / "redis.sock"
    store = RedisStorage(f"unix://{socket}", "outboxout", deadline_s=0.5)
    await store.start()
    try:
        outbox = RedisOutbox(store.redis, "outboxout", guard=store.guarded)
        assert (await outbox.stats()).pending == 0  # Redis answers
        proc.kill()  # kill -9
        proc.wait(10)
        socket.unlink(missing_ok=True)
        with pytest.raises(InternalError):
            await outbox.claim(now=1, due_by=1, limit=10, lease_ms=1000)
        with pytest.raises(InternalError):
            await outbox.stats()
        with pytest.raises(InternalError):
            await outbox.remove(["a-1-x"])
        assert store.health.down == [str(socket)]
    finally:
        await store.close()
    assert [r for r in caplog.records if r.exc_info] == []
    assert [r.levelname for r in caplog.records if r.getMessage() == DOWN] == ["WARNING"]


async def test_an_outbox_put_waits_for_the_replicas(redis_url: str, prefix: str) -> None:
    """With --redis-wait-replicas, a note or record put in the outbox is done only once
    the replicas have it (a master killed right after cannot take it along): here a
    Redis without replicas, so the put is refused (NotReplicated, an InternalError) and
    the caller retries; without WAIT it is done at once."""
    store = RedisStorage(redis_url, prefix, wait_replicas=1, wait_timeout_ms=50)
    await store.start()
    try:
        replicas = int((await store.redis.info("replication"))["connected_slaves"])
        if replicas:
            pytest.skip("the test Redis has replicas: WAIT 1 would succeed")
        entry = OutboxEntry("ROOMAA-1-x", b"{}", 1)
        waiting = RedisOutbox(store.redis, prefix, replicated=store.replicated_so_far)
        with pytest.raises(InternalError, match="replicas"):
            await waiting.put([entry])
        plain = RedisOutbox(store.redis, prefix)
        assert await plain.put([entry]) == 0  # stored on the master all the same
        assert await plain.holds("ROOMAA-1-x") and not await plain.holds("ROOMAA-2-x")
    finally:
        await store.close()
