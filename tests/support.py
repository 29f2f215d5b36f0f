"""Reusable test helpers: a real Redis with a private key prefix, real server processes.

Used by tests/server, tests/client and the browser tests. The process and Redis helpers
live in bench/devtools.py (the benchmarks use them too) and are re-exported here under
the names the tests import; ``require_redis`` is the test-only part (it fails the test).
"""

from __future__ import annotations

from typing import Any

from bench.devtools import (
    DEV_SECRET,
    REPO_ROOT,
    ServerProcess,
    delete_prefix,
    free_port,
    launch_server_process,
    random_prefix,
    redis_test_url,
    start_server_process,
    wait_for_health,
)
from crescent_wire import protocol as p

__all__ = [
    "DEV_SECRET",
    "REPO_ROOT",
    "ServerProcess",
    "delete_prefix",
    "free_port",
    "launch_server_process",
    "random_prefix",
    "redis_test_url",
    "require_redis",
    "start_server_process",
    "view_of",
    "wait_for_health",
]


def require_redis() -> str:
    """The test Redis URL, after checking that it answers (a clear failure if not)."""
    import pytest
    import redis

    url = redis_test_url()
    try:
        with redis.Redis.from_url(url, socket_timeout=2) as probe:
            probe.ping()
    except redis.RedisError as exc:  # pragma: no cover - environment problem
        pytest.fail(f"no Redis at {url}: {exc} (scripts/test starts one)")
    return url


def view_of(reply: p.ServerMessage) -> dict[str, Any]:
    """An ack's VIEW: fails the test for any other reply, or an ack without one."""
    assert isinstance(reply, p.Ack) and reply.view is not None, reply
    return reply.view
