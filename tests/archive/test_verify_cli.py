"""``python3 -m server verify``: a replay file, a server's /api/games/<id>.json, the
archive database itself; a tampered result is caught (exit 1), an unreadable game is
exit 2 with the reason."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from server.core.archive import ArchiveBatch
from server.core.replay import replay_document
from server.storage.postgres_archive import connect
from server.verify import counted, main, report
from tests.archive.test_replay import a_race
from tests.support import REPO_ROOT


def write_replay(tmp_path: Path, *, tamper: bool = False) -> Path:
    game = a_race()
    if tamper:  # the winner claims a second less than their winning action's time
        winner = game.racers[0]
        faster = dataclasses.replace(winner.result, time_ms=winner.result.time_ms - 1000)
        game = dataclasses.replace(
            game, racers=(dataclasses.replace(winner, result=faster), *game.racers[1:])
        )
    path = tmp_path / "game.json"
    path.write_text(json.dumps(replay_document(game)))
    return path


def test_a_replay_file_is_confirmed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(write_replay(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ROOM-7: room on CR1-N-IPGYBDG, 4 racers\n")
    assert out.count(": confirmed") == 4


def test_the_report_counts_in_words() -> None:
    game = a_race()
    alone = dataclasses.replace(game, racers=game.racers[:1])
    lines = report(alone)[1]
    assert lines[0].endswith(", 1 racer")
    assert counted(1, "move") == "1 move" and counted(0, "card") == "0 cards"


def test_a_tampered_result_is_not_confirmed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(write_replay(tmp_path, tamper=True))]) == 1
    out = capsys.readouterr().out
    assert "NOT CONFIRMED" in out and "time_ms: recorded 97400, replayed 98400" in out


def test_unreadable_games_say_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "crescent-replay/0"}')
    assert main([str(bad)]) == 2
    assert "bad_replay: format: expected 'crescent-replay/1'" in capsys.readouterr().err
    assert main(["NOPE-1", "--server", "http://127.0.0.1:9"]) == 2  # nothing listens
    assert "cannot verify: http://127.0.0.1:9/api/games/NOPE-1.json" in capsys.readouterr().err


async def test_the_database_is_read_sealed_games_included(
    postgres_dsn: str, pg_schema: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sealed = dataclasses.replace(a_race(), revealed_at=2**60)  # a daily not yet revealed
    archive = await connect(postgres_dsn, server_settings={"search_path": pg_schema})
    await archive.write(ArchiveBatch(games=(sealed,)))
    await archive.close()
    url = f"{postgres_dsn}?search_path={pg_schema}"
    proc = subprocess.run(
        [sys.executable, "-m", "server", "verify", "ROOM-7", "--database-url", url],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(": confirmed") == 4
    missing = subprocess.run(
        [sys.executable, "-m", "server", "verify", "ROOM-8", "--database-url", url],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2 and "no such game" in missing.stderr
