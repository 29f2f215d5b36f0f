"""The outbox's crash test (docs/archive.md, "The outbox"): a real server process on
real Redis and PostgreSQL finishes a race and is killed with -9 before its drainer
writes the game (the test-only CRESCENT_ARCHIVE_DRAIN_DELAY_S holds the drainer off);
two new processes start on the same Redis and database: the game is archived exactly
once. Then the archive's read routes, on that real game."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import asyncpg
import psutil
import pytest
import redis

from bench.devclient import open_client
from crescent_wire import protocol as p
from server.core.replay import parse_replay, verify_game
from server.game import Game
from tests.archive.conftest import _create_schema, _drop_schema, postgres_dsn
from tests.server.test_race_e2e import wait_until_started
from tests.support import (
    REPO_ROOT,
    ServerProcess,
    delete_prefix,
    launch_server_process,
    random_prefix,
    redis_test_url,
)

__all__ = ["postgres_dsn"]  # the fixture, from tests/archive/conftest.py

DEAL = "CR1-N-AAAAAAB"
WAIT_S = 30.0


@pytest.fixture
def prefix() -> Iterator[str]:
    name = random_prefix("arch")
    yield name
    delete_prefix(name)


@pytest.fixture
async def database_url(postgres_dsn: str) -> AsyncIterator[str]:
    """The test's private schema, named in the URL (asyncpg passes unknown query
    parameters to the server as settings: search_path)."""
    schema = await _create_schema(postgres_dsn)
    sep = "&" if "?" in postgres_dsn else "?"
    yield f"{postgres_dsn}{sep}search_path={schema}"
    await _drop_schema(postgres_dsn, schema)


def get_json(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def archive_lag(server: ServerProcess) -> dict[str, Any]:
    status, body = get_json(f"{server.http_url}/healthz")
    assert status == 200, body
    lag: dict[str, Any] = body["archive"]
    return lag


def wait_for(what: str, check: Any, timeout: float = WAIT_S) -> None:
    """Poll another process's state (a server's /healthz, a database) until ``check()``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout} s: {what}")
        time.sleep(0.1)


async def archived_rows(database_url: str, game_id: str) -> tuple[int, int]:
    conn = await asyncpg.connect(database_url)
    try:
        games = await conn.fetchval("select count(*) from archive_games where id = $1", game_id)
        racers = await conn.fetchval(
            "select count(*) from archive_racers where game_id = $1", game_id
        )
    finally:
        await conn.close()
    return int(games), int(racers)


async def play_a_race(server: ServerProcess) -> str:
    """Ada plays two moves and resigns, Bo resigns: the race ends; its room code."""
    async with aiohttp.ClientSession() as session:
        ada = await open_client(session, server.ws_url, name="Ada")
        bo = await open_client(session, server.ws_url, name="Bo")
        snap = await ada.create(deal=DEAL, seats=2)
        code = str(snap.room["code"])
        await bo.join(code)
        for racer in (ada, bo):
            assert isinstance(await racer.call(p.Ready(room=code)), p.Ok)
        await wait_until_started(ada, code)
        game = Game.from_code(DEAL)
        for seq in (1, 2):
            move = str(next(iter(game.legal_moves())))
            game.apply(move)
            assert isinstance(await ada.act(code, seq, move), p.Ack)
        assert isinstance(await ada.act(code, 3, "resign"), p.Ack)
        assert isinstance(await bo.act(code, 1, "resign"), p.Ack)
        await ada.event("finished")
        await ada.close()
        await bo.close()
    return code


async def test_killed_between_the_end_and_the_write_the_game_is_archived_once(
    prefix: str, database_url: str
) -> None:
    env = {"CRESCENT_DATABASE_URL": database_url, "CRESCENT_ARCHIVE": "on"}
    first = await asyncio.to_thread(
        launch_server_process, prefix, None, {**env, "CRESCENT_ARCHIVE_DRAIN_DELAY_S": "600"}
    )
    try:
        code = await play_a_race(first)
        # The record is in the outbox, and the note of the race's end is gone again.
        await asyncio.to_thread(
            wait_for,
            "the game in the outbox",
            lambda: [i.split("-")[0] for i in outbox_ids(prefix)] == [code],
        )
        assert archive_lag(first)["pending"] == 1
    finally:
        first.kill()  # -9: between the game's end and its archive write
    (game_id,) = outbox_ids(prefix)
    assert game_id.startswith(f"{code}-1-")
    assert await archived_rows(database_url, game_id) == (0, 0)

    # Two new processes on the same Redis and database: both drain, one write counts.
    servers = await asyncio.gather(
        *(asyncio.to_thread(launch_server_process, prefix, None, env) for _ in "12")
    )
    try:
        for server in servers:
            await asyncio.to_thread(
                wait_for, "the outbox drained", lambda s=server: archive_lag(s)["pending"] == 0
            )
        assert await archived_rows(database_url, game_id) == (1, 2)

        # Read back over HTTP: the replay document verifies with the engine.
        status, document = get_json(f"{servers[0].http_url}/api/games/{game_id}.json")
        assert status == 200, document
        replayed = parse_replay(document)
        assert replayed.id == game_id and [r.name for r in replayed.racers] == ["Ada", "Bo"]
        assert all(verdict.ok for verdict in verify_game(replayed))
        ada = replayed.racers[0]
        assert [a.a for a in ada.actions][-1] == "resign" and len(ada.actions) == 3
        assert all(a.t > 0 for a in ada.actions)  # server times after the start
        print(f"replay link: /api/games/{game_id}.json")
        verified = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "server", "verify", game_id, "--server", servers[0].http_url],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert verified.returncode == 0, verified.stderr
        assert verified.stdout.count(": confirmed") == 2
    finally:
        for server in servers:
            server.terminate()
    assert "archive unavailable" not in servers[0].log_text()


def outbox_ids(prefix: str) -> list[str]:
    """The ids of the entries waiting in the outbox (docs/archive.md)."""
    client = redis.Redis.from_url(redis_test_url())
    try:
        keys = client.hkeys(f"{prefix}:{{archive}}:outbox")
        return sorted(k.decode() if isinstance(k, bytes) else str(k) for k in keys)
    finally:
        client.close()


async def test_killed_between_the_end_and_the_put_the_note_recovers_the_game(
    prefix: str, database_url: str
) -> None:
    """The other crash point (docs/archive.md, "The end and its record: two steps"):
    the race's end is stored, its record never reached the outbox, only the note made
    before the end is there. A new process recovers the game from the note, once."""
    env = {"CRESCENT_DATABASE_URL": database_url, "CRESCENT_ARCHIVE": "on"}
    first = await asyncio.to_thread(
        launch_server_process, prefix, None, {**env, "CRESCENT_ARCHIVE_PUT_DELAY_S": "600"}
    )
    try:
        code = await play_a_race(first)  # the end is stored: "finished" was pushed
        assert outbox_ids(prefix) == [f"ending:{code}:1"]
    finally:
        first.kill()  # -9: after the end, before its record was put
    assert outbox_ids(prefix) == [f"ending:{code}:1"]
    # The note falls due RECOVER_AFTER_MS after it was made; the test does not wait
    # 30 s for that: it makes it due now, as time would.
    client = redis.Redis.from_url(redis_test_url())
    try:
        client.zadd(f"{prefix}:{{archive}}:outbox:due", {f"ending:{code}:1": 0})
    finally:
        client.close()

    second = await asyncio.to_thread(launch_server_process, prefix, None, env)
    try:
        await asyncio.to_thread(
            wait_for, "the game recovered", lambda: archive_lag(second)["pending"] == 0
        )
        conn = await asyncpg.connect(database_url)
        try:
            ids = [r["id"] for r in await conn.fetch("select id from archive_games")]
        finally:
            await conn.close()
        assert len(ids) == 1 and ids[0].startswith(f"{code}-1-"), ids
        assert await archived_rows(database_url, ids[0]) == (1, 2)
        status, document = get_json(f"{second.http_url}/api/games/{ids[0]}.json")
        assert status == 200 and all(v.ok for v in verify_game(parse_replay(document)))
    finally:
        second.terminate()
    assert "archiving a race whose process died" in second.log_text()


def archive_writer(server: ServerProcess) -> psutil.Process | None:
    """The supervisor's archive writer process (docs/archive.md, "The writer process")."""
    for child in psutil.Process(server.proc.pid).children():
        with contextlib.suppress(psutil.Error):
            if child.status() != psutil.STATUS_ZOMBIE and (
                child.environ().get("CRESCENT_ROLE") == "archive-writer"
            ):
                return child
    return None


async def test_the_writer_process_archives_what_the_workers_finish_and_survives_a_kill(
    prefix: str, database_url: str
) -> None:
    """Two workers and the archive writer (the default with workers): the workers only
    put their games in the outbox; with the writer killed (-9) a finished game waits
    there; the supervisor starts a new writer, which archives it once."""
    env = {"CRESCENT_DATABASE_URL": database_url, "CRESCENT_ARCHIVE": "on"}
    server = await asyncio.to_thread(
        launch_server_process,
        prefix,
        None,
        env,
        workers=2,
        extra_args=["--worker-backoff-s", "0.2"],
    )
    try:
        await asyncio.to_thread(wait_for, "the writer", lambda: archive_writer(server))
        writer = archive_writer(server)
        assert writer is not None and len(psutil.Process(server.proc.pid).children()) == 3
        first = await play_a_race(server)
        await asyncio.to_thread(
            wait_for, "the first game archived", lambda: archive_lag(server)["pending"] == 0
        )
        (first_id,) = await archived_ids(database_url)
        assert first_id.startswith(f"{first}-1-")

        writer.kill()  # -9
        second = await play_a_race(server)
        await asyncio.to_thread(
            wait_for,
            "the second game put in the outbox",
            lambda: [i.split("-")[0] for i in outbox_ids(prefix)] == [second],
        )
        await asyncio.to_thread(
            wait_for, "a new writer", lambda: archive_writer(server) not in (None, writer)
        )
        await asyncio.to_thread(
            wait_for, "the second game archived", lambda: archive_lag(server)["pending"] == 0
        )
        ids = await archived_ids(database_url)
        assert len(ids) == 2 and any(i.startswith(f"{second}-1-") for i in ids)
        assert archive_lag(server)["archive"] == "up"  # a worker's /healthz asks the database
    finally:
        server.terminate()
    log = server.log_text()
    assert "the archive writer" in log and "archive writer: draining the outbox" in log


async def archived_ids(database_url: str) -> list[str]:
    conn = await asyncpg.connect(database_url)
    try:
        return [str(r["id"]) for r in await conn.fetch("select id from archive_games order by id")]
    finally:
        await conn.close()
