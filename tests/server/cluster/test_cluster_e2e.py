"""The end-to-end race tests against a local Redis Cluster (conftest.py): a
representative subset of tests/server, imported here so that they run with this
folder's ``redis_url`` (the cluster) and its server processes; plus what only a
cluster has: every key of a room on one slot, sharded pub/sub."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

import aiohttp
import redis
from redis.crc import key_slot

from bench.devclient import open_client
from bench.devtools import LocalCluster
from crescent_wire import protocol as p
from server.game import Game
from tests.server.test_processes import (  # noqa: F401 - run here against the cluster
    session,
    test_two_processes_share_one_room,
)
from tests.server.test_race_e2e import (  # noqa: F401 - run here against the cluster
    DEAL,
    legal_line,
    start_race,
    test_reconnect_with_token_resends_action,
    test_refused_and_duplicate_actions,
    test_three_racers_race_to_results,
    test_time_limit_ends_race,
    test_two_connections_same_player_cannot_corrupt,
    wait_until_started,
)

TAG = re.compile(r"\{([^}]*)\}")


def cluster_client(cluster: LocalCluster) -> redis.RedisCluster:
    return redis.RedisCluster(host="127.0.0.1", port=cluster.ports[0])


def subscribers(node: redis.Redis, count: str, channel: str) -> int:
    """``PUBSUB SHARDNUMSUB`` or ``NUMSUB`` of one channel (untyped in redis-py)."""
    reply = node.execute_command("PUBSUB", count, channel)  # type: ignore[no-untyped-call]
    return int(reply[1])


def four_moves_of(player_id: str) -> Callable[[p.ServerMessage], bool]:
    """A progress frame in which that racer has made 4 moves."""
    return lambda m: (
        isinstance(m, p.Progress)
        and any(r["player"] == player_id and r["moves"] == 4 for r in m.racers)
    )


async def test_a_room_lives_on_one_slot_and_its_bus_is_sharded(
    client: object, prefix: str, redis_cluster: LocalCluster
) -> None:
    """Every key a race writes carries its room's hash tag (or is a player's or the
    daily's); the room's keys are all on the slot of its code, served by one master, and
    the room's channel is a shard channel subscribed on that master."""
    ada, bo = [await open_client(client, "/ws", name=n) for n in ("Ada", "Bo")]
    code, _ = await start_race(ada, [bo])
    await wait_until_started(ada, code)
    for seq, move in enumerate(legal_line(DEAL, 3), 1):
        assert isinstance(await ada.act(code, seq, move), p.Ack)
    await bo.wait_for(
        lambda m: isinstance(m, p.Progress) and any(r["moves"] == 3 for r in m.racers)
    )
    rc = cluster_client(redis_cluster)
    try:
        keys = sorted(k.decode() for k in rc.scan_iter(match=f"{prefix}:*", count=1000))
        room_keys = [k for k in keys if f"{{{code}}}" in k]
        assert {k.rsplit(":", 1)[-1] for k in room_keys} >= {"room", "events", "progress", "seq"}
        assert len({key_slot(k.encode()) for k in room_keys}) == 1
        others = [k for k in keys if k not in room_keys]
        assert all(k.startswith((f"{prefix}:player:", f"{prefix}:{{daily}}:")) for k in others), (
            others
        )
        owner = redis_cluster.owner_of(f"{prefix}:{{{code}}}:room")
        channel = f"{prefix}:{{{code}}}:bus"
        node = redis.Redis(port=owner)
        try:
            # this server's bus, on the room's master, and not a classic channel
            assert subscribers(node, "SHARDNUMSUB", channel) >= 1
            assert subscribers(node, "NUMSUB", channel) == 0
            assert node.llen(f"{prefix}:{{{code}}}:r1:log:{ada.player['id']}") == 3
        finally:
            node.close()
    finally:
        rc.close()
    game = Game.from_code(DEAL)
    for move in legal_line(DEAL, 3):
        game.play(move)
    assert (await ada.join(code)).you["game"] == game.view().to_wire()


async def test_rooms_on_every_master_in_one_process(
    prefix: str, redis_cluster: LocalCluster
) -> None:
    """Enough rooms that every master serves some: appends, events and progress of
    each arrive (one append pipeline and one bus connection per master)."""
    from tests.support import start_server_process

    with start_server_process(prefix, redis_url=redis_cluster.url) as server:
        async with aiohttp.ClientSession() as http:
            hosts = [await open_client(http, server.ws_url, name=f"H{i}") for i in range(9)]
            watchers = [await open_client(http, server.ws_url, name=f"W{i}") for i in range(9)]
            codes = []
            for host, watcher in zip(hosts, watchers, strict=True):
                code, _ = await start_race(host, [watcher])
                codes.append(code)
            owners = {redis_cluster.owner_of(f"{prefix}:{{{c}}}:room") for c in codes}
            assert len(owners) >= 2  # nine random codes: the rooms are spread
            for host, code in zip(hosts, codes, strict=True):
                await wait_until_started(host, code)
            line = legal_line(DEAL, 4)

            async def play(host: object, code: str) -> None:
                for seq, move in enumerate(line, 1):
                    assert isinstance(await host.act(code, seq, move), p.Ack)  # type: ignore[attr-defined]

            await asyncio.gather(*(play(h, c) for h, c in zip(hosts, codes, strict=True)))
            for host, watcher in zip(hosts, watchers, strict=True):
                await watcher.wait_for(four_moves_of(host.player["id"]))


async def test_a_tournament_round_on_the_cluster(
    client: object, prefix: str, redis_cluster: LocalCluster
) -> None:
    """A tournament's keys share its hash tag (one slot, one Lua script per slot), its
    pushes travel on a shard channel, and a round runs and is scored on the cluster."""
    host, ada = [await open_client(client, "/ws", name=n) for n in ("Host", "Ada")]
    snap = await host.call(
        p.TCreate(name="Cup", rounds=1, deals=(DEAL,), time_limit=60, max_players=4)
    )
    assert isinstance(snap, p.TournamentSnapshot), snap
    code = str(snap.tournament["code"])
    assert isinstance(await ada.call(p.TJoin(tournament=code)), p.TournamentSnapshot)
    assert isinstance(await host.call(p.THost(tournament=code, op="start_round")), p.Ok)
    pushed = await ada.wait_for(
        lambda m: isinstance(m, p.TournamentSnapshot) and m.tournament["current"] is not None
    )
    assert isinstance(pushed, p.TournamentSnapshot)
    room = str(pushed.tournament["current"]["room"])
    await wait_until_started(ada, room)
    for seq, move in enumerate(legal_line(DEAL, 2), 1):
        assert isinstance(await ada.act(room, seq, move), p.Ack)
    assert isinstance(await ada.act(room, 3, "resign"), p.Ack)
    final = await host.wait_for(
        lambda m: isinstance(m, p.TournamentSnapshot) and m.tournament["phase"] == "finished"
    )
    assert isinstance(final, p.TournamentSnapshot)
    assert [r["id"] for r in final.tournament["standings"]] == [ada.player["id"]]
    assert final.tournament["deals"] == [DEAL]
    rc = cluster_client(redis_cluster)
    try:
        keys = [k.decode() for k in rc.scan_iter(match=f"{prefix}:{{{code}}}:*", count=1000)]
        assert keys and len({key_slot(k.encode()) for k in keys}) == 1
    finally:
        rc.close()
    node = redis.Redis(port=redis_cluster.owner_of(f"{prefix}:{{{code}}}:t"))
    try:  # the host still watches: this process listens on the tournament's shard channel
        channel = f"{prefix}:{{{code}}}:bus"
        assert subscribers(node, "SHARDNUMSUB", channel) >= 1
    finally:
        node.close()
