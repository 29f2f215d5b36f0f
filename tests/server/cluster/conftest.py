"""A local Redis Cluster for the end-to-end tests: 3 masters + 3 replicas of
``redis-server`` on free ports in a temporary folder (bench/devtools.py,
``start_local_cluster``), started once per session, stopped at the end.

Inside this folder ``redis_url`` is the cluster's ``redis+cluster://`` URL, and
``CRESCENT_TEST_REDIS_URL`` points at it too, so the end-to-end tests imported here from
tests/server (their ``client`` fixture, ``launch_server_process``) run against the
cluster unchanged. Skipped, with the reason, only when ``redis-server`` is missing."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.devtools import LocalCluster, start_local_cluster


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[LocalCluster]:
    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if server is None or cli is None:
        pytest.skip("redis-server or redis-cli is not installed: no local Redis Cluster")
    with tempfile.TemporaryDirectory(prefix="crescent-cluster-") as folder:
        cluster = start_local_cluster(Path(folder), redis_server=server, redis_cli=cli)
        try:
            yield cluster
        finally:
            cluster.stop()


@pytest.fixture
def redis_url(redis_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> str:
    redis_cluster.wait_ok()  # a failover test before may have left it settling
    monkeypatch.setenv("CRESCENT_TEST_REDIS_URL", redis_cluster.url)
    return redis_cluster.url
