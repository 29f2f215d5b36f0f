"""The ``crescent`` command as a real process against a real server."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import redis

from tests.support import REPO_ROOT, ServerProcess, start_server_process

CLI = [sys.executable, "-m", "crescent_client.cli"]


def run_cli(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT
    )


def test_solo_bot_plays_its_game_to_the_end(server: ServerProcess) -> None:
    done = run_cli(
        "bot", "--server", server.ws_url, "--solo", "--deal", "CR1-N-AAAAAAB", "--name", "Solo"
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert re.search(r"room [2-9A-Z]{6}", out)
    match = re.search(r"game over: (won|locked|resigned), (\d+)/104 cards", out)
    assert match, out
    assert int(match.group(2)) > 8  # it did put cards on the foundations
    assert "Results of room" in out and "(deal CR1-N-AAAAAAB)" in out
    assert re.search(r"^\s+1\s+Solo\s+(won|locked|resigned)", out, re.M), out


def test_two_bots_race_while_a_watcher_prints_progress(server: ServerProcess) -> None:
    # --pace keeps the race on for a few seconds: unpaced bots can finish before the
    # watcher's first live table, and the test is about that table.
    host = subprocess.Popen(
        [
            *CLI,
            "bot",
            "--server",
            server.ws_url,
            "--create",
            "--seats",
            "2",
            "--name",
            "HostBot",
            "--pace",
            "0.02",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
    )
    try:
        assert host.stdout is not None
        first = host.stdout.readline()
        code = re.match(r"room ([2-9A-Z]{6})", first)
        assert code, first
        watcher = subprocess.Popen(
            [
                *CLI,
                "watch",
                "--server",
                server.ws_url,
                "--room",
                code.group(1),
                "--interval",
                "0.1",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
        )
        time.sleep(0.5)  # let the watcher join before the race
        guest = run_cli(
            "bot",
            "--server",
            server.ws_url,
            "--room",
            code.group(1),
            "--name",
            "GuestBot",
            "--pace",
            "0.02",
        )
        assert guest.returncode == 0, guest.stderr
        host_out, host_err = host.communicate(timeout=60)
        assert host.returncode == 0, host_err
        watch_out, watch_err = watcher.communicate(timeout=30)
        assert watcher.returncode == 0, watch_err
    finally:
        host.kill()
    assert "Results of room" in guest.stdout and "Results of room" in host_out
    # The watcher printed live tables with both racers, then the results, then exited.
    assert watch_out.count(f"Room {code.group(1)}") >= 2
    assert "HostBot" in watch_out and "GuestBot" in watch_out
    assert re.search(r"HostBot\s+playing\s+\d+/104", watch_out) or re.search(
        r"GuestBot\s+playing\s+\d+/104", watch_out
    ), watch_out
    assert "Results of room" in watch_out


def test_unknown_room_is_a_clear_error(server: ServerProcess) -> None:
    done = run_cli("bot", "--server", server.ws_url, "--room", "ZZZZZZ", timeout=30)
    assert done.returncode == 2
    assert "error room_not_found" in done.stderr


def test_installed_entry_point_exists() -> None:
    # The script sits beside this interpreter (a venv's bin/ need not be on PATH).
    beside = Path(sys.executable).parent / "crescent"
    script = str(beside) if beside.exists() else shutil.which("crescent")
    assert script, "the crescent command is not installed (pip install -e .)"
    done = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "bot" in done.stdout and "watch" in done.stdout


def test_daily_bot_plays_the_attempt_and_prints_the_board(server: ServerProcess) -> None:
    done = run_cli(
        "daily", "--server", server.ws_url, "--play", "--name", "DailyBot", "--late", timeout=240
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert re.search(r"daily \d{4}-\d\d-\d\d \(variant N\), commitment [0-9a-f]{64}", out)
    assert re.search(r"ranked attempt: room [2-9A-Z]{6}", out), out
    assert re.search(r"game over: (won|locked|resigned), \d+/104 cards", out), out
    # A guest made today is ranked apart, on the "late" board.
    assert re.search(r"^\s+\d+\s+DailyBot\s+(won|locked|resigned)", out, re.M), out
    assert re.search(r"you: rank \d+ of \d+", out), out


def test_daily_asks_again_while_today_is_being_certified(prefix: str, redis_url: str) -> None:
    """A server that cannot certify today yet answers day_not_ready at once; the
    command asks again as docs/protocol.md says, and prints the day once it is there."""
    today = time.strftime("%Y-%m-%d", time.gmtime())
    with redis.Redis.from_url(redis_url) as r:
        # A process that died while certifying today left its lease (10 s to lapse).
        r.set(f"{prefix}:{{daily:{today}}}:certifying", "a-dead-process", px=10_000)
    with start_server_process(prefix, redis_url=redis_url, countdown_ms=200) as server:
        done = run_cli("daily", "--server", server.ws_url, "--name", "Early", timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "today's challenge is being prepared; asking again in 2 s" in out, out
    assert re.search(rf"daily {today} \(variant N\), commitment [0-9a-f]{{64}}", out), out
