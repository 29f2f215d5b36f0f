"""A slot migration (resharding) of a racing room's slot, mid-race, against the local
cluster (conftest.py), with a real server process. While the slot is migrating and the
room's keys are already on the importing master, the old master answers ``ASK``: the
server sends the append there, ``ASKING`` first, and acknowledges it without a retry;
once the slot is handed over, ``MOVED`` sends it there for good. No acknowledged action
is lost, and the room's other racer still sees the progress."""

from __future__ import annotations

import redis

from bench.devtools import LocalCluster
from crescent_wire import protocol as p
from tests.server.cluster.test_cluster_failover import (
    act_until_acked,
    assert_moves_kept_and_seen,
    log_length,
    two_racers,
)
from tests.server.test_race_e2e import DEAL, legal_line


def log_length_importing(port: int, key: str) -> int:
    """LLEN on the master importing the key's slot (``ASKING`` first, same connection)."""
    with redis.Redis(port=port) as node:
        pipe = node.pipeline(transaction=False)
        pipe.execute_command("ASKING")
        pipe.llen(key)
        return int(pipe.execute()[1])


async def test_a_slot_migration_mid_race_loses_nothing(
    prefix: str, redis_cluster: LocalCluster
) -> None:
    line = legal_line(DEAL, 12)
    async with two_racers(prefix, redis_cluster, line[:4]) as (ada, bo, code, log_key):
        source = redis_cluster.owner_of(log_key)
        masters = [port for port, role in redis_cluster.roles().items() if role == "master"]
        target = next(port for port in masters if port != source)
        slot = redis_cluster.cli(source, "cluster", "keyslot", log_key).strip()
        source_id = redis_cluster.cli(source, "cluster", "myid").strip()
        target_id = redis_cluster.cli(target, "cluster", "myid").strip()
        redis_cluster.cli(target, "cluster", "setslot", slot, "importing", source_id)
        redis_cluster.cli(source, "cluster", "setslot", slot, "migrating", target_id)
        try:
            keys = redis_cluster.cli(source, "cluster", "getkeysinslot", slot, "1000").split()
            assert log_key in keys
            redis_cluster.cli(
                source, "migrate", "127.0.0.1", str(target), "", "0", "5000", "keys", *keys
            )
            # The slot is still the source's, every key of the room the target's: each
            # append is answered ASK by the source and must be acknowledged at once.
            for seq, move in enumerate(line[4:8], 5):
                reply = await ada.act(code, seq, move)
                assert isinstance(reply, p.Ack), reply
            assert log_length_importing(target, log_key) == 8
            assert redis_cluster.cli(source, "cluster", "countkeysinslot", slot).strip() == "0"
            assert redis_cluster.owner_of(log_key) == source
        finally:
            for port in masters:  # hand the slot over (every master learns it)
                redis_cluster.cli(port, "cluster", "setslot", slot, "node", target_id)
        for seq, move in enumerate(line[8:], 9):  # MOVED: the slot map is read again
            await act_until_acked(ada, code, seq, move)
        await assert_moves_kept_and_seen(ada, bo, code, 12)
        assert redis_cluster.owner_of(log_key) == target
        assert log_length(target, log_key) == 12
