"""The I/O half of the client: one ``websockets`` connection that feeds a
:class:`~crescent_client.session.ClientSession`.

:class:`Connection` connects, paces and sends the session's frames, reads the server's
frames into the session and does what the session's answer says: it resolves the
futures of waiting calls, queues pushes for :meth:`Connection.events` and starts a
``sync`` when a room's events skipped a version. When the connection drops, requests in
flight fail with ``ConnectionLost``; actions are kept for ``crescent_client.reconnect``,
which reconnects with backoff and resends them (the server never applies a ``seq``
twice, so the waiting ``act()`` simply gets its ``Ack``, possibly ``duplicate``).
Repeating any other request is the caller's decision.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from crescent_client.errors import ConnectionLost, RequestTimeout
from crescent_client.rooms import RoomState
from crescent_client.session import (
    ActReply,
    ClientEvent,
    ClientSession,
    Disconnected,
    GapFound,
    PendingAct,
    Pushed,
    Reply,
    SessionEvent,
    reply_or_raise,
)
from crescent_client.tournaments import TournamentState
from crescent_wire.protocol import (
    Ack,
    ClientMessage,
    Refused,
    ServerMessage,
    Sync,
)

DEFAULT_RECONNECT_DELAYS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0)


class TokenBucket:
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


def _retrieved(future: asyncio.Future[Any]) -> None:
    """A reply's future its request is done with: a failure set on it by a drop (while
    the frame was still being sent, or after a timeout) has reached the caller another
    way, so asyncio need not report it as never retrieved."""
    if future.done() and not future.cancelled():
        future.exception()


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Connection:
    """A connection to a server: requests, replies and the event stream. A drop ends
    everything here; ``crescent_client.reconnect.Reconnecting`` reconnects instead.

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
        self.session = ClientSession(token=token, name=name)
        self.reconnect_enabled = reconnect
        self.reconnect_delays = tuple(reconnect_delays)
        self.request_timeout = request_timeout
        self.pace = pace
        self.reconnects = 0
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._reconnector: asyncio.Task[None] | None = None
        self._waiters: dict[int, asyncio.Future[ServerMessage]] = {}
        self._act_locks: dict[str, asyncio.Lock] = {}  # one action at a time per room
        self._events: asyncio.Queue[ClientEvent] = asyncio.Queue(event_queue_size)
        self._online = asyncio.Event()
        self._changed = asyncio.Event()
        self._closing = False
        self._failure: ConnectionLost | None = None
        self._bucket: TokenBucket | None = None

    # ----------------------------------------------------------------- opening

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
        welcome = await self._request(self.session.hello(), online=False)
        limits = self.session.welcome(welcome, now_ms())
        if self.pace is not None and limits.get("rate_per_s"):
            self._bucket = TokenBucket(
                limits["rate_per_s"] * self.pace, max(1.0, limits.get("burst", 1) * self.pace)
            )

    def server_now(self) -> int:
        """The server's clock now (ms), estimated from ``welcome``/``pong``."""
        return now_ms() + self.session.clock_offset_ms

    # ----------------------------------------------------------------- sending

    async def _send(
        self, data: bytes, *, online: bool = True, keep_if_offline: bool = False
    ) -> None:
        """Send one frame. ``online``: wait until (re)connected first; an action that
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
            await ws.send(data)
        except ConnectionClosed:
            if not keep_if_offline:
                raise ConnectionLost("connection dropped while sending") from None

    async def _request(self, msg: ClientMessage, *, online: bool = True) -> ServerMessage:
        """Send a request carrying an ``id`` and await the reply with that id; the
        server's ``error`` is raised as ``RequestFailed``."""
        assert msg.id is not None
        return await self._exchange(msg.id, msg.TYPE, self.session.send(msg), online=online)

    async def _exchange(
        self, msg_id: int, what: str, data: bytes, *, online: bool = True
    ) -> ServerMessage:
        future: asyncio.Future[ServerMessage] = asyncio.get_running_loop().create_future()
        self._waiters[msg_id] = future
        try:
            await self._send(data, online=online)
            try:
                reply = await asyncio.wait_for(future, self.request_timeout)
            except TimeoutError:
                raise RequestTimeout(what, self.request_timeout) from None
        finally:
            self._waiters.pop(msg_id, None)
            self.session.forget(msg_id)
            _retrieved(future)
        return reply_or_raise(reply)

    async def _exchange_act(
        self, pending: PendingAct, data: bytes, timeout: float | None
    ) -> Ack | Refused:
        """Send an action and await its reply, across reconnects (which resend it)."""
        future: asyncio.Future[ServerMessage] = asyncio.get_running_loop().create_future()
        self._waiters[pending.id] = future
        try:
            # Sent at most once more by the reconnect if the connection drops meanwhile;
            # a second copy only earns a duplicate ack.
            await self._send(data, keep_if_offline=True)
            limit = self.request_timeout if timeout is None else timeout
            try:
                reply = await asyncio.wait_for(asyncio.shield(future), limit)
            except TimeoutError:
                raise RequestTimeout(f"act {pending.action!r}", limit) from None
        finally:
            self.session.end_act(pending)
            self._waiters.pop(pending.id, None)
            _retrieved(future)
        return self.session.act_result(pending, reply)

    # ----------------------------------------------------------------- receiving

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
        for event in self.session.receive(frame):
            self._act_on(event)
        if not isinstance(frame, str):
            self._notify()

    def _act_on(self, event: SessionEvent) -> None:
        if isinstance(event, Reply | ActReply):
            future = self._waiters.get(event.id if isinstance(event, Reply) else event.act.id)
            if future is not None and not future.done():
                future.set_result(event.message)
        elif isinstance(event, Pushed):
            self._push(event.message)
        elif isinstance(event, GapFound):
            asyncio.get_running_loop().create_task(self._resync(event.room))

    def _push(self, event: ClientEvent) -> None:
        if self._events.full():  # nobody is reading: drop the oldest
            self._events.get_nowait()
        self._events.put_nowait(event)

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _resync(self, code: str) -> None:
        try:
            for _ in range(5):  # until every event seen during the gap is applied
                await self.sync(code)
                if self.session.gap_filled(code):
                    break
        except Exception:  # a failed sync is retried at the next gap
            pass
        finally:
            self.session.synced(code)

    async def sync(self, code: str | None = None) -> RoomState:
        """Fetch the events missed since the last applied version (or a fresh snapshot)."""
        state = self.session.room(code)
        reply = await self._request(
            Sync(room=state.code, since=state.ver, id=self.session.next_id())
        )
        state = self.session.adopt_sync(state, reply)
        self._notify()
        return state

    # ----------------------------------------------------------------- waiting

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

    # ----------------------------------------------------------------- dropping

    def _connection_closed(self, close_code: int | None) -> None:
        self._online.clear()
        # Requests other than actions cannot be safely repeated for the caller.
        self._fail_all(
            ConnectionLost("connection dropped before the reply", close_code), acts_too=False
        )
        if not self._closing:
            self._dropped(close_code)

    def _dropped(self, close_code: int | None) -> None:
        """What follows a drop the client did not ask for: here the end of everything;
        ``crescent_client.reconnect.Reconnecting`` reconnects instead."""
        self._push(Disconnected(close_code, False))
        self._give_up(ConnectionLost("connection closed", close_code))

    def _fail_all(self, error: ConnectionLost, *, acts_too: bool) -> None:
        act_ids = self.session.act_ids()
        for msg_id, future in list(self._waiters.items()):
            if not future.done() and (acts_too or msg_id not in act_ids):
                future.set_exception(error)
                if msg_id not in act_ids:
                    self.session.forget(msg_id)

    def _give_up(self, failure: ConnectionLost) -> None:
        self._failure = failure
        self._fail_all(failure, acts_too=True)
        self._notify()

    def _adopt_snapshot(self, reply: ServerMessage) -> RoomState:
        state = self.session.adopt_snapshot(reply)
        self._notify()
        return state

    def _adopt_tournament(self, reply: ServerMessage) -> TournamentState:
        state = self.session.adopt_tournament(reply)
        self._notify()
        return state
