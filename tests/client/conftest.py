"""Fixtures for the client tests: a real server process on the real Redis."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import (
    ServerProcess,
    delete_prefix,
    random_prefix,
    require_redis,
    start_server_process,
)


@pytest.fixture(scope="module")
def redis_url() -> str:
    return require_redis()


@pytest.fixture(scope="module")
def server(redis_url: str) -> Iterator[ServerProcess]:
    """One real ``python3 -m server`` per test module, with its own key prefix."""
    prefix = random_prefix("cli")
    try:
        with start_server_process(prefix, redis_url=redis_url, countdown_ms=200) as proc:
            yield proc
    finally:
        delete_prefix(prefix, redis_url)


@pytest.fixture
def prefix(redis_url: str) -> Iterator[str]:
    """A private key prefix for a test that starts its own server processes."""
    name = random_prefix("cli")
    yield name
    delete_prefix(name, redis_url)
