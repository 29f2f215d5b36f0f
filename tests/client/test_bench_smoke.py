"""A seconds-long run of the load benchmark, so that it cannot rot (figures not judged)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import REPO_ROOT


def test_load_benchmark_smoke_run(tmp_path: object) -> None:
    out_json = f"{tmp_path}/load.json"
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "load.py"), "--smoke", "--json", out_json],
        capture_output=True,
        text=True,
        timeout=110,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "server, 8 racers" in done.stdout and "echo baseline" in done.stdout
    assert "server / echo throughput" in done.stdout and "idle racers held" in done.stdout
    with open(out_json) as f:
        figures = json.load(f)
    race, echo, idle = figures["race"], figures["echo"], figures["idle"]
    # Real games were played and acknowledged in the window, with measured latencies.
    assert race["acked"] > 0 and race["p50_ms"] is not None and race["p99_ms"] >= race["p50_ms"]
    assert race["ack_bytes"] > race["act_bytes"] > 0
    assert race["server_cpu_pct"] is not None
    # The echo baseline used the same frame sizes.
    assert echo["acked"] > 0 and echo["request_size"] == race["act_bytes"]
    assert echo["reply_size"] == race["ack_bytes"]
    # The run at half the echo's rate happened, with its own (computed) racer count.
    assert figures["at_share"]["acked"] > 0 and figures["at_share"]["connections"] % 4 == 0
    # Every idle racer was seated and still connected when the RSS was read.
    assert idle["connections"] == 40 and idle["still_open"] == 40
    assert idle["rss_after_mib"] > 0
