"""A kill -9 of one Redis Cluster master under light load, as the server's log tells it
(docs/server.md, "Observability"): one WARNING ``redis is not answering`` and one INFO
``redis is back`` for that master (the outage ends when its replica has taken over its
slots), none for the masters that kept answering, and no request logged at error level
with a traceback: the acts sent meanwhile get ``internal_error``, which the client
retries."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from bench.devclient import WsClient, open_client
from bench.devtools import LocalCluster
from tests.server.cluster.test_cluster_failover import act_until_acked, wait_for_role
from tests.server.test_race_e2e import DEAL, legal_line, start_race, wait_until_started
from tests.support import start_server_process

NOT_ANSWERING = "redis is not answering; requests get internal_error until it is back"
BACK = "redis is back"


def log_entries(text: str) -> list[dict[str, Any]]:
    entries = []
    for line in text.splitlines():
        if line.startswith("{"):
            entries.append(json.loads(line))
    return entries


def outage_lines(entries: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per master: how many "not answering" and "back" lines."""
    counts: dict[str, dict[str, int]] = {}
    for entry in entries:
        if entry["msg"] in (NOT_ANSWERING, BACK):
            kind = "down" if entry["msg"] == NOT_ANSWERING else "back"
            per_master = counts.setdefault(str(entry.get("master")), {"down": 0, "back": 0})
            per_master[kind] += 1
    return counts


async def race_on_another_master(
    http: aiohttp.ClientSession, server: Any, cluster: LocalCluster, prefix: str, busy: int
) -> tuple[list[WsClient], str]:
    """Two racers in a started race whose room's slot is served by a master other than
    ``busy``."""
    for attempt in range(20):
        pair = [await open_client(http, server.ws_url, name=f"{n}{attempt}") for n in "CD"]
        code, _ = await start_race(pair[0], pair[1:])
        if cluster.owner_of(f"{prefix}:{{{code}}}:room") != busy:
            for client in pair:
                await wait_until_started(client, code)
            return pair, code
    raise AssertionError("20 rooms in a row on one master")


async def test_a_master_kill_logs_one_outage_and_no_traceback(
    prefix: str, redis_cluster: LocalCluster
) -> None:
    count = 18
    env = {"CRESCENT_REDIS_WAIT_REPLICAS": "1"}
    with start_server_process(prefix, redis_url=redis_cluster.url, extra_env=env) as server:
        async with aiohttp.ClientSession() as http:
            racers = [await open_client(http, server.ws_url, name=n) for n in ("Ada", "Bo")]
            code, _ = await start_race(racers[0], racers[1:])
            for client in racers:
                await wait_until_started(client, code)
            owner = redis_cluster.owner_of(f"{prefix}:{{{code}}}:room")
            replica = redis_cluster.replica_of(owner)
            # Calls to another master go on throughout: they must not end the outage.
            others, other_code = await race_on_another_master(
                http, server, redis_cluster, prefix, owner
            )
            line = legal_line(DEAL, count)
            three = asyncio.Event()

            async def play(client: WsClient) -> None:
                for seq, move in enumerate(line, 1):
                    await act_until_acked(client, code, seq, move)
                    if seq == 3:
                        three.set()

            async def play_the_other_race(client: WsClient) -> int:
                for seq, move in enumerate(line, 1):
                    await act_until_acked(client, other_code, seq, move)
                    await asyncio.sleep(0.25)  # a human's pace: throughout the outage
                return seq

            playing = asyncio.gather(*(play(c) for c in racers))
            await three.wait()
            looking = asyncio.gather(*(play_the_other_race(c) for c in others))
            redis_cluster.node(owner).kill()
            try:
                await wait_for_role(redis_cluster, replica, "master")
                await asyncio.to_thread(redis_cluster.restart, owner)
                await asyncio.wait_for(playing, 60)
                assert await looking == [count, count]
            finally:
                if redis_cluster.node(owner).proc.poll() is not None:  # type: ignore[union-attr]
                    redis_cluster.restart(owner)
                redis_cluster.wait_ok()
            metrics = await (await http.get(server.http_url + "/metrics")).text()
        entries = log_entries(server.log_text())
    counts = outage_lines(entries)
    for entry in entries:
        if entry["msg"] in (NOT_ANSWERING, BACK):
            print(entry)
    print("outage lines per master:", counts)
    tracebacks = [e for e in entries if e["level"] in ("error", "critical") and "exc" in e]
    print("error lines with a traceback:", len(tracebacks))
    killed = f"127.0.0.1:{owner}"
    assert counts.get(killed) == {"down": 1, "back": 1}, counts
    assert set(counts) == {killed}, counts  # the other masters answered throughout
    assert tracebacks == [], [(e["logger"], e["msg"], e["exc"][-300:]) for e in tracebacks]
    assert "crescent_redis_up 1.0" in metrics  # every master answers again
    assert f'crescent_redis_master_up{{master="{killed}"}} 1.0' in metrics
