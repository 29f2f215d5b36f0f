"""Failover of the master serving a race's room, mid-race, against the local cluster
(conftest.py), with a real server process:

- a coordinated failover (``CLUSTER FAILOVER`` on the replica: it takes over once it
  has every write) loses no acknowledged action, and the room's bus follows the slot;
- kill -9 of the master with ``CRESCENT_REDIS_WAIT_REPLICAS=1`` (every ack waits for
  the replica: WAIT) loses no acknowledged action either; the replica is promoted.

Acts that fail meanwhile get ``internal_error`` and are sent again with the same seq,
as a client does; every acknowledged one must be in the log of the new master."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest
import redis

from bench.devclient import WsClient, open_client
from bench.devtools import LocalCluster
from crescent_wire import protocol as p
from server.config import fast_paths_from_env
from server.game import Game
from tests.server.test_race_e2e import DEAL, legal_line, start_race, wait_until_started
from tests.support import start_server_process


async def act_until_acked(client: WsClient, code: str, seq: int, move: str) -> p.Ack:
    """Send the act again (same seq) after each ``internal_error``, for up to 30 s."""
    deadline = time.monotonic() + 30
    while True:
        reply = await client.act(code, seq, move)
        if isinstance(reply, p.Ack):
            return reply
        assert isinstance(reply, p.Error) and reply.code == "internal_error", reply
        assert time.monotonic() < deadline, f"seq {seq} never acknowledged"
        await asyncio.sleep(0.1)  # a client's back-off before it sends again


async def wait_for_role(cluster: LocalCluster, port: int, role: str) -> None:
    deadline = time.monotonic() + 20
    while cluster.roles().get(port) != role:
        assert time.monotonic() < deadline, f"{port} never became {role}: {cluster.roles()}"
        await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def two_racers(
    prefix: str, cluster: LocalCluster, first_moves: list[str]
) -> AsyncIterator[tuple[WsClient, WsClient, str, str]]:
    """A server process on the cluster; Ada and Bo racing on DEAL; Ada's ``first_moves``
    acknowledged. Yields Ada, Bo, the room's code and Ada's log key."""
    with start_server_process(prefix, redis_url=cluster.url) as server:
        async with aiohttp.ClientSession() as http:
            ada = await open_client(http, server.ws_url, name="Ada")
            bo = await open_client(http, server.ws_url, name="Bo")
            code, _ = await start_race(ada, [bo])
            await wait_until_started(ada, code)
            for seq, move in enumerate(first_moves, 1):
                await act_until_acked(ada, code, seq, move)
            yield ada, bo, code, f"{prefix}:{{{code}}}:r1:log:{ada.player['id']}"


async def assert_moves_kept_and_seen(ada: WsClient, bo: WsClient, code: str, moves: int) -> None:
    """Bo's progress shows Ada's ``moves`` moves, and Ada's snapshot has every one."""
    await bo.wait_for(
        lambda m: (
            isinstance(m, p.Progress)
            and any(r["player"] == ada.player["id"] and r["moves"] == moves for r in m.racers)
        ),
        timeout=20,
    )
    snap = await ada.join(code)
    assert snap.you["last_seq"] == moves and snap.you["game"]["moves"] == moves


def log_length(port: int, key: str) -> int:
    with redis.Redis(port=port) as node:
        return int(node.llen(key))


def wait_calls(port: int) -> int:
    with redis.Redis(port=port) as node:
        stats = node.info("commandstats").get("cmdstat_wait")
    return int(stats["calls"]) if stats else 0


@pytest.mark.skipif(
    "redis" not in fast_paths_from_env(),
    reason="the same with the fast path off is the kill -9 test's (CI time)",
)
async def test_coordinated_failover_loses_nothing(prefix: str, redis_cluster: LocalCluster) -> None:
    line = legal_line(DEAL, 12)
    async with two_racers(prefix, redis_cluster, line[:6]) as (ada, bo, code, log_key):
        owner = redis_cluster.owner_of(log_key)
        replica = redis_cluster.replica_of(owner)
        redis_cluster.cli(replica, "cluster", "failover")
        await wait_for_role(redis_cluster, replica, "master")
        for seq, move in enumerate(line[6:], 7):
            await act_until_acked(ada, code, seq, move)
        # The room's shard channel moved with its slot: Bo still sees Ada's moves.
        await assert_moves_kept_and_seen(ada, bo, code, 12)
        assert redis_cluster.owner_of(log_key) == replica
        assert log_length(replica, log_key) == 12


async def test_kill_9_of_the_master_with_wait_1_loses_no_ack(
    prefix: str, redis_cluster: LocalCluster
) -> None:
    count = 18  # the deal's first-legal-move line has 19 actions
    env = {"CRESCENT_REDIS_WAIT_REPLICAS": "1"}
    with start_server_process(prefix, redis_url=redis_cluster.url, extra_env=env) as server:
        async with aiohttp.ClientSession() as http:
            ada = await open_client(http, server.ws_url, name="Ada")
            bo = await open_client(http, server.ws_url, name="Bo")
            cy = await open_client(http, server.ws_url, name="Cy")
            racers = (ada, bo, cy)
            code, _ = await start_race(ada, [bo, cy])
            for client in racers:
                await wait_until_started(client, code)
            logs = {c.player["id"]: f"{prefix}:{{{code}}}:r1:log:{c.player['id']}" for c in racers}
            owner = redis_cluster.owner_of(logs[ada.player["id"]])
            replica = redis_cluster.replica_of(owner)
            line = legal_line(DEAL, count)
            acked = {c.player["id"]: 0 for c in racers}
            five = asyncio.Event()

            async def play(client: WsClient) -> None:
                for seq, move in enumerate(line, 1):
                    await act_until_acked(client, code, seq, move)
                    acked[client.player["id"]] = seq
                    if seq == 5 and client is ada:
                        five.set()

            playing = asyncio.gather(*(play(c) for c in racers))
            await five.wait()
            redis_cluster.node(owner).kill()  # appends are in flight now
            try:
                await wait_for_role(redis_cluster, replica, "master")
                # The promoted master has no replica: nothing is acknowledged (WAIT 1)
                # until the old master is back, as a replica of the new one.
                assert not playing.done()
                await asyncio.to_thread(redis_cluster.restart, owner)
                await asyncio.wait_for(playing, 60)
                assert acked == {pid: count for pid in acked}
                for pid, key in logs.items():
                    assert log_length(replica, key) == acked[pid]
                assert wait_calls(replica) > 0  # each append pipeline ended with WAIT
                game = Game.from_code(DEAL)
                for move in line:
                    game.play(move)
                for client in racers:
                    you = (await client.join(code)).you
                    assert you["last_seq"] == count and you["game"] == game.view().to_wire()
            finally:
                if redis_cluster.node(owner).proc.poll() is not None:  # type: ignore[union-attr]
                    redis_cluster.restart(owner)
                redis_cluster.wait_ok()
