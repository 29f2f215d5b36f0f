"""Crowds end to end (issue #20): two real server processes on the real Redis, real
WebSockets, the Python client.

- 200 players register for one tournament at once, 50 ``t_join`` in flight, half on
  each process: every one registered on the first try, no error; a tournament of 150
  places takes exactly 150 of the same crowd; the same crowd then joins one race room
  as spectators, without an error;
- 8 racers join one room at once (4 on each process), then all ready at once: every
  join and ready succeeds first time and the race starts.

The servers' own compare-and-set retries are counted in ``/metrics``.
"""

from __future__ import annotations

import asyncio
import re
import urllib.request
from collections.abc import AsyncIterator, Iterator

import pytest

from crescent_client import CrescentClient, RequestFailed
from tests.support import (
    ServerProcess,
    delete_prefix,
    random_prefix,
    require_redis,
    start_server_process,
)

# One address opens every client: no guest quota; no pacing of messages.
ARGS = ["--new-players-per-address-per-min", "0", "--rate-per-s", "5000", "--rate-burst", "5000"]
CROWD = 200
IN_FLIGHT = 50
TIMEOUT = 30.0


@pytest.fixture(scope="module")
def module_prefix() -> Iterator[str]:
    url = require_redis()
    name = random_prefix("crowd")
    yield name
    delete_prefix(name, url)


@pytest.fixture(scope="module")
def servers(module_prefix: str) -> Iterator[list[ServerProcess]]:
    with (
        start_server_process(module_prefix, countdown_ms=200, extra_args=ARGS) as one,
        start_server_process(module_prefix, countdown_ms=200, extra_args=ARGS) as two,
    ):
        yield [one, two]


@pytest.fixture
async def clients() -> AsyncIterator[list[CrescentClient]]:
    opened: list[CrescentClient] = []
    yield opened
    await asyncio.gather(*(c.close() for c in opened))


async def open_clients(
    opened: list[CrescentClient], servers: list[ServerProcess], names: list[str]
) -> list[CrescentClient]:
    """One client per name, alternating between the servers (opened 20 at a time)."""
    limit = asyncio.Semaphore(20)

    async def one(i: int, name: str) -> CrescentClient:
        async with limit:
            client = CrescentClient(
                servers[i % len(servers)].ws_url, name=name, pace=None, request_timeout=TIMEOUT
            )
            await client.open()
            opened.append(client)
            return client

    return list(await asyncio.gather(*(one(i, n) for i, n in enumerate(names))))


def cas_retries(servers: list[ServerProcess], record: str) -> float:
    total = 0.0
    pattern = re.compile(rf'^crescent_cas_retries_total\{{record="{record}"\}} (\S+)$', re.M)
    for server in servers:
        with urllib.request.urlopen(f"{server.http_url}/metrics", timeout=5) as reply:
            found = pattern.search(reply.read().decode())
        assert found is not None, "the retries counter is exported from the start"
        total += float(found.group(1))
    return total


async def crowd_joins(crowd: list[CrescentClient], code: str) -> list[str | None]:
    """Every client sends t_join once, at most IN_FLIGHT outstanding; each one's error
    code, or None if registered."""
    in_flight = asyncio.Semaphore(IN_FLIGHT)

    async def join(client: CrescentClient) -> str | None:
        async with in_flight:
            try:
                state = await client.join_tournament(code)
            except RequestFailed as err:
                return err.code
            assert state.you["role"] == "player" and state.you["status"] == "active"
            return None

    return list(await asyncio.gather(*(join(c) for c in crowd)))


async def test_a_crowd_registers_on_the_first_try(
    servers: list[ServerProcess], clients: list[CrescentClient]
) -> None:
    host, *crowd = await open_clients(
        clients, servers, ["Host", *(f"Crowd{i}" for i in range(CROWD))]
    )
    # A tournament of 150 places: exactly 150 of the crowd get in.
    small = await host.create_tournament("Small", rounds=1, time_limit=60, max_players=150)
    outcomes = await crowd_joins(crowd, small.code)
    assert outcomes.count(None) == 150
    assert sorted(o for o in outcomes if o is not None) == ["tournament_full"] * 50
    assert (await host.tournament(small.code)).data["players"] == 150

    # A tournament of 200 places: all 200, each on the first try, no error.
    big = await host.create_tournament("Big", rounds=1, time_limit=60, max_players=CROWD)
    assert await crowd_joins(crowd, big.code) == [None] * CROWD
    rows = (await host.standings(big.code)).rows
    assert {r["id"] for r in rows} == {c.player["id"] for c in crowd}
    assert (await host.tournament(big.code)).data["players"] == CROWD
    cas_retries(servers, "tournament")  # exported (how many retries depends on timing)

    # The same crowd watches one race room (at most 200 spectators): every join of the
    # room's record succeeds, the processes' lost compare-and-sets retried by them.
    room = await host.create_room(seats=2, time_limit=600)
    in_flight = asyncio.Semaphore(IN_FLIGHT)

    async def watch(client: CrescentClient) -> str:
        async with in_flight:
            return (await client.join(room.code, as_="spectator")).role

    assert await asyncio.gather(*(watch(c) for c in crowd)) == ["spectator"] * CROWD


async def test_eight_racers_join_one_room_at_once(
    servers: list[ServerProcess], clients: list[CrescentClient]
) -> None:
    host, *racers = await open_clients(clients, servers, [f"Racer{i}" for i in range(8)])
    room = await host.create_room(seats=8, time_limit=600)
    joined = await asyncio.gather(*(r.join(room.code, as_="racer") for r in racers))
    assert all(state.role == "racer" for state in joined)
    everyone = [host, *racers]
    await asyncio.gather(*(c.ready(room.code) for c in everyone))
    await asyncio.gather(*(c.wait_for_start(room.code, timeout=TIMEOUT) for c in everyone))
    snapshot = await host.join(room.code, as_="racer")
    assert snapshot.phase in ("countdown", "racing")
    cas_retries(servers, "room")
