"""Trust under faults and abuse, end to end over real Redis and WebSockets (issue #10):
acts and races."""

from __future__ import annotations

from typing import Any

from bench.devclient import open_client
from crescent_wire import protocol as p
from tests.server.test_race_e2e import DEAL, legal_line, start_race, wait_until_started
from tests.support import view_of


async def test_reused_seq_with_another_action_is_seq_conflict(client: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    code = (await ada.create(deal=DEAL, seats=2)).room["code"]
    await ada.call(p.Start(room=code))
    await wait_until_started(ada, code)
    line = legal_line(DEAL, 2)
    assert isinstance(await ada.act(code, 1, line[0]), p.Ack)
    conflict = await ada.act(code, 1, "redeal")
    assert isinstance(conflict, p.Error) and conflict.code == "seq_conflict"
    # After a reconnect the game is rebuilt from Redis: still told apart.
    await ada.close()
    again = await open_client(client, "/ws", token=ada.token)
    snap = await again.join(code)
    assert snap.you["last_seq"] == 1
    conflict = await again.act(code, 1, "redeal")
    assert isinstance(conflict, p.Error) and conflict.code == "seq_conflict"
    same = await again.act(code, 1, line[0])
    assert isinstance(same, p.Ack) and same.duplicate and view_of(same)["moves"] == 1
    nxt = await again.act(code, 2, line[1])
    assert isinstance(nxt, p.Ack) and not nxt.duplicate and view_of(nxt)["moves"] == 2


async def test_host_ends_a_race_without_time_limit(client: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    bo = await open_client(client, "/ws", name="Bo")
    code, _ = await start_race(ada, [bo])
    await wait_until_started(ada, code)
    assert isinstance(await bo.act(code, 1, legal_line(DEAL, 1)[0]), p.Ack)
    refused = await bo.call(p.EndRace(room=code))
    assert isinstance(refused, p.Error) and refused.code == "not_host"
    assert isinstance(await ada.call(p.EndRace(room=code)), p.Ok)
    results = (await bo.event("finished")).data["results"]
    assert [r["status"] for r in results] == ["timeout", "timeout"]
    timed_out = await bo.wait_for(
        lambda m: isinstance(m, p.Progress) and all(r["status"] == "timeout" for r in m.racers)
    )
    assert isinstance(timed_out, p.Progress)


async def test_a_racer_gone_too_long_is_resigned(aiohttp_client: Any, make_app: Any) -> None:
    client = await aiohttp_client(make_app(disconnect_resign_s=0.5))
    ada = await open_client(client, "/ws", name="Ada")
    bo = await open_client(client, "/ws", name="Bo")
    code, _ = await start_race(ada, [bo])
    await wait_until_started(ada, code)
    assert isinstance(await ada.act(code, 1, "resign"), p.Ack)
    await bo.close()  # Bo vanishes: Ada would wait for ever without a time limit
    finished = await ada.event("finished", timeout=10)
    statuses = {r["player"]: r["status"] for r in finished.data["results"]}
    assert statuses == {ada.player["id"]: "resigned", bo.player["id"]: "resigned"}


async def test_open_rooms_quota(aiohttp_client: Any, make_app: Any) -> None:
    client = await aiohttp_client(make_app(max_open_rooms=2))
    ada = await open_client(client, "/ws", name="Ada")
    first = (await ada.create(seats=2)).room["code"]
    await ada.create(seats=2)
    refused = await ada.call(p.CreateRoom(seats=2))
    assert isinstance(refused, p.Error) and refused.code == "too_many_rooms"
    assert isinstance(await ada.call(p.Leave(room=first)), p.Ok)
    assert isinstance(await ada.call(p.CreateRoom(seats=2)), p.RoomSnapshot)
