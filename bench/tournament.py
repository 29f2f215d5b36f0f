"""Tournament benchmark: one round of 200 bots across 2 server processes (issue #13).

    python3 bench/tournament.py                  # 200 bots, 3 repeats (see docs/performance.md)
    python3 bench/tournament.py --smoke          # 8 bots, seconds (used by a test)
    python3 bench/tournament.py --bots 100 --rate 3 --repeat 1 --json out.json
    python3 bench/tournament.py --crowd 200 --in-flight 50   # a crowd registering at once

Two ``python3 -m server`` processes share the real Redis (a random key prefix, deleted
afterwards). The bots are ``crescent_client`` clients driven from ``--workers``
generator processes (this file run as ``worker``); bot ``i`` talks to server
``i % servers``, so every round has racers on both processes. Each bot plays the
same deal with the greedy strategy at ``--rate`` actions per second (its own pacing,
outside the timed part) until its game ends, and waits for the round's end.

Two phases, each repeated ``--repeat`` times, alternating:

- ``tournament``: a host creates a 1-round tournament, every bot registers
  (``t_join``), the host starts the round: one race room of ``--bots`` racers, the
  server summarising progress in ``t_live`` (≤ 1 per second).
- ``race`` (the baseline): the same bots in plain rooms of 4 racers, the same deal,
  progress broadcast to room-mates as in any race.

A phase's window runs from the round's start signal until every bot has seen its
round end (the tournament's round scored, or every room finished). Figures per phase:
server CPU (both processes, psutil user+system) per acknowledged action, ack latency
(send → ack on the client) p50/p99, what the servers sent (bytes and frames received
by all clients) per second and per ack, and frames by type. The report gives the
median of each figure over the repeats and the load average.

``--crowd N`` measures registration instead (issue #20): a host creates a tournament of
``N`` places, ``N`` players connect (alternating between the servers) and then all
send ``t_join`` at once, at most ``--in-flight`` requests outstanding, as a crowd does
when the host posts the link. A player answered with an error retries (at most 10
times); the report gives the errors by code, the players registered on their first
try, the clients' retries, the servers' own compare-and-set retries (scraped from
``/metrics``: ``crescent_cas_retries_total``) and the ``t_join`` latency p50/p99 over
every request sent (send → reply on the client), the CPU per request of the servers
(both processes, psutil) and of the clients (this process), per run and as medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: the project's packages next to it
    sys.path.insert(0, str(REPO))

from bench._workers import Worker, percentile  # noqa: E402

DEAL = "CR1-N-AAAAAAE"  # a greedy game of 92 actions
WORKER_TIMEOUT = 600.0


# ------------------------------------------------------------------------------ worker


@dataclass
class BotStats:
    latencies_ms: list[float] = field(default_factory=list)
    refused: int = 0
    errors: Counter[str] = field(default_factory=Counter)


async def _worker(args: argparse.Namespace) -> None:
    from crescent_client import Ack, CrescentClient, RequestFailed
    from crescent_client.strategy import GreedyStrategy

    urls = args.urls.split(",")
    bots: list[CrescentClient] = []
    limit = asyncio.Semaphore(20)

    # The same players in every phase (a server admits 120 new guests per address and
    # minute): the first phase writes their tokens, the later ones read them.
    tokens_file = Path(args.tokens)
    tokens = json.loads(tokens_file.read_text()) if tokens_file.exists() else [None] * args.bots

    async def open_bot(i: int) -> CrescentClient:
        async with limit:
            bot = CrescentClient(
                urls[(args.offset + i) % len(urls)],
                name=f"Bot{args.offset + i}",
                token=tokens[i],
                pace=None,
                request_timeout=60,
            )
            await bot.open()
            return bot

    bots = list(await asyncio.gather(*(open_bot(i) for i in range(args.bots))))
    tokens_file.write_text(json.dumps([b.token for b in bots]))
    stats = [BotStats() for _ in bots]

    if args.mode == "tournament":
        states = []
        for bot in bots:
            async with limit:
                states.append(await bot.join_tournament(args.code))
    else:  # rooms of 4 (the last one may hold fewer)
        rooms: dict[int, str] = {}
        for i, bot in enumerate(bots):
            if i % 4 == 0:
                room = await bot.create_room(
                    seats=min(4, len(bots) - i), deal=args.deal, time_limit=600
                )
                rooms[i] = room.code
            else:
                await bot.join(rooms[i - i % 4], as_="racer")
    print("READY", flush=True)
    line = await asyncio.to_thread(sys.stdin.readline)
    if not line.startswith("GO"):
        return
    received0 = [(b.bytes_received, b.frames_received) for b in bots]
    types0 = [Counter(b.received_types) for b in bots]
    started = time.time()

    async def play(i: int) -> None:
        bot, st = bots[i], stats[i]
        if args.mode == "tournament":
            state = states[i]
            await bot.wait_until(lambda: state.seated_room() is not None, WORKER_TIMEOUT)
            seated = state.seated_room()
            assert seated is not None
            room = await bot.join(seated[0], as_="racer")
        else:
            room = bot.room(rooms[i - i % 4])
            await bot.ready(room.code)
        await bot.wait_for_start(room.code, timeout=WORKER_TIMEOUT)
        strategy = GreedyStrategy()
        gap = 1.0 / args.rate if args.rate > 0 else 0.0
        next_at = time.monotonic()
        while room.view is not None and room.view.get("status") == "playing":
            action = strategy.next_action(room.view)
            if action is None:
                break
            next_at += gap
            delay = next_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            t0 = time.perf_counter()
            try:
                reply = await bot.act(action, room.code)
            except RequestFailed as err:
                st.errors[err.code] += 1
                if err.code == "race_over":
                    break
                continue
            if isinstance(reply, Ack):
                st.latencies_ms.append((time.perf_counter() - t0) * 1000)
                if action == "resign":
                    break
            else:
                st.refused += 1
        # Wait for the round's end: the room finished (race) or the round scored.
        if args.mode == "tournament":
            await bot.wait_until(lambda: states[i].current is None, WORKER_TIMEOUT)
        else:
            await bot.wait_until(lambda: room.phase == "finished", WORKER_TIMEOUT)
            await bot.leave(room.code)  # a player may hold only so many rooms

    await asyncio.gather(*(play(i) for i in range(len(bots))))
    ended = time.time()
    types: Counter[str] = Counter()
    for bot, before in zip(bots, types0, strict=True):
        types.update(bot.received_types - before)
    result = {
        "started": started,
        "ended": ended,
        "bytes": sum(b.bytes_received - r[0] for b, r in zip(bots, received0, strict=True)),
        "frames": sum(b.frames_received - r[1] for b, r in zip(bots, received0, strict=True)),
        "types": dict(types),
        "latencies_ms": [round(x, 3) for s in stats for x in s.latencies_ms],
        "refused": sum(s.refused for s in stats),
        "errors": dict(sum((s.errors for s in stats), Counter())),
        "reconnects": sum(b.reconnects for b in bots),
    }
    print("RESULT " + json.dumps(result), flush=True)
    await asyncio.gather(*(b.close() for b in bots))


# ------------------------------------------------------------------------------ driver


def server_cpu(pids: list[int]) -> float:
    from bench.cpu_time import process_cpu_seconds

    return sum(process_cpu_seconds(pid) for pid in pids)


async def run_phase(
    mode: str, urls: list[str], pids: list[int], args: argparse.Namespace, tmp: str
) -> dict[str, Any]:
    """One round of ``args.bots`` bots in ``mode`` (``tournament`` or ``race``)."""
    from crescent_client import CrescentClient

    host: CrescentClient | None = None
    code = ""
    if mode == "tournament":
        host = CrescentClient(urls[-1], name="Host", pace=None, request_timeout=60)
        await host.open()
        state = await host.create_tournament(
            "Bench", rounds=1, time_limit=600, max_players=200, deals=[args.deal]
        )
        code = state.code
    per_worker = [
        args.bots // args.workers + (w < args.bots % args.workers) for w in range(args.workers)
    ]
    workers: list[Worker] = []
    offset = 0
    try:
        for count in per_worker:
            workers.append(
                Worker.start(
                    Path(__file__),
                    "--mode",
                    mode,
                    "--urls",
                    ",".join(urls),
                    "--bots",
                    str(count),
                    "--offset",
                    str(offset),
                    "--code",
                    code,
                    "--deal",
                    args.deal,
                    "--rate",
                    str(args.rate),
                    "--tokens",
                    f"{tmp}/tokens-{offset}.json",
                )
            )
            offset += count
        for w in workers:
            await asyncio.to_thread(w.wait_line, "READY", 120 + args.bots)
        cpu0, t0 = server_cpu(pids), time.time()
        for w in workers:
            w.send("GO")
        if host is not None:
            await host.host(code, "start_round")
        results = [
            json.loads((await asyncio.to_thread(w.wait_line, "RESULT ", WORKER_TIMEOUT))[7:])
            for w in workers
        ]
        if host is not None:
            state = host.tournament_state(code)
            await host.wait_until(lambda: state.current is None, WORKER_TIMEOUT)
        cpu1, t1 = server_cpu(pids), time.time()
    finally:
        for w in workers:
            w.kill()
        if host is not None:
            await host.close()
    window = t1 - t0
    latencies = [x for r in results for x in r["latencies_ms"]]
    acks = len(latencies)
    frames = sum(r["frames"] for r in results)
    sent = sum(r["bytes"] for r in results)
    types: Counter[str] = Counter()
    for r in results:
        types.update(r["types"])
    errors: Counter[str] = Counter()
    for r in results:
        errors.update(r["errors"])
    cpu = cpu1 - cpu0
    return {
        "mode": mode,
        "bots": args.bots,
        "window_s": round(window, 2),
        "acks": acks,
        "acks_per_s": round(acks / window, 1),
        "server_cpu_s": round(cpu, 3),
        "server_cpu_pct": round(100 * cpu / window, 1),
        "cpu_us_per_ack": round(cpu / acks * 1e6, 1) if acks else None,
        "p50_ms": percentile(latencies, 0.50),
        "p99_ms": percentile(latencies, 0.99),
        "bytes_per_s": round(sent / window),
        "msgs_per_s": round(frames / window, 1),
        "bytes_per_ack": round(sent / acks, 1) if acks else None,
        "msgs_per_ack": round(frames / acks, 2) if acks else None,
        "types": dict(types),
        "refused": sum(r["refused"] for r in results),
        "errors": dict(errors),
        "reconnects": sum(r["reconnects"] for r in results),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


MEDIAN_KEYS = (
    "window_s",
    "acks",
    "acks_per_s",
    "server_cpu_pct",
    "cpu_us_per_ack",
    "p50_ms",
    "p99_ms",
    "bytes_per_s",
    "msgs_per_s",
    "bytes_per_ack",
    "msgs_per_ack",
    "loadavg_1m",
)


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    merged = dict(runs[-1])
    for key in MEDIAN_KEYS:
        values = sorted(r[key] for r in runs if r.get(key) is not None)
        merged[key] = values[len(values) // 2] if values else None
    merged["runs"] = [{k: r.get(k) for k in MEDIAN_KEYS} for r in runs]
    return merged


def fmt(value: Any, spec: str = ",.1f") -> str:
    return "-" if value is None else format(value, spec)


def report(figures: dict[str, dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        f"{args.bots} bots, {args.servers} server processes, {args.workers} generator "
        f"processes, deal {args.deal}, {args.rate:g} actions/s per bot; medians of "
        f"{args.repeat} run(s); load average at the end {os.getloadavg()[0]:.2f}",
        f"{'phase':<34} {'acks':>6} {'acks/s':>7} {'CPU µs/ack':>10} {'p50 ms':>7} "
        f"{'p99 ms':>7} {'sent kB/s':>9} {'msgs/s':>8} {'B/ack':>7} {'msgs/ack':>8}",
    ]
    labels = {
        "tournament": f"tournament round, {args.bots} racers",
        "race": f"plain races of 4 ({-(-args.bots // 4)} rooms)",
    }
    for mode in args.phases:
        f = figures[mode]
        lines.append(
            f"{labels[mode]:<34} {f['acks']:>6} {fmt(f['acks_per_s']):>7} "
            f"{fmt(f['cpu_us_per_ack']):>10} {fmt(f['p50_ms'], '.2f'):>7} "
            f"{fmt(f['p99_ms'], '.2f'):>7} {fmt(f['bytes_per_s'] / 1000):>9} "
            f"{fmt(f['msgs_per_s']):>8} {fmt(f['bytes_per_ack']):>7} "
            f"{fmt(f['msgs_per_ack'], '.2f'):>8}"
        )
    t, r = figures.get("tournament"), figures.get("race")
    if t and r and t["cpu_us_per_ack"] and r["cpu_us_per_ack"]:
        lines.append(
            f"tournament / races: CPU per ack x{t['cpu_us_per_ack'] / r['cpu_us_per_ack']:.2f}, "
            f"bytes per ack x{t['bytes_per_ack'] / r['bytes_per_ack']:.2f}, "
            f"messages per ack x{t['msgs_per_ack'] / r['msgs_per_ack']:.2f}"
        )
    for mode in args.phases:
        types = ", ".join(f"{k} {v}" for k, v in sorted(figures[mode]["types"].items()))
        lines.append(f"frames received in the {mode} phase (last run): {types}")
        problems = {**figures[mode]["errors"]}
        if figures[mode]["reconnects"]:
            problems["reconnects"] = figures[mode]["reconnects"]
        if problems:
            lines.append(f"  errors in the {mode} phase (last run): {problems}")
    return "\n".join(lines)


async def drive(args: argparse.Namespace) -> dict[str, Any]:
    from bench.devtools import (
        delete_prefix,
        launch_server_process,
        raise_nofile_limit,
        random_prefix,
    )

    raise_nofile_limit()
    prefix = random_prefix("btour")
    servers = []
    tmp = tempfile.mkdtemp(prefix="bench-tournament-")
    try:
        for _ in range(args.servers):
            servers.append(
                await asyncio.to_thread(
                    launch_server_process,
                    prefix,
                    None,
                    {"CRESCENT_LOG_LEVEL": "WARNING"},
                    redis_url=args.redis_url,
                    countdown_ms=args.countdown_ms,
                )
            )
        urls = [s.ws_url for s in servers]
        pids = [s.proc.pid for s in servers]
        runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in args.phases}
        for i in range(args.repeat):
            for mode in args.phases:
                result = await run_phase(mode, urls, pids, args, tmp)
                runs[mode].append(result)
                print(
                    f"run {i + 1} {mode}: {result['acks']} acks in {result['window_s']} s, "
                    f"{fmt(result['cpu_us_per_ack'])} µs CPU/ack, p99 "
                    f"{fmt(result['p99_ms'], '.2f')} ms",
                    flush=True,
                )
        return {mode: medians(r) for mode, r in runs.items()}
    finally:
        for s in servers:
            s.terminate()
        delete_prefix(prefix, args.redis_url)
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------------------ crowd

CROWD_RETRIES = 10  # a client answered with an error tries this many more times at most


def cas_retries(http_urls: list[str]) -> int | None:
    """The servers' compare-and-set retries so far (None: the servers do not count them)."""
    import urllib.request

    total, seen = 0, False
    for url in http_urls:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as reply:
            text = reply.read().decode()
        for line in text.splitlines():
            if line.startswith("crescent_cas_retries_total"):
                seen = True
                total += int(float(line.rsplit(" ", 1)[1]))
    return total if seen else None


async def crowd_run(
    urls: list[str],
    http_urls: list[str],
    pids: list[int],
    args: argparse.Namespace,
    tokens: list[str | None],
) -> dict[str, Any]:
    """One crowd: ``args.crowd`` players send ``t_join`` for one fresh tournament."""
    from crescent_client import CrescentClient, RequestFailed

    host = CrescentClient(urls[0], name="Host", pace=None, request_timeout=60)
    await host.open()
    state = await host.create_tournament(
        "Crowd", rounds=1, time_limit=600, max_players=args.crowd, deals=[args.deal]
    )
    opening = asyncio.Semaphore(20)

    async def open_player(i: int) -> CrescentClient:
        async with opening:
            bot = CrescentClient(
                urls[i % len(urls)],
                name=f"Crowd{i}",
                token=tokens[i],
                pace=None,
                request_timeout=60,
            )
            await bot.open()
            tokens[i] = bot.token
            return bot

    players = list(await asyncio.gather(*(open_player(i) for i in range(args.crowd))))
    retries0 = await asyncio.to_thread(cas_retries, http_urls)
    in_flight = asyncio.Semaphore(args.in_flight)
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    first_try = 0
    client_retries = 0
    registered = 0

    async def register(bot: CrescentClient) -> None:
        nonlocal first_try, client_retries, registered
        for attempt in range(CROWD_RETRIES + 1):
            async with in_flight:
                t0 = time.perf_counter()
                try:
                    await bot.join_tournament(state.code)
                except RequestFailed as err:
                    latencies.append((time.perf_counter() - t0) * 1000)
                    errors[err.code] += 1
                    client_retries += attempt < CROWD_RETRIES
                    continue
                latencies.append((time.perf_counter() - t0) * 1000)
            registered += 1
            first_try += attempt == 0
            return

    cpu0, own0 = server_cpu(pids), time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(register(bot) for bot in players))
    window = time.perf_counter() - started
    cpu, own = server_cpu(pids) - cpu0, time.process_time() - own0
    retries1 = await asyncio.to_thread(cas_retries, http_urls)
    final = await host.tournament(state.code)
    await asyncio.gather(host.close(), *(b.close() for b in players))
    return {
        "players": args.crowd,
        "in_flight": args.in_flight,
        "registered": registered,
        "stored_players": final.data["players"],
        "first_try": first_try,
        "errors": dict(errors),
        "client_retries": client_retries,
        "server_cas_retries": (
            retries1 - retries0 if retries0 is not None and retries1 is not None else None
        ),
        "requests": len(latencies),
        "window_s": round(window, 3),
        "server_cpu_ms_per_join": round(cpu * 1000 / len(latencies), 3),
        "client_cpu_ms_per_join": round(own * 1000 / len(latencies), 3),
        "p50_ms": percentile(latencies, 0.50),
        "p99_ms": percentile(latencies, 0.99),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


async def drive_crowd(args: argparse.Namespace) -> list[dict[str, Any]]:
    from bench.devtools import (
        delete_prefix,
        launch_server_process,
        raise_nofile_limit,
        random_prefix,
    )

    raise_nofile_limit()
    prefix = random_prefix("bcrowd")
    servers = []
    # The crowd comes from one address: the per-address guest quota is lifted.
    quota = ["--new-players-per-address-per-min", "0"]
    try:
        for _ in range(args.servers):
            servers.append(
                await asyncio.to_thread(
                    launch_server_process,
                    prefix,
                    None,
                    {"CRESCENT_LOG_LEVEL": "WARNING"},
                    redis_url=args.redis_url,
                    countdown_ms=args.countdown_ms,
                    extra_args=quota,
                )
            )
        urls = [s.ws_url for s in servers]
        http_urls = [s.http_url for s in servers]
        pids = [s.proc.pid for s in servers]
        tokens: list[str | None] = [None] * args.crowd
        runs = []
        for i in range(args.repeat):
            result = await crowd_run(urls, http_urls, pids, args, tokens)
            runs.append(result)
            print(f"run {i + 1}: " + json.dumps(result), flush=True)
        return runs
    finally:
        for s in servers:
            s.terminate()
        delete_prefix(prefix, args.redis_url)


def crowd_report(runs: list[dict[str, Any]], args: argparse.Namespace) -> str:
    def median(key: str) -> Any:
        values = sorted(r[key] for r in runs if r[key] is not None)
        return values[len(values) // 2] if values else None

    errors: Counter[str] = Counter()
    for r in runs:
        errors.update(r["errors"])
    return "\n".join(
        [
            f"{args.crowd} players register at once, {args.in_flight} t_join in flight, "
            f"{args.servers} server processes; medians of {len(runs)} run(s); load average "
            f"at the end {os.getloadavg()[0]:.2f}",
            f"registered on the first try: {median('first_try')} of {args.crowd} "
            f"(stored: {median('stored_players')}); errors (all runs): "
            f"{dict(errors) or 'none'}",
            f"client retries {median('client_retries')}, server compare-and-set retries "
            f"{fmt(median('server_cas_retries'), ',')}, requests {median('requests')}",
            f"t_join p50 {fmt(median('p50_ms'), '.1f')} ms, p99 {fmt(median('p99_ms'), '.1f')} "
            f"ms; all joins answered in {fmt(median('window_s'), '.2f')} s",
            f"CPU per t_join request: servers {fmt(median('server_cpu_ms_per_join'), '.2f')} ms "
            f"(both processes), the clients {fmt(median('client_cpu_ms_per_join'), '.2f')} ms",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        wp = argparse.ArgumentParser(prog="tournament.py worker")
        wp.add_argument("--mode", choices=("tournament", "race"), required=True)
        wp.add_argument("--urls", required=True)
        wp.add_argument("--bots", type=int, required=True)
        wp.add_argument("--offset", type=int, default=0)
        wp.add_argument("--code", default="")
        wp.add_argument("--deal", default=DEAL)
        wp.add_argument("--rate", type=float, default=5.0)
        wp.add_argument("--tokens", required=True, help="file of the bots' tokens (JSON)")
        asyncio.run(_worker(wp.parse_args(argv[1:])))
        return 0
    from bench.devtools import redis_test_url

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=200, help="racers in the round (≤ 200)")
    parser.add_argument("--servers", type=int, default=2, help="server processes")
    parser.add_argument("--workers", type=int, default=2, help="generator processes")
    parser.add_argument("--rate", type=float, default=5.0, help="actions per second per bot")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each phase")
    parser.add_argument("--deal", default=DEAL, help="the deal every round uses")
    parser.add_argument("--countdown-ms", type=int, default=1000, help="the servers' countdown")
    parser.add_argument("--redis-url", default=redis_test_url())
    parser.add_argument(
        "--phases",
        default="tournament,race",
        type=lambda text: [p for p in text.split(",") if p in ("tournament", "race")],
        help="which phases to run, in order (default: tournament,race)",
    )
    parser.add_argument(
        "--crowd", type=int, default=0, help="measure N players registering at once instead"
    )
    parser.add_argument(
        "--in-flight", type=int, default=50, help="--crowd: t_join requests outstanding at most"
    )
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--smoke", action="store_true", help="8 bots, 1 worker, 1 run")
    args = parser.parse_args(argv)
    if args.smoke:
        args.bots, args.workers, args.repeat, args.rate, args.countdown_ms = 8, 1, 1, 25.0, 300
    if args.crowd:
        runs = asyncio.run(drive_crowd(args))
        print(crowd_report(runs, args))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(runs, f, indent=1)
        return 0
    figures = asyncio.run(drive(args))
    print(report(figures, args))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
