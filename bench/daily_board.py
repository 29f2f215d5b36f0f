"""Daily leaderboard benchmark: one day's board filled with N entries through the real
write path, then ``daily_board`` (top, my rank, around me) over a real WebSocket against
a real server process while racers load it (docs/performance.md, "Daily leaderboard").

    nice -n 10 .venv/bin/python bench/daily_board.py                       # 1,000,000 entries
    .venv/bin/python bench/daily_board.py --entries 20000 --queries 200 --racers 20   # quick

1. A server process on the real Redis with a private key prefix and a fixed daily deal
   (no solver run); today's day is prepared by the server itself.
2. Fill: ``RedisDailyStorage.record_result`` (the Lua script the server runs when an
   attempt ends) for ``--entries`` synthetic players, ``--concurrency`` at a time;
   the bench's own player is one of them, ranked in the middle. Prints the fill rate.
3. Race load: ``bench/load.py --phases race`` against the same server (``--racers``).
4. Queries: ``daily_board`` (top 10, around 5: rank + around + top + counts in one
   request) on ``--clients`` paced WebSockets during the race window; p50/p99 of
   send → reply, client side; then the storage's ``board_view`` alone (one Redis call).

The prefix's keys are deleted afterwards (SCAN + DEL of that prefix only).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgpack
import redis.asyncio as aioredis
import websockets

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.devtools import (  # noqa: E402
    delete_prefix,
    launch_server_process,
    race_command,
    random_prefix,
)
from server.daily import Day, Result, ResultEntry  # noqa: E402
from server.storage.redis_daily import RedisDailyStorage  # noqa: E402

DEAL = "CR1-N-AAAAAAB"


def synthetic_result(i: int) -> Result:
    """Spread over the ranking: two thirds won (times 2–30 min), the rest not won."""
    if i % 3:
        return Result("won", 120_000 + (i * 7919) % 1_680_000, 150 + i % 300, 104)
    return Result("locked", None, 100 + i % 400, i % 104)


async def fill(
    storage: RedisDailyStorage, day: str, entries: int, concurrency: int, players: list[str]
) -> float:
    """Write ``entries`` results (``players`` spread over the board among them);
    returns entries per second."""
    spread = {entries * (k + 1) // (len(players) + 1): pid for k, pid in enumerate(players)}
    next_index = 0
    started = time.perf_counter()

    async def worker() -> None:
        nonlocal next_index
        while next_index < entries:
            i = next_index
            next_index += 1
            player = spread.get(i, f"bench{i}")
            result = synthetic_result(i)
            entry = ResultEntry.of(result, f"P{i}", 0)
            await storage.record_result(day, player, "ranked", result.sort_score(), entry)
            if i and i % 100_000 == 0:
                rate = i / (time.perf_counter() - started)
                print(f"  filled {i:,} ({rate:,.0f}/s)", flush=True)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return entries / (time.perf_counter() - started)


async def request(ws: Any, msg: dict[str, Any]) -> dict[str, Any]:
    await ws.send(msgpack.packb(msg))
    while True:
        reply: dict[str, Any] = msgpack.unpackb(await ws.recv(), raw=False)
        if reply.get("id") == msg.get("id"):
            return reply


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(args: argparse.Namespace) -> int:
    prefix = random_prefix("bench-daily")
    server = launch_server_process(
        prefix, redis_url=args.redis_url, extra_env={"CRESCENT_DAILY_DEAL": DEAL}, countdown_ms=300
    )
    load: subprocess.Popen[bytes] | None = None
    redis = aioredis.from_url(args.redis_url)
    try:
        sockets, players = [], []
        for _ in range(args.clients):
            ws = await websockets.connect(server.ws_url, max_size=2**20)
            await ws.send(msgpack.packb({"t": "hello", "versions": [1], "name": "Bench"}))
            sockets.append(ws)
            players.append(msgpack.unpackb(await ws.recv(), raw=False)["player"]["id"])
        today = await request(sockets[0], {"t": "daily", "id": 1})
        day = today["today"]["day"]
        assert day == str(Day.of(int(time.time() * 1000)))
        storage = RedisDailyStorage(redis, prefix)
        print(
            f"filling {args.entries:,} entries of {day} "
            f"({args.concurrency} concurrent record_result)",
            flush=True,
        )
        rate = await fill(storage, day, args.entries, args.concurrency, players)
        size = await storage.board_size(day, "ranked")
        print(f"fill: {size:,} entries at {rate:,.0f} entries/s", flush=True)

        if args.racers:
            load = subprocess.Popen(
                [
                    *race_command(racers=args.racers, warmup=3, duration=args.race_seconds),
                    "--target",
                    server.ws_url,
                    "--server-pid",
                    str(server.proc.pid),
                ],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            await asyncio.sleep(args.settle)  # racers connected and racing (not a sync)
        times: list[float] = []
        ranks: list[int] = []
        last: dict[str, Any] = {}

        async def client(ws: Any, count: int) -> None:
            nonlocal last
            for n in range(count):
                sent = time.perf_counter()
                last = await request(
                    ws, {"t": "daily_board", "day": day, "top": 10, "around": 5, "id": 100 + n}
                )
                elapsed = time.perf_counter() - sent
                if last.get("t") != "daily_board":
                    raise RuntimeError(f"daily_board failed: {last}")
                times.append(elapsed * 1000)
                ranks.append(last["you"]["rank"])
                # Pacing under the server's per-connection limit (30 messages/s).
                await asyncio.sleep(max(0.0, 1 / args.per_client_rate - elapsed))

        per_client = args.queries // len(sockets)
        await asyncio.gather(*(client(ws, per_client) for ws in sockets))
        # The storage query alone (one EVALSHA), from this process, still under load.
        direct: list[float] = []
        for n in range(args.queries):
            sent = time.perf_counter()
            await storage.board_view(day, "ranked", players[n % len(players)], 10, 5)
            direct.append((time.perf_counter() - sent) * 1000)
        racing = load is not None and load.poll() is None
        print(
            f"daily_board on {last['count']:,} entries (ranks {min(ranks):,}–"
            f"{max(ranks):,}, {len(last['top'])} top, {len(last['around'])} around), "
            f"{len(times)} queries on {len(sockets)} sockets, race load "
            f"{'on' if racing else 'OFF (ended early)'} ({args.racers} racers)"
        )
        print(
            f"  p50 {percentile(times, 0.5):.2f} ms  p99 {percentile(times, 0.99):.2f} ms"
            f"  max {max(times):.2f} ms  mean {statistics.fmean(times):.2f} ms"
            "  (WebSocket request → reply)"
        )
        print(
            f"  p50 {percentile(direct, 0.5):.2f} ms  p99 {percentile(direct, 0.99):.2f} ms"
            f"  max {max(direct):.2f} ms  (the storage's board_view alone: one Redis call)"
        )
        for ws in sockets:
            await ws.close()
        if load is not None:
            out, _ = load.communicate(timeout=args.race_seconds + 120)
            lines = out.decode(errors="replace").strip().splitlines()
            print("race load (bench/load.py):", *lines[-8:], sep="\n  ")
        return 0
    finally:
        if load is not None and load.poll() is None:
            load.terminate()
        server.terminate()
        await redis.aclose()
        print(f"deleted {delete_prefix(prefix, args.redis_url):,} keys of {prefix}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument(
        "--clients", type=int, default=8, help="query sockets, each a player on the board"
    )
    parser.add_argument(
        "--per-client-rate",
        type=float,
        default=20.0,
        help="queries per second per socket (server limit 30)",
    )
    parser.add_argument(
        "--racers",
        type=int,
        default=100,
        help="racers of bench/load.py during the queries (0: no race load)",
    )
    parser.add_argument("--race-seconds", type=float, default=40.0)
    parser.add_argument(
        "--settle",
        type=float,
        default=6.0,
        help="seconds for the racers to connect before measuring",
    )
    parser.add_argument(
        "--redis-url", default=os.environ.get("CRESCENT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    )
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
