"""Practice games end to end: real WebSockets, real Redis, the solver in the server's
process pool."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from bench.devclient import open_client
from crescent_wire import protocol as p
from server.game import replay
from tests.server.test_race_e2e import wait_until_started

CODE = json.loads((Path(__file__).parents[1] / "game" / "data" / "winning_line.json").read_text())[
    "code"
]


async def test_a_solo_game_hint_act_resign_then_winnable(client: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    snap = await ada.create(deal=CODE, seats=1)
    code = snap.room["code"]
    assert isinstance(await ada.call(p.Ready(room=code)), p.Ok)
    await wait_until_started(ada, code)

    hint = await ada.call(p.Hint(room=code), timeout=30)
    assert isinstance(hint, p.HintReply) and hint.room == code
    assert hint.action is not None and not hint.finishing
    assert isinstance(await ada.act(code, 1, hint.action), p.Ack)

    early = await ada.call(p.Winnable(room=code))
    assert isinstance(early, p.Error) and early.code == "wrong_phase"

    assert isinstance(await ada.act(code, 2, "resign"), p.Ack)
    finished = await ada.event("finished")
    assert finished.data["deal"] == CODE

    answer = await ada.call(p.Winnable(room=code), timeout=60)
    assert isinstance(answer, p.WinnableReply)
    assert answer.code == CODE and answer.result in ("won", "impossible", "unknown")
    if answer.result == "won":
        assert answer.line is not None and replay(CODE, answer.line).status == "won"
    again = await ada.call(p.Winnable(room=code), timeout=60)
    assert isinstance(again, p.WinnableReply)
    assert replace(again, id=None) == replace(answer, id=None)  # cached: the same figures


async def test_no_hints_in_a_race_of_two(client: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    bo = await open_client(client, "/ws", name="Bo")
    snap = await ada.create(deal=CODE, seats=2)
    code = snap.room["code"]
    await bo.join(code)
    for racer in (ada, bo):
        assert isinstance(await racer.call(p.Ready(room=code)), p.Ok)
    await wait_until_started(ada, code)
    refused = await ada.call(p.Hint(room=code))
    assert isinstance(refused, p.Error) and refused.code == "not_practice"
