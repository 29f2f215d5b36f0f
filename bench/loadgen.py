"""The load generator of bench/load.py: runs in its OWN process, apart from the server.

Three modes, one harness (aiohttp's WebSocket client, one coroutine per connection,
closed loop: send, await the reply, send the next, paced to ``--rate`` per
connection so the server's per-connection rate limit is never hit):

- ``race``: N racers in rooms of 4 play real games with the greedy strategy
  (crescent_client.strategy) from the views in their acks; finished rooms rematch
  and race again. Measures acknowledged actions/s and ack latency.
- ``echo``: the same loop against bench/echo_server.py with act-sized requests
  (the echo answers ack-sized frames): the transport's own limit.
- ``idle``: K authenticated racers seated in rooms of 4 that just stay connected;
  prints ``IDLE READY <k>`` and holds them until stdin closes.

Messages are encoded/decoded with server.protocol (the one codec). The result is one
JSON line on stdout (``RESULT {...}``); ``WINDOW START``/``WINDOW END`` lines let the
parent sample the server's CPU for exactly the measured window.

The aiohttp client is used rather than ``websockets`` (which the client library
uses) because it costs the harness about half the CPU per message on this machine
(echo, 50 connections: 19.3k vs 9.8k round trips/s): a lighter harness leaves more
of the machine to the server under test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import resource
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from crescent_client.strategy import GreedyStrategy
from server.protocol import (
    Ack,
    Act,
    ClientMessage,
    CreateRoom,
    Error,
    Event,
    Hello,
    Join,
    Progress,
    Ready,
    Refused,
    Rematch,
    RoomSnapshot,
    ServerMessage,
    Welcome,
    decode_server,
    encode_client,
)

ROOM_SIZE = 4
PROGRESS_PREFIX = b"\xa1t\xa8progress"  # after the map header: "t", "progress"


def raise_nofile_limit() -> int:
    """Raise the soft open-files limit to the hard limit (20,000 here); return it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


@dataclass
class Stats:
    measuring: bool = False
    acked: int = 0
    refused: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    latencies_us: list[int] = field(default_factory=list)
    ack_bytes: list[int] = field(default_factory=list)
    act_bytes: list[int] = field(default_factory=list)
    progress_msgs: int = 0
    games_finished: int = 0
    rematches: int = 0
    racers_failed: int = 0
    first_failure: str | None = None

    def error(self, code: str) -> None:
        self.errors[code] = self.errors.get(code, 0) + 1


class ServerClosed(Exception):
    pass


class Pacer:
    """At most ``rate`` sends per second on one connection (closed loop otherwise)."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.next_at = 0.0

    async def wait(self) -> None:
        if not self.interval:
            return
        now = time.monotonic()
        if self.next_at > now:
            await asyncio.sleep(self.next_at - now)
            now = self.next_at
        self.next_at = max(now, self.next_at) + self.interval


@dataclass
class Seat:
    """One racer's connection and what it knows of its room."""

    ws: aiohttp.ClientWebSocketResponse
    stats: Stats
    room: str = ""
    round: int = 0
    start_at: int | None = None
    phase: str = "waiting"
    clock_offset_ms: int = 0
    player_id: str = ""
    next_id: int = 1

    async def send(self, msg: ClientMessage) -> int:
        frame = encode_client(msg)
        await self.ws.send_bytes(frame)
        return len(frame)

    async def receive(self) -> tuple[ServerMessage, int]:
        while True:
            msg = await self.ws.receive()
            if msg.type != aiohttp.WSMsgType.BINARY:
                raise ServerClosed(f"connection ended: {msg.type.name} {msg.data!r}")
            data = msg.data
            # Progress is most of the traffic a racer receives and the bench needs none
            # of it: recognise its first bytes ({"t": "progress", …}) and only count it,
            # which leaves the generator's CPU for driving load.
            if data[1:11] == PROGRESS_PREFIX:
                self.stats.progress_msgs += 1
                continue
            decoded = decode_server(data)
            self.observe(decoded)
            return decoded, len(data)

    def observe(self, msg: ServerMessage) -> None:
        """Follow the room's phase from pushed events (the only ones the bench needs)."""
        if isinstance(msg, Event):
            if msg.kind == "countdown":
                self.phase = "countdown"
                self.start_at = msg.data.get("start_at")
                self.round = msg.data.get("round", self.round)
            elif msg.kind == "finished":
                self.phase = "finished"
            elif msg.kind == "rematch":
                self.phase = "waiting"
                self.round = msg.data.get("round", self.round + 1)
        elif isinstance(msg, Progress):
            self.stats.progress_msgs += 1
        elif isinstance(msg, RoomSnapshot):
            room = msg.room
            self.phase = room.get("phase", self.phase)
            self.round = room.get("round", self.round)
            self.start_at = room.get("start_at")

    async def request(self, msg: ClientMessage) -> ServerMessage:
        """Send a request with an id; read (and observe) frames until its reply.

        ``internal_error`` means "nothing was applied; retry" (docs/protocol.md): retried
        a few times, counted in the errors."""
        for attempt in range(40):
            await self.send(msg)
            while True:
                reply, _ = await self.receive()
                if getattr(reply, "id", None) == msg.id and not isinstance(reply, Event):
                    break
            if not isinstance(reply, Error):
                return reply
            self.stats.error(f"{msg.TYPE}:{reply.code}")
            if reply.code != "internal_error":
                break
            # Random backoff: racers retrying in step would collide again.
            await asyncio.sleep(random.uniform(0.01, 0.05) * min(attempt + 1, 10))
        assert isinstance(reply, Error)
        raise RuntimeError(f"{msg.TYPE}: {reply.code} {reply.message}")

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    async def hello(self, name: str) -> None:
        welcome = await self.request(Hello(name=name, id=self.new_id()))
        assert isinstance(welcome, Welcome)
        self.player_id = welcome.player["id"]
        self.clock_offset_ms = welcome.server_time - time.time_ns() // 1_000_000

    async def wait_phase(self, *phases: str) -> None:
        while self.phase not in phases:
            await self.receive()


async def open_ws(session: aiohttp.ClientSession, url: str) -> aiohttp.ClientWebSocketResponse:
    return await session.ws_connect(url, compress=0, autoping=True, max_msg_size=1 << 20)


async def seat_room(session: aiohttp.ClientSession, url: str, stats: Stats, index: int,
                    size: int = ROOM_SIZE) -> list[Seat]:
    """Open ``size`` connections: the first creates a room, the others join it."""
    seats = [Seat(await open_ws(session, url), stats) for _ in range(size)]
    for n, seat in enumerate(seats):
        await seat.hello(f"bench-{index}-{n}")
    snap = await seats[0].request(CreateRoom(seats=size, id=seats[0].new_id()))
    assert isinstance(snap, RoomSnapshot)
    code = snap.room["code"]
    for seat in seats:
        seat.room = code
    for seat in seats[1:]:
        await seat.request(Join(room=code, id=seat.new_id()))
    return seats


async def play_rounds(seat: Seat, host: bool, rate: float, stop: asyncio.Event) -> None:
    """Ready, wait for the start, play the game to its end, rematch; until ``stop``."""
    stats = seat.stats
    pacer = Pacer(rate)
    # Spread the first round's starts: hundreds of rooms readying in the same
    # millisecond is a thundering herd no real lobby sees.
    await asyncio.sleep(random.uniform(0, 2.0))
    while not stop.is_set():
        await seat.request(Ready(room=seat.room, ready=True, id=seat.new_id()))
        await seat.wait_phase("countdown")
        assert seat.start_at is not None
        delay = (seat.start_at - (time.time_ns() // 1_000_000 + seat.clock_offset_ms)) / 1000
        await asyncio.sleep(max(0.0, delay) + 0.005)  # a little after, for the clock estimate
        strategy = GreedyStrategy()
        seq = 1
        # The game's first view: joining again returns the snapshot with ``you.game``.
        view: dict[str, Any] | None = None
        for _ in range(40):
            snap = await seat.request(Join(room=seat.room, id=seat.new_id()))
            assert isinstance(snap, RoomSnapshot)
            view = snap.you.get("game")
            if view is not None:
                break
            await asyncio.sleep(0.05)
        while not stop.is_set():
            action = strategy.next_action(view) if view is not None else None
            if action is None:
                break
            await pacer.wait()
            msg_id = seat.new_id()
            sent_at = time.perf_counter_ns()
            act_size = await seat.send(Act(room=seat.room, seq=seq, action=action, id=msg_id))
            while True:
                reply, size = await seat.receive()
                if isinstance(reply, Ack | Refused) and reply.seq == seq:
                    break
                if isinstance(reply, Error) and reply.id == msg_id:
                    break
            if isinstance(reply, Ack):
                if stats.measuring:
                    stats.acked += 1
                    stats.latencies_us.append((time.perf_counter_ns() - sent_at) // 1000)
                    if len(stats.ack_bytes) < 5000:
                        stats.ack_bytes.append(size)
                        stats.act_bytes.append(act_size)
                seq += 1
                view = reply.view
                if action == "resign":
                    break
            elif isinstance(reply, Refused):
                if stats.measuring:
                    stats.refused += 1
            else:
                assert isinstance(reply, Error)
                stats.error(reply.code)
                if reply.code in ("race_over", "not_in_room", "not_racer"):
                    break
                await asyncio.sleep(0.05)  # not_started, rate_limited: a moment later
        stats.games_finished += 1
        await seat.wait_phase("finished")
        if host:
            await seat.request(Rematch(room=seat.room, id=seat.new_id()))
            stats.rematches += 1
        await seat.wait_phase("waiting")


async def guarded(racer: Any, stats: Stats) -> None:
    """A racer that meets a server fault it cannot get past (or a dropped connection)
    stops and is counted; the others go on, so the figures still come out."""
    try:
        await racer
    except (RuntimeError, ServerClosed, aiohttp.ClientError, AssertionError) as exc:
        stats.racers_failed += 1
        if stats.first_failure is None:
            stats.first_failure = f"{type(exc).__name__}: {exc}"[:200]


async def echo_loop(ws: aiohttp.ClientWebSocketResponse, stats: Stats, request: bytes,
                    rate: float, stop: asyncio.Event) -> None:
    pacer = Pacer(rate)
    while not stop.is_set():
        await pacer.wait()
        sent_at = time.perf_counter_ns()
        await ws.send_bytes(request)
        msg = await ws.receive()
        if msg.type != aiohttp.WSMsgType.BINARY:
            raise ServerClosed(f"echo connection ended: {msg.type.name}")
        if stats.measuring:
            stats.acked += 1
            stats.latencies_us.append((time.perf_counter_ns() - sent_at) // 1000)


async def measure(stats: Stats, warmup: float, duration: float) -> float:
    await asyncio.sleep(warmup)
    stats.measuring = True
    print("WINDOW START", flush=True)
    started = time.perf_counter()
    await asyncio.sleep(duration)
    stats.measuring = False
    elapsed = time.perf_counter() - started
    print("WINDOW END", flush=True)
    return elapsed


async def gather_bounded(coros: list[Any], limit: int) -> list[Any]:
    semaphore = asyncio.Semaphore(limit)

    async def bounded(coro: Any) -> Any:
        async with semaphore:
            return await coro

    return await asyncio.gather(*(bounded(c) for c in coros))


def summary(stats: Stats, elapsed: float, **extra: Any) -> dict[str, Any]:
    lat = sorted(stats.latencies_us)

    def pct(p: float) -> float | None:
        return lat[min(len(lat) - 1, int(p * len(lat)))] / 1000 if lat else None

    def median(values: list[int]) -> int | None:
        return sorted(values)[len(values) // 2] if values else None

    return {
        "acked": stats.acked, "seconds": round(elapsed, 3),
        "per_s": round(stats.acked / elapsed, 1) if elapsed else 0.0,
        "p50_ms": pct(0.50), "p99_ms": pct(0.99), "max_ms": lat[-1] / 1000 if lat else None,
        "refused": stats.refused, "errors": stats.errors,
        "ack_bytes": median(stats.ack_bytes), "act_bytes": median(stats.act_bytes),
        "progress_msgs": stats.progress_msgs, "games_finished": stats.games_finished,
        "rematches": stats.rematches, "racers_failed": stats.racers_failed,
        "first_failure": stats.first_failure, **extra,
    }


async def run_race(args: argparse.Namespace) -> dict[str, Any]:
    stats = Stats()
    rooms = max(1, args.connections // ROOM_SIZE)
    stop = asyncio.Event()
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        t0 = time.perf_counter()
        all_rooms = await gather_bounded(
            [seat_room(session, args.url, stats, i) for i in range(rooms)], 20)
        setup_s = time.perf_counter() - t0
        tasks = [asyncio.create_task(guarded(play_rounds(seat, n == 0, args.rate, stop), stats))
                 for seats in all_rooms for n, seat in enumerate(seats)]
        # Racers are guarded: one stopped by a server fault is counted, not fatal.
        elapsed = await measure(stats, args.warmup, args.duration)
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for seats in all_rooms:
            for seat in seats:
                await seat.ws.close()
    return summary(stats, elapsed, mode="race", connections=rooms * ROOM_SIZE,
                   setup_s=round(setup_s, 2), rate=args.rate)


async def run_echo(args: argparse.Namespace) -> dict[str, Any]:
    stats = Stats()
    stop = asyncio.Event()
    request = bytes(args.request_size)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        conns = await gather_bounded([open_ws(session, args.url)
                                      for _ in range(args.connections)], 50)
        tasks = [asyncio.create_task(echo_loop(ws, stats, request, args.rate, stop))
                 for ws in conns]
        window = asyncio.create_task(measure(stats, args.warmup, args.duration))
        done, _ = await asyncio.wait([window, *tasks], return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is not window:
                task.result()  # an echo connection failed: no bogus figure
        elapsed = await window
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for ws in conns:
            await ws.close()
    return summary(stats, elapsed, mode="echo", connections=len(conns), rate=args.rate,
                   request_size=args.request_size)


async def run_idle(args: argparse.Namespace) -> dict[str, Any]:
    stats = Stats()
    rooms = max(1, args.connections // ROOM_SIZE)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        readers: list[asyncio.Task[None]] = []
        close_codes: dict[str, int] = {}

        async def drain(seat: Seat) -> None:
            # Keep reading so the server's heartbeat pings get their pongs.
            with contextlib.suppress(Exception):
                async for _ in seat.ws:
                    pass
            code = str(seat.ws.close_code)
            close_codes[code] = close_codes.get(code, 0) + 1

        async def seat_and_drain(index: int) -> list[Seat]:
            seats = await seat_room(session, args.url, stats, index)
            # Read from the moment the room is seated: a setup of thousands of rooms
            # takes longer than the server's heartbeat allows a silent socket.
            readers.extend(asyncio.create_task(drain(seat)) for seat in seats)
            return seats

        t0 = time.perf_counter()
        all_rooms = await gather_bounded([seat_and_drain(i) for i in range(rooms)], 100)
        setup_s = time.perf_counter() - t0
        seats = [seat for room in all_rooms for seat in room]
        print(f"IDLE READY {len(seats)}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        still_open = sum(1 for seat in seats if not seat.ws.closed)
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        await gather_bounded([seat.ws.close() for seat in seats], 500)
    return {"mode": "idle", "connections": len(seats), "still_open": still_open,
            "closed_early": close_codes, "setup_s": round(setup_s, 2)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="load generator (used by bench/load.py)")
    parser.add_argument("mode", choices=("race", "echo", "idle"))
    parser.add_argument("--url", required=True)
    parser.add_argument("--connections", type=int, default=400)
    parser.add_argument("--rate", type=float, default=28.0,
                        help="max sends per second per connection (server limit: 30)")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--request-size", type=int, default=50)
    args = parser.parse_args(argv)
    raise_nofile_limit()
    runner = {"race": run_race, "echo": run_echo, "idle": run_idle}[args.mode]
    result = asyncio.run(runner(args))
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
