"""The WebSocket endpoint ``/ws``: accept (the per-address quotas), ``hello`` within its
deadline, the read loop handing each request to the hub (the rate limit, the close
codes), the clean-up when a socket goes, the heartbeat sweep over every socket and the
1001 going-away close on shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from aiohttp import WSMsgType, web

from crescent_wire import protocol as p
from crescent_wire.errors import (
    CLOSE_FLOODING,
    CLOSE_GOING_AWAY,
    CLOSE_NO_HELLO,
    CLOSE_SESSION_REVOKED,
    CLOSE_TOO_MANY_CONNECTIONS,
    CLOSE_UNSUPPORTED_VERSION,
    AuthError,
    LimitError,
    ProtocolError,
    ServerError,
)
from server.auth import Player
from server.config import Settings
from server.core.hub import Hub
from server.metrics import Metrics
from server.web.connection import WsConnection
from server.web.fast_acts import FastActs
from server.web.keys import (
    CLEANUPS,
    COLLECTOR,
    HUB,
    METRICS,
    QUOTAS,
    REFUSALS,
    SETTINGS,
    SOCKETS,
)
from server.web.limits import AddressQuotas

log = logging.getLogger("server.web")


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
    try:
        await ws.prepare(request)
    except ConnectionResetError:  # the client left before the handshake's answer: not an error
        # Not ``ws``: aiohttp finishes a returned response, and one whose prepare broke
        # off fails there ("Call .prepare() first", an error with a traceback; 495 of
        # them in a ten-minute soak). A plain response's write fails quietly.
        return web.Response(status=400, text="the client left during the handshake")
    address = client_address(request, settings.trust_forwarded_for)
    quotas = app[QUOTAS]
    if not quotas.open_connection(address):
        await _refuse(app, ws, address)
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
        FastActs(conn, dispatch, hub, metrics, settings)  # held by dispatch.fast
    app[SOCKETS].add(conn)
    log.debug("socket opened", extra={"peer": address})
    metrics.connections.inc()
    try:
        await _read_loop(conn, dispatch, hub, metrics, settings, quotas)
    finally:
        await _socket_gone(app, conn, dispatch)
    return ws


async def _refuse(app: web.Application, ws: web.WebSocketResponse, address: str) -> None:
    """Close a socket over its address's connection quota (4029), saying why."""
    quotas = app[QUOTAS]
    app[REFUSALS].occurred(peer=address, limit=quotas.max_connections)
    app[METRICS].errors.labels("too_many_connections").inc()
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


async def _read_loop(
    conn: WsConnection,
    dispatch: Any,
    hub: Hub,
    metrics: Metrics,
    settings: Settings,
    quotas: AddressQuotas,
) -> None:
    """Answer the socket's frames until it closes, fails to say ``hello`` in time, or
    must be closed (flooding, an unsupported version)."""
    ws = conn.ws
    hello_deadline = time.monotonic() + settings.hello_timeout_s
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
            await _refuse_text(conn, metrics)
        else:  # CLOSE, CLOSING, CLOSED, ERROR (e.g. too big: aiohttp closed with 1009)
            break


async def _refuse_text(conn: WsConnection, metrics: Metrics) -> None:
    """Answer a text frame ``bad_message``: the protocol is msgpack in binary frames."""
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


async def _socket_gone(app: web.Application, conn: WsConnection, dispatch: Any) -> None:
    """Release what the socket held: its quota, its player's presence and rooms (even
    when aiohttp cancels the handler), the socket itself, the cycles through it."""
    ws = conn.ws
    app[SOCKETS].discard(conn)
    app[QUOTAS].close_connection(conn.address)
    app[METRICS].connections.dec()
    if conn.player is not None:
        # Presence and subscriptions must be cleaned up even if aiohttp cancels this
        # handler because the peer vanished: run it as its own task, shielded.
        cleanup = asyncio.ensure_future(_disconnect(app[HUB], conn))
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
    app[COLLECTOR].connection_closed()


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


def _close_revoked(app: web.Application, session_ids: frozenset[str]) -> None:
    """Sessions signed out on some process (the accounts channel): close this process's
    sockets of them with 4011 (docs/protocol.md, "Close codes")."""
    sockets = app[SOCKETS]
    revoked = [
        conn
        for conn in sockets
        if conn.player is not None and conn.player.session in session_ids and not conn.ws.closed
    ]
    for conn in revoked:
        closing = asyncio.ensure_future(_close_one(conn, CLOSE_SESSION_REVOKED, b"signed out"))
        cleanups = app[CLEANUPS]
        cleanups.add(closing)
        closing.add_done_callback(cleanups.discard)


async def _close_one(conn: WsConnection, code: int, reason: bytes) -> None:
    with contextlib.suppress(Exception):
        await conn.ws.close(code=code, message=reason)


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
