"""Load benchmark: one server process, real Redis, racers driven from another process.

    python3 bench/load.py                       # full run (see docs/performance.md)
    python3 bench/load.py --smoke               # a few seconds, few clients (used by a test)
    python3 bench/load.py --target ws://host:port/ws --server-pid PID   # an existing server
    python3 bench/load.py --human               # human-paced capacity (step search)
    python3 bench/load.py --human --smoke       # the same, seconds long (used by a test)

Phases (each in fresh processes; the load generator, bench/loadgen.py, always runs in
its own process, apart from the server):

1. race: ``--racers`` racers in rooms of 4 play real games (greedy strategy, legal
   moves from their views), closed loop paced to ``--rate`` per connection (under the
   server's 30/s limit); finished rooms rematch. After ``--warmup`` s, a ``--duration``
   s window counts acknowledged actions and ack latency (send → ack, client side).
2. echo: the same harness, same connection count and pacing, against a bare aiohttp
   echo handler (bench/echo_server.py) with the same frame sizes (act-sized requests,
   ack-sized replies): the transport's own cost. The headline is CPU-normalised: the
   echo's CPU per message / the server's CPU per acknowledged action, both measured in
   this run (the echo is capped by the pacing well before it saturates, so the
   throughput ratio is printed only with the echo's saturation stated).
3. idle: ``--idle`` authenticated racers seated in rooms of 4 on a fresh server
   process; the server's RSS before and after gives RSS per connection.

``--human`` runs the human-paced capacity search instead (docs/performance.md,
"Human-paced capacity"): racers at ~1 action/s with random think time, rooms of 4 with a
spectator each, added step by step (new generator processes) on one server process
until a step misses ack p99 <= 25 ms or progress delivery p99 <= 250 ms.

The server runs against the real Redis (``--redis-url``) with a random key prefix;
its keys are deleted afterwards (SCAN + DEL of that prefix only).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Run as a script: the repository's root on the path, for bench.devtools.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil

from bench.cpu_time import process_cpu_seconds
from bench.devtools import (
    REPO_ROOT,
    ServerProcess,
    delete_prefix,
    free_port,
    launch_server_process,
    raise_nofile_limit,
    random_prefix,
    wait_for_health,
)

GIB = 1024**3


def start_py_spy(pid: int, window_s: float, fmt: str, output: str) -> subprocess.Popen[bytes]:
    """Profile process ``pid`` with py-spy for the measured window (less a second)."""
    # The py-spy beside this interpreter (the venv's), so .venv/bin need not be on PATH.
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return subprocess.Popen(
        [
            beside if os.path.exists(beside) else "py-spy",
            "record",
            "--pid",
            str(pid),
            "--duration",
            str(max(1, int(window_s) - 1)),
            "--rate",
            "200",
            "--format",
            fmt,
            "--output",
            output,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@dataclass
class Sample:
    """CPU seconds a process used between two moments."""

    cpu_s: float = 0.0
    wall_s: float = 0.0

    @property
    def percent(self) -> float:
        return 100.0 * self.cpu_s / self.wall_s if self.wall_s else 0.0


@dataclass
class Generator:
    """A bench/loadgen.py subprocess; its stdout lines are read by a thread."""

    proc: subprocess.Popen[str]
    lines: queue.Queue[str] = field(default_factory=queue.Queue)

    @classmethod
    def start(cls, mode: str, url: str, *extra: str) -> Generator:
        proc = subprocess.Popen(
            [sys.executable, str(REPO_ROOT / "bench" / "loadgen.py"), mode, "--url", url, *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        )
        gen = cls(proc)
        threading.Thread(target=gen._pump, daemon=True).start()
        return gen

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put("")  # EOF marker

    def wait_line(self, prefix: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"load generator: no {prefix!r} line in {timeout:.0f} s")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line == "" and self.proc.poll() is not None:
                raise RuntimeError(
                    f"load generator exited ({self.proc.returncode}) before {prefix!r}"
                )
            if line.startswith(prefix):
                return line

    def result(self, timeout: float) -> dict[str, Any]:
        line = self.wait_line("RESULT ", timeout)
        self.proc.wait(timeout)
        return dict(json.loads(line[len("RESULT ") :]))

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


def cpu_seconds(proc: psutil.Process) -> float:
    return process_cpu_seconds(proc.pid)  # bench/cpu_time.py: nanoseconds, not ticks


def is_archive_writer(proc: psutil.Process) -> bool:
    """The supervisor's archive writer (server/archive_writer.py): its role is in its
    environment."""
    try:
        return proc.environ().get("CRESCENT_ROLE") == "archive-writer"
    except psutil.Error:
        return False


class ServerTree:
    """The server's processes: one, or a supervisor and its workers (``--workers``),
    found afresh at each sample (a worker may be restarted). CPU is counted per pid, so
    a process that appears mid-window counts from its start and one that ended mid-window
    keeps what was last seen of it."""

    def __init__(self, root: psutil.Process) -> None:
        self.root = root
        self.pid = root.pid
        self.seen: dict[int, float] = {}
        self.writers: set[int] = set()  # pids of archive writer processes seen

    def processes(self) -> list[psutil.Process]:
        try:
            return [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return []

    def cpu_seconds(self) -> float:
        for proc in self.processes():
            with contextlib.suppress(psutil.Error):
                self.seen[proc.pid] = cpu_seconds(proc)
                if proc.pid not in self.writers and is_archive_writer(proc):
                    self.writers.add(proc.pid)
        return sum(self.seen.values())

    def split_cpu_seconds(self) -> tuple[float, float]:
        """CPU seconds of the serving processes (the supervisor, its workers and their
        solver processes) and of the archive writer (``--archive-writer process``)."""
        total = self.cpu_seconds()
        writer = sum(self.seen[pid] for pid in self.writers)
        return total - writer, writer

    def rss(self) -> tuple[int, int, int]:
        """RSS summed over the tree, the largest process's, and the process count."""
        sizes = []
        for proc in self.processes():
            with contextlib.suppress(psutil.Error):
                sizes.append(int(proc.memory_info().rss))
        return sum(sizes), max(sizes, default=0), len(sizes)

    def pids(self) -> set[int]:
        return {proc.pid for proc in self.processes()}


def run_windowed(
    mode: str,
    url: str,
    args: argparse.Namespace,
    server_pid: int | None,
    *extra: str,
    connections: int | None = None,
) -> dict[str, Any]:
    """Run the generator in ``mode``; sample server and generator CPU over its window."""
    connections = connections or args.racers
    gen = Generator.start(
        mode,
        url,
        "--connections",
        str(connections),
        "--rate",
        str(args.rate),
        "--warmup",
        str(args.warmup),
        "--duration",
        str(args.duration),
        *extra,
    )
    profiler: subprocess.Popen[bytes] | None = None
    try:
        # The whole tree: a supervisor's workers and its archive writer (the writer's
        # CPU apart: it is the archive's, in a process of its own).
        server = ServerTree(psutil.Process(server_pid)) if server_pid else None
        generator = psutil.Process(gen.proc.pid)
        setup_timeout = 60 + connections / 20
        gen.wait_line("WINDOW START", setup_timeout + args.warmup)
        t0 = time.monotonic()
        gen_cpu0 = cpu_seconds(generator)
        srv_cpu0, writer_cpu0 = server.split_cpu_seconds() if server else (0.0, 0.0)
        redis_cpu0 = redis_cpu_seconds(args.redis_url) if mode == "race" else None
        machine0 = psutil.cpu_times()
        if args.py_spy and server_pid and mode == "race":
            profiler = start_py_spy(server_pid, args.duration, args.py_spy_format, args.py_spy)
        gen_profiler: subprocess.Popen[bytes] | None = None
        if args.py_spy_generator and mode == "race":
            gen_profiler = start_py_spy(
                gen.proc.pid, args.duration, args.py_spy_format, args.py_spy_generator
            )
        gen.wait_line("WINDOW END", args.duration + 30)
        if gen_profiler is not None:
            gen_profiler.wait(30)
        wall = time.monotonic() - t0
        gen_cpu = Sample(cpu_seconds(generator) - gen_cpu0, wall).percent
        srv_cpu1, writer_cpu1 = server.split_cpu_seconds() if server else (0.0, 0.0)
        srv_cpu = Sample(srv_cpu1 - srv_cpu0, wall).percent if server else None
        writer_cpu = Sample(writer_cpu1 - writer_cpu0, wall).percent
        machine1 = psutil.cpu_times()
        busy = (sum(machine1) - machine1.idle) - (sum(machine0) - machine0.idle)
        redis_cpu = (
            Sample(redis_cpu_seconds(args.redis_url) - redis_cpu0, wall).percent
            if redis_cpu0 is not None
            else None
        )
        result = gen.result(60)
        result["generator_cpu_pct"] = round(gen_cpu, 1)
        result["server_cpu_pct"] = round(srv_cpu, 1) if srv_cpu is not None else None
        result["archive_writer_cpu_pct"] = (
            round(writer_cpu, 2) if server is not None and server.writers else None
        )
        result["redis_cpu_pct"] = round(redis_cpu, 1) if redis_cpu is not None else None
        # Every core's busy time: shows how much other work shared the machine.
        result["machine_busy_pct"] = round(100 * busy / wall / (psutil.cpu_count() or 1), 1)
        result["loadavg_1m"] = round(os.getloadavg()[0], 2)
        return result
    finally:
        gen.kill()
        if profiler is not None:
            profiler.wait(args.duration + 30)


def redis_cpu_seconds(redis_url: str) -> float:
    """CPU seconds the Redis server has used (INFO cpu), to see its share of the load."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        info = client.info("cpu")
        return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])
    finally:
        client.close()


def start_echo(reply_size: int, loop: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "echo_server.py"),
            "--port",
            str(port),
            "--reply-size",
            str(reply_size),
            "--loop",
            loop,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO_ROOT,
    )
    wait_for_health(f"http://127.0.0.1:{port}", proc=proc)
    return proc, f"ws://127.0.0.1:{port}/ws"


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def launch_server(prefix: str, args: argparse.Namespace) -> ServerProcess:
    # Every bot connects from 127.0.0.1: lift the per-address quotas (docs/server.md,
    # "Limits and backpressure") unless --server-env sets them. A fixed daily deal: the
    # solver would otherwise certify the coming days' deals at start-up, in the window.
    env = {
        "CRESCENT_MAX_CONNECTIONS_PER_ADDRESS": "0",
        "CRESCENT_NEW_PLAYERS_PER_ADDRESS_PER_MIN": "0",
        "CRESCENT_DAILY_DEAL": "CR1-N-AAAAAAB",
    }
    env.update(item.split("=", 1) for item in args.server_env)
    return launch_server_process(
        prefix,
        redis_url=args.redis_url,
        extra_env=env,
        countdown_ms=args.countdown_ms,
        extra_args=["--log-level", "WARNING", "--loop", args.loop, *args.server_arg],
        workers=args.workers,
    )


def phase_race(
    args: argparse.Namespace, connections: int | None = None, total_rate: float = 0.0
) -> dict[str, Any]:
    extra = ("--total-rate", f"{total_rate:.1f}") if total_rate else ()
    if args.target:
        return run_windowed(
            "race", args.target, args, args.server_pid, *extra, connections=connections
        )
    prefix = random_prefix("bench")
    server = launch_server(prefix, args)
    try:
        return run_windowed(
            "race", server.ws_url, args, server.proc.pid, *extra, connections=connections
        )
    finally:
        server.terminate()
        delete_prefix(prefix, args.redis_url)


def phase_echo(args: argparse.Namespace, race: dict[str, Any]) -> dict[str, Any]:
    reply_size = int(race.get("ack_bytes") or 700)
    request_size = int(race.get("act_bytes") or 50)
    proc, url = start_echo(reply_size, args.loop)
    try:
        result = run_windowed("echo", url, args, proc.pid, "--request-size", str(request_size))
        result["reply_size"] = reply_size
        return result
    finally:
        stop(proc)


def phase_idle(args: argparse.Namespace) -> dict[str, Any]:
    if args.target and not args.server_pid:
        return {"skipped": "needs --server-pid with --target"}
    prefix = random_prefix("bench")
    server = None
    if args.target:
        url, pid = args.target, args.server_pid
    else:
        server = launch_server(prefix, args)
        url, pid = server.ws_url, server.proc.pid
    target = psutil.Process(pid)
    time.sleep(0.5)  # a freshly started server settles
    rss_before = target.memory_info().rss  # measured before the first idle racer connects
    fds_before = target.num_fds()
    gen = Generator.start("idle", url, "--connections", str(args.idle))
    try:
        t0 = time.monotonic()
        line = gen.wait_line("IDLE READY", 120 + args.idle / 20)
        setup_s = time.monotonic() - t0
        held = int(line.split()[-1])
        time.sleep(2.0)  # let the server settle (pending writes, GC)
        rss_after = target.memory_info().rss
        fds_after = target.num_fds()
        cpu_pct = target.cpu_percent(interval=1.0)
        assert gen.proc.stdin is not None
        gen.proc.stdin.close()
        result = gen.result(120)
    finally:
        gen.kill()
        if server is not None:
            server.terminate()
            delete_prefix(prefix, args.redis_url)
    return {
        "connections": held,
        "still_open": result.get("still_open"),
        "closed_early": result.get("closed_early"),
        "rss_before_mib": round(rss_before / 2**20, 1),
        "rss_after_mib": round(rss_after / 2**20, 1),
        "rss_per_conn_kib": round((rss_after - rss_before) / max(1, held) / 1024, 1),
        "server_fds": fds_after - fds_before,
        "setup_s": round(setup_s, 1),
        "idle_cpu_pct": cpu_pct,
    }


def fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}{unit}"
    return f"{value:,}{unit}" if isinstance(value, int) else f"{value}{unit}"


MEDIAN_KEYS = (
    "per_s",
    "p50_ms",
    "p99_ms",
    "max_ms",
    "task_p50_ms",
    "task_p99_ms",
    "server_cpu_pct",
    "archive_writer_cpu_pct",
    "generator_cpu_pct",
    "redis_cpu_pct",
    "machine_busy_pct",
    "loadavg_1m",
    "ack_bytes",
    "act_bytes",
)
SUM_KEYS = ("acked", "refused", "progress_msgs", "games_finished", "racers_failed")


def median_result(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One result from several runs: medians of rates, latencies and CPU shares (each
    key on its own), sums of counts, errors added up; ``runs`` keeps each run's figures."""
    if not runs:
        return {}
    merged = dict(runs[-1])
    for key in MEDIAN_KEYS:
        values = sorted(r[key] for r in runs if r.get(key) is not None)
        if values:
            merged[key] = values[len(values) // 2]
    for key in SUM_KEYS:
        merged[key] = sum(r.get(key) or 0 for r in runs)
    errors: dict[str, int] = {}
    for run in runs:
        for code, count in (run.get("errors") or {}).items():
            errors[code] = errors.get(code, 0) + count
    merged["errors"] = errors
    merged["first_failure"] = next(
        (r["first_failure"] for r in runs if r.get("first_failure")), None
    )
    merged["runs"] = [
        {
            k: r.get(k)
            for k in (
                "per_s",
                "p50_ms",
                "p99_ms",
                "task_p99_ms",
                "server_cpu_pct",
                "machine_busy_pct",
            )
        }
        for r in runs
    ]
    # CPU per message of each run, then the median (not the ratio of medians).
    per_msg = sorted(v for v in (cpu_us_per_msg(r, "server") for r in runs) if v is not None)
    merged["server_cpu_us_per_msg"] = per_msg[len(per_msg) // 2] if per_msg else None
    gen = sorted(v for v in (cpu_us_per_msg(r, "generator") for r in runs) if v is not None)
    merged["generator_cpu_us_per_msg"] = gen[len(gen) // 2] if gen else None
    writer = sorted(v for v in (cpu_us_per_msg(r, "archive_writer") for r in runs) if v is not None)
    merged["archive_writer_cpu_us_per_msg"] = writer[len(writer) // 2] if writer else None
    return merged


def cpu_us_per_msg(result: dict[str, Any] | None, who: str) -> float | None:
    if not result or not result.get("per_s") or result.get(f"{who}_cpu_pct") is None:
        return None
    return float(result[f"{who}_cpu_pct"]) / 100 / float(result["per_s"]) * 1e6


def headline(
    args: argparse.Namespace,
    race: dict[str, Any],
    echo: dict[str, Any] | None,
    loaded: dict[str, Any] | None,
) -> dict[str, Any]:
    """The figures the verdict uses, for --json."""
    race_us = race.get("server_cpu_us_per_msg") if race else None
    echo_us = echo.get("server_cpu_us_per_msg") if echo else None
    return {
        "cpu_normalised": round(echo_us / race_us, 4) if race_us and echo_us else None,
        "server_cpu_us_per_action": race_us,
        "archive_writer_cpu_us_per_action": race.get("archive_writer_cpu_us_per_msg")
        if race
        else None,
        "echo_cpu_us_per_msg": echo_us,
        "throughput_ratio": (  # best of the two server rows, as printed
            round(max(race["per_s"], (loaded or {}).get("per_s") or 0.0) / echo["per_s"], 4)
            if echo and echo.get("per_s") and race.get("per_s")
            else None
        ),
        "echo_saturation": echo_saturation(echo, args) if echo else None,
        "target_ratio": args.target_ratio,
    }


def echo_saturation(echo: dict[str, Any], args: argparse.Namespace) -> str:
    """Whether the echo baseline was saturated: the throughput ratio means little if not."""
    offered = (echo.get("connections") or args.racers) * args.rate
    per_s = float(echo.get("per_s") or 0.0)
    cpu = echo.get("server_cpu_pct")
    core = f"on {cpu:.0f} % of a core" if cpu is not None else "(its CPU not measured)"
    if offered and per_s >= 0.95 * offered:
        return (
            f"NOT saturated: capped by the harness's pacing ({per_s:,.0f}/s of the "
            f"{offered:,.0f}/s offered) {core}; this ratio flatters the server"
        )
    if cpu is not None and cpu >= 90:
        return f"saturated ({per_s:,.0f}/s {core})"
    return (
        f"NOT saturated ({per_s:,.0f}/s, {per_s / offered:.0%} of the offered rate, {core}; "
        f"generator {fmt(echo.get('generator_cpu_pct'), '%')}, machine busy "
        f"{fmt(echo.get('machine_busy_pct'), '%')}); this ratio flatters the server"
    )


def report(
    args: argparse.Namespace,
    race: dict[str, Any],
    echo: dict[str, Any] | None,
    idle: dict[str, Any] | None,
    loaded: dict[str, Any] | None = None,
) -> str:
    lines = [
        "",
        "Crescent Race load benchmark",
        f"  racers {args.racers} (rooms of 4), pacing {args.rate:g}/s per connection "
        f"(offered at most {args.racers * args.rate:,.0f}/s), warm-up {args.warmup:g} s, "
        f"window {args.duration:g} s, race and echo alternated {args.repeat}x: medians",
        "",
    ]
    header = (
        f"  {'':<26}{'per s':>10}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}"
        f"{'srv CPU':>9}{'gen CPU':>9}"
    )
    lines.append(header)

    def row(label: str, r: dict[str, Any]) -> str:
        return (
            f"  {label:<26}{fmt(r.get('per_s')):>10}{fmt(r.get('p50_ms')):>9}"
            f"{fmt(r.get('p99_ms')):>9}{fmt(r.get('max_ms')):>9}"
            f"{fmt(r.get('server_cpu_pct'), '%'):>9}{fmt(r.get('generator_cpu_pct'), '%'):>9}"
        )

    if race:
        lines.append(row(f"server, {race.get('connections')} racers", race))
    if loaded:
        lines.append(
            row(f"server, {loaded.get('connections')} racers ({args.share:.0%} load)", loaded)
        )
    if echo:
        lines.append(row("echo baseline", echo))
    lines.append("")
    # CPU time per message: robust on a shared, noisy machine where a process may get
    # well under a full core; 1e6 / (µs per message) is the rate one full core allows.
    race_us = race.get("server_cpu_us_per_msg") if race else None
    echo_us = echo.get("server_cpu_us_per_msg") if echo else None
    # The headline: how much of the echo's work per core the server does, both measured
    # in this run. (The throughput ratio would compare with an echo capped by the
    # harness's pacing, far from saturated: it flatters the server.)
    normalised = echo_us / race_us if race_us and echo_us else None
    if normalised is not None:
        lines.append(
            f"  HEADLINE  CPU-normalised server / echo: {normalised:.0%} = echo CPU per message "
            f"{echo_us:.1f} µs / server CPU per acked action {race_us:.1f} µs (same run; "
            f"target >= {args.target_ratio:.0%})"
        )
    if race:
        lines.append(
            f"  server CPU per acked action {fmt(race_us, ' µs')} "
            f"(one full core: {fmt(1e6 / race_us if race_us else None, '/s')}); "
            f"generator {fmt(race.get('generator_cpu_us_per_msg'), ' µs')}"
        )
        if race.get("archive_writer_cpu_us_per_msg") is not None:
            lines.append(
                "  archive writer (a process of its own) CPU per acked action "
                f"{fmt(race['archive_writer_cpu_us_per_msg'], ' µs')}: not in the server's"
            )
    if echo:
        lines.append(
            f"  echo server CPU per message {fmt(echo_us, ' µs')} "
            f"(one full core: {fmt(1e6 / echo_us if echo_us else None, '/s')}); "
            f"generator {fmt(echo.get('generator_cpu_us_per_msg'), ' µs')}"
        )
    for label, result in (("race", race), ("echo", echo)):
        if result and len(result.get("runs", [])) > 1:
            lines.append(
                f"  {label} runs (per s): " + ", ".join(fmt(r.get("per_s")) for r in result["runs"])
            )
    if race:
        lines.append(
            "  latency: send -> the ack's bytes read off the socket; to when the "
            "racer's task resumed: p50/p99 "
            f"{fmt(race.get('task_p50_ms'))}/{fmt(race.get('task_p99_ms'))} ms "
            "(adds the generator's own scheduling)"
        )
        lines.append(
            f"  during the race window: Redis CPU {fmt(race.get('redis_cpu_pct'), '%')}"
            f", machine busy {fmt(race.get('machine_busy_pct'), '%')} of "
            f"{psutil.cpu_count()} cores, load average {race.get('loadavg_1m')}"
        )
    if echo:
        lines.append(
            f"  during the echo window: machine busy "
            f"{fmt(echo.get('machine_busy_pct'), '%')}, "
            f"load average {echo.get('loadavg_1m')}"
        )
    if race:
        lines.append(
            f"  frames: act {fmt(race.get('act_bytes'))} B, "
            f"ack {fmt(race.get('ack_bytes'))} B (median); refused "
            f"{race.get('refused')}, errors {race.get('errors')}, progress msgs "
            f"{race.get('progress_msgs')}, games {race.get('games_finished')}"
        )
        if race.get("racers_failed"):
            lines.append(
                f"  RACERS STOPPED BY A SERVER FAULT: {race['racers_failed']} "
                f"(first: {race.get('first_failure')})"
            )
    verdict = []
    if normalised is not None:
        verdict.append(
            (
                f"server does >= {args.target_ratio:.0%} of the echo's work per core "
                f"(CPU-normalised: {normalised:.0%})",
                normalised >= args.target_ratio,
            )
        )
    if echo and echo.get("per_s") and race.get("per_s"):
        best = max(race["per_s"], (loaded or {}).get("per_s") or 0.0)
        ratio = best / echo["per_s"]
        lines.append(
            f"  server / echo throughput: {ratio:.0%} (best of the two server rows), against "
            f"an echo {echo_saturation(echo, args)}"
        )
    if loaded and race.get("per_s"):
        wanted = args.share * race["per_s"]
        # Offered 1.02 × share × each repeat's saturated rate; the medians may differ a
        # little, hence the 5 % slack in "kept up".
        kept_up = loaded["per_s"] >= 0.95 * wanted
        p99 = loaded.get("p99_ms")
        lines.append(
            f"  at {args.share:.0%} of the server's own saturated rate: {fmt(loaded['per_s'])}/s "
            f"acknowledged (wanted {wanted:,.0f}/s), "
            f"p99 {fmt(p99, ' ms')} (target <= 25 ms; to the racer's task: "
            f"p99 {fmt(loaded.get('task_p99_ms'), ' ms')})"
        )
        verdict.append(
            (
                f"p99 <= 25 ms at {args.share:.0%} of the server's saturated rate",
                kept_up and p99 is not None and p99 <= 25,
            )
        )
    elif race.get("p99_ms") is not None:
        lines.append(f"  ack latency p99: {race['p99_ms']:.1f} ms   (target <= 25 ms)")
        verdict.append(("p99 <= 25 ms", race["p99_ms"] <= 25))
    if race and race.get("per_s", 0) > 0.9 * args.racers * args.rate:
        lines.append("  NOTE: throughput is near the offered maximum: add racers to saturate")
    if idle and "connections" in idle:
        lines += [
            "",
            f"  idle racers held: {idle['connections']:,} "
            f"(still open at the end: {idle['still_open']}"
            + (
                f"; closed early, by close code: {idle['closed_early']}"
                if idle.get("closed_early")
                else ""
            )
            + f"), setup {idle['setup_s']} s",
            f"  server RSS {idle['rss_before_mib']} MiB -> {idle['rss_after_mib']} MiB: "
            f"{idle['rss_per_conn_kib']} KiB per connection; idle CPU "
            f"{idle['idle_cpu_pct']}%; server file descriptors +{idle['server_fds']:,}",
        ]
        ok = (
            idle["connections"] >= args.idle
            and idle["still_open"] >= args.idle
            and idle["rss_after_mib"] * 2**20 < 1.5 * GIB
        )
        verdict.append((f"{args.idle:,} idle racers under 1.5 GiB", ok))
    elif idle:
        lines += ["", f"  idle: {idle}"]
    if verdict:
        lines.append("")
        lines += [f"  [{'x' if ok else ' '}] {name}" for name, ok in verdict]
    return "\n".join(lines)


# --- Human-paced capacity (--human): a step search over the number of racers.

LOG_SCALE = 100  # as bench/loadgen.py's histograms: bucket b = [e^(b/100), e^((b+1)/100)) µs
ACK_P99_MS = 25.0
PROGRESS_P99_MS = 250.0


def merge_hists(hists: list[dict[str, int]]) -> dict[int, int]:
    merged: dict[int, int] = {}
    for hist in hists:
        for bucket, count in hist.items():
            merged[int(bucket)] = merged.get(int(bucket), 0) + count
    return merged


def hist_ms(hist: dict[int, int], p: float) -> float | None:
    """The ``p`` quantile (0..1; 1: the maximum) of a merged histogram, in ms: the upper
    edge of the bucket it falls in (at most ~1 % above the true value)."""
    total = sum(hist.values())
    if not total:
        return None
    rank = min(total, max(1, math.ceil(p * total)))
    seen = 0
    for bucket in sorted(hist):
        seen += hist[bucket]
        if seen >= rank:
            return round(math.exp((bucket + 1) / LOG_SCALE) / 1000, 2)
    return None


def fd_capacity(hard_limit: int, spectators: int) -> int:
    """The most racers whose sockets (and their rooms' spectators') fit in one server
    process's open-files limit, less 200 for Redis, logs and the listening socket."""
    per_racer = 1 + spectators / 4
    return int((hard_limit - 200) / per_racer) // 4 * 4


def process_cpu() -> dict[int, tuple[float, str]]:
    """CPU seconds and a short command line of every process (to name the neighbours)."""
    out: dict[int, tuple[float, str]] = {}
    for proc in psutil.process_iter(["cmdline", "name"]):
        try:
            cmd = " ".join(proc.info["cmdline"] or [proc.info["name"] or "?"])
            out[proc.pid] = (cpu_seconds(proc), cmd)
        except (psutil.Error, OSError):
            continue
    return out


def others_busy(
    before: dict[int, tuple[float, str]],
    after: dict[int, tuple[float, str]],
    wall: float,
    ours: set[int],
) -> list[str]:
    """The processes other than ours (server, generators, this one) that used more than
    5 % of a core in the window, busiest first: what else shared the machine."""
    used = []
    for pid, (cpu, cmd) in after.items():
        if pid in ours:
            continue
        share = 100 * (cpu - before.get(pid, (0.0, ""))[0]) / wall
        if share >= 5:
            used.append((share, cmd))
    used.sort(reverse=True)
    return [f"{share:.0f}% {cmd[:90].strip()}" for share, cmd in used[:6]]


def human_step(
    args: argparse.Namespace,
    racers: int,
    gens: list[Generator],
    server: ServerTree | None,
) -> dict[str, Any]:
    """One measured window over every generator: server, generators and Redis CPU over
    exactly that window, the server's RSS at its end, the generators' figures merged.
    The server is its whole process tree (a supervisor and its workers, or one process)."""
    procs = [psutil.Process(g.proc.pid) for g in gens]
    te0 = time.monotonic()
    everyone0 = process_cpu()  # slow on a busy machine: before the window's clock starts
    redis0 = redis_cpu_seconds(args.redis_url)
    t0 = time.monotonic()
    machine0 = psutil.cpu_times()
    srv0 = server.cpu_seconds() if server else 0.0
    gen0 = sum(cpu_seconds(p) for p in procs)
    for gen in gens:
        assert gen.proc.stdin is not None
        gen.proc.stdin.write("start\n")
        gen.proc.stdin.flush()
    time.sleep(args.human_hold)
    for gen in gens:
        assert gen.proc.stdin is not None
        gen.proc.stdin.write("stop\n")
        gen.proc.stdin.flush()
    srv_cpu_s = server.cpu_seconds() - srv0 if server else None
    gen_cpu_s = sum(cpu_seconds(p) for p in procs) - gen0
    machine1 = psutil.cpu_times()
    wall = time.monotonic() - t0
    redis_cpu = Sample(redis_cpu_seconds(args.redis_url) - redis0, wall).percent
    ours = {os.getpid(), *(p.pid for p in procs), *(server.pids() if server else ())}
    others = others_busy(everyone0, process_cpu(), time.monotonic() - te0, ours)
    srv_cpu = Sample(srv_cpu_s, wall).percent if srv_cpu_s is not None else None
    gen_cpu = Sample(gen_cpu_s, wall).percent
    busy = (sum(machine1) - machine1.idle) - (sum(machine0) - machine0.idle)
    rss, rss_max, server_processes = server.rss() if server else (None, None, 0)
    gen_rss = sum(p.memory_info().rss for p in procs)
    windows = [json.loads(g.wait_line("STEP ", 60)[len("STEP ") :]) for g in gens]
    acked = sum(w["acked"] for w in windows)
    ack = merge_hists([w["ack_hist"] for w in windows])
    spect = merge_hists([w["spectator_hist"] for w in windows])
    mates = merge_hists([w["racer_hist"] for w in windows])
    lag = merge_hists([w["lag_hist"] for w in windows])
    errors: dict[str, int] = {}
    for window in windows:
        for code, count in window["errors"].items():
            errors[code] = errors.get(code, 0) + count
    step: dict[str, Any] = {
        "racers": racers,
        "spectators": racers // 4 * args.spectators_per_room,
        "generators": len(gens),
        "seconds": round(wall, 2),
        "acked": acked,
        "acks_per_s": round(acked / wall, 1),
        "acts_sent": sum(w["acts_sent"] for w in windows),
        "playing": sum(w["playing"] for w in windows),
        "ack_p50_ms": hist_ms(ack, 0.5),
        "ack_p99_ms": hist_ms(ack, 0.99),
        "ack_max_ms": hist_ms(ack, 1.0),
        "spectator_progress_p50_ms": hist_ms(spect, 0.5),
        "spectator_progress_p99_ms": hist_ms(spect, 0.99),
        "spectator_progress_samples": sum(spect.values()),
        "racer_progress_p50_ms": hist_ms(mates, 0.5),
        "racer_progress_p99_ms": hist_ms(mates, 0.99),
        "racer_progress_samples": sum(mates.values()),
        "generator_lag_p99_ms": hist_ms(lag, 0.99),
        # acks over 25 ms: in how many of the window's 100 ms slots they were sent
        "slow_ack_slots": len({slot for w in windows for slot in w["slow_slots"]}),
        "window_slots": round(wall * 10),
        "progress_frames_per_s": round(sum(w["progress_frames"] for w in windows) / wall, 1),
        "refused": sum(w["refused"] for w in windows),
        "errors": errors,
        "games_finished": sum(w["games_finished"] for w in windows),
        "setup_retries": sum(w["setup_retries"] for w in windows),
        "rooms_not_seated": sum(w["rooms_not_seated"] for w in windows),
        "racers_failed": sum(w["racers_failed"] for w in windows),
        "first_failure": next((w["first_failure"] for w in windows if w["first_failure"]), None),
        "server_cpu_pct": round(srv_cpu, 1) if srv_cpu is not None else None,
        "server_rss_mib": round(rss / 2**20, 1) if rss else None,
        "server_rss_max_mib": round(rss_max / 2**20, 1) if rss_max else None,
        "server_processes": server_processes,
        "generator_cpu_pct": round(gen_cpu, 1),
        "generator_rss_mib": round(gen_rss / 2**20, 1),
        "redis_cpu_pct": round(redis_cpu, 1),
        "machine_busy_pct": round(100 * busy / wall / (psutil.cpu_count() or 1), 1),
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "others": others,
    }
    step["server_cpu_us_per_ack"] = (
        round(srv_cpu / 100 / step["acks_per_s"] * 1e6, 1)
        if srv_cpu is not None and step["acks_per_s"]
        else None
    )
    failed = []
    if not acked:
        failed.append("no action acknowledged")
    if step["ack_p99_ms"] is None or step["ack_p99_ms"] > ACK_P99_MS:
        failed.append(f"ack p99 > {ACK_P99_MS:g} ms")
    progress_p99 = step["spectator_progress_p99_ms"]
    if progress_p99 is None or progress_p99 > PROGRESS_P99_MS:
        failed.append(f"progress p99 > {PROGRESS_P99_MS:g} ms")
    if step["racers_failed"]:
        failed.append(f"{step['racers_failed']} racers stopped by a fault")
    if rss_max is not None and rss_max >= 1.5 * GIB:
        failed.append("RSS >= 1.5 GiB in a server process")
    step["failed"] = failed
    return step


HUMAN_COLUMNS = (
    ("racers", "racers", 8),
    ("spectators", "spect", 7),
    ("acks_per_s", "acks/s", 8),
    ("ack_p50_ms", "p50 ms", 8),
    ("ack_p99_ms", "p99 ms", 8),
    ("spectator_progress_p99_ms", "prog99", 8),
    ("racer_progress_p99_ms", "mate99", 8),
    ("server_cpu_pct", "srv CPU", 9),
    ("server_cpu_us_per_ack", "µs/ack", 9),
    ("server_rss_mib", "RSS MiB", 9),
    ("generator_cpu_pct", "gen CPU", 9),
    ("generator_lag_p99_ms", "gen lag", 8),
    ("redis_cpu_pct", "Redis", 8),
    ("machine_busy_pct", "busy", 7),
    ("loadavg_1m", "load", 6),
)


def human_header() -> str:
    return "  " + "".join(f"{title:>{width}}" for _, title, width in HUMAN_COLUMNS) + "  verdict"


def human_row(step: dict[str, Any]) -> str:
    cells = []
    for key, _, width in HUMAN_COLUMNS:
        value = step.get(key)
        text = "-" if value is None else f"{value:,.0f}" if key == "acks_per_s" else fmt(value)
        cells.append(f"{text:>{width}}")
    verdict = "ok" if not step["failed"] else "FAIL: " + "; ".join(step["failed"])
    return "  " + "".join(cells) + "  " + verdict


def phase_human(args: argparse.Namespace) -> dict[str, Any]:
    """Step search: add racers (rooms of 4, spectators, ~``--human-rate`` actions/s each)
    step by step on one server process; hold each step ``--human-hold`` s; stop at the
    first step that fails (unless ``--human-keep-going``, as ``--smoke`` does). New
    racers come from new generator processes (``--per-generator`` racers each) while the
    earlier ones keep playing."""
    hard = raise_nofile_limit()
    fd_cap = fd_capacity(hard, args.spectators_per_room) * args.workers  # per process
    steps = [int(n) // 4 * 4 for n in args.human_steps.split(",")]
    prefix = random_prefix("bench")
    server: ServerProcess | None = None
    if args.target:
        url, pid = args.target, args.server_pid
    else:
        server = launch_server(prefix, args)
        url, pid = server.ws_url, server.proc.pid
    target = ServerTree(psutil.Process(pid)) if pid else None
    time.sleep(0.5)  # a freshly started server settles
    rss_before = target.rss()[0] if target else None
    gens: list[Generator] = []
    seated: dict[int, int] = {}  # racers each generator (by pid) seated
    results: list[dict[str, Any]] = []
    notes: list[str] = []
    running = 0
    print(
        f"\nHuman-paced capacity: rooms of 4 racers + {args.spectators_per_room} spectator(s), "
        f"~{args.human_rate:g} action/s per racer (think time uniform "
        f"{(1 - args.think_spread) / args.human_rate:.2f}-"
        f"{(1 + args.think_spread) / args.human_rate:.2f} s), steps held "
        f"{args.human_hold:g} s after {args.human_warmup:g} s; open-files limit {hard:,} "
        f"(at most {fd_cap:,} racers with their spectators); server: "
        + (f"a supervisor and {args.workers} workers" if args.workers > 1 else "one process"),
        flush=True,
    )
    print(human_header(), flush=True)
    try:
        for wanted in steps:
            if wanted > fd_cap:
                notes.append(
                    f"{wanted:,} racers need {wanted + wanted // 4 * args.spectators_per_room:,}"
                    f" server sockets, over the open-files limit of {hard:,}"
                    + (f": ran {fd_cap:,} instead" if running < fd_cap else ": not run")
                )
                if running >= fd_cap:
                    break
                wanted = fd_cap
            add = wanted - running
            count = max(1, math.ceil(add / args.per_generator))
            shares = [add // 4 // count * 4] * count
            shares[-1] += add - sum(shares)
            started = [
                Generator.start(
                    "human",
                    url,
                    "--connections",
                    str(share),
                    "--rate",
                    str(args.human_rate),
                    "--spectators",
                    str(args.spectators_per_room),
                    "--think-spread",
                    str(args.think_spread),
                    "--start-spread",
                    str(args.start_spread),
                    "--name",
                    f"g{len(gens) + n}",
                )
                for n, share in enumerate(shares)
            ]
            gens += started
            t0 = time.monotonic()
            try:
                for gen, share in zip(started, shares, strict=True):
                    line = gen.wait_line("SEATED", 120 + share / 5)
                    seated[gen.proc.pid] = int(line.split()[1])
            except (TimeoutError, RuntimeError) as exc:
                # The server (or the machine) is too busy to seat the step's racers: that
                # step failed; the report still comes out.
                results.append({"racers": wanted, "failed": [f"setup: {exc}"], "setup_s": None})
                print(f"  {wanted:>8,}  FAIL: setup: {exc}", flush=True)
                break
            setup_s = time.monotonic() - t0
            running = sum(seated.values())
            time.sleep(args.human_warmup)
            step = human_step(args, running, gens, target)
            step["setup_s"] = round(setup_s, 1)
            if running < wanted:
                step["failed"].append(f"only {running:,} of {wanted:,} racers seated")
            results.append(step)
            print(human_row(step), flush=True)
            if step["ack_p99_ms"] and step["ack_p99_ms"] > ACK_P99_MS:
                print(
                    f"      acks over {ACK_P99_MS:g} ms were sent in {step['slow_ack_slots']} of "
                    f"the window's {step['window_slots']} 100-ms slots (few: stalls; "
                    "many: a slow server)",
                    flush=True,
                )
            if step["others"]:
                print("      also busy: " + " | ".join(step["others"]), flush=True)
            if (step["failed"] and not args.human_keep_going) or wanted == fd_cap:
                break
    finally:
        for gen in gens:
            if gen.proc.poll() is None and gen.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    gen.proc.stdin.write("quit\n")
                    gen.proc.stdin.close()
        for gen in gens:
            try:
                gen.proc.wait(30)
            except subprocess.TimeoutExpired:
                gen.kill()
        if server is not None:
            server.terminate()
            delete_prefix(prefix, args.redis_url)
    passed = []  # the steps before the first failure
    for step in results:
        if step["failed"]:
            break
        passed.append(step)
    return {
        "steps": results,
        "held": passed[-1]["racers"] if passed else 0,
        "best": passed[-1] if passed else None,
        "notes": notes,
        "rss_before_mib": round(rss_before / 2**20, 1) if rss_before else None,
        "fd_limit": hard,
        "fd_capacity": fd_cap,
    }


def workers_text(args: argparse.Namespace) -> str:
    return f"on {args.workers} workers" if args.workers > 1 else "in one process"


def human_report(args: argparse.Namespace, result: dict[str, Any]) -> str:
    lines = [""]
    lines += [f"  {note}" for note in result["notes"]]
    best = result["best"]
    lines.append(
        "  prog99: progress delivery p99 to spectators (ms from the acting racer's ack to "
        "the first progress frame showing that move; includes the server's "
        "progress_interval_s wait, 0-200 ms); mate99: the same to room-mates (may also be "
        "held up to 100 ms for their next reply)"
    )
    goal = args.human_goal
    if best:
        lines.append(
            f"  held: {best['racers']:,} racers + {best['spectators']:,} spectators, "
            f"{best['acks_per_s']:,.0f} acks/s, ack p99 {fmt(best['ack_p99_ms'])} ms, "
            f"progress p99 {fmt(best['spectator_progress_p99_ms'])} ms (room-mates "
            f"{fmt(best['racer_progress_p99_ms'])} ms), server RSS "
            f"{fmt(best['server_rss_mib'])} MiB"
        )
        lines.append(
            f"  CPU split: server {fmt(best['server_cpu_pct'], '%')}, generators "
            f"{fmt(best['generator_cpu_pct'], '%')} ({best['generators']} processes), Redis "
            f"{fmt(best['redis_cpu_pct'], '%')}, machine busy {fmt(best['machine_busy_pct'], '%')}"
            f" of {psutil.cpu_count()} cores"
        )
        if best.get("server_cpu_pct"):
            server_cores = best["server_cpu_pct"] / 100
            per_core = best["racers"] / server_cores
            lines.append(
                f"  racers per machine: {best['racers']:,} {workers_text(args)} (load average "
                f"{best['loadavg_1m']}), the server using {server_cores:.2f} cores of "
                f"{psutil.cpu_count()}: {per_core:,.0f} racers per core of server CPU; a "
                f"projection, for a machine whose cores the server alone uses: "
                f"{per_core * 8:,.0f} racers on 8 cores, {args.human_goal:,} on "
                f"{args.human_goal / per_core:.1f}"
            )
    else:
        lines.append("  no step passed")
    measured = [s for s in result["steps"] if s.get("server_rss_mib")]
    biggest = max(measured, key=lambda s: s["racers"], default=None)
    wall = biggest  # the most racers measured: fixed costs weigh least per action
    if wall and wall.get("server_cpu_us_per_ack") and wall["racers"]:
        us = wall["server_cpu_us_per_ack"]
        per_racer = wall["acks_per_s"] / wall["racers"]
        lines.append(
            f"  the wall, CPU (at {wall['racers']:,} racers): {per_racer:.2f} acks/s per racer "
            f"x {us:.0f} µs of server CPU per ack (progress fan-out, events and heartbeats "
            f"included) = one full core at {1e6 / us / per_racer:,.0f} racers; {goal:,} "
            f"racers need {goal * per_racer * us / 1e6:.1f} cores for the server alone"
        )
        total_pct = (
            (wall["server_cpu_pct"] or 0) + wall["generator_cpu_pct"] + wall["redis_cpu_pct"]
        )
        all_us = total_pct / 100 / wall["acks_per_s"] * 1e6
        cores = psutil.cpu_count() or 1
        lines.append(
            f"  the whole machine: server + generators + Redis {all_us:.0f} µs of CPU per ack:"
            f" its {cores} cores, with nothing else running, drive at most about "
            f"{cores * 1e6 / all_us / per_racer:,.0f} racers"
        )
    sockets = goal + goal // 4 * args.spectators_per_room
    if goal > result["fd_capacity"]:
        lines.append(
            f"  the wall, open files: {goal:,} racers and their spectators are {sockets:,} "
            f"sockets in one process; the hard limit here is {result['fd_limit']:,} (at most "
            f"{result['fd_capacity']:,} racers)"
        )
    if biggest and biggest.get("server_rss_mib") and result.get("rss_before_mib"):
        per_racer = (biggest["server_rss_mib"] - result["rss_before_mib"]) / biggest["racers"]
        lines.append(
            f"  memory: server RSS {result['rss_before_mib']} MiB before the first racer, "
            f"{biggest['server_rss_mib']} MiB at {biggest['racers']:,} racers (with their "
            f"spectators): {per_racer * 1024:.1f} KiB per racer; {goal:,} racers would take "
            f"about {result['rss_before_mib'] + goal * per_racer:,.0f} MiB (a projection)"
        )
    ok = bool(best) and best["racers"] >= goal
    lines.append("")
    lines.append(
        f"  [{'x' if ok else ' '}] {goal:,} human-paced racers {workers_text(args)} at ack "
        f"p99 <= "
        f"{ACK_P99_MS:g} ms, progress p99 <= {PROGRESS_P99_MS:g} ms, under 1.5 GiB: "
        f"held {result['held']:,}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--racers", type=int, default=1000, help="racing connections")
    parser.add_argument(
        "--rate",
        type=float,
        default=28.0,
        help="max actions per second per racer (server limit 30)",
    )
    parser.add_argument("--warmup", type=float, default=8.0)
    parser.add_argument("--duration", type=float, default=20.0, help="measured window (s)")
    parser.add_argument("--idle", type=int, default=15000, help="idle racers (0: skip)")
    parser.add_argument("--countdown-ms", type=int, default=300)
    parser.add_argument(
        "--redis-url", default=os.environ.get("CRESCENT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    )
    parser.add_argument("--target", help="ws:// URL of a running server (not started here)")
    parser.add_argument("--server-pid", type=int, help="pid of --target, for CPU and RSS")
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment for the started server (e.g. PYTHONPATH=…)",
    )
    parser.add_argument(
        "--server-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra command-line argument for the started server",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="alternate race and echo this many times; medians are shown",
    )
    parser.add_argument(
        "--share",
        type=float,
        default=0.5,
        help="also race at this share of the server's own saturated rate (0: skip)",
    )
    parser.add_argument(
        "--phases", default="race,echo,idle", help="comma-separated subset of race,echo,idle to run"
    )
    parser.add_argument("--no-echo", action="store_true", help="skip the echo baseline")
    parser.add_argument(
        "--py-spy",
        metavar="FILE",
        help="record a py-spy profile of the server during the race window",
    )
    parser.add_argument(
        "--loop",
        choices=("uvloop", "asyncio"),
        default="uvloop",
        help="event loop of the server and of the echo server (the same "
        "for both, so the baseline is like for like; default: uvloop, "
        "the server's default)",
    )
    parser.add_argument(
        "--py-spy-generator",
        metavar="FILE",
        help="record a py-spy profile of the load generator during the race window",
    )
    parser.add_argument(
        "--py-spy-format", default="speedscope", choices=("flamegraph", "speedscope", "raw")
    )
    parser.add_argument(
        "--target-ratio",
        type=float,
        default=0.5,
        help="the verdict's target for the CPU-normalised server / echo ratio",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds-long run with few clients (for the test suite)",
    )
    human = parser.add_argument_group("human-paced capacity (--human)")
    human.add_argument(
        "--human",
        action="store_true",
        help="instead of race/echo/idle: the human-paced capacity step search",
    )
    human.add_argument(
        "--human-steps", default="200,500,1000,1500,2000,3000,4000,6000,8000,12000,16000,20000"
    )
    human.add_argument("--human-rate", type=float, default=1.0, help="actions/s per racer")
    human.add_argument("--human-hold", type=float, default=25.0, help="window per step (s)")
    human.add_argument(
        "--human-warmup", type=float, default=10.0, help="after a step's racers are seated (s)"
    )
    human.add_argument("--human-goal", type=int, default=20000)
    human.add_argument(
        "--human-keep-going",
        action="store_true",
        help="run every step, also after one failed (the verdict still stops at it)",
    )
    human.add_argument(
        "--workers",
        type=int,
        default=1,
        help="server processes: N > 1 starts the server as a supervisor of N workers on "
        "one port (crescent-server --workers; its CPU and RSS summed over its process tree)",
    )
    human.add_argument("--per-generator", type=int, default=1000, help="racers per process")
    human.add_argument("--spectators-per-room", type=int, default=1)
    human.add_argument("--think-spread", type=float, default=0.75)
    human.add_argument("--start-spread", type=float, default=3.0)
    args = parser.parse_args(argv)
    if args.smoke and args.human:
        args.human_steps, args.per_generator = "8,16", 8
        args.human_hold, args.human_warmup, args.start_spread = 2.0, 2.0, 0.5
        args.human_keep_going = True
        args.countdown_ms = 100
    elif args.smoke:
        args.racers, args.warmup, args.duration, args.idle = 8, 1.0, 2.0, 40
        args.repeat = 1
        args.countdown_ms = 100
    raise_nofile_limit()  # children (server, generator) inherit the raised limit
    if args.human:
        result = phase_human(args)
        print(human_report(args, result), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps({"args": vars(args), "human": result}, indent=2))
        return 0

    phases = set(args.phases.split(","))
    # Race and echo alternate ``--repeat`` times; the table shows medians, so a burst of
    # other work on this shared machine skews one run, not the figure.
    races: list[dict[str, Any]] = []
    echoes: list[dict[str, Any]] = []
    at_share: list[dict[str, Any]] = []
    for _ in range(args.repeat):
        if "race" in phases:
            races.append(phase_race(args))
        if "echo" in phases and not args.no_echo:
            echoes.append(phase_echo(args, races[-1] if races else {}))
        if races and args.share > 0:
            # The latency target holds at a given throughput: offer a share of the
            # server's own saturated rate (this repeat's race) and see how fast it
            # answers. A saturated closed loop cannot show that: its latency is just
            # connections / throughput (Little's law). Racers enough for 25 % more (they
            # idle between games), held to share × saturated (+2 %, so the window's
            # edges do not fall short) by an overall rate limit in the generator.
            wanted = args.share * races[-1]["per_s"]
            connections = max(4, math.ceil(wanted * 1.25 / args.rate / 4) * 4)
            at_share.append(phase_race(args, connections=connections, total_rate=wanted * 1.02))
    race = median_result(races)
    echo = median_result(echoes) if echoes else None
    loaded = median_result(at_share) if at_share else None
    idle = phase_idle(args) if "idle" in phases and args.idle > 0 else None
    print(report(args, race, echo, idle, loaded), flush=True)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "args": vars(args),
                    "headline": headline(args, race, echo, loaded),
                    "race": race,
                    "echo": echo,
                    "idle": idle,
                    "at_share": loaded,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
