"""The daily storage's multi-key scripts on a Redis Cluster (every daily key on the
one hash tag ``{daily}``): the rename of a deleted account's results."""

from __future__ import annotations

from server.storage.redis_cluster import cluster_client
from server.storage.redis_daily import RedisDailyStorage
from tests.server.test_daily_board_storage import check_rename_player
from tests.support import random_prefix


async def test_rename_player_on_a_cluster(redis_url: str) -> None:
    client = cluster_client(redis_url)
    try:
        storage = RedisDailyStorage(client, random_prefix("daily-cluster"))
        assert storage.cluster
        await check_rename_player(storage)
    finally:
        await client.aclose()
