"""The embedded PostgreSQL: real processes on a real data folder."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.core.archive import ArchiveBatch, WriteReport
from server.embedded_postgres import EmbeddedPostgres, EmbeddedPostgresError
from server.storage.postgres_archive import connect
from server.supervised import pid_running
from tests.archive.conftest import reachable_temp_dir
from tests.archive.games import WINNING_DEAL, greedy_actions, paced, race, winning_actions

ROOT = Path(__file__).parents[2]


@pytest.fixture
def folder() -> Iterator[Path]:
    path = reachable_temp_dir()
    problem = EmbeddedPostgres(path / "postgres").unreachable()
    if problem is not None:  # only as root, with this checkout in a private folder
        shutil.rmtree(path, ignore_errors=True)
        pytest.skip(problem)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _wait_for(condition: object, timeout_s: float = 60.0) -> None:
    """Poll ``condition()`` (a process of someone else's: nothing to wait on)."""
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


async def test_start_migrate_write_read_stop_restart(folder: Path) -> None:
    game = race(
        "ROOM-1",
        WINNING_DEAL,
        {"w": paced(winning_actions()), "g": greedy_actions(WINNING_DEAL)},
    )
    embedded = EmbeddedPostgres(folder / "postgres")
    embedded.start()
    try:
        assert embedded.initialized
        pid = embedded.pid
        assert pid is not None and pid_running(pid)
        archive = await connect(embedded.url)
        try:
            assert await archive.write(ArchiveBatch(games=(game,))) == WriteReport(games=1)
            assert await archive.game("ROOM-1", now=game.revealed_at) == game
        finally:
            await archive.close()
    finally:
        embedded.stop()
    assert not pid_running(pid)
    assert not (folder / "postgres" / "postmaster.pid").exists()

    again = EmbeddedPostgres(folder / "postgres")
    with again.running() as url:
        assert not again.initialized  # the same cluster, no initdb
        archive = await connect(url)
        try:
            assert await archive.game("ROOM-1", now=game.revealed_at) == game
            # killed, it is restarted on the same data
            assert again.pid is not None
            os.kill(again.pid, signal.SIGKILL)
            _wait_for(lambda: again.restarts == 1)
            assert await archive.game("ROOM-1", now=game.revealed_at) == game
        finally:
            await archive.close()
        second_pid = again.pid
    assert second_pid is not None and not pid_running(second_pid)


def test_a_postgres_left_by_a_killed_server_is_stopped_by_the_next_start(folder: Path) -> None:
    data = folder / "postgres"
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from server.embedded_postgres import EmbeddedPostgres\n"
            "pg = EmbeddedPostgres(sys.argv[1]); pg.start()\n"
            "print(pg.pid, flush=True); time.sleep(600)\n",
            str(data),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None
        stale_pid = int(owner.stdout.readline())
    finally:
        owner.kill()  # the server dies without stopping its postgres
        owner.wait()
        if owner.stdout is not None:
            owner.stdout.close()
    assert pid_running(stale_pid)
    embedded = EmbeddedPostgres(data)
    with embedded.running():
        assert not pid_running(stale_pid)
        assert embedded.pid != stale_pid and embedded.pid is not None
        assert pid_running(embedded.pid)
    assert not pid_running(embedded.pid)


def test_data_of_another_major_version_is_refused_plainly(folder: Path) -> None:
    data = folder / "postgres"
    data.mkdir()
    (data / "PG_VERSION").write_text("17\n")
    with pytest.raises(EmbeddedPostgresError, match="holds PostgreSQL 17 data but") as refused:
        EmbeddedPostgres(data).start()
    assert "pg_dump" in str(refused.value)
    assert not (data / "postmaster.pid").exists()
