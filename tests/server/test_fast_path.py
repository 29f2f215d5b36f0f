"""The act fast path (server.web.aiohttp_fast + Hub.act_now): in use, and it keeps every
socket's replies in the order of its requests, whatever mix of fast and slow frames."""

from __future__ import annotations

import asyncio
import dataclasses

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.devclient import open_client
from crescent_wire import protocol as p
from crescent_wire.errors import ServerError
from server.config import fast_paths_from_env
from server.core import wire_server
from tests.server.test_race_e2e import DEAL, legal_line, wait_until_started
from tests.support import view_of


def fast_path_count(metrics_text: str) -> float:
    for line in metrics_text.splitlines():
        if line.startswith("crescent_actions_fast_path_total "):
            return float(line.split()[1])
    raise AssertionError("crescent_actions_fast_path_total not exported")


async def test_acts_take_the_fast_path(client: object) -> None:
    if "aiohttp" not in fast_paths_from_env():
        pytest.skip("the aiohttp fast path is off (CRESCENT_FAST_PATHS)")
    ada = await open_client(client, "/ws", name="Ada")
    code = (await ada.create(deal=DEAL, seats=2)).room["code"]
    await ada.call(p.Start(room=code))
    await wait_until_started(ada, code)
    before = fast_path_count(await (await client.get("/metrics")).text())  # type: ignore[attr-defined]
    for seq, move in enumerate(legal_line(DEAL, 5), 1):
        ack = await ada.act(code, seq, move)
        assert isinstance(ack, p.Ack) and view_of(ack)["moves"] == seq
    after = fast_path_count(await (await client.get("/metrics")).text())  # type: ignore[attr-defined]
    assert after - before == 5


async def test_pipelined_requests_are_answered_in_order(client: object) -> None:
    """Acts (fast), a refused act, a duplicate (slow path), a ping and a sync (slow)
    sent back to back without waiting: the replies come in request order, every act is
    applied once, in order."""
    ada = await open_client(client, "/ws", name="Ada")
    code = (await ada.create(deal=DEAL, seats=2)).room["code"]
    await ada.call(p.Start(room=code))
    await wait_until_started(ada, code)
    line = legal_line(DEAL, 6)
    requests: list[p.ClientMessage] = [
        p.Act(room=code, seq=1, action=line[0]),
        p.Act(room=code, seq=2, action=line[1]),
        p.Ping(),
        p.Act(room=code, seq=3, action="p1-p1"),  # refused
        p.Act(room=code, seq=2, action=line[1]),  # duplicate: the slow path answers
        p.Act(room=code, seq=3, action=line[2]),
        p.Sync(room=code, since=0),
        p.Act(room=code, seq=4, action=line[3]),
        p.Act(room=code, seq=5, action=line[4]),
    ]
    ids = list(range(100, 100 + len(requests)))
    frames = [
        p.encode_client(dataclasses.replace(r, id=i)) for r, i in zip(requests, ids, strict=True)
    ]
    futures = {i: ada.expect_reply(i) for i in ids}
    for frame in frames:
        await ada.ws.send_bytes(frame)
    replies = [await asyncio.wait_for(futures[i], 10) for i in ids]
    order = [i for i in (getattr(m, "id", None) for m in ada.received) if i in futures]
    assert order == ids
    kinds = [type(r).__name__ for r in replies]
    assert kinds == ["Ack", "Ack", "Pong", "Refused", "Ack", "Ack", "Events", "Ack", "Ack"]
    assert [view_of(r)["moves"] for r in replies if isinstance(r, p.Ack)] == [1, 2, 2, 3, 4, 5]
    assert replies[4].duplicate  # type: ignore[union-attr]


async def test_flood_while_an_ack_is_pending_is_rate_limited(
    aiohttp_client: object, make_app: object
) -> None:
    """Frames parked behind an unanswered act are still rate limited when their turn
    comes, and the socket keeps working."""
    app = make_app(rate_per_s=5, rate_burst=5)  # type: ignore[operator]
    http = await aiohttp_client(app)  # type: ignore[operator]
    ada = await open_client(http, "/ws", name="Ada")
    code = (await ada.create(deal=DEAL, seats=2)).room["code"]
    await ada.call(p.Start(room=code))
    await asyncio.sleep(0.3)  # let the bucket refill after the set-up requests
    while True:
        snap = await ada.join(code)
        if snap.room["phase"] == "racing":
            break
        await asyncio.sleep(0.25)
    await asyncio.sleep(1.2)
    move = legal_line(DEAL, 1)[0]
    burst = [msgpack.packb({"t": "act", "room": code, "seq": 1, "action": move, "id": 500})]
    burst += [msgpack.packb({"t": "ping", "id": 501 + n}) for n in range(30)]
    acked = ada.expect_reply(500)
    for frame in burst:
        await ada.ws.send_bytes(frame)
    ack = await asyncio.wait_for(acked, 10)
    assert isinstance(ack, p.Ack) and view_of(ack)["moves"] == 1
    limited = 0
    for _ in range(20):
        err = await ada.next_error()
        limited += err.code == "rate_limited"
        if limited >= 20:
            break
    assert limited >= 20
    await asyncio.sleep(1.0)
    pong = await ada.call(p.Ping())
    assert isinstance(pong, p.Pong)


_FIELD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=2**31 + 2),
    st.sampled_from([2**31, 2**31 + 1, 2**53]),
    st.text(max_size=40),
    st.sampled_from(["k7pq2x", "K7PQ2X", "", "p10-p14", "redeal", "x" * 32, "x" * 33]),
    st.binary(max_size=4),
    st.lists(st.integers(-5, 5), max_size=2),
)


@given(
    st.dictionaries(
        st.sampled_from(["t", "room", "seq", "action", "id", "extra"]), _FIELD_VALUES, max_size=6
    ).map(lambda d: {**d, "t": "act"} if len(d) % 3 else d)
)
@settings(max_examples=400, deadline=None)
def test_decode_act_agrees_with_decode_client(fields: dict[str, object]) -> None:
    """The fast path's act decoder accepts exactly the acts decode_client accepts, and
    decodes them the same; anything else is left to decode_client (which names it)."""
    frame = msgpack.packb(fields, use_bin_type=True)
    fast = wire_server.decode_act(frame)
    try:
        full: object = p.decode_client(frame)
    except ServerError:
        full = None
    if fast is None:
        assert not isinstance(full, p.Act)
    else:
        assert full == fast


def test_decode_act_refuses_what_is_not_an_act() -> None:
    for frame in (
        b"\xc1",
        msgpack.packb([1, 2]),
        msgpack.packb({"t": "ping"}),
        msgpack.packb({"t": "act", "room": "K7PQ2X", "seq": True, "action": "undo"}),
    ):
        assert wire_server.decode_act(frame) is None
