"""Durability: an acknowledged action survives crashes of the server and of its Redis.

Real processes throughout: ``python3 -m server`` with its embedded redis-server on a
temporary data folder, killed with SIGKILL (bench/power_cut.py holds the harness; it
runs more cuts and prints the figures).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import aiohttp
import pytest
import redis

from bench.devclient import open_client
from bench.power_cut import DEAL, EmbeddedServer, Racer, run
from crescent_wire import protocol as p
from server.embedded_redis import AOF_NAME, EmbeddedRedis
from server.storage.durability import assess, check
from server.supervised import pid_running
from tests.support import start_server_process


async def test_a_power_cut_mid_race_loses_no_acknowledged_action(tmp_path: Path) -> None:
    results = await run(cuts=2, racer_count=2, data_dir=tmp_path / "redis", seed=7)
    assert len(results) == 2
    for cut in results:
        assert cut.acked_this_round > 0  # the cut really came mid-race
        assert (cut.lost, cut.view_mismatches) == (0, 0)


async def test_the_supervisor_restarts_a_killed_redis(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path / "redis")
    server.start()
    try:
        async with aiohttp.ClientSession() as session:
            ada = await open_client(session, server.ws_url, name="Ada")
            code = (await ada.create(deal=DEAL, seats=2)).room["code"]
            assert isinstance(await ada.call(p.Start(room=code)), p.Ok)
            await ada.event("countdown")
            while (await ada.join(code)).room["phase"] != "racing":
                await asyncio.sleep(0.05)
            racer = Racer("Ada")
            for seq in (1, 2, 3):
                action = racer.next_action()
                assert action is not None
                assert isinstance(await ada.act(code, seq, action), p.Ack)
                racer.apply(action)
                racer.acked.append(action)

            first_pid = server.redis_pid()
            os.kill(first_pid, signal.SIGKILL)
            action = racer.next_action()
            assert action is not None
            replies = []
            for _ in range(200):  # while redis-server is away the act may be refused
                reply = await ada.act(code, 4, action)
                replies.append(reply)
                if isinstance(reply, p.Ack):
                    break
                assert isinstance(reply, p.Error) and reply.code == "internal_error", reply
                await asyncio.sleep(0.05)
            assert isinstance(replies[-1], p.Ack), replies[-5:]
            racer.apply(action)
            assert server.redis_pid() != first_pid
            snap = await ada.join(code)
            assert snap.you["last_seq"] == 4 and snap.you["game"] == racer.game.view().to_wire()
            await ada.close()
    finally:
        server.stop()
    log = server.log_text()
    assert "embedded redis is down; restarting it" in log and "embedded redis is back" in log


@pytest.mark.parametrize("folder", ["redis", "r" * 90])
def test_the_next_start_stops_the_redis_of_a_killed_server(tmp_path: Path, folder: str) -> None:
    """kill -9 of the server leaves its embedded redis-server running (its own session:
    a terminal's Ctrl-C does not cut it mid-write), and the next start on the same
    folder stops it before starting its own: never two on one AOF, none left for good.
    Also with a folder whose path is too long for the socket (which then lives in a
    temporary folder, so redis-server's title does not name the data folder)."""
    server = EmbeddedServer(tmp_path / folder)
    server.start()
    try:
        left_over = server.redis_pid()
        assert server.proc is not None
        server.proc.kill()
        server.proc.wait(10)
        assert pid_running(left_over)  # as documented: until the next start
        server.start()
        assert not pid_running(left_over)
        second = server.redis_pid()
        assert second != left_over
    finally:
        server.stop()
    assert "stopping a redis-server left over from an earlier run" in server.log_text()
    assert not pid_running(second)  # a graceful stop stops it


def test_an_rdb_only_folder_is_moved_to_the_aof(tmp_path: Path) -> None:
    """A data folder of an earlier version (RDB snapshots only) keeps its data."""
    data_dir = tmp_path / "redis"
    data_dir.mkdir()
    embedded = EmbeddedRedis(data_dir)
    old = subprocess.Popen(
        [
            embedded.executable,
            "--port",
            "0",
            "--unixsocket",
            str(embedded.socket_path),
            "--dir",
            str(data_dir),
            "--dbfilename",
            "crescent.rdb",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        client = _wait_for(embedded.url)
        client.set("kept", "yes")
        client.save()
        client.close()
    finally:
        old.terminate()
        old.wait(10)
    assert not (data_dir / AOF_NAME).exists()
    for _ in range(2):  # migrates, then starts from the AOF
        with embedded.running() as url:
            client = redis.Redis.from_url(url)
            assert client.get("kept") == b"yes"
            assert client.config_get("appendfsync") == {"appendfsync": "always"}
            assert client.config_get("appendonly") == {"appendonly": "yes"}
            client.close()
        assert (data_dir / AOF_NAME).exists()


def _wait_for(url: str) -> redis.Redis:
    client = redis.Redis.from_url(url)
    for _ in range(500):
        try:
            client.ping()
            return client
        except redis.ConnectionError:
            import time

            time.sleep(0.02)
    raise TimeoutError(url)


# ---------------------------------------------------------------- what Redis promises


@pytest.mark.parametrize(
    ("config", "redis_crash", "power_cut", "warns"),
    [
        ({"appendonly": "yes", "appendfsync": "always", "save": ""}, True, True, None),
        ({"appendonly": "yes", "appendfsync": "always", "save": "3600 1"}, True, True, None),
        ({"appendonly": "yes", "appendfsync": "everysec", "save": ""}, True, False, "power cut"),
        ({"appendonly": "yes", "appendfsync": "no", "save": ""}, True, False, "power cut"),
        (
            {"appendonly": "no", "appendfsync": "always", "save": "3600 1 300 100"},
            False,
            False,
            "LOST if Redis crashes",
        ),
        (
            {"appendonly": "no", "appendfsync": "everysec", "save": ""},
            False,
            False,
            "no persistence",
        ),
        ({"appendonly": "YES", "appendfsync": "Always"}, True, True, None),
        ({}, False, False, "no persistence"),
    ],
)
def test_what_an_acknowledgement_survives(
    config: dict[str, str], redis_crash: bool, power_cut: bool, warns: str | None
) -> None:
    durability = assess(config)
    assert (durability.survives_redis_crash, durability.survives_power_cut) == (
        redis_crash,
        power_cut,
    )
    warning = durability.warning()
    if warns is None:
        assert warning is None and durability.keeps_every_ack
    else:
        assert warning is not None and warns in warning and "docs/server.md" in warning


async def test_settings_that_cannot_be_read_are_said_to_be_unknown() -> None:
    durability, text = await check("redis://127.0.0.1:1/0")
    assert durability is None and "could not check" in text


def test_the_start_up_log_warns_about_the_shared_test_redis(redis_url: str, prefix: str) -> None:
    with redis.Redis.from_url(redis_url) as probe:
        persistence = {
            **probe.config_get("appendonly"),
            **probe.config_get("appendfsync"),
            **probe.config_get("save"),
        }
    expected = assess(persistence).warning()
    assert expected is not None, "the shared test Redis runs appendonly no"
    with start_server_process(prefix, redis_url=redis_url) as server:
        log = server.log_text()
    assert '"level": "warning"' in log and expected in log
