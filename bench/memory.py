"""Server memory under two abuses (issue #10): connect-hello-disconnect cycles, and
spectators that never read their socket while their room is busy.

    .venv/bin/python bench/memory.py cycles --cycles 10000
    .venv/bin/python bench/memory.py slow --spectators 10 --duration 300

Each starts ``python3 -m server`` on the test Redis (``CRESCENT_TEST_REDIS_URL``,
default redis://127.0.0.1:6379/0) under a fresh key prefix (deleted afterwards) and
prints the server's RSS (``/proc/<pid>/status``). ``cycles`` also prints the full
garbage collections the server logged (server/web/collector.py) and their pauses.
tests/server/test_memory.py runs both with smaller counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from websockets.asyncio.client import ClientConnection, connect

from bench.devtools import (
    ServerProcess,
    delete_prefix,
    launch_server_process,
    random_prefix,
    redis_test_url,
)
from crescent_wire import protocol as p


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def gc_pauses(server: ServerProcess) -> list[dict[str, Any]]:
    """The server's 'full garbage collection' log lines."""
    found = []
    for line in server.log_text().splitlines():
        if '"full garbage collection"' in line:
            found.append(json.loads(line))
    return found


async def _hello(ws: ClientConnection, name: str) -> dict[str, Any]:
    await ws.send(p.encode_client(p.Hello(name=name, id=1)))
    while True:
        reply = p.decode_server(await ws.recv())  # type: ignore[arg-type]
        if isinstance(reply, p.Welcome):
            return reply.player
        if isinstance(reply, p.Error):
            raise RuntimeError(reply.code)


async def connection_cycles(
    url: str, cycles: int, concurrency: int = 8, on_progress: Callable[[int], None] | None = None
) -> None:
    """``cycles`` times: connect, hello (a new guest), close; ``concurrency`` at a time."""
    done = 0
    counter = iter(range(cycles))

    async def worker() -> None:
        nonlocal done
        for i in counter:
            async with connect(url, ping_interval=None) as ws:
                await _hello(ws, f"C{i % 1000}")
            done += 1
            if on_progress and done % 1000 == 0:
                on_progress(done)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def slow_spectators(
    url: str, spectators: int, duration: float, sample: Callable[[float], None]
) -> int:
    """A room whose host toggles 'ready' as fast as the server answers (each toggle an
    event for every member) and ``spectators`` members that never read. ``sample`` is
    called with the elapsed time about every second. Returns the toggles made."""
    async with connect(url, ping_interval=None, max_size=None) as host:
        await _hello(host, "Host")
        await host.send(p.encode_client(p.CreateRoom(seats=2, id=2)))
        code = ""
        while not code:
            reply = p.decode_server(await host.recv())  # type: ignore[arg-type]
            if isinstance(reply, p.RoomSnapshot):
                code = reply.room["code"]
        silent = []
        for i in range(spectators):
            sock = socket.create_connection(("127.0.0.1", int(url.split(":")[2].split("/")[0])))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            ws = await connect(url, sock=sock, ping_interval=None, max_queue=1, max_size=None)
            await _hello(ws, f"Silent{i}")
            await ws.send(p.encode_client(p.Join(room=code, as_="spectator", id=2)))
            silent.append(ws)  # from here on it never reads
        toggles = 0
        started = last_sample = time.monotonic()
        while (now := time.monotonic()) - started < duration:
            if now - last_sample >= 1.0:
                sample(now - started)
                last_sample = now
            await host.send(p.encode_client(p.Ready(room=code, ready=toggles % 2 == 0, id=3)))
            while not isinstance(
                p.decode_server(await host.recv()),  # type: ignore[arg-type]
                p.Ok | p.Error,
            ):
                pass
            toggles += 1
        sample(time.monotonic() - started)
        for ws in silent:
            ws.transport.abort()
        return toggles


def _server(prefix: str, extra_env: dict[str, str]) -> ServerProcess:
    return launch_server_process(prefix, extra_env=extra_env, extra_args=["--log-level", "INFO"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    cycles = sub.add_parser("cycles")
    cycles.add_argument("--cycles", type=int, default=10_000)
    slow = sub.add_parser("slow")
    slow.add_argument("--spectators", type=int, default=10)
    slow.add_argument("--duration", type=float, default=300.0)
    for each in (cycles, slow):
        each.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.server_env)
    prefix = random_prefix("benchmem")
    if args.what == "cycles":  # every guest comes from 127.0.0.1
        env.setdefault("CRESCENT_NEW_PLAYERS_PER_ADDRESS_PER_MIN", "0")
    else:
        env.setdefault("CRESCENT_RATE_PER_S", "100000")
        env.setdefault("CRESCENT_RATE_BURST", "100000")
    server = _server(prefix, env)
    pid = server.proc.pid
    url = f"ws://127.0.0.1:{server.port}/ws"
    try:
        start = rss_mib(pid)
        print(f"server RSS at start: {start:.1f} MiB", flush=True)
        if args.what == "cycles":
            began = time.monotonic()
            asyncio.run(
                connection_cycles(
                    url,
                    args.cycles,
                    on_progress=lambda n: print(
                        f"  {n} cycles: RSS {rss_mib(pid):.1f} MiB", flush=True
                    ),
                )
            )
            end = rss_mib(pid)
            print(
                f"{args.cycles} cycles in {time.monotonic() - began:.0f} s: RSS "
                f"{start:.1f} -> {end:.1f} MiB ({(end / start - 1) * 100:+.1f} %)"
            )
            pauses = [entry["pause_ms"] for entry in gc_pauses(server)]
            if pauses:
                print(
                    f"full collections: {len(pauses)}, pause max {max(pauses):.1f} ms, "
                    f"mean {sum(pauses) / len(pauses):.1f} ms"
                )
        else:

            def sample(elapsed: float) -> None:
                if int(elapsed) % 10 == 0 or elapsed >= args.duration:
                    print(f"  {elapsed:5.0f} s: RSS {rss_mib(pid):.1f} MiB", flush=True)

            toggles = asyncio.run(slow_spectators(url, args.spectators, args.duration, sample))
            print(
                f"{args.spectators} silent spectators, {toggles} events in "
                f"{args.duration:.0f} s: RSS {start:.1f} -> {rss_mib(pid):.1f} MiB"
            )
            closed = server.log_text().count("closing a connection that does not read")
            print(f"spectators closed for not reading (4009): {closed}")
    finally:
        server.terminate()
        delete_prefix(prefix, redis_test_url())
    return 0


if __name__ == "__main__":
    sys.exit(main())
