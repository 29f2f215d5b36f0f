"""The load generator of bench/load.py: runs in its OWN process, apart from the server.

Three modes, one harness (aiohttp's WebSocket client, one coroutine per connection,
closed loop: send, await the reply, send the next, paced to ``--rate`` per
connection so the server's per-connection rate limit is never hit):

- ``race``: N racers in rooms of 4 play real games with the greedy strategy
  (crescent_client.strategy) from the views in their acks; finished rooms rematch
  and race again. Measures acknowledged actions/s and ack latency (send → ack).
- ``echo``: the same loop against bench/echo_server.py with act-sized requests
  (the echo answers ack-sized frames): the transport's own limit.
- ``idle``: K authenticated racers seated in rooms of 4 that just stay connected;
  prints ``IDLE READY <k>`` and holds them until stdin closes.

The result is one JSON line on stdout (``RESULT {...}``); ``WINDOW START``/``WINDOW
END`` lines let the parent sample the server's CPU for exactly the measured window.

The aiohttp client is used rather than ``websockets`` (which the client library
uses) because it costs the harness about half the CPU per message on this machine
(echo, 50 connections: 19.3k vs 9.8k round trips/s): a lighter harness leaves more
of the machine to the server under test.

The generator shares 2 cores with the server and Redis, so its hot path (one
acknowledged action) is kept cheap; none of this changes what is measured:

- ``Wire``: a request is framed here (RFC 6455 client frame: FIN + binary, masked
  with a fresh random key, aiohttp's C masking helper) and written straight
  to the connection's transport; ``ws.send_bytes`` is used when the transport's write
  buffer is backed up or closing. Frames are read from aiohttp's frame queue; pings
  are answered. race and echo use the same ``Wire``: echo stays the baseline on the
  same harness.
- Acks are recognised without decoding them: a racer knows the exact bytes the ack
  to its act starts and ends with (room, seq, id: ``server.core.wire_server.encode_ack``'s
  layout), and keeps the VIEW as its msgpack bytes. Any other frame (refused, error,
  a duplicate ack, another layout) is decoded with ``msgpack.unpackb`` into plain
  dicts; events (and the setup replies) go through the dataclass codec
  (crescent_wire.protocol). Progress frames are recognised by their first bytes and only
  counted.
- Decisions are memoised per room and round (``Script``): the 4 racers of a room play
  the same deal with the same deterministic GreedyStrategy, so they choose the same
  actions. The script holds, for each strategy call, the view it was given (msgpack
  bytes) and the action chosen. A racer whose view at its n-th call equals the
  script's n-th view reuses that action; the first racer to get there computes it
  with the script's GreedyStrategy; a racer whose view differs (it diverged, e.g.
  after a refused action) switches to its own GreedyStrategy, first replaying the
  script's earlier views into it so it remembers the same tried moves. Every racer
  therefore sends exactly the moves its own GreedyStrategy would have chosen from the
  views the server sent it; the moves are real and each one is validated, applied
  and acknowledged by the server (the RESULT counts decisions computed, reused and
  racers diverged).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import math
import os
import random
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Run as a script: the repository's root on the path, for bench.devtools.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import msgpack
from aiohttp._websocket.helpers import websocket_mask
from aiohttp.http_websocket import WebSocketError
from aiohttp.streams import EofStream

from bench.devtools import raise_nofile_limit
from crescent_client.strategy import GreedyStrategy
from crescent_wire.protocol import (
    ClientMessage,
    CreateRoom,
    Error,
    Event,
    Hello,
    Join,
    Progress,
    Ready,
    Rematch,
    RoomSnapshot,
    ServerMessage,
    Welcome,
    decode_server,
    encode_client,
)

ROOM_SIZE = 4
PROGRESS_PREFIX = b"\xa1t\xa8progress"  # after the map header: "t", "progress"
# An ack as server.core.wire_server.encode_ack lays it out: a map of 6 (with an id), "t": "ack",
# "room", "seq", "view", then "duplicate": false and "id" last.
ACK_MAP = 0x86
ACK_ROOM = b"\xa1t\xa3ack\xa4room"
ACK_SEQ = b"\xa3seq"
ACK_VIEW = b"\xa4view"
ACK_TAIL = b"\xa9duplicate\xc2\xa2id"
# The "act" request (crescent_wire.protocol.Act with an id, as encode_client packs it), built
# from pieces: "t": "act", "room": <room>, "seq": <seq>, "action": <action>, "id": <id>.
ACT_ROOM = b"\x85\xa1t\xa3act\xa4room"
ACT_SEQ = b"\xa3seq"
ACT_ACTION = b"\xa6action"
ACT_ID = b"\xa2id"
# gen-0 collection threshold in the window (default 700); LOADGEN_GC for measurements
GC_YOUNG_THRESHOLD = int(os.environ.get("LOADGEN_GC", "50000"))
# Above this many bytes waiting in the transport, sends go through aiohttp's writer.
WRITE_BUFFER_LIMIT = 1 << 16
PACK_LEN2 = struct.Struct("!BBH").pack
PACK_LEN3 = struct.Struct("!BBQ").pack
PACK_MASK = struct.Struct("!L").pack

packb = msgpack.Packer().pack  # msgpack.packb without a Packer built per call
unpackb = msgpack.unpackb
perf_counter_ns = time.perf_counter_ns
monotonic = time.monotonic
BINARY = aiohttp.WSMsgType.BINARY
PING = aiohttp.WSMsgType.PING
PONG = aiohttp.WSMsgType.PONG
CLOSE = aiohttp.WSMsgType.CLOSE


@dataclass
class Stats:
    measuring: bool = False
    acked: int = 0
    refused: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    latencies_us: list[int] = field(default_factory=list)  # send -> ack read off the socket
    task_latencies_us: list[int] = field(default_factory=list)  # send -> racer task resumed
    ack_bytes: list[int] = field(default_factory=list)
    act_bytes: list[int] = field(default_factory=list)
    progress_msgs: int = 0
    games_finished: int = 0
    rematches: int = 0
    racers_failed: int = 0
    first_failure: str | None = None
    decisions_computed: int = 0  # strategy calls made (shared script or own strategy)
    decisions_reused: int = 0  # actions taken from the room's script
    racers_diverged: int = 0  # racer-rounds that left the script for their own strategy

    def record_ack(self, sent_at: int, arrived_at: int) -> None:
        """One acknowledged request sent at ``sent_at`` (perf_counter_ns) whose reply's
        bytes were read off the socket at ``arrived_at`` (see Wire.arrived_ns): its
        latency to that moment, and to now (when the racer's task resumed)."""
        self.acked += 1
        now = perf_counter_ns()
        self.task_latencies_us.append((now - sent_at) // 1000)
        arrived = arrived_at if sent_at < arrived_at <= now else now
        self.latencies_us.append((arrived - sent_at) // 1000)

    def error(self, code: str) -> None:
        self.errors[code] = self.errors.get(code, 0) + 1


class ServerClosed(Exception):
    pass


class Overall:
    """At most ``rate`` sends per second over all connections (``--total-rate``): the
    load offered in the "at 50 % of the saturated rate" run is then that rate, not whatever the
    racers' own pacing would allow."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self.next_at = 0.0


class Pacer:
    """At most ``rate`` sends per second on one connection (closed loop otherwise), and
    within the ``overall`` rate when there is one."""

    overall: Overall | None = None  # set by run_race for every racer

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.next_at = 0.0

    def delay(self) -> float:
        """Seconds to wait before the next send (0.0: send now); books the send."""
        if not self.interval:
            return 0.0
        now = monotonic()
        slot = max(now, self.next_at)
        overall = self.overall
        if overall is not None:
            slot = max(slot, overall.next_at)
            overall.next_at = slot + overall.interval
        self.next_at = slot + self.interval
        return slot - now


def stamp_arrivals() -> None:
    """Make every client connection note when bytes last arrived (``arrived_ns``): see
    Wire. Patched on aiohttp's protocol class, before any connection exists, because an
    event loop may keep a connection's bound ``data_received`` (uvloop does)."""
    protocol_class = aiohttp.client_proto.ResponseHandler
    received = protocol_class.data_received
    if getattr(received, "stamps_arrivals", False):
        return

    def data_received(self: Any, data: bytes) -> None:
        self.arrived_ns = perf_counter_ns()
        received(self, data)

    data_received.stamps_arrivals = True  # type: ignore[attr-defined]
    protocol_class.data_received = data_received  # type: ignore[method-assign]


class Wire:
    """One connection's send and receive path (race and echo alike: one harness).

    Sends: the client frame is built here (FIN + binary opcode, mask bit, length, a
    fresh random masking key as RFC 6455 asks, the payload masked by aiohttp's C
    helper) and written straight to the transport: what aiohttp's WebSocketWriter
    does, without its coroutine and bookkeeping. When the transport's buffer is backed
    up (or closing), ``write`` returns False and the caller awaits ``ws.send_bytes``
    (flow control, errors).
    Receives: frames are taken from aiohttp's frame queue (what ``ws.receive()``
    awaits, without its bookkeeping); pings are answered, a close is answered and
    ends the racer, like ``ws.receive()`` with autoclose."""

    __slots__ = ("protocol", "queue", "random_bits", "transport", "ws")

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        # aiohttp's writer's transport and reader queue (private names; without them,
        # the public ws.send_bytes and ws.receive are used).
        writer = getattr(ws, "_writer", None)
        self.transport: asyncio.Transport | None = getattr(writer, "transport", None)
        self.queue: Any = getattr(ws, "_reader", None)
        # Masking keys as aiohttp's writer makes them: a PRNG seeded at random.
        self.random_bits = random.Random(os.urandom(16)).getrandbits
        # When bytes last arrived on this socket: the ack latency is measured to the
        # moment its bytes were read off the socket, not to when this racer's task
        # next ran (with hundreds of racers in one process, that adds the harness's own
        # scheduling delay, which a real client, alone in its process, would not have).
        self.protocol = getattr(getattr(ws, "_conn", None), "protocol", None)

    @property
    def arrived_ns(self) -> int:
        return getattr(self.protocol, "arrived_ns", 0)

    def write(self, payload: bytes) -> bool:
        """Write one binary frame now; False if the caller must use ``ws.send_bytes``."""
        transport = self.transport
        if (
            transport is None
            or transport.get_write_buffer_size() > WRITE_BUFFER_LIMIT
            or transport.is_closing()
        ):
            return False
        n = len(payload)
        if n < 126:
            header = bytes((0x82, 0x80 | n))
        elif n < 65536:
            header = PACK_LEN2(0x82, 0x80 | 126, n)
        else:
            header = PACK_LEN3(0x82, 0x80 | 127, n)
        mask = PACK_MASK(self.random_bits(32))
        body = bytearray(payload)
        websocket_mask(mask, body)
        transport.write(header + mask + body)
        return True

    async def send(self, payload: bytes) -> None:
        if not self.write(payload):
            await self.ws.send_bytes(payload)

    async def read(self) -> bytes:
        """The next binary frame's payload; a close (or anything else) ends the racer."""
        queue = self.queue
        if queue is None:
            msg = await self.ws.receive()
        else:
            try:
                msg = await queue.read()
            except (EofStream, WebSocketError) as exc:
                raise ServerClosed(f"connection ended: {exc!r}") from None
        msg_type = msg.type
        if msg_type is BINARY:
            data: bytes = msg.data
            return data
        if queue is not None and (msg_type is PING or msg_type is PONG):
            if msg_type is PING:
                await self.ws.pong(msg.data)
            return await self.read()
        if queue is not None and msg_type is CLOSE:
            await self.ws.close()  # answer the close (the server then ends the connection)
        raise ServerClosed(f"connection ended: {msg_type.name} {msg.data!r}")


class Script:
    """A room's greedy decisions in one round, shared by its racers (see the module
    docstring): for the n-th strategy call, the view it saw (msgpack bytes) and the
    action it chose."""

    __slots__ = ("actions", "round", "strategy", "views")

    def __init__(self, round_: int) -> None:
        self.round = round_
        self.views: list[bytes] = []
        self.actions: list[str | None] = []
        self.strategy = GreedyStrategy()


@dataclass
class Table:
    """What the racers of one room share: the current round's script (and, in the human
    mode, when each racer's moves were acknowledged: see Mover)."""

    script: Script | None = None
    movers: dict[str, Mover] = field(default_factory=dict)

    def script_for(self, round_: int) -> Script:
        script = self.script
        if script is None or script.round != round_:
            script = self.script = Script(round_)
        return script


class Player:
    """One racer's decisions in one round: the room's script while its views follow
    it, its own GreedyStrategy (caught up on the script's earlier views) once not."""

    __slots__ = ("calls", "own", "script", "stats")

    def __init__(self, script: Script, stats: Stats) -> None:
        self.script = script
        self.stats = stats
        self.calls = 0
        self.own: GreedyStrategy | None = None

    def next_action(self, view_bytes: bytes, view: dict[str, Any] | None) -> str | None:
        """GreedyStrategy's next action for this view (``view`` is ``view_bytes``
        decoded, or None: decoded here only if a strategy must look at it)."""
        n = self.calls
        self.calls = n + 1
        own = self.own
        if own is None:
            script = self.script
            views = script.views
            if n < len(views):
                if views[n] == view_bytes:
                    self.stats.decisions_reused += 1
                    return script.actions[n]
                # Diverged: from here on, this racer's own strategy, in the state the
                # shared one was in after the same n calls.
                own = self.own = GreedyStrategy()
                for earlier in views[:n]:
                    own.next_action(unpackb(earlier))
                self.stats.racers_diverged += 1
            else:
                action = script.strategy.next_action(
                    view if view is not None else unpackb(view_bytes)
                )
                views.append(view_bytes)
                script.actions.append(action)
                self.stats.decisions_computed += 1
                return action
        self.stats.decisions_computed += 1
        return own.next_action(view if view is not None else unpackb(view_bytes))


@dataclass
class Seat:
    """One racer's connection and what it knows of its room."""

    ws: aiohttp.ClientWebSocketResponse
    stats: Stats
    table: Table = field(default_factory=Table)
    room: str = ""
    round: int = 0
    start_at: int | None = None
    phase: str = "waiting"
    clock_offset_ms: int = 0
    player_id: str = ""
    next_id: int = 1
    wire: Wire = field(init=False)

    def __post_init__(self) -> None:
        self.wire = Wire(self.ws)

    async def send(self, msg: ClientMessage) -> int:
        frame = encode_client(msg)
        await self.wire.send(frame)
        return len(frame)

    async def receive(self) -> tuple[ServerMessage, int]:
        while True:
            data = await self.wire.read()
            # Progress is most of the traffic a racer receives and the bench needs none
            # of it: recognise its first bytes ({"t": "progress", …}) and only count it,
            # which leaves the generator's CPU for driving load.
            if data.startswith(PROGRESS_PREFIX, 1):
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


async def seat_room(
    session: aiohttp.ClientSession, url: str, stats: Stats, index: int, size: int = ROOM_SIZE
) -> list[Seat]:
    """Open ``size`` connections: the first creates a room, the others join it."""
    table = Table()
    seats = [Seat(await open_ws(session, url), stats, table) for _ in range(size)]
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


ACK, REFUSED, ERROR = 1, 2, 3


async def play_game(
    seat: Seat,
    player: Player,
    view_bytes: bytes | None,
    view: dict[str, Any] | None,
    pacer: Pacer,
    stop: asyncio.Event,
) -> None:
    """Send acts until the game ends (or ``stop``): the measured loop."""
    stats = seat.stats
    wire = seat.wire
    room = seat.room
    packed_room = packb(room)
    act_head = ACT_ROOM + packed_room + ACT_SEQ
    ack_head = ACK_ROOM + packed_room + ACK_SEQ
    seq = 1
    while not stop.is_set():
        action = player.next_action(view_bytes, view) if view_bytes is not None else None
        if action is None:
            break
        delay = pacer.delay()
        if delay:
            await asyncio.sleep(delay)
        seat.next_id = msg_id = seat.next_id + 1
        packed_seq = packb(seq)
        packed_id = packb(msg_id)
        act = b"".join((act_head, packed_seq, ACT_ACTION, packb(action), ACT_ID, packed_id))
        # The exact bytes the ack to this act starts with (after its map header) and
        # ends with: recognised without decoding it.
        head = ack_head + packed_seq + ACK_VIEW
        tail = ACK_TAIL + packed_id
        sent_at = perf_counter_ns()
        if not wire.write(act):
            await wire.ws.send_bytes(act)
        while True:
            data = await wire.read()
            if data.startswith(PROGRESS_PREFIX, 1):
                stats.progress_msgs += 1
                continue
            if data[0] == ACK_MAP and data.startswith(head, 1) and data.endswith(tail):
                outcome = ACK
                view_bytes = data[1 + len(head) : -len(tail)]
                view = None
                break
            obj = unpackb(data)
            kind = obj.get("t")
            if kind == "ack" and obj.get("seq") == seq:
                outcome = ACK
                view = obj.get("view")
                view_bytes = packb(view) if view is not None else None
                break
            if kind == "refused" and obj.get("seq") == seq:
                outcome = REFUSED
                break
            if kind == "error" and obj.get("id") == msg_id:
                outcome = ERROR
                break
            if kind == "progress":
                stats.progress_msgs += 1
            elif kind in ("event", "room"):
                seat.observe(decode_server(data))
        if outcome == ACK:
            if stats.measuring:
                stats.record_ack(sent_at, wire.arrived_ns)
                if len(stats.ack_bytes) < 5000:
                    stats.ack_bytes.append(len(data))
                    stats.act_bytes.append(len(act))
            seq += 1
            if action == "resign":
                break
        elif outcome == REFUSED:
            if stats.measuring:
                stats.refused += 1
        else:
            code = obj.get("code", "")
            stats.error(code)
            if code in ("race_over", "not_in_room", "not_racer"):
                break
            await asyncio.sleep(0.05)  # not_started, rate_limited: a moment later


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
        player = Player(seat.table.script_for(seat.round), stats)
        # The game's first view: joining again returns the snapshot with ``you.game``.
        view: dict[str, Any] | None = None
        for _ in range(40):
            snap = await seat.request(Join(room=seat.room, id=seat.new_id()))
            assert isinstance(snap, RoomSnapshot)
            view = snap.you.get("game")
            if view is not None:
                break
            await asyncio.sleep(0.05)
        await play_game(seat, player, packb(view) if view is not None else None, view, pacer, stop)
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


async def echo_loop(
    ws: aiohttp.ClientWebSocketResponse,
    stats: Stats,
    request: bytes,
    rate: float,
    stop: asyncio.Event,
) -> None:
    pacer = Pacer(rate)
    wire = Wire(ws)
    while not stop.is_set():
        delay = pacer.delay()
        if delay:
            await asyncio.sleep(delay)
        sent_at = perf_counter_ns()
        if not wire.write(request):
            await ws.send_bytes(request)
        await wire.read()
        if stats.measuring:  # measured as in the race
            stats.record_ack(sent_at, wire.arrived_ns)


def freeze_setup() -> None:
    """Move what the setup built (connections, sessions, seats) out of the garbage
    collector's sight, and collect young objects less often: the hot path makes no
    reference cycles, so the collections found nothing and only scanned the live
    objects (about 3 % of the generator's CPU at the default thresholds)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, 100, 100)


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
    task_lat = sorted(stats.task_latencies_us)

    def pct(p: float, lat: list[int] = lat) -> float | None:
        return lat[min(len(lat) - 1, int(p * len(lat)))] / 1000 if lat else None

    def median(values: list[int]) -> int | None:
        return sorted(values)[len(values) // 2] if values else None

    return {
        "acked": stats.acked,
        "seconds": round(elapsed, 3),
        "per_s": round(stats.acked / elapsed, 1) if elapsed else 0.0,
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "max_ms": lat[-1] / 1000 if lat else None,
        "task_p50_ms": pct(0.50, task_lat),
        "task_p99_ms": pct(0.99, task_lat),
        "refused": stats.refused,
        "errors": stats.errors,
        "ack_bytes": median(stats.ack_bytes),
        "act_bytes": median(stats.act_bytes),
        "progress_msgs": stats.progress_msgs,
        "games_finished": stats.games_finished,
        "rematches": stats.rematches,
        "racers_failed": stats.racers_failed,
        "first_failure": stats.first_failure,
        "decisions_computed": stats.decisions_computed,
        "decisions_reused": stats.decisions_reused,
        "racers_diverged": stats.racers_diverged,
        **extra,
    }


async def run_race(args: argparse.Namespace) -> dict[str, Any]:
    stats = Stats()
    rooms = max(1, args.connections // ROOM_SIZE)
    stop = asyncio.Event()
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        t0 = time.perf_counter()
        all_rooms = await gather_bounded(
            [seat_room(session, args.url, stats, i) for i in range(rooms)], 20
        )
        setup_s = time.perf_counter() - t0
        freeze_setup()
        if args.total_rate > 0:
            Pacer.overall = Overall(args.total_rate)
        tasks = [
            asyncio.create_task(guarded(play_rounds(seat, n == 0, args.rate, stop), stats))
            for seats in all_rooms
            for n, seat in enumerate(seats)
        ]
        # Racers are guarded: one stopped by a server fault is counted, not fatal.
        elapsed = await measure(stats, args.warmup, args.duration)
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for seats in all_rooms:
            for seat in seats:
                await seat.ws.close()
    return summary(
        stats,
        elapsed,
        mode="race",
        connections=rooms * ROOM_SIZE,
        setup_s=round(setup_s, 2),
        rate=args.rate,
    )


async def run_echo(args: argparse.Namespace) -> dict[str, Any]:
    stats = Stats()
    stop = asyncio.Event()
    request = bytes(args.request_size)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        conns = await gather_bounded(
            [open_ws(session, args.url) for _ in range(args.connections)], 50
        )
        freeze_setup()
        tasks = [
            asyncio.create_task(echo_loop(ws, stats, request, args.rate, stop)) for ws in conns
        ]
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
    return summary(
        stats,
        elapsed,
        mode="echo",
        connections=len(conns),
        rate=args.rate,
        request_size=args.request_size,
    )


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
    return {
        "mode": "idle",
        "connections": len(seats),
        "still_open": still_open,
        "closed_early": close_codes,
        "setup_s": round(setup_s, 2),
    }


# --- The human-paced mode ("human"): many quiet racers, spectators, progress delivery.

# Latency histograms: bucket b holds latencies in [e^(b/LOG_SCALE), e^((b+1)/LOG_SCALE))
# µs (about 1 % wide), so the parent can merge the histograms of several generator
# processes and read exact-enough percentiles from the sum.
LOG_SCALE = 100
SLOW_ACK_NS = 25_000_000
SLOT_NS = 100_000_000
MOVES_KEY = b"\xa5moves"  # the "moves" key in a packed VIEW (engine view(): an int follows)


def add_latency(hist: dict[int, int], us: int) -> None:
    bucket = int(LOG_SCALE * math.log(us)) if us > 1 else 0
    hist[bucket] = hist.get(bucket, 0) + 1


def view_moves(view_bytes: bytes) -> int | None:
    """The ``moves`` count of a packed VIEW, read without decoding it."""
    at = view_bytes.find(MOVES_KEY)
    if at < 0:
        return None
    i = at + len(MOVES_KEY)
    if i >= len(view_bytes):
        return None
    first = view_bytes[i]
    if first < 0x80:  # positive fixint
        return first
    width = {0xCC: 1, 0xCD: 2, 0xCE: 4}.get(first)
    if width is None:
        return None
    return int.from_bytes(view_bytes[i + 1 : i + 1 + width], "big")


class Mover:
    """When one racer's moves were acknowledged in the current round (the ack's bytes
    read off its socket, keyed by the VIEW's ``moves``): what the room-mates' and
    spectators' progress frames are timed against."""

    __slots__ = ("acked_at", "round")

    def __init__(self) -> None:
        self.round = 0
        self.acked_at: dict[int, int] = {}


@dataclass
class HumanStats:
    """What the racers and spectators of one generator process saw in the current
    window (``start``/``stop`` on stdin; ``window`` returns it and starts afresh)."""

    measuring: bool = False
    window_start_ns: int = 0
    acked: int = 0
    acts_sent: int = 0
    refused: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    ack_hist: dict[int, int] = field(default_factory=dict)  # send -> ack, µs
    spectator_hist: dict[int, int] = field(default_factory=dict)  # ack -> progress, µs
    racer_hist: dict[int, int] = field(default_factory=dict)  # ack -> progress (room-mates)
    lag_hist: dict[int, int] = field(default_factory=dict)  # this process's event-loop lag
    # The 100 ms slots (perf_counter, one clock for every process) in which an act was
    # sent whose ack took over 25 ms: a few slots = stalls, many = a slow server.
    slow_slots: set[int] = field(default_factory=set)
    progress_frames: int = 0
    games_finished: int = 0
    racers_failed: int = 0
    first_failure: str | None = None
    playing: int = 0  # racers in a game right now (not between games)
    setup_retries: int = 0  # rooms set up afresh after a failed setup
    rooms_not_seated: int = 0  # rooms whose setup failed 3 times (left out)

    def error(self, code: str) -> None:
        self.errors[code] = self.errors.get(code, 0) + 1

    def start(self) -> None:
        self.acked = self.acts_sent = self.refused = self.progress_frames = 0
        self.games_finished = self.racers_failed = 0
        self.first_failure = None
        self.errors, self.ack_hist, self.spectator_hist, self.racer_hist = {}, {}, {}, {}
        self.lag_hist = {}
        self.slow_slots = set()
        self.window_start_ns = perf_counter_ns()
        self.measuring = True

    def window(self) -> dict[str, Any]:
        self.measuring = False
        elapsed = (perf_counter_ns() - self.window_start_ns) / 1e9
        return {
            "seconds": round(elapsed, 3),
            "acked": self.acked,
            "acts_sent": self.acts_sent,
            "refused": self.refused,
            "errors": self.errors,
            "ack_hist": self.ack_hist,
            "spectator_hist": self.spectator_hist,
            "racer_hist": self.racer_hist,
            "lag_hist": self.lag_hist,
            "slow_slots": sorted(self.slow_slots),
            "progress_frames": self.progress_frames,
            "games_finished": self.games_finished,
            "racers_failed": self.racers_failed,
            "first_failure": self.first_failure,
            "playing": self.playing,
            "setup_retries": self.setup_retries,
            "rooms_not_seated": self.rooms_not_seated,
        }


class ActWait:
    """The one act a racer has in flight: the bytes its ack starts and ends with."""

    __slots__ = ("future", "head", "msg_id", "seq", "tail")

    def __init__(
        self, seq: int, msg_id: int, head: bytes, tail: bytes, future: asyncio.Future[Any]
    ) -> None:
        self.seq = seq
        self.msg_id = msg_id
        self.head = head
        self.tail = tail
        self.future = future


@dataclass
class HumanSeat(Seat):
    """A racer's or spectator's connection in the human mode. After the setup (which
    reads its own replies, as ``Seat``), a reader task takes every frame as it arrives:
    replies go to the request waiting for them, the ack to the act in flight, events
    update the phase, and progress frames are timed (a human's socket is read all the
    time, also while they think)."""

    spectator: bool = False
    times_progress: bool = True  # time progress frames here (spectators, one racer a room)
    mover: Mover = field(default_factory=Mover)
    pending: dict[int, asyncio.Future[ServerMessage]] = field(default_factory=dict)
    act_wait: ActWait | None = None
    changed: asyncio.Future[None] | None = None
    closed: BaseException | None = None
    countdown_round: int = 0
    finished_round: int = 0
    seen_round: int = 0
    seen: dict[str, int] = field(default_factory=dict)  # player -> last moves shown
    hstats: HumanStats = field(default_factory=HumanStats)

    def observe(self, msg: ServerMessage) -> None:
        super().observe(msg)
        if isinstance(msg, Event):
            if msg.kind == "countdown":
                self.countdown_round = self.round
            elif msg.kind == "finished":
                self.finished_round = self.round
        elif isinstance(msg, RoomSnapshot):
            phase = msg.room.get("phase")
            if phase in ("countdown", "racing", "finished"):
                self.countdown_round = max(self.countdown_round, self.round)
            if phase == "finished":
                self.finished_round = max(self.finished_round, self.round)
        changed = self.changed
        if changed is not None:
            self.changed = None
            if not changed.done():
                changed.set_result(None)

    async def wait_until(self, attr: str, at_least: int) -> None:
        """Until the round counter ``attr`` reaches ``at_least`` (events move it)."""
        while getattr(self, attr) < at_least:
            if self.closed is not None:
                raise ServerClosed(str(self.closed))
            if self.changed is None:
                self.changed = asyncio.get_running_loop().create_future()
            await self.changed

    async def read_loop(self) -> None:
        try:
            await self._read_frames()
        except BaseException as exc:
            self.closed = exc
            for future in [*self.pending.values(), self.changed] + (
                [self.act_wait.future] if self.act_wait else []
            ):
                if future is not None and not future.done():
                    future.set_exception(ServerClosed(f"connection ended: {exc!r}"))
            if not isinstance(exc, (ServerClosed, EofStream, WebSocketError)):
                raise

    async def _read_frames(self) -> None:
        wire = self.wire
        while True:
            data = await wire.read()
            now = perf_counter_ns()
            arrived = wire.arrived_ns
            if not 0 < arrived <= now:
                arrived = now
            if data.startswith(PROGRESS_PREFIX, 1):
                self.hstats.progress_frames += self.hstats.measuring
                if self.times_progress:
                    self.on_progress(data, arrived)
                continue
            act = self.act_wait
            if (
                act is not None
                and data[0] == ACK_MAP
                and data.startswith(act.head, 1)
                and data.endswith(act.tail)
            ):
                self.act_done(ACK, data[1 + len(act.head) : -len(act.tail)], arrived, "")
                continue
            obj = unpackb(data)
            kind = obj.get("t")
            msg_id = obj.get("id")
            if act is not None:
                if kind == "ack" and obj.get("seq") == act.seq:
                    view = obj.get("view")
                    self.act_done(ACK, packb(view) if view is not None else None, arrived, "")
                    continue
                if kind == "refused" and obj.get("seq") == act.seq:
                    self.act_done(REFUSED, None, arrived, str(obj.get("code", "")))
                    continue
                if kind == "error" and msg_id == act.msg_id:
                    self.act_done(ERROR, None, arrived, str(obj.get("code", "")))
                    continue
            if kind == "progress":
                self.hstats.progress_frames += self.hstats.measuring
                if self.times_progress:
                    self.on_progress(data, arrived)
                continue
            msg = decode_server(data)
            self.observe(msg)
            if msg_id is not None and not isinstance(msg, Event):
                future = self.pending.pop(msg_id, None)
                if future is not None and not future.done():
                    future.set_result(msg)

    def act_done(self, outcome: int, view_bytes: bytes | None, arrived: int, code: str) -> None:
        act = self.act_wait
        assert act is not None
        self.act_wait = None
        if outcome == ACK and view_bytes is not None:
            moves = view_moves(view_bytes)
            if moves is not None:
                self.mover.acked_at[moves] = arrived
        if not act.future.done():
            act.future.set_result((outcome, view_bytes, arrived, code))

    def on_progress(self, data: bytes, arrived: int) -> None:
        """Time a progress frame: for each other racer whose ``moves`` it shows for
        the first time on this connection, the delay since that racer's ack for the
        move was read off its socket (the room's racers all live in this process)."""
        stats = self.hstats
        frame = unpackb(data)
        round_ = frame.get("round", 0)
        seen = self.seen
        if round_ != self.seen_round:
            self.seen_round = round_
            seen.clear()
        measuring = stats.measuring
        hist = stats.spectator_hist if self.spectator else stats.racer_hist
        movers = self.table.movers
        me = self.player_id
        for racer in frame.get("racers", ()):
            pid = racer.get("player")
            moves = racer.get("moves", 0)
            if pid == me or moves <= seen.get(pid, 0):
                continue
            seen[pid] = moves
            mover = movers.get(pid)
            if not measuring or mover is None or mover.round != round_:
                continue
            acked_at = mover.acked_at.get(moves)
            if acked_at is not None and stats.window_start_ns <= acked_at <= arrived:
                add_latency(hist, (arrived - acked_at) // 1000)

    async def call(self, msg: ClientMessage) -> ServerMessage:
        """``request`` through the reader task (retrying ``internal_error`` likewise)."""
        assert msg.id is not None
        reply: ServerMessage | None = None
        for attempt in range(40):
            future: asyncio.Future[ServerMessage] = asyncio.get_running_loop().create_future()
            self.pending[msg.id] = future
            await self.send(msg)
            reply = await future
            if not isinstance(reply, Error):
                return reply
            self.hstats.error(f"{msg.TYPE}:{reply.code}")
            if reply.code != "internal_error":
                break
            await asyncio.sleep(random.uniform(0.01, 0.05) * min(attempt + 1, 10))
        assert isinstance(reply, Error)
        raise RuntimeError(f"{msg.TYPE}: {reply.code} {reply.message}")

    async def act(self, seq: int, action: str) -> tuple[int, bytes | None, str]:
        """Send one act and wait for its outcome (ACK, REFUSED, ERROR); timed."""
        stats = self.hstats
        self.next_id = msg_id = self.next_id + 1
        packed_room = packb(self.room)
        packed_seq = packb(seq)
        packed_id = packb(msg_id)
        frame = b"".join(
            (
                ACT_ROOM,
                packed_room,
                ACT_SEQ,
                packed_seq,
                ACT_ACTION,
                packb(action),
                ACT_ID,
                packed_id,
            )
        )
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.act_wait = ActWait(
            seq,
            msg_id,
            ACK_ROOM + packed_room + ACK_SEQ + packed_seq + ACK_VIEW,
            ACK_TAIL + packed_id,
            future,
        )
        measuring = stats.measuring
        if measuring:
            stats.acts_sent += 1
        sent_at = perf_counter_ns()
        await self.wire.send(frame)
        outcome, view_bytes, arrived, code = await future
        if measuring and stats.measuring:
            if outcome == ACK:
                stats.acked += 1
                took = arrived - sent_at
                add_latency(stats.ack_hist, max(1, took // 1000))
                if took > SLOW_ACK_NS:
                    stats.slow_slots.add(sent_at // SLOT_NS)
            elif outcome == REFUSED:
                stats.refused += 1
        return outcome, view_bytes, code


async def seat_human_room(
    session: aiohttp.ClientSession,
    url: str,
    stats: HumanStats,
    name: str,
    spectators: int,
) -> list[HumanSeat]:
    """A room of 4 racers (the first creates it) and ``spectators`` spectators. A room
    whose setup fails (e.g. an overloaded server let a ``hello`` time out: close 4010)
    is closed and set up afresh, at most 3 times."""
    failure: BaseException | None = None
    for _ in range(3):
        opened: list[HumanSeat] = []
        try:
            return await seat_human_room_once(session, url, stats, name, spectators, opened)
        except (RuntimeError, ServerClosed, aiohttp.ClientError, AssertionError) as exc:
            failure = exc
            stats.setup_retries += 1
            await asyncio.gather(*(seat.ws.close() for seat in opened), return_exceptions=True)
    assert failure is not None
    raise failure


async def seat_human_room_once(
    session: aiohttp.ClientSession,
    url: str,
    stats: HumanStats,
    name: str,
    spectators: int,
    opened: list[HumanSeat],
) -> list[HumanSeat]:
    table = Table()

    async def open_seat(n: int) -> HumanSeat:
        seat = HumanSeat(await open_ws(session, url), Stats(), table, hstats=stats)
        seat.spectator = n >= ROOM_SIZE
        # Decoding every progress frame costs the generator CPU the server then lacks:
        # room-mates' delivery is timed on one racer of each room (the second).
        seat.times_progress = seat.spectator or n == 1
        opened.append(seat)
        await seat.hello(f"{name}-{n}")
        return seat

    async def all_of(coros: list[Any]) -> list[Any]:
        results = await asyncio.gather(*coros, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return results

    seats: list[HumanSeat] = await all_of([open_seat(n) for n in range(ROOM_SIZE + spectators)])
    host = seats[0]
    snap = await host.request(CreateRoom(seats=ROOM_SIZE, id=host.new_id()))
    assert isinstance(snap, RoomSnapshot)
    code = snap.room["code"]
    for seat in seats:
        seat.room = code
    await all_of(
        [
            seat.request(
                Join(room=code, as_="spectator" if seat.spectator else "racer", id=seat.new_id())
            )
            for seat in seats[1:]
        ]
    )
    for seat in seats[:ROOM_SIZE]:
        table.movers[seat.player_id] = seat.mover
    return seats


async def play_human(seat: HumanSeat, host: bool, args: argparse.Namespace) -> None:
    """A person at the table: ready, wait for the start, play the game with the greedy
    strategy, thinking a random while (``--rate`` actions per second on average) before
    each action; when the race is over the host asks for a rematch; again."""
    stats = seat.hstats
    mean = 1.0 / args.rate
    low, high = mean * (1 - args.think_spread), mean * (1 + args.think_spread)
    await asyncio.sleep(random.uniform(0, args.start_spread))
    while True:
        round_ = seat.round
        await seat.call(Ready(room=seat.room, ready=True, id=seat.new_id()))
        await seat.wait_until("countdown_round", round_)
        round_ = seat.round
        assert seat.start_at is not None
        delay = (seat.start_at - (time.time_ns() // 1_000_000 + seat.clock_offset_ms)) / 1000
        await asyncio.sleep(max(0.0, delay) + 0.005)
        seat.mover.round = round_
        seat.mover.acked_at = {}
        player = Player(seat.table.script_for(round_), seat.stats)
        view: dict[str, Any] | None = None
        for _ in range(40):
            snap = await seat.call(Join(room=seat.room, id=seat.new_id()))
            assert isinstance(snap, RoomSnapshot)
            view = snap.you.get("game")
            if view is not None:
                break
            await asyncio.sleep(0.05)
        view_bytes = packb(view) if view is not None else None
        seq = 1
        stats.playing += 1
        try:
            while view_bytes is not None:
                action = player.next_action(view_bytes, view)
                if action is None:
                    break
                await asyncio.sleep(random.uniform(low, high))  # thinking
                outcome, new_view, code = await seat.act(seq, action)
                if outcome == ACK:
                    view_bytes, view = new_view, None
                    seq += 1
                    if action == "resign":
                        break
                elif outcome == ERROR:
                    stats.error(code)
                    if code in ("race_over", "not_in_room", "not_racer"):
                        break
        finally:
            stats.playing -= 1
        if stats.measuring:
            stats.games_finished += 1
        await seat.wait_until("finished_round", round_)
        if host:
            await seat.call(Rematch(room=seat.room, id=seat.new_id()))
        await seat.wait_until("round", round_ + 1)


async def watch_lag(stats: HumanStats) -> None:
    """How late this process's event loop wakes a 5 ms timer: the generator's own delay,
    which every latency it measures may include (its column in the step table)."""
    while True:
        before = perf_counter_ns()
        await asyncio.sleep(LAG_TICK_S)
        late = perf_counter_ns() - before - LAG_TICK_NS
        if stats.measuring:
            add_latency(stats.lag_hist, max(1, late // 1000))


LAG_TICK_S = 0.005
LAG_TICK_NS = 5_000_000


async def guarded_human(racer: Any, stats: HumanStats) -> None:
    try:
        await racer
    except (RuntimeError, ServerClosed, aiohttp.ClientError, AssertionError) as exc:
        stats.racers_failed += 1
        if stats.first_failure is None:
            stats.first_failure = f"{type(exc).__name__}: {exc}"[:200]


async def run_human(args: argparse.Namespace) -> dict[str, Any]:
    """Seat ``--connections`` racers (rooms of 4, ``--spectators`` each), let them play
    and obey stdin: ``start`` opens a window, ``stop`` prints ``STEP {...}`` (that
    window's figures), anything else (or EOF) ends the run."""
    stats = HumanStats()
    rooms = max(1, args.connections // ROOM_SIZE)
    connector = aiohttp.TCPConnector(limit=0)
    tasks: list[asyncio.Task[None]] = []
    async with aiohttp.ClientSession(connector=connector) as session:

        async def seat_and_play(index: int) -> list[HumanSeat]:
            try:
                seats = await seat_human_room(
                    session, args.url, stats, f"{args.name}-{index}", args.spectators
                )
            except (RuntimeError, ServerClosed, aiohttp.ClientError, AssertionError) as exc:
                stats.rooms_not_seated += 1
                if stats.first_failure is None:
                    stats.first_failure = f"setup: {type(exc).__name__}: {exc}"[:200]
                return []
            tasks.extend(asyncio.create_task(seat.read_loop()) for seat in seats)
            tasks.extend(
                asyncio.create_task(guarded_human(play_human(seat, n == 0, args), stats))
                for n, seat in enumerate(seats[:ROOM_SIZE])
            )
            return seats

        t0 = time.perf_counter()
        all_rooms = await gather_bounded([seat_and_play(i) for i in range(rooms)], 20)
        setup_s = time.perf_counter() - t0
        freeze_setup()
        tasks.append(asyncio.create_task(watch_lag(stats)))
        seats = [seat for room in all_rooms for seat in room]
        watching = sum(1 for seat in seats if seat.spectator)
        print(f"SEATED {len(seats) - watching} {watching} {setup_s:.2f}", flush=True)
        loop = asyncio.get_running_loop()
        while True:
            command = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
            if command == "start":
                stats.start()
            elif command == "stop":
                print("STEP " + json.dumps(stats.window()), flush=True)
            else:
                break
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await gather_bounded([seat.ws.close() for seat in seats], 500)
    return {
        "mode": "human",
        "racers": len(seats) - watching,
        "spectators": watching,
        "setup_s": round(setup_s, 2),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="load generator (used by bench/load.py)")
    parser.add_argument("mode", choices=("race", "echo", "idle", "human"))
    parser.add_argument("--url", required=True)
    parser.add_argument("--connections", type=int, default=400)
    parser.add_argument(
        "--loop",
        choices=("uvloop", "asyncio"),
        default=os.environ.get("LOADGEN_LOOP", "uvloop"),
        help="event loop of the generator (default uvloop: the cheaper harness)",
    )
    parser.add_argument(
        "--total-rate",
        type=float,
        default=0.0,
        help="race: at most this many sends per second over all racers (0: no overall limit)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=28.0,
        help="max sends per second per connection (server limit: 30)",
    )
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--request-size", type=int, default=50)
    parser.add_argument("--name", default="h", help="human: prefix of the players' names")
    parser.add_argument("--spectators", type=int, default=1, help="human: spectators per room")
    parser.add_argument(
        "--think-spread",
        type=float,
        default=0.75,
        help="human: think time uniform in mean x (1 -/+ this); mean = 1 / --rate",
    )
    parser.add_argument(
        "--start-spread", type=float, default=3.0, help="human: first ready within this (s)"
    )
    args = parser.parse_args(argv)
    raise_nofile_limit()
    stamp_arrivals()
    runner = {"race": run_race, "echo": run_echo, "idle": run_idle, "human": run_human}[args.mode]
    if args.loop == "uvloop":
        import uvloop

        result = uvloop.run(runner(args))
    else:
        result = asyncio.run(runner(args))
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
