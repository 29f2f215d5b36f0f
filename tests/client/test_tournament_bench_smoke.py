"""A seconds-long run of the tournament benchmark, so that it cannot rot (figures not
judged: only that both phases played real games and measured them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support import REPO_ROOT


def test_tournament_benchmark_smoke_run(tmp_path: Path) -> None:
    out_json = tmp_path / "tournament.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "tournament.py"),
            "--smoke",
            "--json",
            str(out_json),
        ],
        capture_output=True,
        text=True,
        timeout=110,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tournament round, 8 racers" in done.stdout and "plain races of 4" in done.stdout
    assert "tournament / races: CPU per ack" in done.stdout
    figures = json.loads(out_json.read_text())
    tournament, race = figures["tournament"], figures["race"]
    for phase in (tournament, race):
        # Every bot played its whole game on the same deal, and each ack was timed.
        assert phase["acks"] > 8 * 20 and phase["p99_ms"] >= phase["p50_ms"] > 0
        assert phase["cpu_us_per_ack"] > 0 and phase["bytes_per_s"] > 0
        assert phase["types"]["Ack"] == phase["acks"]
    assert tournament["acks"] == race["acks"]  # the same games in both phases
    # A tournament round summarises progress (t_live) instead of per-racer progress.
    assert tournament["types"].get("TLive", 0) > 0 and "Progress" not in tournament["types"]
    assert race["types"].get("Progress", 0) > 0


def test_crowd_benchmark_smoke_run(tmp_path: Path) -> None:
    """``--crowd``: every player registered, each request timed, the servers' retry
    counter read (how many retries: not judged)."""
    out_json = tmp_path / "crowd.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "tournament.py"),
            "--crowd",
            "20",
            "--in-flight",
            "10",
            "--repeat",
            "1",
            "--json",
            str(out_json),
        ],
        capture_output=True,
        text=True,
        timeout=110,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "registered on the first try: 20 of 20 (stored: 20)" in done.stdout
    (run,) = json.loads(out_json.read_text())
    assert run["registered"] == run["stored_players"] == 20 and run["errors"] == {}
    assert run["requests"] == 20 and run["p99_ms"] >= run["p50_ms"] > 0
    assert run["server_cas_retries"] is not None and run["server_cpu_ms_per_join"] > 0
