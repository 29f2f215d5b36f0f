"""Redis work per acknowledged action: commands, bytes and Redis CPU, measured around a
``bench/load.py`` run against a private Redis or a private local Redis Cluster.

    .venv/bin/python bench/redis_cost.py                      # one Redis + 1 replica
    .venv/bin/python bench/redis_cost.py --cluster            # 3 masters + 3 replicas
    .venv/bin/python bench/redis_cost.py --wait-replicas 1    # every ack after WAIT 1

It starts the Redis (``redis-server`` on free ports, no persistence) and one server
process, runs ``bench/load.py --target`` (race phase only), and divides the deltas of
``INFO commandstats``, ``INFO stats`` (net bytes), ``INFO cpu`` of every master and the
server's CPU by the server's ``crescent_actions_acked_total`` delta over the same
interval (joins, readies and progress included: everything an acked action costs).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

# Run as a script: the repository's root on the path, for bench.devtools.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil
import redis

from bench.devtools import (
    free_cluster_port,
    launch_server_process,
    race_command,
    random_prefix,
    start_local_cluster,
)


def master_stats(ports: list[int]) -> dict[str, float]:
    total: dict[str, float] = {}
    for port in ports:
        with redis.Redis(port=port) as node:
            for name, stats in node.info("commandstats").items():
                total[name] = total.get(name, 0) + stats["calls"]
            info = node.info("stats")
            cpu = node.info("cpu")
        for key in ("total_net_input_bytes", "total_net_output_bytes"):
            total[key] = total.get(key, 0) + info[key]
        total["cpu_s"] = total.get("cpu_s", 0) + cpu["used_cpu_sys"] + cpu["used_cpu_user"]
    return total


def acked(http_url: str) -> float:
    with urllib.request.urlopen(f"{http_url}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    match = re.search(r"^crescent_actions_acked_total (\S+)$", text, re.M)
    assert match, "no crescent_actions_acked_total in /metrics"
    return float(match.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster", action="store_true", help="a 3+3 local Redis Cluster")
    parser.add_argument("--wait-replicas", type=int, default=0)
    parser.add_argument("--racers", type=int, default=300)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--fast-paths", default="on")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="crescent-redis-cost-"))
    procs: list[subprocess.Popen[bytes]] = []
    cluster = None
    if args.cluster:
        cluster = start_local_cluster(folder)
        url = cluster.url
        masters = [p for p, role in cluster.roles().items() if role == "master"]
    else:
        port, replica = free_cluster_port(), free_cluster_port()
        # the replica's folder differs (no dump file is written: save "")
        common = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(folder)]
        procs.append(
            subprocess.Popen(
                ["redis-server", "--port", str(port), *common], stdout=subprocess.DEVNULL
            )
        )
        time.sleep(0.3)
        procs.append(
            subprocess.Popen(
                [
                    "redis-server",
                    "--port",
                    str(replica),
                    "--replicaof",
                    "127.0.0.1",
                    str(port),
                    *common,
                ],
                stdout=subprocess.DEVNULL,
            )
        )
        url, masters = f"redis://127.0.0.1:{port}/0", [port]
        time.sleep(1.0)
    env = {
        "CRESCENT_REDIS_WAIT_REPLICAS": str(args.wait_replicas),
        "CRESCENT_FAST_PATHS": args.fast_paths,
        "CRESCENT_MAX_CONNECTIONS_PER_ADDRESS": "0",
        "CRESCENT_NEW_PLAYERS_PER_ADDRESS_PER_MIN": "0",
    }
    server = launch_server_process(random_prefix("cost"), redis_url=url, extra_env=env)
    try:
        proc = psutil.Process(server.proc.pid)
        cpu0, acked0, stats0 = (
            sum(proc.cpu_times()[:2]),
            acked(server.http_url),
            master_stats(masters),
        )
        subprocess.run(
            [
                *race_command(racers=args.racers, warmup=3, duration=args.duration),
                "--target",
                server.ws_url,
                "--server-pid",
                str(server.proc.pid),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        cpu1, acked1, stats1 = (
            sum(proc.cpu_times()[:2]),
            acked(server.http_url),
            master_stats(masters),
        )
    finally:
        server.terminate()
        if cluster is not None:
            cluster.stop()
        for p in procs:
            p.terminate()
            p.wait(10)
    actions = acked1 - acked0
    delta = {k: stats1.get(k, 0) - stats0.get(k, 0) for k in stats1}
    commands = {
        k.removeprefix("cmdstat_"): round(v / actions, 3)
        for k, v in sorted(delta.items(), key=lambda kv: -kv[1])
        if k.startswith("cmdstat_") and v / actions >= 0.001
    }
    result: dict[str, Any] = {
        "redis": "cluster 3+3" if args.cluster else "one Redis + 1 replica",
        "wait_replicas": args.wait_replicas,
        "acked_actions": int(actions),
        "redis_commands_per_action": round(
            sum(v for k, v in delta.items() if k.startswith("cmdstat_")) / actions, 3
        ),
        "commands_per_action": commands,
        "bytes_in_per_action": round(delta["total_net_input_bytes"] / actions, 1),
        "bytes_out_per_action": round(delta["total_net_output_bytes"] / actions, 1),
        "redis_cpu_us_per_action": round(delta["cpu_s"] / actions * 1e6, 2),
        "server_cpu_us_per_action": round((cpu1 - cpu0) / actions * 1e6, 2),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
