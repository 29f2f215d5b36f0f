"""The asyncio client: one WebSocket connection (``websockets``) to a Crescent Race server.

Usage (see docs/client.md)::

    async with connect("ws://127.0.0.1:8080/ws", name="Ada") as client:
        snapshot = await client.create_room(seats=2)
        await client.ready()
        await client.wait_for_start()
        reply = await client.act("p3-ad")      # Ack or Refused
        async for event in client.events():     # Event, Progress, Reconnected …
            ...

Messages are encoded and decoded by ``crescent_wire.protocol`` (the one codec).

Reconnecting: when the connection drops (network, server restart, deploy: close
1001), the client reconnects with backoff, sends ``hello`` with its token, joins
every room again with the role it had, and resends every action not yet
acknowledged. The server never applies a ``seq`` twice, so that is safe; the
waiting ``act()`` call simply gets its ``Ack`` (possibly ``duplicate``). Other
requests that were in flight when the connection dropped fail with
``ConnectionLost``: the caller decides whether repeating them makes sense.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from crescent_client.errors import ConnectionLost, NotInRoom, RequestFailed, RequestTimeout
from crescent_client.rooms import RoomState
from crescent_client.tournaments import TournamentState
from crescent_wire.errors import ServerError
from crescent_wire.protocol import (
    Ack,
    Act,
    ClientMessage,
    CreateRoom,
    DailyBoard,
    DailyDays,
    DailyMe,
    DailyReply,
    DailyStart,
    DailyToday,
    Error,
    Event,
    Events,
    Hello,
    Join,
    Leave,
    Ping,
    Pong,
    Progress,
    Ready,
    Refused,
    Rematch,
    RoomSnapshot,
    ServerMessage,
    Start,
    Sync,
    TCreate,
    TGet,
    TGetResults,
    TGetStandings,
    THost,
    TJoin,
    TLive,
    TournamentSnapshot,
    TResults,
    TStandings,
    TUnwatch,
    TWithdraw,
    Welcome,
    decode_server,
    encode_client,
)

# Close codes after which reconnecting cannot help (docs/protocol.md, "Close codes").
_FATAL_CLOSE_CODES = frozenset({1009, 4002})
DEFAULT_RECONNECT_DELAYS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0)


@dataclass(frozen=True, slots=True)
class Disconnected:
    """Client-side event: the connection dropped (``reconnecting`` says what happens next)."""

    close_code: int | None
    reconnecting: bool


@dataclass(frozen=True, slots=True)
class Reconnected:
    """Client-side event: a new connection is up, rooms joined again, actions resent,
    tournaments subscribed again."""

    rooms: tuple[str, ...]
    resent: int
    tournaments: tuple[str, ...] = ()


ClientEvent = (
    Event
    | Progress
    | RoomSnapshot
    | TournamentSnapshot
    | TLive
    | Error
    | Disconnected
    | Reconnected
)


@dataclass
class _PendingAct:
    room: str
    seq: int
    action: str
    msg_id: int
    future: asyncio.Future[Ack | Refused | Error]
    sent_at: float = field(default_factory=time.monotonic)


class _TokenBucket:
    """Client-side pacing so a well-behaved client never sees ``rate_limited``."""

    def __init__(self, rate_per_s: float, burst: float) -> None:
        self.rate = rate_per_s
        self.burst = burst
        self.tokens = burst
        self.stamp = time.monotonic()

    def delay(self) -> float:
        """Take a token; return how long to wait before sending (0 when one was there)."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        self.tokens -= 1
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate


class CrescentClient:
    """A connection to a server, typed requests, room state and an event stream.

    ``token``: an earlier session's token (same player); ``name``: display name.
    ``reconnect``: reconnect automatically (else a drop raises ``ConnectionLost``).
    ``pace``: fraction of the server's announced rate limit the client stays under
    (``None`` to not pace at all).
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        name: str | None = None,
        reconnect: bool = True,
        reconnect_delays: Iterable[float] = DEFAULT_RECONNECT_DELAYS,
        request_timeout: float = 10.0,
        pace: float | None = 0.9,
        event_queue_size: int = 10_000,
    ) -> None:
        self.url = url
        self.token = token
        self.name = name
        self.player: dict[str, Any] = {}
        self.server_version = 0
        self.reconnect_enabled = reconnect
        self.reconnect_delays = tuple(reconnect_delays)
        self.request_timeout = request_timeout
        self.pace = pace
        self.rooms: dict[str, RoomState] = {}
        self.tournaments: dict[str, TournamentState] = {}
        self.reconnects = 0
        # Every frame the server sent on every connection of this client (bytes are the
        # WebSocket payloads): what the benchmark counts as the server's output.
        self.frames_received = 0
        self.bytes_received = 0
        self.received_types: Counter[str] = Counter()  # frames by message class
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._reconnector: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self._replies: dict[int, asyncio.Future[ServerMessage]] = {}
        self._acts: dict[tuple[str, int], _PendingAct] = {}
        self._act_locks: dict[str, asyncio.Lock] = {}
        self._events: asyncio.Queue[ClientEvent] = asyncio.Queue(event_queue_size)
        self._online = asyncio.Event()
        self._changed = asyncio.Event()
        self._closing = False
        self._failure: ConnectionLost | None = None
        self._clock_offset_ms = 0
        self._bucket: _TokenBucket | None = None
        self._syncing: set[str] = set()
        self._gap_seen: dict[str, int] = {}  # room -> highest event version seen past a gap

    # ----------------------------------------------------------------- session

    async def open(self) -> None:
        """Connect and say hello; afterwards ``player`` and ``token`` are set.

        A refused hello (``bad_token``, ``token_expired``, ``bad_name``) raises
        ``RequestFailed`` and leaves nothing open."""
        try:
            await self._open_connection()
        except BaseException:
            await self.close()
            raise
        self._online.set()

    async def close(self) -> None:
        """Close the connection for good (no reconnect)."""
        self._closing = True
        if self._reconnector is not None:
            self._reconnector.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reconnector
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self._fail_all(ConnectionLost("client closed"), acts_too=True)

    async def _open_connection(self) -> None:
        ws = await ws_connect(
            self.url, compression=None, proxy=None, max_size=1 << 20, open_timeout=10
        )
        self._ws = ws
        self._reader = asyncio.create_task(self._read(ws), name="crescent-reader")
        welcome = await self._request(
            Hello(token=self.token, name=self.name, id=self._next_id()), online=False
        )
        assert isinstance(welcome, Welcome)
        self.player = dict(welcome.player)
        self.token = welcome.token
        self.server_version = welcome.version
        self._clock_offset_ms = welcome.server_time - _now_ms()
        limits = welcome.limits or {}
        if self.pace is not None and limits.get("rate_per_s"):
            self._bucket = _TokenBucket(
                limits["rate_per_s"] * self.pace, max(1.0, limits.get("burst", 1) * self.pace)
            )

    def server_now(self) -> int:
        """The server's clock now (ms), estimated from ``welcome``/``pong``."""
        return _now_ms() + self._clock_offset_ms

    async def ping(self) -> int:
        """Round trip to the server; refines the clock offset. Returns the RTT in ms."""
        sent = _now_ms()
        pong = await self._request(Ping(id=self._next_id()))
        assert isinstance(pong, Pong)
        received = _now_ms()
        self._clock_offset_ms = pong.server_time - (sent + received) // 2
        return received - sent

    # ----------------------------------------------------------------- rooms

    def room(self, code: str | None = None) -> RoomState:
        """The state of a joined room (the only one when ``code`` is omitted)."""
        if code is None:
            if len(self.rooms) != 1:
                raise NotInRoom(f"name the room: this client is in {len(self.rooms)} rooms")
            return next(iter(self.rooms.values()))
        state = self.rooms.get(code.upper())
        if state is None:
            raise NotInRoom(f"this client has not joined room {code}")
        return state

    async def create_room(
        self,
        *,
        variant: str = "N",
        deal: str | None = None,
        seats: int = 4,
        time_limit: int | None = None,
    ) -> RoomState:
        """Create a room (this player becomes host and racer) and return its state."""
        reply = await self._request(
            CreateRoom(
                variant=variant, deal=deal, seats=seats, time_limit=time_limit, id=self._next_id()
            )
        )
        return self._adopt_snapshot(reply)

    async def join(self, code: str, *, as_: str = "racer") -> RoomState:
        """Join a room as ``racer`` or ``spectator`` (joining again resumes)."""
        reply = await self._request(Join(room=code.upper(), as_=as_, id=self._next_id()))
        return self._adopt_snapshot(reply)

    # --- the daily challenge (docs/protocol.md, "Daily challenge")

    async def daily(self) -> dict[str, Any]:
        """Today's challenge: ``today``, ``tomorrow`` (DAY maps) and ``you``."""
        return await self._daily(DailyToday(id=self._next_id()))

    async def daily_start(self, *, practice: bool = False) -> RoomState:
        """Start the day's ranked attempt (or, after it, a practice game)."""
        reply = await self._request(DailyStart(practice=practice, id=self._next_id()))
        return self._adopt_snapshot(reply)

    async def daily_board(
        self,
        *,
        day: str | None = None,
        top: int = 10,
        around: int = 5,
        late: bool = False,
        watch: bool = False,
    ) -> dict[str, Any]:
        return await self._daily(
            DailyBoard(day=day, top=top, around=around, late=late, watch=watch, id=self._next_id())
        )

    async def daily_days(self, *, before: str | None = None, limit: int = 7) -> dict[str, Any]:
        return await self._daily(DailyDays(before=before, limit=limit, id=self._next_id()))

    async def daily_me(self) -> dict[str, Any]:
        return await self._daily(DailyMe(id=self._next_id()))

    async def _daily(self, msg: ClientMessage) -> dict[str, Any]:
        reply = await self._request(msg)
        assert isinstance(reply, DailyReply), reply
        return reply.data

    # --- tournaments (docs/protocol.md, "Tournaments"; docs/client.md)

    def tournament_state(self, code: str | None = None) -> TournamentState:
        """The state of a tournament this client created, joined or fetched (the only
        one when ``code`` is omitted)."""
        if code is None:
            if len(self.tournaments) != 1:
                raise NotInRoom(
                    f"name the tournament: this client knows {len(self.tournaments)} tournaments"
                )
            return next(iter(self.tournaments.values()))
        state = self.tournaments.get(code.upper())
        if state is None:
            raise NotInRoom(f"this client has not joined tournament {code}")
        return state

    async def create_tournament(
        self,
        name: str,
        *,
        rounds: int,
        time_limit: int,
        max_players: int = 200,
        deals: list[str] | tuple[str, ...] | None = None,
        variant: str = "N",
        scoring: str = "placement",
    ) -> TournamentState:
        """Create a tournament (this player is its host, subscribed to its pushes; the
        host plays only after ``join_tournament``) and return its state."""
        reply = await self._request(
            TCreate(
                name=name,
                rounds=rounds,
                time_limit=time_limit,
                max_players=max_players,
                deals=tuple(deals) if deals is not None else None,
                variant=variant,
                scoring=scoring,
                id=self._next_id(),
            )
        )
        state = self._adopt_tournament(reply)
        state.subscribed_as = "host"
        return state

    async def join_tournament(self, code: str, *, as_: str = "player") -> TournamentState:
        """Register as ``player`` (again: resumes) or watch as ``spectator``; either way
        this connection gets the tournament's pushes."""
        reply = await self._request(TJoin(tournament=code.upper(), as_=as_, id=self._next_id()))
        state = self._adopt_tournament(reply)
        if state.subscribed_as != "player":
            state.subscribed_as = as_
        return state

    async def withdraw(self, code: str | None = None) -> None:
        """Withdraw from a tournament (points so far are kept, marked withdrawn)."""
        await self._request(TWithdraw(tournament=self._tournament_code(code), id=self._next_id()))

    async def host(self, code: str | None, op: str, player: str | None = None) -> None:
        """A host operation: ``open_registration``, ``close_registration``,
        ``start_round``, ``pause``, ``resume``, ``remove`` (with ``player``), ``end``."""
        await self._request(
            THost(tournament=self._tournament_code(code), op=op, player=player, id=self._next_id())
        )

    async def tournament(self, code: str) -> TournamentState:
        """The tournament's snapshot (``t_get``: no subscription)."""
        reply = await self._request(TGet(tournament=code.upper(), id=self._next_id()))
        return self._adopt_tournament(reply)

    async def unwatch(self, code: str | None = None) -> None:
        """Stop this connection's pushes of a tournament (``t_unwatch``)."""
        state_code = self._tournament_code(code)
        await self._request(TUnwatch(tournament=state_code, id=self._next_id()))
        state = self.tournaments.get(state_code)
        if state is not None:
            state.subscribed_as = None

    async def tournament_results(self, code: str | None, round_: int) -> TResults:
        """A finished round's full results (``round_not_finished`` before its end)."""
        reply = await self._request(
            TGetResults(tournament=self._tournament_code(code), round=round_, id=self._next_id())
        )
        assert isinstance(reply, TResults), reply
        state = self.tournaments.get(reply.tournament.upper())
        if state is not None:
            state.results[reply.round] = reply
        return reply

    async def standings(self, code: str | None = None) -> TStandings:
        """Every standings row (the snapshot has the top 10 only)."""
        reply = await self._request(
            TGetStandings(tournament=self._tournament_code(code), id=self._next_id())
        )
        assert isinstance(reply, TStandings), reply
        return reply

    def _tournament_code(self, code: str | None) -> str:
        if code is not None:
            return code.upper()
        return self.tournament_state().code

    def _adopt_tournament(self, reply: ServerMessage) -> TournamentState:
        assert isinstance(reply, TournamentSnapshot), reply
        code = str(reply.tournament["code"]).upper()
        state = self.tournaments.get(code)
        if state is None:
            state = TournamentState.from_snapshot(reply.tournament, reply.you)
            self.tournaments[code] = state
        else:
            state.load_snapshot(reply.tournament, reply.you)
        self._notify()
        return state

    def forget_room(self, code: str) -> None:
        """Drop a room from this client's state without telling the server (e.g. a
        finished tournament round): it is not joined again after a reconnect."""
        self.rooms.pop(code.upper(), None)
        self._act_locks.pop(code.upper(), None)

    async def leave(self, code: str | None = None) -> None:
        state = self.room(code)
        await self._request(Leave(room=state.code, id=self._next_id()))
        self.rooms.pop(state.code, None)

    async def ready(self, code: str | None = None, ready: bool = True) -> None:
        await self._request(Ready(room=self.room(code).code, ready=ready, id=self._next_id()))

    async def start(self, code: str | None = None) -> None:
        """Start the countdown (host only)."""
        await self._request(Start(room=self.room(code).code, id=self._next_id()))

    async def rematch(self, code: str | None = None) -> None:
        """Back to ``waiting`` with a new deal (host only, after the race)."""
        await self._request(Rematch(room=self.room(code).code, id=self._next_id()))

    async def sync(self, code: str | None = None) -> RoomState:
        """Fetch the events missed since the last applied version (or a fresh snapshot)."""
        state = self.room(code)
        reply = await self._request(Sync(room=state.code, since=state.ver, id=self._next_id()))
        if isinstance(reply, RoomSnapshot):
            return self._adopt_snapshot(reply)
        if isinstance(reply, Events):
            for event in reply.events:
                state.apply_event(event.ver, event.kind, event.data)
            self._notify()
        return state

    async def wait_until(self, predicate: Callable[[], bool], timeout: float = 30.0) -> None:
        """Wait until ``predicate()`` holds; it is re-checked after every server message."""

        async def waiting() -> None:
            while not predicate():
                if self._failure is not None:
                    raise self._failure
                changed = self._changed
                await changed.wait()

        try:
            await asyncio.wait_for(waiting(), timeout)
        except TimeoutError:
            raise RequestTimeout("wait_until", timeout) from None

    async def wait_for_start(self, code: str | None = None, timeout: float = 60.0) -> RoomState:
        """Wait for the countdown, then until the server's clock reaches ``start_at``;
        a racer then has its game's first view in ``room.view``."""
        state = self.room(code)
        await self.wait_until(
            lambda: state.phase in ("countdown", "racing") and state.start_at is not None,
            timeout,
        )
        assert state.start_at is not None
        delay_ms = state.start_at - self.server_now()
        if delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000)
        if state.role == "racer" and state.view is None:
            # The countdown event carries no cards; the snapshot after the start does.
            for _ in range(50):
                await self.join(state.code)
                if state.view is not None or state.phase == "finished":
                    break
                await asyncio.sleep(0.02)
        return state

    # ----------------------------------------------------------------- the race

    async def act(
        self, action: str, code: str | None = None, timeout: float | None = None
    ) -> Ack | Refused:
        """Send one action; return the server's ``Ack`` (with the new view) or ``Refused``.

        Sequence numbers are tracked here: one action at a time per room, a refused
        action does not use up its ``seq``. Across a reconnect the action is resent and
        this call still returns its reply. Errors (``not_started``, ``race_over``…) raise
        ``RequestFailed`` with the server's code.
        """
        state = self.room(code)
        lock = self._act_locks.setdefault(state.code, asyncio.Lock())
        async with lock:
            seq = state.last_seq + 1
            msg_id = self._next_id()
            future: asyncio.Future[Ack | Refused | Error] = (
                asyncio.get_running_loop().create_future()
            )
            pending = _PendingAct(state.code, seq, action, msg_id, future)
            self._acts[(state.code, seq)] = pending
            self._replies[msg_id] = future  # type: ignore[assignment]
            try:
                # Sent at most once more by the reconnect if the connection drops
                # meanwhile; a second copy only earns a duplicate ack.
                await self._send(
                    Act(room=state.code, seq=seq, action=action, id=msg_id), keep_if_offline=True
                )
                limit = self.request_timeout if timeout is None else timeout
                try:
                    reply = await asyncio.wait_for(asyncio.shield(future), limit)
                except TimeoutError:
                    raise RequestTimeout(f"act {action!r}", limit) from None
            finally:
                self._acts.pop((state.code, seq), None)
                self._replies.pop(msg_id, None)
            if isinstance(reply, Error):
                raise RequestFailed(reply.code, reply.message)
            if isinstance(reply, Ack):
                state.last_seq = max(state.last_seq, reply.seq)
                if reply.view is not None:
                    state.view = reply.view
            return reply

    # ----------------------------------------------------------------- events

    async def events(self) -> AsyncIterator[ClientEvent]:
        """Server pushes (``Event``, ``Progress``, unsolicited ``Error``) and client events
        (``Disconnected``, ``Reconnected``) in arrival order. Ends when the client closes."""
        while True:
            if self._closing and self._events.empty():
                return
            get = asyncio.ensure_future(self._events.get())
            done, _ = await asyncio.wait({get}, timeout=0.5)
            if get in done:
                yield get.result()
            else:
                get.cancel()
                if self._failure is not None and self._events.empty():
                    raise self._failure

    def pending_events(self) -> list[ClientEvent]:
        """The events queued so far, taken off the queue without waiting (oldest first):
        for a caller that checks what happened rather than reacting as it happens."""
        taken: list[ClientEvent] = []
        while not self._events.empty():
            taken.append(self._events.get_nowait())
        return taken

    # ----------------------------------------------------------------- internals

    def _next_id(self) -> int:
        return next(self._ids) % (2**31)

    def _adopt_snapshot(self, reply: ServerMessage) -> RoomState:
        assert isinstance(reply, RoomSnapshot), reply
        code = reply.room["code"].upper()
        state = self.rooms.get(code)
        if state is None:
            state = RoomState.from_snapshot(reply.room, reply.you)
            self.rooms[code] = state
        else:
            state.load_snapshot(reply.room, reply.you)
        self._notify()
        return state

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _send(
        self, msg: ClientMessage, *, online: bool = True, keep_if_offline: bool = False
    ) -> None:
        """Send one request. ``online``: wait until (re)connected first; an action that
        cannot be sent now (``keep_if_offline``) is resent after the reconnect."""
        if self._failure is not None:
            raise self._failure
        if online and not self._online.is_set():
            try:
                await asyncio.wait_for(self._online.wait(), self.request_timeout)
            except TimeoutError:
                raise ConnectionLost("not connected") from None
        if self._bucket is not None:
            delay = self._bucket.delay()
            if delay > 0:
                await asyncio.sleep(delay)
        ws = self._ws
        if ws is None:
            raise ConnectionLost("not connected")
        try:
            await ws.send(encode_client(msg))
        except ConnectionClosed:
            if not keep_if_offline:
                raise ConnectionLost("connection dropped while sending") from None

    async def _request(self, msg: ClientMessage, *, online: bool = True) -> ServerMessage:
        """Send a request carrying an ``id`` and await the reply with that id."""
        msg_id = msg.id
        assert msg_id is not None
        future: asyncio.Future[ServerMessage] = asyncio.get_running_loop().create_future()
        self._replies[msg_id] = future
        try:
            await self._send(msg, online=online)
            try:
                reply = await asyncio.wait_for(future, self.request_timeout)
            except TimeoutError:
                raise RequestTimeout(msg.TYPE, self.request_timeout) from None
        finally:
            self._replies.pop(msg_id, None)
        if isinstance(reply, Error):
            raise RequestFailed(reply.code, reply.message)
        return reply

    async def _read(self, ws: ClientConnection) -> None:
        try:
            async for frame in ws:
                self.handle_frame(frame)
        except ConnectionClosed:
            pass
        finally:
            if ws is self._ws:
                self._connection_closed(ws.close_code)

    def handle_frame(self, frame: bytes | str) -> None:
        """Take in one frame from the server (the reader calls this for each frame; it
        is public so that the client's handling can be driven without a socket)."""
        self.frames_received += 1
        self.bytes_received += len(frame)
        if isinstance(frame, str):
            return  # the protocol has binary frames only
        try:
            msg = decode_server(frame)
        except ServerError:
            return  # a message type of a newer version: ignored (forward compatibility)
        self.received_types[type(msg).__name__] += 1
        self._dispatch(msg)

    def _dispatch(self, msg: ServerMessage) -> None:
        if isinstance(msg, Ack | Refused):
            pending = self._acts.get((msg.room.upper(), msg.seq))
            if pending is not None and not pending.future.done():
                pending.future.set_result(msg)
            self._notify()
            return
        msg_id = getattr(msg, "id", None)
        if msg_id is not None:
            future = self._replies.get(msg_id)
            if future is not None and not future.done():
                future.set_result(msg)  # an Error for an act resolves its future too
                self._notify()
                return
        if isinstance(msg, Event):
            state = self.rooms.get(msg.room.upper())
            if state is not None:
                outcome = state.apply_event(msg.ver, msg.kind, msg.data)
                if outcome == "gap":
                    # Remember how far the room has got: a sync already under way may
                    # have been answered before this event, and must then go again.
                    self._gap_seen[state.code] = max(msg.ver, self._gap_seen.get(state.code, 0))
                    if state.code not in self._syncing:
                        self._syncing.add(state.code)
                        asyncio.get_running_loop().create_task(self._resync(state.code))
        elif isinstance(msg, Progress):
            state = self.rooms.get(msg.room.upper())
            if state is not None:
                state.apply_progress(msg.round, msg.racers)
        elif isinstance(msg, TournamentSnapshot):
            self._adopt_tournament(msg)
        elif isinstance(msg, TLive):
            tournament = self.tournaments.get(msg.tournament.upper())
            if tournament is not None:
                tournament.apply_live(msg)
        if isinstance(msg, Event | Progress | RoomSnapshot | TournamentSnapshot | TLive | Error):
            self._push(msg)
        self._notify()

    def _push(self, event: ClientEvent) -> None:
        if self._events.full():  # nobody is reading: drop the oldest
            self._events.get_nowait()
        self._events.put_nowait(event)

    async def _resync(self, code: str) -> None:
        try:
            for _ in range(5):  # until every event seen during the gap is applied
                state = await self.sync(code)
                if state.ver >= self._gap_seen.get(code, 0):
                    break
        except Exception:  # a failed sync is retried at the next gap
            pass
        finally:
            self._syncing.discard(code)

    def _connection_closed(self, close_code: int | None) -> None:
        self._online.clear()
        # Requests other than actions cannot be safely repeated for the caller.
        self._fail_all(
            ConnectionLost("connection dropped before the reply", close_code), acts_too=False
        )
        if self._closing:
            return
        current = asyncio.current_task()
        if (
            self._reconnector is not None
            and not self._reconnector.done()
            and self._reconnector is not current
        ):
            return  # the reconnect loop in progress notices the failure itself
        reconnecting = self.reconnect_enabled and close_code not in _FATAL_CLOSE_CODES
        self._push(Disconnected(close_code, reconnecting))
        if reconnecting:
            self._reconnector = asyncio.get_running_loop().create_task(self._reconnect())
        else:
            self._failure = ConnectionLost("connection closed", close_code)
            self._fail_all(self._failure, acts_too=True)
        self._notify()

    def _fail_all(self, error: ConnectionLost, *, acts_too: bool) -> None:
        act_ids = {p.msg_id for p in self._acts.values()}
        for msg_id, future in list(self._replies.items()):
            if not future.done() and (acts_too or msg_id not in act_ids):
                future.set_exception(error)
        if acts_too:
            for pending in self._acts.values():
                if not pending.future.done():
                    pending.future.set_exception(error)

    async def _reconnect(self) -> None:
        """Reconnect with backoff, hello with the token, re-join rooms, resend actions."""
        for delay in (*self.reconnect_delays, *([self.reconnect_delays[-1]] * 20)):
            await asyncio.sleep(delay)
            try:
                await self._open_connection()
                for state in list(self.rooms.values()):
                    reply = await self._request(
                        Join(room=state.code, as_=state.role, id=self._next_id()), online=False
                    )
                    self._adopt_snapshot(reply)
                for tournament in list(self.tournaments.values()):
                    if tournament.subscribed_as is None:
                        continue
                    # The host (not a player) subscribes again as a spectator: the
                    # server answers with the host's role (docs/protocol.md).
                    as_ = "player" if tournament.subscribed_as == "player" else "spectator"
                    try:
                        reply = await self._request(
                            TJoin(tournament=tournament.code, as_=as_, id=self._next_id()),
                            online=False,
                        )
                    except RequestFailed:
                        # Removed meanwhile, or the tournament is over: no subscription
                        # any more, but its state is still worth having.
                        tournament.subscribed_as = None
                        reply = await self._request(
                            TGet(tournament=tournament.code, id=self._next_id()), online=False
                        )
                    self._adopt_tournament(reply)
                resent = 0
                for pending in sorted(self._acts.values(), key=lambda p: (p.room, p.seq)):
                    if pending.future.done():
                        continue
                    # Its seq may be at or below the stored last_seq: then the server
                    # answers a duplicate ack, which is what we want.
                    ws = self._ws
                    assert ws is not None
                    await ws.send(
                        encode_client(
                            Act(
                                room=pending.room,
                                seq=pending.seq,
                                action=pending.action,
                                id=pending.msg_id,
                            )
                        )
                    )
                    resent += 1
            except (
                OSError,
                InvalidHandshake,
                ConnectionClosed,
                ConnectionLost,
                RequestTimeout,
                TimeoutError,
            ):
                if self._ws is not None:
                    await self._ws.close()
                continue
            except RequestFailed as err:
                # The server refused our token or a room: reconnecting cannot fix that.
                self._failure = ConnectionLost(f"reconnect refused: {err.code}")
                self._fail_all(self._failure, acts_too=True)
                self._notify()
                return
            self.reconnects += 1
            self._online.set()
            subscribed = tuple(c for c, t in self.tournaments.items() if t.subscribed_as)
            self._push(Reconnected(tuple(self.rooms), resent, subscribed))
            self._notify()
            return
        self._failure = ConnectionLost("could not reconnect")
        self._fail_all(self._failure, acts_too=True)
        self._notify()


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@asynccontextmanager
async def connect(
    url: str, *, token: str | None = None, name: str | None = None, **options: Any
) -> AsyncIterator[CrescentClient]:
    """``async with connect(url, name="Ada") as client:`` → an open :class:`CrescentClient`."""
    client = CrescentClient(url, token=token, name=name, **options)
    await client.open()
    try:
        yield client
    finally:
        await client.close()
