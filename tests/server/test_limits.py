"""Issue #10, connection level: frame limit, rate limit, refused hellos, per-address
quotas and the send buffer (close 4009). Real Redis, real sockets."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from typing import Any

import msgpack
import redis
import websockets
from websockets.asyncio.client import connect

from bench.devclient import WsClient, open_client
from crescent_wire import protocol as p
from crescent_wire.errors import CLOSE_SLOW_CONSUMER, CLOSE_TOO_MANY_CONNECTIONS
from server.web.keys import SOCKETS


def _ping_frame_of(size: int) -> bytes:
    """A msgpack ``ping`` map of exactly ``size`` bytes (padded with an ignored field)."""
    pad = 0
    while True:
        frame: bytes = msgpack.packb({"t": "ping", "id": 1, "pad": "x" * pad})
        if len(frame) >= size:
            assert len(frame) == size, (len(frame), size)
            return frame
        pad += 1 if size - len(frame) < 8 else size - len(frame) - 3


async def test_frame_of_exactly_max_frame_is_accepted(client: Any) -> None:
    c = await open_client(client, "/ws", name="Edge")
    reply = c.expect_reply(1)
    await c.send_raw(_ping_frame_of(p.MAX_FRAME))
    assert isinstance(await asyncio.wait_for(reply, 10), p.Pong)
    await c.send_raw(_ping_frame_of(p.MAX_FRAME + 1))
    await asyncio.wait_for(c.closed.wait(), 10)
    assert c.close_code == 1009


async def test_rate_limited_carries_the_id(aiohttp_client: Any, make_app: Any) -> None:
    client = await aiohttp_client(make_app(rate_per_s=1, rate_burst=2))
    c = await open_client(client, "/ws", name="Fast")  # the hello takes one token
    assert isinstance(await c.call(p.Ping()), p.Pong)
    limited = await c.call(p.Ping())
    assert isinstance(limited, p.Error) and limited.code == "rate_limited"
    assert limited.id is not None


async def test_pings_count_toward_the_rate(aiohttp_client: Any, make_app: Any) -> None:
    client = await aiohttp_client(make_app(rate_per_s=1, rate_burst=3))
    c = await open_client(client, "/ws", name="Pinger")
    for _ in range(3):
        await c.ws.ping()
    reply = await c.call(p.Ping())  # the pings took the tokens
    assert isinstance(reply, p.Error) and reply.code == "rate_limited"


async def test_ping_flood_closes_with_4008(aiohttp_client: Any, make_app: Any) -> None:
    client = await aiohttp_client(make_app(rate_per_s=1, rate_burst=1, flood_close_after=5))
    c = await open_client(client, "/ws", name="Flood")
    for _ in range(10):
        if c.closed.is_set():
            break
        await c.ws.ping()
    await asyncio.wait_for(c.closed.wait(), 10)
    assert c.close_code == 4008


def _player_keys(sync_redis: redis.Redis, prefix: str) -> int:
    return len(list(sync_redis.scan_iter(f"{prefix}:player:*")))


async def test_refused_hello_writes_no_player_record(
    client: Any, prefix: str, sync_redis: redis.Redis
) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    bob = await open_client(client, "/ws", name="Bob")
    assert _player_keys(sync_redis, prefix) == 2
    for _ in range(20):  # another identity on Ada's connection, renamed: refused
        refused = await ada.call(p.Hello(token=bob.token, name="Mallory"))
        assert isinstance(refused, p.Error) and refused.code == "bad_token"
        refused = await ada.call(p.Hello(name="Eve"))  # a new guest on Ada's connection
        assert isinstance(refused, p.Error) and refused.code == "bad_token"
        refused = await ada.call(p.Hello(versions=(99,)))
        assert isinstance(refused, p.Error) and refused.code == "unsupported_version"
        ada = await open_client(client, "/ws", name="Ada", token=ada.token)
    assert _player_keys(sync_redis, prefix) == 2


async def test_connections_per_address(aiohttp_client: Any, make_app: Any) -> None:
    client = await aiohttp_client(make_app(max_connections_per_address=3))
    open_ones = [await open_client(client, "/ws", name=f"C{i}") for i in range(3)]
    extra = await open_client(client, "/ws", hello=False)
    err = await extra.next_error()
    assert err.code == "too_many_connections"
    await asyncio.wait_for(extra.closed.wait(), 10)
    assert extra.close_code == CLOSE_TOO_MANY_CONNECTIONS
    await open_ones[0].close()
    await asyncio.wait_for(open_ones[0].closed.wait(), 10)
    for _ in range(50):  # the server's side of the close runs after the client's
        again = await open_client(client, "/ws", hello=False)
        reply = await again.call(p.Hello(name="Again")) if not again.inbox else None
        if isinstance(reply, p.Welcome):
            break
        await asyncio.wait_for(again.closed.wait(), 10)
    else:
        raise AssertionError("a closed connection's slot was not given back")


async def test_forwarded_for_only_when_trusted(aiohttp_client: Any, make_app: Any) -> None:
    client = await aiohttp_client(make_app(max_connections_per_address=1, trust_forwarded_for=True))
    first = await client.ws_connect("/ws", headers={"X-Forwarded-For": "1.2.3.4, 10.0.0.1"})
    second = WsClient(await client.ws_connect("/ws", headers={"X-Forwarded-For": "10.0.0.2"}))
    assert isinstance(await second.call(p.Ping()), p.Error)  # not_authenticated: admitted
    third = WsClient(await client.ws_connect("/ws", headers={"X-Forwarded-For": "10.0.0.1"}))
    assert (await third.next_error()).code == "too_many_connections"
    await first.close()


async def test_new_players_per_address(
    aiohttp_client: Any, make_app: Any, prefix: str, sync_redis: redis.Redis
) -> None:
    client = await aiohttp_client(make_app(new_players_per_address_per_min=2))
    first = await open_client(client, "/ws", name="One")
    await open_client(client, "/ws", name="Two")
    third = await open_client(client, "/ws", hello=False)
    refused = await third.call(p.Hello(name="Three"))
    assert isinstance(refused, p.Error) and refused.code == "too_many_new_players"
    assert _player_keys(sync_redis, prefix) == 2
    again = await third.call(p.Hello(token=first.token))  # a known player still may
    assert isinstance(again, p.Welcome) and again.player["id"] == first.player["id"]


async def test_client_that_never_reads_is_closed_4009(
    aiohttp_client: Callable[..., Any], make_app: Any
) -> None:
    """A client keeps asking for 150 events of the room's history and never reads: the
    replies wait for it until the send buffer is over its limit, then 4009."""
    client = await aiohttp_client(
        make_app(send_buffer_bytes=64 * 1024, rate_per_s=10_000, rate_burst=10_000)
    )
    host = await open_client(client, "/ws", name="Host-with-a-long-name")
    code = (await host.create(seats=2)).room["code"]
    for i in range(200):
        assert isinstance(await host.call(p.Ready(room=code, ready=i % 2 == 0)), p.Ok)
    since = (await host.join(code)).room["ver"] - 150  # the reply: 150 events, ~14 KB
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((client.host, client.port))
    async with connect(
        f"ws://{client.host}:{client.port}/ws",
        sock=sock,
        max_queue=1,
        max_size=None,
        ping_interval=None,
    ) as slow:
        await slow.send(p.encode_client(p.Hello(name="Slow", id=1)))
        await slow.send(p.encode_client(p.Join(room=code, as_="spectator", id=2)))
        # The server's side of this socket gets a small kernel send buffer too: else the
        # kernel holds a few MB of replies (~180) before the server's own queue grows,
        # and on a busy machine the client may not send that many within its budget.
        for _ in range(500):  # bounded: the hello is answered within milliseconds
            mine = [
                conn
                for conn in client.app[SOCKETS]
                if conn.player is not None and conn.player.name == "Slow"
            ]
            if mine:
                break
            await asyncio.sleep(0.01)
        (server_side,) = mine
        assert server_side.transport is not None
        server_side.transport.get_extra_info("socket").setsockopt(
            socket.SOL_SOCKET, socket.SO_SNDBUF, 4096
        )
        sent = 0
        give_up_at = time.monotonic() + 60
        for i in range(2000):  # up to ~28 MB of replies, far over any socket buffer
            if time.monotonic() > give_up_at:
                break
            try:
                # Once the server has closed (4009) it reads no more: sends block until
                # it aborts the connection. A send that times out is not that: on a busy
                # machine the loop this test shares with the server may be slow, and
                # stopping early would leave the server under its limit (the kernel's
                # buffers alone hold ~180 replies), so keep sending.
                await asyncio.wait_for(
                    slow.send(p.encode_client(p.Sync(room=code, since=since, id=10 + i))), 2
                )
            except TimeoutError:
                pass  # written, not yet drained: it counts as sent
            except websockets.ConnectionClosed:
                break
            sent += 1
        replies = 0
        try:
            while True:
                frame = await asyncio.wait_for(slow.recv(), 30)
                if isinstance(p.decode_server(frame), p.Events):  # type: ignore[arg-type]
                    replies += 1
        except websockets.ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == CLOSE_SLOW_CONSUMER
    assert replies < sent
    healthy = await open_client(client, "/ws", name="Next")  # the server keeps serving
    assert isinstance(await healthy.call(p.Ping()), p.Pong)
