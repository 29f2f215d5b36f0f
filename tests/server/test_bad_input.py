"""Every kind of bad input gets a clear error code; the server keeps serving."""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any

import aiohttp
import msgpack
from itsdangerous import TimestampSigner, URLSafeTimedSerializer

from bench.devclient import open_client
from crescent_wire import protocol as p
from tests.server.test_race_e2e import DEAL, legal_line, start_race, wait_until_started
from tests.support import DEV_SECRET


async def raw_error(client: object, payload: bytes | str, hello: bool = True) -> p.Error:
    c = await open_client(client, "/ws", name="X", hello=hello)
    if isinstance(payload, str):
        await c.ws.send_str(payload)
    else:
        await c.send_raw(payload)
    err = await c.next_error()
    # The connection is still usable afterwards.
    pong = await c.call(p.Ping())
    assert isinstance(pong, p.Pong if hello else p.Error)
    await c.close()
    return err


async def test_malformed_frames(client: object) -> None:
    assert (await raw_error(client, b"\xc1\xc1garbage")).code == "bad_message"
    assert (await raw_error(client, msgpack.packb([1, 2, 3]))).code == "bad_message"
    assert (await raw_error(client, msgpack.packb({"x": 1}))).code == "bad_message"
    assert (await raw_error(client, msgpack.packb({"t": 7}))).code == "bad_message"
    assert (await raw_error(client, msgpack.packb({1: 2}))).code == "bad_message"
    assert (await raw_error(client, '{"t": "ping"}')).code == "bad_message"  # text frame


async def test_unknown_type_and_wrong_fields(client: object) -> None:
    unknown = await raw_error(client, msgpack.packb({"t": "teleport", "id": 4}))
    assert unknown.code == "unknown_type" and unknown.id == 4
    cases: list[tuple[dict[str, Any], str]] = [
        ({"t": "act", "room": "ABCDEF", "seq": "1", "action": "undo"}, "seq"),
        ({"t": "act", "room": "ABCDEF", "seq": True, "action": "undo"}, "seq"),
        ({"t": "act", "room": "ABCDEF", "seq": 0, "action": "undo"}, "seq"),
        ({"t": "act", "room": "ABCDEF", "seq": 1}, "action"),
        ({"t": "act", "room": 5, "seq": 1, "action": "undo"}, "room"),
        ({"t": "create_room", "seats": 9}, "seats"),
        ({"t": "create_room", "variant": "Z"}, "variant"),
        ({"t": "create_room", "time_limit": 5}, "time_limit"),
        ({"t": "ready", "room": "ABCDEF", "ready": "yes"}, "ready"),
        ({"t": "join", "room": "ABCDEF", "as": "referee"}, "as"),
        ({"t": "ping", "id": -1}, "id"),
        ({"t": "sync", "room": "ABCDEF", "since": 1.5}, "since"),
    ]
    for i, (msg, field) in enumerate(cases):
        msg = {**msg, "id": msg.get("id", 100 + i)}
        err = await raw_error(client, msgpack.packb(msg))
        assert err.code == "bad_field", (msg, err)
        assert f"'{field}'" in err.message, (msg, err)
        if field != "id":
            assert err.id == msg["id"]


async def test_oversized_frame_closes_1009(client: object) -> None:
    c = await open_client(client, "/ws", name="Big")
    await c.send_raw(msgpack.packb({"t": "ping", "pad": "x" * 5000}))
    await asyncio.wait_for(c.closed.wait(), 5)
    assert c.close_code == 1009
    healthy = await open_client(client, "/ws", name="Next")  # the server keeps serving
    assert isinstance(await healthy.call(p.Ping()), p.Pong)


async def test_session_errors(client: object) -> None:
    c = await open_client(client, "/ws", hello=False)
    before = await c.call(p.CreateRoom())
    assert isinstance(before, p.Error) and before.code == "not_authenticated"
    forged = await c.call(p.Hello(token="eyJpZCI6ImFiYyJ9.forged.sig"))
    assert isinstance(forged, p.Error) and forged.code == "bad_token"
    other_secret = URLSafeTimedSerializer(
        "not-the-secret", salt="crescent-player", signer_kwargs={"digest_method": hashlib.sha256}
    )
    stolen = await c.call(p.Hello(token=other_secret.dumps({"id": "abc", "n": "Eve"})))
    assert isinstance(stolen, p.Error) and stolen.code == "bad_token"

    class Past(TimestampSigner):
        def get_timestamp(self) -> int:
            return int(time.time()) - 31 * 24 * 3600

    old = URLSafeTimedSerializer(
        DEV_SECRET,
        salt="crescent-player",
        signer=Past,
        signer_kwargs={"digest_method": hashlib.sha256},
    )
    expired = await c.call(p.Hello(token=old.dumps({"id": "abc", "n": "Old"})))
    assert isinstance(expired, p.Error) and expired.code == "token_expired"
    for name in ("   ", "x" * 25, "bad\x07name"):
        bad = await c.call(p.Hello(name=name))
        assert isinstance(bad, p.Error) and bad.code == "bad_name", name
    welcome = await c.call(p.Hello(name="  Ada  "))  # still open: a new guest
    assert isinstance(welcome, p.Welcome) and welcome.player["name"] == "Ada"
    assert welcome.limits == {"max_frame": 4096, "rate_per_s": 30, "burst": 60}
    renamed = await c.call(p.Hello(token=welcome.token, name="Ada L"))
    assert isinstance(renamed, p.Welcome)
    assert renamed.player == {"id": welcome.player["id"], "name": "Ada L"}
    guest = await open_client(client, "/ws")
    assert guest.player["name"].startswith("Guest-")


async def test_unsupported_version_closes_4002(client: object) -> None:
    c = await open_client(client, "/ws", hello=False)
    err = await c.call(p.Hello(versions=(7, 8)))
    assert isinstance(err, p.Error) and err.code == "unsupported_version"
    await asyncio.wait_for(c.closed.wait(), 5)
    assert c.close_code == 4002


async def test_no_hello_closes_4010(aiohttp_client: object, make_app: object) -> None:
    client = await aiohttp_client(make_app(hello_timeout_s=0.3))  # type: ignore[operator]
    c = await open_client(client, "/ws", hello=False)
    await asyncio.wait_for(c.closed.wait(), 5)
    assert c.close_code == 4010
    assert c.inbox and isinstance(c.inbox[0], p.Error)


async def test_flood_rate_limited_then_closed(aiohttp_client: object, make_app: object) -> None:
    app = make_app(rate_per_s=30, rate_burst=60, flood_close_after=50)  # type: ignore[operator]
    client = await aiohttp_client(app)  # type: ignore[operator]
    c = await open_client(client, "/ws", name="Flood")
    frame = p.encode_client(p.Ping(id=1))
    # Send until closed: even a slow machine outpaces the 30/s refill long before 5000.
    for _ in range(5000):
        if c.closed.is_set():
            break
        try:
            await c.send_raw(frame)
        except ConnectionError:
            break
    await asyncio.wait_for(c.closed.wait(), 5)
    codes = [m.code for m in c.inbox if isinstance(m, p.Error)]
    assert "rate_limited" in codes
    assert c.close_code == 4008
    ok = await open_client(client, "/ws", name="Calm")
    assert isinstance(await ok.call(p.Ping()), p.Pong)


async def test_room_errors(client: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    eve = await open_client(client, "/ws", name="Eve")
    missing = await ada.call(p.Join(room="ZZZZZZ"))
    assert isinstance(missing, p.Error) and missing.code == "room_not_found"
    junk = await ada.call(p.Join(room="../../etc"))
    assert isinstance(junk, p.Error) and junk.code == "room_not_found"
    bad_deal = await ada.call(p.CreateRoom(deal="CR1-X-!!"))
    assert isinstance(bad_deal, p.Error) and bad_deal.code == "bad_deal_code"
    assert "CR1-X-!!" in bad_deal.message

    bo = await open_client(client, "/ws", name="Bo")
    code, _ = await start_race(ada, [bo])
    not_in = await eve.act(code, 1, "undo")
    assert isinstance(not_in, p.Error) and not_in.code == "not_in_room"
    await eve.join(code, as_="spectator")
    spectator = await eve.act(code, 1, "undo")
    assert isinstance(spectator, p.Error) and spectator.code == "not_racer"
    not_host = await eve.call(p.Start(room=code))
    assert isinstance(not_host, p.Error) and not_host.code == "not_host"
    wrong = await ada.call(p.Start(room=code))
    assert isinstance(wrong, p.Error) and wrong.code == "wrong_phase"
    early_rematch = await ada.call(p.Rematch(room=code))
    assert isinstance(early_rematch, p.Error) and early_rematch.code == "wrong_phase"
    await wait_until_started(ada, code)
    assert isinstance(await ada.act(code, 1, legal_line(DEAL, 1)[0]), p.Ack)


async def test_leaving_during_race_resigns(client: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    bo = await open_client(client, "/ws", name="Bo")
    code, _ = await start_race(ada, [bo])
    await wait_until_started(ada, code)
    assert isinstance(await bo.call(p.Leave(room=code)), p.Ok)
    left = await ada.event("left")
    assert left.data == {"player": bo.player["id"]}
    after = await bo.act(code, 1, "undo")
    assert isinstance(after, p.Error) and after.code == "not_in_room"
    assert isinstance(await ada.act(code, 1, "resign"), p.Ack)
    finished = await ada.event("finished")
    statuses = {r["player"]: r["status"] for r in finished.data["results"]}
    assert statuses == {ada.player["id"]: "resigned", bo.player["id"]: "resigned"}


async def test_health_and_metrics(client: object) -> None:
    resp = await client.get("/healthz")  # type: ignore[attr-defined]
    assert resp.status == 200 and (await resp.json())["redis"] == "up"
    c = await open_client(client, "/ws", name="M")
    await c.call(p.Ping())
    text = await (await client.get("/metrics")).text()  # type: ignore[attr-defined]
    assert 'crescent_messages_total{type="ping"} 1.0' in text
    assert "crescent_connections 1.0" in text
    assert "crescent_ack_latency_seconds_bucket" in text
    page = await client.get("/r/ABCDEF")  # type: ignore[attr-defined]
    assert page.status in (200, 503)
    escape = await client.get("/..%2f..%2fpyproject.toml")  # type: ignore[attr-defined]
    assert escape.status == 404


async def test_health_503_without_redis(aiohttp_client: object, make_app: object) -> None:
    app = make_app()  # type: ignore[operator]
    client = await aiohttp_client(app)  # type: ignore[operator]
    import redis.asyncio as aioredis

    from server.web import PARTS

    store = app[PARTS].storage
    live = store.redis
    store.redis = aioredis.Redis(host="127.0.0.1", port=1)  # nothing listens there
    try:
        resp = await client.get("/healthz")
        assert resp.status == 503 and (await resp.json())["redis"] == "down"
    finally:
        await store.redis.aclose()
        store.redis = live
    resp = await client.get("/healthz")
    assert resp.status == 200 and (await resp.json())["redis"] == "up"


async def test_text_frame_then_normal_use(client: object) -> None:
    async with aiohttp.ClientSession():
        c = await open_client(client, "/ws", name="T")
        await c.ws.send_str("hello")
        assert (await c.next_error()).code == "bad_message"
        assert isinstance(await c.call(p.Ping()), p.Pong)


async def test_heartbeat_pings_silent_sockets_and_closes_unanswering_ones(
    aiohttp_client: object, make_app: object
) -> None:
    """A silent socket is pinged; one that answers stays open, one that does not is
    closed; the server answers a client's ping with a pong carrying its payload."""
    app = make_app(heartbeat_s=0.3, pong_timeout_s=0.4)  # type: ignore[operator]
    client = await aiohttp_client(app)  # type: ignore[operator]
    hello = p.encode_client(p.Hello(versions=(1,), name="Beat"))

    async def connect() -> aiohttp.ClientWebSocketResponse:
        ws: aiohttp.ClientWebSocketResponse = await client.ws_connect("/ws", autoping=False)
        await ws.send_bytes(hello)
        welcome = await ws.receive(timeout=5)
        assert p.decode_server(welcome.data).TYPE == "welcome"
        return ws

    answering, silent = await connect(), await connect()

    async def answer_pings() -> int:
        pings = 0
        while True:
            msg = await answering.receive()
            if msg.type == aiohttp.WSMsgType.PING:
                pings += 1
                await answering.pong(msg.data)
            elif msg.type == aiohttp.WSMsgType.PONG:
                assert msg.data == b"are you there"
                return pings

    async def ignore_pings() -> list[aiohttp.WSMsgType]:
        seen = []
        while True:
            msg = await silent.receive()
            seen.append(msg.type)
            if msg.type in (
                aiohttp.WSMsgType.CLOSE,
                aiohttp.WSMsgType.CLOSED,
                aiohttp.WSMsgType.CLOSING,
                aiohttp.WSMsgType.ERROR,
            ):
                return seen

    answerer = asyncio.ensure_future(answer_pings())
    seen = await asyncio.wait_for(ignore_pings(), 10)  # closed by the server
    assert aiohttp.WSMsgType.PING in seen
    await answering.ping(b"are you there")
    assert await asyncio.wait_for(answerer, 10) >= 1  # pinged, answered, still open
    await answering.send_bytes(p.encode_client(p.Ping(id=3)))
    reply = await answering.receive(timeout=5)
    while reply.type == aiohttp.WSMsgType.PING:  # the heartbeat may come first
        await answering.pong(reply.data)
        reply = await answering.receive(timeout=5)
    assert p.decode_server(reply.data).TYPE == "pong"
    await answering.close()
