"""Server memory under abuse (issue #10), measured on a real server process: closed
connections are freed, and spectators that never read do not grow the server. The
full-size runs with their figures: bench/memory.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.memory import connection_cycles, rss_mib, slow_spectators
from tests.support import ServerProcess, start_server_process


@pytest.fixture
def server(prefix: str) -> Iterator[ServerProcess]:
    env = {
        "CRESCENT_NEW_PLAYERS_PER_ADDRESS_PER_MIN": "0",
        "CRESCENT_RATE_PER_S": "100000",
        "CRESCENT_RATE_BURST": "100000",
    }
    with start_server_process(prefix, extra_env=env) as process:
        yield process


async def test_connection_cycles_leave_no_garbage(server: ServerProcess) -> None:
    url = f"ws://127.0.0.1:{server.port}/ws"
    await connection_cycles(url, 200)  # warm-up: first-use allocations
    start = rss_mib(server.proc.pid)
    await connection_cycles(url, 1000)
    end = rss_mib(server.proc.pid)
    assert end <= start * 1.2, (start, end)
    assert '"full garbage collection"' in server.log_text()


async def test_spectators_that_never_read(server: ServerProcess) -> None:
    """Ten silent spectators of a room with hundreds of events a second, 25 s: after
    their socket buffers fill, the server's memory stays flat (their frames are
    bounded by the send buffer; over it they are closed with 4009)."""
    url = f"ws://127.0.0.1:{server.port}/ws"
    samples: dict[int, float] = {}

    def sample(elapsed: float) -> None:
        samples[int(elapsed)] = rss_mib(server.proc.pid)

    toggles = await slow_spectators(url, 10, 25.0, sample)
    assert toggles > 1000  # the room was busy
    settled, end = samples[min(k for k in samples if k >= 5)], samples[max(samples)]
    # Each may hold up to the 1 MiB send buffer before its 4009: 10 MiB, plus slack.
    # (uvloop's per-write bookkeeping, before the drain wrote in one write, was ~55 MiB.)
    assert end - settled < 12.0, samples
