"""Trust under faults (issue #10): a Redis that hangs (SIGSTOP) or goes away. A real
redis-server of the test's own on a free port, a real app and WebSockets."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from bench.devclient import WsClient, open_client
from crescent_wire import protocol as p
from tests.server.test_race_e2e import DEAL, legal_line, wait_until_started
from tests.support import free_port

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A private redis-server (no persistence) the test may stop and resume."""
    port = free_port()
    proc = subprocess.Popen(
        [
            REDIS_SERVER,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(200):
        try:
            if client.ping():
                break
        except redis.ConnectionError:
            time.sleep(0.02)
    client.close()
    yield url, proc
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGCONT)
        proc.terminate()
        proc.wait(10)


async def racing_alone(aiohttp_client: Any, make_app: Any, url: str) -> tuple[Any, WsClient, str]:
    """An app on Redis ``url`` and one racer in a started race: (client, racer, code)."""
    client = await aiohttp_client(make_app(redis_url=url))
    ada = await open_client(client, "/ws", name="Ada")
    code = (await ada.create(deal=DEAL, seats=2)).room["code"]
    await ada.call(p.Start(room=code))
    await wait_until_started(ada, code)
    return client, ada, code


async def test_a_hung_redis_gives_internal_error_then_acks_again(
    aiohttp_client: Any,
    make_app: Any,
    own_redis: tuple[str, subprocess.Popen[bytes]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, proc = own_redis
    client, ada, code = await racing_alone(aiohttp_client, make_app, url)
    line = legal_line(DEAL, 8)
    acked = 0
    for move in line[:3]:
        assert isinstance(await ada.act(code, acked + 1, move), p.Ack)
        acked += 1

    caplog.set_level(logging.INFO)
    os.kill(proc.pid, signal.SIGSTOP)
    waits = []
    for _ in range(4):  # several requests during the hang: one warning, no tracebacks
        started = time.monotonic()
        reply = await ada.act(code, acked + 1, line[acked])
        waits.append(time.monotonic() - started)
        assert isinstance(reply, p.Error) and reply.code == "internal_error"
    started = time.monotonic()
    health = await client.get("/healthz")
    health_wait = time.monotonic() - started
    assert health.status == 503
    print(
        f"replies while Redis hangs: {[round(w, 2) for w in waits]} s; /healthz {health_wait:.2f} s"
    )
    # Generous for a loaded machine; the deadline is 1 s per call.
    assert max(waits) < 4.0

    os.kill(proc.pid, signal.SIGCONT)
    for _ in range(50):  # the connection is reopened by the next request
        reply = await ada.act(code, acked + 1, line[acked])
        if isinstance(reply, p.Ack):
            break
        await asyncio.sleep(0.1)
    assert isinstance(reply, p.Ack), reply
    acked += 1  # (an append cut off by the deadline may have been stored: a duplicate)
    assert isinstance(await ada.act(code, acked + 1, line[acked]), p.Ack)
    acked += 1
    snap = await ada.join(code)
    assert snap.you["last_seq"] == acked and snap.you["game"]["moves"] == acked
    assert (await client.get("/healthz")).status == 200

    records = [r for r in caplog.records if r.name.startswith("server")]
    assert sum(1 for r in records if r.getMessage().startswith("redis is not answering")) == 1
    assert sum(1 for r in records if r.getMessage() == "redis is back") == 1
    assert not [r for r in records if r.exc_info], [r.getMessage() for r in records if r.exc_info]


async def test_a_stopped_redis_gives_internal_error_at_once(
    aiohttp_client: Any, make_app: Any, own_redis: tuple[str, subprocess.Popen[bytes]]
) -> None:
    url, proc = own_redis
    _client, ada, code = await racing_alone(aiohttp_client, make_app, url)
    proc.terminate()
    proc.wait(10)
    started = time.monotonic()
    reply = await ada.act(code, 1, legal_line(DEAL, 1)[0])
    took = time.monotonic() - started
    print(f"reply with Redis gone: {took:.3f} s")
    assert isinstance(reply, p.Error) and reply.code == "internal_error"
    assert took < 2.0
