"""A seconds-long run of the load benchmark, so that it cannot rot (figures not judged)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from types import ModuleType

import msgpack
import pytest

from server.game import Game
from tests.archive.conftest import postgres_dsn
from tests.support import REPO_ROOT

__all__ = ["postgres_dsn"]  # the fixture, from tests/archive/conftest.py


def run_bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``bench/<script>`` with ``args``, its output captured; it must succeed."""
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / script), *args],
        capture_output=True,
        text=True,
        timeout=110,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_load_pair_smoke_run(tmp_path: object, postgres_dsn: str) -> None:
    """bench/load_pair.py: two set-ups at once, here the archive off against the archive
    writer process; its schemas are dropped afterwards."""
    out_json = f"{tmp_path}/pair.json"
    done = run_bench(
        "load_pair.py",
        "--a",
        "CRESCENT_ARCHIVE=off",
        "--b",
        "CRESCENT_ARCHIVE=on",
        "--b",
        "CRESCENT_ARCHIVE_WRITER=process",
        "--rounds",
        "1",
        "--racers",
        "8",
        "--warmup",
        "1",
        "--duration",
        "2",
        "--database-url",
        postgres_dsn,
        "--json",
        out_json,
    )
    assert "B's archive writer" in done.stdout and "B / A, CPU per acked action" in done.stdout
    with open(out_json) as f:
        (ratio,) = json.load(f)["ratios"]
    assert ratio > 0


def test_load_benchmark_smoke_run(tmp_path: object) -> None:
    out_json = f"{tmp_path}/load.json"
    done = run_bench("load.py", "--smoke", "--json", out_json)
    assert "server, 8 racers" in done.stdout and "echo baseline" in done.stdout
    assert "HEADLINE  CPU-normalised server / echo" in done.stdout
    assert "idle racers held" in done.stdout
    with open(out_json) as f:
        figures = json.load(f)
    race, echo, idle = figures["race"], figures["echo"], figures["idle"]
    # The headline is the CPU-normalised ratio of the same run, and the verdict uses it;
    # the throughput ratio comes only with the echo's saturation stated (8 connections at
    # 28/s leave the echo far from a full core: not saturated, whether the pacing capped
    # it or a busy machine slowed the harness).
    head = figures["headline"]
    assert head["cpu_normalised"] == pytest.approx(
        echo["server_cpu_us_per_msg"] / race["server_cpu_us_per_msg"], abs=1e-3
    )
    assert "of the echo's work per core (CPU-normalised" in done.stdout
    assert "throughput >= 50% of echo" not in done.stdout
    assert head["echo_saturation"].startswith("NOT saturated")
    assert f"against an echo {head['echo_saturation']}" in done.stdout
    # Real games were played and acknowledged in the window, with measured latencies.
    assert race["acked"] > 0 and race["p50_ms"] is not None and race["p99_ms"] >= race["p50_ms"]
    assert race["ack_bytes"] > race["act_bytes"] > 0
    assert race["server_cpu_pct"] is not None
    # The echo baseline used the same frame sizes.
    assert echo["acked"] > 0 and echo["request_size"] == race["act_bytes"]
    assert echo["reply_size"] == race["ack_bytes"]
    # The run at half the server's own saturated rate happened, with its own racer count.
    assert figures["at_share"]["acked"] > 0 and figures["at_share"]["connections"] % 4 == 0
    assert "at 50% of the server's own saturated rate" in done.stdout
    # Every idle racer was seated and still connected when the RSS was read.
    assert idle["connections"] == 40 and idle["still_open"] == 40
    assert idle["rss_after_mib"] > 0


def test_human_paced_capacity_smoke_run(tmp_path: object) -> None:
    """The human-paced step search, seconds long: two steps (8 then 16 racers, one
    generator process each), rooms with a spectator, per-step figures and a verdict."""
    out_json = f"{tmp_path}/human.json"
    done = run_bench(
        "load.py",
        "--human",
        "--smoke",
        "--json",
        out_json,
    )
    assert (
        "Human-paced capacity" in done.stdout and "human-paced racers in one process" in done.stdout
    )
    with open(out_json) as f:
        human = json.load(f)["human"]
    steps = human["steps"]
    # The first step ran on one generator; the second added a second process while the
    # first one's racers kept playing (--smoke runs every step, failed or not).
    assert [(s["racers"], s["spectators"], s["generators"]) for s in steps] == [
        (8, 2, 1),
        (16, 4, 2),
    ]
    for step in steps:
        # Real games were played at human pace: acks with latencies, and progress
        # frames timed from the acting racer's ack to spectators and room-mates.
        assert step["acked"] > 0 and step["racers_failed"] == 0, step
        assert step["acks_per_s"] <= 2.0 * step["racers"]  # about one action a second each
        assert step["ack_p99_ms"] >= step["ack_p50_ms"] > 0
        assert step["spectator_progress_samples"] > 0
        assert step["spectator_progress_p99_ms"] >= step["spectator_progress_p50_ms"] > 0
        assert step["racer_progress_samples"] > 0
        assert step["server_cpu_pct"] is not None and step["server_rss_mib"] > 0
        assert step["generator_cpu_pct"] >= 0 and step["redis_cpu_pct"] >= 0
        assert isinstance(step["failed"], list)
    # Held: the last step before the first failing one.
    held = 0
    for step in steps:
        if step["failed"]:
            break
        held = step["racers"]
    assert human["held"] == held


def load_bench_module(name: str) -> ModuleType:
    """bench/<name>.py (a script directory, not a package) as a module."""
    spec = importlib.util.spec_from_file_location(
        f"bench_{name}", REPO_ROOT / "bench" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_human_mode_reads_moves_from_packed_views_and_merges_histograms() -> None:
    """The human mode's two pieces of arithmetic: the ``moves`` of a packed VIEW (read
    without decoding it) and percentiles of histograms merged over generator processes."""
    loadgen, load = load_bench_module("loadgen"), load_bench_module("load")
    game = Game.from_code("CR1-N-AAAAAAB")
    for _ in range(3):
        game.play(next(game.legal_moves()))
    assert loadgen.view_moves(msgpack.packb(game.view().to_wire())) == game.moves == 3
    for moves in (0, 127, 128, 255, 256, 70_000):  # fixint, uint8, uint16, uint32
        view: dict[str, object] = {"piles": [], "moves": moves, "status": "playing"}
        assert loadgen.view_moves(msgpack.packb(view)) == moves
    assert loadgen.view_moves(msgpack.packb({"piles": []})) is None
    # Two processes' histograms, merged: 1..1000 ms and 1001..2000 ms, 1 sample each.
    first: dict[int, int] = {}
    second: dict[int, int] = {}
    for ms in range(1, 1001):
        loadgen.add_latency(first, ms * 1000)
        loadgen.add_latency(second, (ms + 1000) * 1000)
    merged = load.merge_hists([{str(k): v for k, v in h.items()} for h in (first, second)])
    for p, exact in ((0.5, 1000.0), (0.99, 1980.0), (1.0, 2000.0)):
        assert exact <= load.hist_ms(merged, p) <= exact * 1.011
    assert load.hist_ms({}, 0.99) is None


def test_human_paced_smoke_run_on_two_workers(tmp_path: object) -> None:
    """``--workers 2``: the server is a supervisor of two workers; its CPU and RSS are
    its whole tree, the report says so."""
    out_json = f"{tmp_path}/human.json"
    done = run_bench(
        "load.py",
        "--human",
        "--smoke",
        "--workers",
        "2",
        "--json",
        out_json,
    )
    assert "a supervisor and 2 workers" in done.stdout
    assert "human-paced racers on 2 workers" in done.stdout
    with open(out_json) as f:
        steps = json.load(f)["human"]["steps"]
    # The supervisor, its 2 workers and what they start (multiprocessing's resource
    # tracker): the whole tree counts.
    assert all(s["server_processes"] >= 3 for s in steps), steps
    assert all(s["acked"] > 0 and s["server_cpu_pct"] > 0 for s in steps)
