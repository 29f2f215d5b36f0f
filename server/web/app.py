"""aiohttp application: WebSocket endpoint, static browser client, health and metrics."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

from crescent_wire import protocol as p
from crescent_wire.errors import (
    CLOSE_FLOODING,
    CLOSE_GOING_AWAY,
    CLOSE_NO_HELLO,
    CLOSE_SLOW_CONSUMER,
    CLOSE_TOO_MANY_CONNECTIONS,
    CLOSE_UNSUPPORTED_VERSION,
    AuthError,
    LimitError,
    ProtocolError,
    ServerError,
)
from server.auth import Player
from server.config import Settings
from server.core import wire_server
from server.core.hub import Hub
from server.core.ports import Parts, wall_clock_ms
from server.logs import RepeatedEvent
from server.metrics import Metrics
from server.web.archive_routes import add_archive_routes
from server.web.collector import FullCollections
from server.web.lag import EventLoopLagProbe
from server.web.limits import AddressQuotas

log = logging.getLogger("server.web")

# Builds the ports from the settings, open while the context lasts (the composition
# root: server.compose.build_parts).
PartsFactory = Callable[[Settings, Metrics], AbstractAsyncContextManager[Parts]]

SETTINGS = web.AppKey("settings", Settings)
BUILD_PARTS = web.AppKey[PartsFactory]("build_parts")
PARTS = web.AppKey("parts", Parts)
HUB = web.AppKey("hub", Hub)
METRICS = web.AppKey("metrics", Metrics)
SOCKETS = web.AppKey[set["WsConnection"]]("sockets")
CLOCK = web.AppKey[Callable[[], int]]("clock")
# running socket clean-ups (strong references)
CLEANUPS = web.AppKey[set[asyncio.Task[None]]]("cleanups")
QUOTAS = web.AppKey("quotas", AddressQuotas)
# Connections refused for too many from one address: a client that keeps retrying, or a
# crowd behind one address, is one line per episode (summed up after a quiet minute).
REFUSALS = web.AppKey("refusals", RepeatedEvent)
COLLECTOR = web.AppKey("collector", FullCollections)
LAG_PROBE = web.AppKey("lag_probe", EventLoopLagProbe)


# A racer active this recently gets progress frames with its next reply (at most this
# much later): see WsConnection.send_progress.
PROGRESS_STASH_S = 0.1

# Above this many bytes waiting in a socket's transport (the kernel's buffer is full: the
# client is not keeping up) the connection stops writing each turn's frames directly and
# queues them; the drain writes the whole queue in one write whenever the transport holds
# at most DRAIN_LOW_WATER, looking every DRAIN_POLL_S. One write per drain, not one per
# frame: uvloop keeps each write() call as its own request with ~1 KiB of bookkeeping
# until the client reads it, so 256 KiB of small frames written one by one held ~3 MiB
# (tests/server/test_memory.py).
WRITE_HIGH_WATER = 16 * 1024
DRAIN_LOW_WATER = 64 * 1024
DRAIN_POLL_S = 0.02

# A client closed for not reading (4009) gets this long to read what is still buffered
# (the close frame last) before its socket is dropped.
SLOW_CONSUMER_GRACE_S = 5.0


def _frame_header(length: int) -> bytes:
    """RFC 6455 header of an unmasked, final, binary frame (what a server sends)."""
    if length < 126:
        return bytes((0x82, length))
    if length < 65536:
        return b"\x82\x7e" + length.to_bytes(2, "big")
    return b"\x82\x7f" + length.to_bytes(8, "big")


class WsConnection:
    """One client socket: its player, its rooms, its outgoing frames, its rate.

    Outgoing frames are written straight to the transport as binary WebSocket frames
    (the socket never negotiates compression): broadcasts queued during one turn of the
    event loop go out together with the request's reply in one ``write`` (one system
    call instead of one per frame), in the order they were queued. A client that stops
    reading (its transport's buffer above ``WRITE_HIGH_WATER``) gets its frames queued
    and written in one write whenever its buffer drains (``_drain``); meanwhile its
    progress frames are coalesced (the newest per room waits), and once
    more than ``send_limit`` bytes wait for it (queued frames plus the socket's write
    buffer) it is closed with 4009: memory per connection stays bounded.
    """

    __slots__ = (
        "_draining",
        "_flush_scheduled",
        "_held_progress",
        "_queue",
        "_queued_bytes",
        "_stashed",
        "address",
        "dispatch",
        "flood_count",
        "high_water",
        "hub",
        "last_refill",
        "last_seen",
        "loop",
        "metrics",
        "overflowed",
        "ping_sent",
        "player",
        "rooms",
        "send_limit",
        "settings",
        "tokens",
        "transport",
        "ws",
    )

    def __init__(
        self,
        ws: web.WebSocketResponse,
        transport: asyncio.Transport | None,
        burst: int,
        send_limit: int = 0,
        address: str = "",
    ) -> None:
        self.ws = ws
        self.transport = transport
        # asyncio.get_running_loop() costs a getpid() system call on every call (its
        # fork check): the loop is looked up once per socket.
        self.loop = asyncio.get_running_loop()
        self.dispatch: Any = None  # the socket's DispatchQueue, once the fast path is on
        self.hub: Hub | None = None
        self.metrics: Metrics | None = None
        self.settings: Settings | None = None
        self.player: Player | None = None
        self.rooms: set[str] = set()
        self.tokens = float(burst)
        self.last_refill = time.monotonic()
        self.last_seen = self.last_refill  # when a frame (any) last arrived
        self.ping_sent = 0.0  # when the heartbeat pinged this silent socket (0: not)
        self.flood_count = 0
        self._queue: collections.deque[bytes] = collections.deque()
        self._draining = False  # the slow path (a task awaiting aiohttp's send) runs
        self._stashed: bytes | None = None  # a progress frame waiting for the next reply
        self._flush_scheduled = False
        self._queued_bytes = 0  # the bytes of the frames in _queue
        self._held_progress: dict[object, bytes] = {}  # room -> newest, while _draining
        self.send_limit = send_limit  # 0: no limit
        self.address = address
        self.overflowed = False
        # never more in the socket's buffer than the connection may hold in all
        self.high_water = min(WRITE_HIGH_WATER, send_limit) if send_limit else WRITE_HIGH_WATER

    def _enqueue(self, frame: bytes) -> None:
        self._queue.append(frame)
        self._queued_bytes += len(frame)
        if self._draining and self.send_limit:
            transport = self.transport
            waiting = self._queued_bytes + (
                transport.get_write_buffer_size() if transport is not None else 0
            )
            if waiting > self.send_limit:
                self._overflow()

    def _overflow(self) -> None:
        """The client leaves more than ``send_limit`` bytes unread: drop what waits for
        it, write a 4009 close frame behind what is buffered and end the sending side
        (the handler discards what still arrives: closing a socket with unread input
        would reset it, and the client would lose the close frame); the socket is
        dropped if it is still open ``SLOW_CONSUMER_GRACE_S`` later."""
        if self.overflowed:
            return
        self.overflowed = True
        log.warning(
            "closing a connection that does not read its frames",
            extra={"player": self.player.id if self.player else None, "limit": self.send_limit},
        )
        self._queue.clear()
        self._queued_bytes = 0
        self._held_progress.clear()
        self._stashed = None
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        reason = CLOSE_SLOW_CONSUMER.to_bytes(2, "big") + b"send buffer full"
        transport.write(bytes((0x88, len(reason))) + reason)
        if transport.can_write_eof():
            transport.write_eof()
        self.loop.call_later(SLOW_CONSUMER_GRACE_S, transport.abort)

    def send(self, frame: bytes) -> None:
        """Queue a broadcast frame; written at the end of this loop turn, in order."""
        if self.ws.closed or self.overflowed:
            return
        self._unstash()
        self._enqueue(frame)
        if not self._flush_scheduled and not self._draining:
            self._flush_scheduled = True
            self.loop.call_soon(self._flush)

    def send_progress(self, frame: bytes) -> None:
        """A progress frame. A racer who sent a frame in the last ``PROGRESS_STASH_S``
        will most likely get a reply soon: the frame waits for it (a later progress
        frame replaces it) and both go out in one write, at most ``PROGRESS_STASH_S``
        later. Progress is most of what a racer receives; this spares a system call
        on each side for most of them. While the client is not reading (the slow
        path drains), only the newest frame per room waits."""
        if self._draining:
            self._hold_progress(frame)
            return
        if len(self.rooms) != 1 or time.monotonic() - self.last_seen > PROGRESS_STASH_S:
            self.send(frame)
            return
        if self._stashed is None:
            self.loop.call_later(PROGRESS_STASH_S, self._release_stash)
        self._stashed = frame

    def _unstash(self) -> None:
        """Queue the waiting progress frame (if any) before the frame about to go: it
        shows the state before that frame."""
        stashed = self._stashed
        if stashed is not None:
            self._stashed = None
            self._enqueue(stashed)

    def _release_stash(self) -> None:
        frame, self._stashed = self._stashed, None
        if frame is not None:
            if self._draining:
                self._hold_progress(frame)
            else:
                self.send(frame)

    def _hold_progress(self, frame: bytes) -> None:
        """Keep ``frame`` as its room's newest progress until the drain gets to it."""
        if self.ws.closed or self.overflowed:
            return
        try:
            room = p.unpack_map(frame).get("room")
        except ProtocolError:
            room = None
        self._held_progress[room if isinstance(room, str) else None] = frame

    def reply_soon(self, frame: bytes) -> None:
        """``reply`` for a caller that cannot await: written now if it can be, else
        queued behind the frames already waiting (the slow path sends it)."""
        if self.overflowed:
            return
        self._unstash()
        if self._queue or self._draining or not self._write_one(frame):
            self._enqueue(frame)
            if not self._draining:
                self._flush()

    def _write_one(self, frame: bytes) -> bool:
        """``_write`` of one frame (an ack, most often), without the join."""
        return self._write_bytes(_frame_header(len(frame)) + frame)

    def enable_fast_path(
        self, dispatch: Any, hub: Hub, metrics: Metrics, settings: Settings
    ) -> None:
        self.dispatch = dispatch
        self.hub = hub
        self.metrics = metrics
        self.settings = settings
        dispatch.fast = self.fast_frame

    def fast_frame(self, data: bytes) -> bool:
        """Offered every binary frame as it is parsed (see server.web.aiohttp_fast): takes an
        ``act`` the hub can handle without awaiting anything (True), else declines
        (False) and the handler task answers the frame as any other. Declining does
        nothing: no token is spent, no reply is sent."""
        if self.player is None or self.overflowed:
            return False
        msg = wire_server.decode_act(data)
        if msg is None:
            return False
        settings = self.settings
        assert settings is not None and self.hub is not None and self.metrics is not None
        if not self.take_token(settings.rate_per_s, settings.rate_burst):
            return False  # the handler task answers rate_limited (and counts the flood)
        dispatch = self.dispatch
        dispatch.busy = True  # before the hub: a refusal is answered at once
        try:
            taken = self.hub.act_now(self, msg, self._answer)
        except Exception as exc:  # a bug: answer as the handler task would, keep the socket
            self._answer(self.hub.error_frame(exc, msg.id))
            return True
        if taken:
            self.flood_count = 0
            self.metrics.count_message("act")
            self.metrics.fast_path += 1
            return True
        dispatch.busy = False
        self.tokens += 1.0  # give back the token: the handler task takes one again
        return False

    def _answer(self, frame: bytes) -> None:
        self.reply_soon(frame)
        self.dispatch.answered()

    async def reply(self, frame: bytes) -> None:
        """Send a request's reply after every frame queued before it (e.g. the events
        the request caused), so a client sees them in the order they happened. A
        client that does not read gets it queued (within ``send_limit``)."""
        self.reply_soon(frame)

    def _write(self, frames: Iterable[bytes]) -> bool:
        """Write the frames now, as one write; False if the slow path must do it."""
        return self._write_bytes(
            b"".join([part for frame in frames for part in (_frame_header(len(frame)), frame)])
        )

    def _write_bytes(self, data: bytes) -> bool:
        """Write framed bytes now; False if the slow path must do it (the client is not
        reading); True also when the socket is gone (the handler cleans up)."""
        transport = self.transport
        if self.ws.closed or self.overflowed or transport is None or transport.is_closing():
            return True
        if transport.get_write_buffer_size() > self.high_water:
            return False
        transport.write(data)
        return True

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._draining or not self._queue:
            return
        if self._write(self._queue):
            self._queue.clear()
            self._queued_bytes = 0
        else:
            self._draining = True
            self.loop.create_task(self._drain())

    async def _drain(self) -> None:
        """Write what waits for a client that is not keeping up, all of it in one write
        each time its transport's buffer has drained to ``DRAIN_LOW_WATER``."""
        queue, held = self._queue, self._held_progress
        transport = self.transport
        try:
            # Until the transport has drained, even with nothing queued: meanwhile every
            # frame queued counts against the send buffer (a 4009 when over it).
            while not self.ws.closed and not self.overflowed:
                if transport is None or transport.is_closing():
                    break
                if transport.get_write_buffer_size() > DRAIN_LOW_WATER:
                    await asyncio.sleep(DRAIN_POLL_S)
                    continue
                if not (queue or held):
                    break
                frames = [*queue, *held.values()]  # progress last: the newest state
                queue.clear()
                held.clear()
                self._queued_bytes = 0
                transport.write(
                    b"".join(
                        [part for frame in frames for part in (_frame_header(len(frame)), frame)]
                    )
                )
        except (ConnectionError, RuntimeError):
            pass  # the socket closed meanwhile; the handler cleans up
        finally:
            if self.ws.closed or self.overflowed:
                queue.clear()
                held.clear()
                self._queued_bytes = 0
            self._draining = False

    def control(self, opcode: int, payload: bytes = b"") -> None:
        """Write a control frame (ping 0x9, pong 0xA) now; payload at most 125 bytes."""
        transport = self.transport
        if (
            not self.ws.closed
            and not self.overflowed
            and transport is not None
            and not transport.is_closing()
        ):
            transport.write(bytes((0x80 | opcode, len(payload))) + payload)

    def take_token(self, rate: float, burst: int) -> bool:
        now = time.monotonic()
        self.last_seen = now
        self.tokens = min(float(burst), self.tokens + (now - self.last_refill) * rate)
        self.last_refill = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


async def _send(ws: web.WebSocketResponse, msg: p.ServerMessage) -> None:
    with contextlib.suppress(ConnectionError, RuntimeError):
        await ws.send_bytes(p.encode(msg))


def _response_class(settings: Settings) -> type[web.WebSocketResponse]:
    """aiohttp's WebSocketResponse, or with the ``aiohttp`` fast path on, its subclass
    that offers frames to the act fast path (server.web.aiohttp_fast)."""
    if "aiohttp" not in settings.fast_paths:
        return web.WebSocketResponse
    from server.web.aiohttp_fast import DispatchingWebSocketResponse

    return DispatchingWebSocketResponse


async def ws_handler(request: web.Request) -> web.StreamResponse:
    app = request.app
    settings = app[SETTINGS]
    hub = app[HUB]
    metrics = app[METRICS]
    # No permessage-deflate: frames are small msgpack (a few hundred bytes), and
    # WsConnection writes its frames itself (see there). Pings and pongs are handled
    # here and the heartbeat is one sweep over all sockets (_heartbeat_loop): aiohttp's
    # own heartbeat re-arms a timer callback for every received message.
    # aiohttp refuses a frame of max_msg_size bytes or more; MAX_FRAME itself is allowed.
    ws = _response_class(settings)(max_msg_size=p.MAX_FRAME + 1, autoping=False, compress=False)
    await ws.prepare(request)
    address = client_address(request, settings.trust_forwarded_for)
    quotas = app[QUOTAS]
    if not quotas.open_connection(address):
        app[REFUSALS].occurred(peer=address, limit=quotas.max_connections)
        metrics.errors.labels("too_many_connections").inc()
        await _send(
            ws,
            p.Error(
                code="too_many_connections",
                message=(
                    f"More than {quotas.max_connections} connections from your address; close "
                    "some and retry"
                ),
            ),
        )
        with contextlib.suppress(Exception):
            await ws.close(code=CLOSE_TOO_MANY_CONNECTIONS, message=b"too many connections")
        return ws
    conn = WsConnection(
        ws,
        request.transport,
        settings.rate_burst,
        send_limit=settings.send_buffer_bytes,
        address=address,
    )
    dispatch = getattr(ws, "dispatch", None)
    if dispatch is not None:
        conn.enable_fast_path(dispatch, hub, metrics, settings)
    app[SOCKETS].add(conn)
    log.debug("socket opened", extra={"peer": address})
    metrics.connections.inc()
    hello_deadline = time.monotonic() + settings.hello_timeout_s
    try:
        while True:
            timeout = None if conn.player else max(0.0, hello_deadline - time.monotonic())
            try:
                frame = await ws.receive(timeout=timeout)
                if conn.overflowed:  # closed for not reading (4009): discard until gone
                    if frame.type in (
                        WSMsgType.CLOSE,
                        WSMsgType.CLOSING,
                        WSMsgType.CLOSED,
                        WSMsgType.ERROR,
                    ):
                        break
                    if frame.type == WSMsgType.BINARY and dispatch is not None:
                        dispatch.slow_done()
                    continue
            except TimeoutError:
                await _send(
                    ws,
                    p.Error(
                        code="not_authenticated",
                        message=f"No 'hello' within {settings.hello_timeout_s:g} s",
                    ),
                )
                await ws.close(code=CLOSE_NO_HELLO, message=b"no hello")
                break
            if frame.type == WSMsgType.BINARY:
                try:
                    if not await _on_frame(conn, frame.data, hub, metrics, settings, quotas):
                        break
                finally:
                    if dispatch is not None:
                        dispatch.slow_done()
            elif frame.type == WSMsgType.PING:
                # A ping is a message like any other for the rate limit.
                if conn.take_token(settings.rate_per_s, settings.rate_burst):
                    conn.flood_count = 0
                    conn.control(0xA, frame.data[:125])
                elif not await _rate_limited(conn, None, metrics, settings):
                    break
            elif frame.type == WSMsgType.PONG:
                conn.last_seen = time.monotonic()
            elif frame.type == WSMsgType.TEXT:
                conn.last_seen = time.monotonic()
                metrics.errors.labels("bad_message").inc()
                await conn.reply(
                    p.encode(
                        p.Error(
                            code="bad_message",
                            message="Text frames are not accepted: send msgpack in a binary frame",
                        )
                    )
                )
            else:  # CLOSE, CLOSING, CLOSED, ERROR (e.g. too big: aiohttp closed with 1009)
                break
    finally:
        app[SOCKETS].discard(conn)
        quotas.close_connection(address)
        metrics.connections.dec()
        if conn.player is not None:
            # Presence and subscriptions must be cleaned up even if aiohttp cancels this
            # handler because the peer vanished: run it as its own task, shielded.
            cleanup = asyncio.ensure_future(_disconnect(hub, conn))
            cleanups = app[CLEANUPS]
            cleanups.add(cleanup)
            cleanup.add_done_callback(cleanups.discard)
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(cleanup)
        if not ws.closed:
            with contextlib.suppress(Exception):
                await ws.close()
        # Break the cycles through the connection (socket <-> frame queue <-> handler),
        # so most of it is freed by reference counting; app[COLLECTOR] collects the rest.
        if dispatch is not None:
            dispatch.fast = None
        conn.dispatch = None
        app[COLLECTOR].connection_closed()
    return ws


def client_address(request: web.Request, trust_forwarded_for: bool) -> str:
    """The client's address for the per-address quotas: the peer, or behind a trusted
    proxy the last X-Forwarded-For entry (the one the proxy itself appended)."""
    if trust_forwarded_for:
        forwarded = request.headers.get("X-Forwarded-For", "").rsplit(",", 1)[-1].strip()
        if forwarded:
            return forwarded
    return request.remote or "unknown"


def _request_id(data: bytes) -> int | None:
    """The ``id`` of a request frame, if it has a valid one (for replies to frames that
    are otherwise not decoded, like a ``rate_limited`` error)."""
    try:
        msg_id = p.unpack_map(data).get("id")
    except ProtocolError:
        return None
    return msg_id if type(msg_id) is int and 0 <= msg_id <= p.MAX_ID else None


async def _rate_limited(
    conn: WsConnection, msg_id: int | None, metrics: Metrics, settings: Settings
) -> bool:
    """Answer a message over the rate; False when the connection must close (flooding)."""
    conn.flood_count += 1
    metrics.errors.labels("rate_limited").inc()
    if conn.flood_count >= settings.flood_close_after:
        log.warning(
            "closing a flooding connection",
            extra={"player": conn.player.id if conn.player else None},
        )
        await conn.ws.close(code=CLOSE_FLOODING, message=b"flooding")
        return False
    await conn.reply(
        p.encode(
            p.Error(
                code="rate_limited",
                message=f"More than {settings.rate_per_s} messages per second; this one was "
                "dropped: slow down",
                id=msg_id,
            )
        )
    )
    return True


async def _disconnect(hub: Hub, conn: WsConnection) -> None:
    try:
        await hub.disconnect(conn)
    except Exception:
        log.exception("disconnect cleanup failed")


async def _on_frame(
    conn: WsConnection,
    data: bytes,
    hub: Hub,
    metrics: Metrics,
    settings: Settings,
    quotas: AddressQuotas,
) -> bool:
    """Handle one binary frame; False when the connection must close."""
    ws = conn.ws
    if not conn.take_token(settings.rate_per_s, settings.rate_burst):
        return await _rate_limited(conn, _request_id(data), metrics, settings)
    conn.flood_count = 0
    msg_id: int | None = None
    try:
        msg = p.decode_client(data)
        msg_id = msg.id
        metrics.count_message(msg.TYPE)
        if isinstance(msg, p.Hello):
            player, welcome = await _hello(conn, msg, hub, quotas)
            conn.player = player
            await conn.reply(p.encode(welcome))
            return True
        if conn.player is None:
            raise AuthError("not_authenticated")
        if isinstance(msg, p.Hint | p.Winnable | p.Replay):
            # The solver may take seconds, a replay waits for PostgreSQL: answered apart,
            # so this socket's other requests (acts, pings) are not held up (replies
            # carry the request's id).
            hub.handle_apart(conn, msg, conn.send)
            return True
        reply = await hub.handle(conn, msg)
    except ServerError as err:
        reply_id = msg_id if msg_id is not None else err.msg_id
        await conn.reply(hub.error_frame(err, reply_id))
        if err.code == "unsupported_version":
            await ws.close(code=CLOSE_UNSUPPORTED_VERSION, message=b"unsupported version")
            return False
        return True
    except Exception as exc:
        await conn.reply(hub.error_frame(exc, msg_id))
        return True
    await conn.reply(reply if isinstance(reply, bytes) else p.encode(reply))
    return True


async def _hello(
    conn: WsConnection, msg: p.Hello, hub: Hub, quotas: AddressQuotas
) -> tuple[Player, p.Welcome]:
    """``hub.hello`` within the new-guest quota of the connection's address."""
    if msg.token is not None:
        return await hub.hello(msg, conn.player)
    now = time.monotonic()
    if not quotas.may_create_player(conn.address, now):
        raise LimitError(
            "too_many_new_players",
            (
                f"More than {quotas.new_players_per_min} new guest players from your address "
                "in the last minute; send 'hello' with your token, or retry in a minute"
            ),
        )
    player, welcome = await hub.hello(msg, conn.player)
    quotas.player_created(conn.address, now)
    return player, welcome


# ---------------------------------------------------------------------- HTTP routes


async def healthz(request: web.Request) -> web.Response:
    ok = await request.app[PARTS].storage.ping()
    body: dict[str, object] = {
        "ok": ok,
        "redis": "up" if ok else "down",
        "connections": len(request.app[SOCKETS]),
    }
    archiver = request.app[HUB].archiver
    if archiver is not None and ok:  # the archive's lag: informative, never a 503
        with contextlib.suppress(Exception):
            body["archive"] = await archiver.lag()
    return web.json_response(body, status=200 if ok else 503)


async def metrics_handler(request: web.Request) -> web.Response:
    body = request.app[METRICS].render()
    return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4"})


def _static_root(app: web.Application) -> Path:
    return Path(app[SETTINGS].static_dir).resolve()


async def index(request: web.Request) -> web.StreamResponse:
    page = _static_root(request.app) / "index.html"
    if not page.is_file():
        return web.Response(
            status=503,
            content_type="text/html",
            text="<h1>Crescent Race</h1><p>The browser client is not built. Run "
            "<code>scripts/setup</code> (or <code>cd client/web && npm ci && npm run "
            "build</code>) and reload. The WebSocket endpoint is at <code>/ws</code>.</p>",
        )
    return web.FileResponse(page, headers={"Cache-Control": "no-cache"})


async def static_file(request: web.Request) -> web.StreamResponse:
    root = _static_root(request.app)
    try:
        path = (root / request.match_info["path"]).resolve()
        path.relative_to(root)  # refuses ../ escapes
    except (ValueError, OSError):
        raise web.HTTPNotFound() from None
    if not path.is_file():
        raise web.HTTPNotFound()
    return web.FileResponse(path)


async def tournament_export(request: web.Request) -> web.Response:
    """``/api/tournaments/{code}.json`` and ``.csv`` (docs/protocol.md, "Tournaments"):
    public, like a results page; 404 with a JSON error for an unknown code."""
    name = request.match_info["name"]
    code, dot, kind = name.rpartition(".")
    if not dot or kind not in ("json", "csv"):
        raise web.HTTPNotFound()
    hub = request.app[HUB]
    try:
        if kind == "json":
            return web.json_response(await hub.tournaments.export(code.upper()))
        text = await hub.tournaments.export_csv(code.upper())
    except ServerError as err:
        status = 404 if err.code == "tournament_not_found" else 503
        return web.json_response({"code": err.code, "message": err.message}, status=status)
    return web.Response(
        text=text,
        content_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{code.upper()}.csv"'},
    )


# ---------------------------------------------------------------------- lifecycle


async def _resources(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    metrics = app[METRICS]
    async with app[BUILD_PARTS](settings, metrics) as parts:
        hub = Hub(parts, settings, metrics, clock=app[CLOCK])
        await hub.start()
        app[PARTS] = parts
        app[HUB] = hub
        heartbeat = asyncio.get_running_loop().create_task(_heartbeat_loop(app), name="heartbeat")
        yield
        heartbeat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await heartbeat
        cleanups = app[CLEANUPS]
        pending = set(cleanups)
        if pending:  # socket clean-ups still talking to storage: let them finish first
            await asyncio.wait(pending, timeout=5)
        await hub.stop()
    # leaving build_parts closed the CPU runners, then the storage


async def _heartbeat_loop(app: web.Application) -> None:
    """Ping every socket silent for ``heartbeat_s``; close one that stays silent for
    ``pong_timeout_s`` after its ping (a vanished peer: its clean-up runs as usual)."""
    settings = app[SETTINGS]
    sockets = app[SOCKETS]
    period = max(0.05, min(settings.heartbeat_s, settings.pong_timeout_s) / 3)
    while True:
        await asyncio.sleep(period)
        now = time.monotonic()
        app[QUOTAS].prune(now)
        app[REFUSALS].tick(now)
        app[COLLECTOR].tick(now)
        for conn in list(sockets):
            if conn.ping_sent and conn.last_seen < conn.ping_sent:
                if now - conn.ping_sent >= settings.pong_timeout_s and conn.transport:
                    log.info("closing a silent socket (no pong)")
                    conn.transport.close()
            elif now - conn.last_seen >= settings.heartbeat_s:
                conn.ping_sent = now
                conn.control(0x9)
            else:
                conn.ping_sent = 0.0


async def _close_sockets(app: web.Application) -> None:
    """Graceful shutdown: tell every client to reconnect (1001 going away)."""
    if HUB in app:
        app[HUB].closing = True
    open_sockets = app[SOCKETS]
    sockets = list(open_sockets)
    if sockets:
        log.info("closing sockets for shutdown", extra={"sockets": len(sockets)})
    await asyncio.gather(
        *(
            conn.ws.close(code=CLOSE_GOING_AWAY, message=b"server going away; reconnect")
            for conn in sockets
        ),
        return_exceptions=True,
    )


def create_app(
    settings: Settings, parts: PartsFactory, *, clock: Callable[[], int] = wall_clock_ms
) -> web.Application:
    """The application over the ports ``parts`` builds when it starts (and closes when
    it stops): :func:`server.compose.build_parts` for Redis, a Redis Cluster or memory,
    as ``settings`` say. ``clock`` (server ms) is injectable so tests can move time."""
    app = web.Application()
    app[SETTINGS] = settings
    app[BUILD_PARTS] = parts
    app[CLOCK] = clock
    app[METRICS] = Metrics()
    app[SOCKETS] = set()
    app[CLEANUPS] = set()
    app[REFUSALS] = RepeatedEvent(
        log, "refusing connections: too many from one address", quiet_s=60.0
    )
    app[QUOTAS] = AddressQuotas(
        settings.max_connections_per_address, settings.new_players_per_address_per_min
    )
    app[COLLECTOR] = FullCollections(
        settings.gc_after_closed,
        settings.gc_interval_s,
        lambda callback: asyncio.get_running_loop().call_soon(callback),
    )
    app.cleanup_ctx.append(_resources)
    app[LAG_PROBE] = EventLoopLagProbe(app[METRICS])
    app.cleanup_ctx.append(app[LAG_PROBE].context)
    app.on_shutdown.append(_close_sockets)
    app.router.add_get("/ws", ws_handler)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_handler)
    app.router.add_get("/", index)
    app.router.add_get("/r/{code}", index)
    app.router.add_get("/daily", index)
    app.router.add_get("/t/{code}", index)
    app.router.add_get("/g/{game}", index)  # the replay viewer (docs/browser.md)
    app.router.add_get("/me/games", index)  # the player's games
    app.router.add_get("/api/tournaments/{name}", tournament_export)
    add_archive_routes(app.router, lambda request: request.app[HUB].archive_reads)
    app.router.add_get("/{path:.+}", static_file)
    return app


__all__ = ["HUB", "METRICS", "PARTS", "PartsFactory", "create_app"]
