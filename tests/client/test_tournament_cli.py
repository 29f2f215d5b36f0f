"""``crescent tournament …`` and ``crescent bot --tournament`` as real processes
against a real server process and the real Redis."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from crescent_client.errors import RequestFailed
from crescent_client.tournament_cli import export
from tests.support import REPO_ROOT, ServerProcess, start_server_process

CLI = [sys.executable, "-m", "crescent_client.cli"]
DEAL = "CR1-N-AAAAAAC"  # a greedy game of 65 actions


@pytest.fixture(scope="module")
def fast_server(redis_url: str) -> Iterator[ServerProcess]:
    """A server that lets unpaced bots act as fast as they can."""
    from tests.support import delete_prefix, random_prefix

    prefix = random_prefix("tcli")
    try:
        with start_server_process(
            prefix,
            redis_url=redis_url,
            countdown_ms=200,
            extra_args=["--rate-per-s", "5000", "--rate-burst", "5000"],
        ) as proc:
            yield proc
    finally:
        delete_prefix(prefix, redis_url)


def run_cli(*args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CRESCENT_TOKEN"}
    if token is not None:
        env["CRESCENT_TOKEN"] = token
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT, env=env
    )


def test_a_host_at_a_terminal_runs_a_tournament_of_two_bots(
    fast_server: ServerProcess, tmp_path: Path
) -> None:
    """create, two bots, start --follow (the round's results), show, export; the last
    round's end finishes the tournament, so the bots print the final standings."""
    url = fast_server.ws_url
    created = run_cli(
        "tournament", "create", "CLI cup", "--rounds", "1", "--time-limit", "300",
        "--max-players", "4", "--deal", DEAL, "--server", url,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    code_match = re.search(r"^tournament (T[2-9A-Z]{6})  link /t/\1$", created.stdout, re.M)
    token_match = re.search(r"^token (\S+)$", created.stdout, re.M)
    assert code_match and token_match, created.stdout
    code, token = code_match.group(1), token_match.group(1)

    bots = [
        subprocess.Popen(
            [*CLI, "bot", "--server", url, "--tournament", code, "--name", name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
        )
        for name in ("BotA", "BotB")
    ]
    try:
        for bot in bots:
            assert bot.stdout is not None
            first = bot.stdout.readline()
            assert re.match(rf"Bot[AB] registered in tournament {code} \"CLI cup\"", first), first
        started = run_cli("tournament", "start", code, "--server", url, "--follow", token=token)
        assert started.returncode == 0, started.stderr
        assert "start: ok" in started.stdout
        assert re.search(rf"^Round 1 \(deal {DEAL}\)$", started.stdout, re.M), started.stdout
        assert "BotA" in started.stdout and "BotB" in started.stdout
        outs = [bot.communicate(timeout=60) for bot in bots]
    finally:
        for bot in bots:
            bot.kill()
    for bot, (out, err) in zip(bots, outs, strict=True):
        assert bot.returncode == 0, err
        assert re.search(r"round 1: seated in room [2-9A-Z]{6}", out), out
        assert re.search(r"round 1: game over: \w+, \d+/104 cards", out), out
        assert "Final standings" in out
        assert re.search(r"^\s+1\s+Bot[AB]\s+active\s+\d+ pts?", out, re.M), out

    shown = run_cli("tournament", "show", code, "--server", url, "--all")
    assert shown.returncode == 0, shown.stderr
    assert f'Tournament {code} "CLI cup"' in shown.stdout and "phase finished" in shown.stdout
    assert "Final standings" in shown.stdout

    written = tmp_path / "cup.csv"
    exported = run_cli(
        "tournament", "export", code, "--server", url, "--format", "csv", "-o", str(written)
    )  # fmt: skip
    assert exported.returncode == 0 and f"to {written}" in exported.stdout, exported.stderr
    rows = list(csv.reader(io.StringIO(written.read_text())))
    # A line per player per round, an empty line, then the standings.
    assert rows[0][:3] == ["round", "place", "id"]
    assert [row[0] for row in rows[1 : rows.index([])]] == ["1", "1"]
    assert code in json.dumps(json.loads(export(url, code, "json")))
    with pytest.raises(RequestFailed) as missing:
        export(url, "TZZZZZZ", "json")
    assert missing.value.code == "tournament_not_found"
