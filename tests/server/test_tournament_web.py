"""The tournament web wiring over real Redis and WebSockets (one process): the new
messages dispatched, pushes delivered, the round recorded by the server's own tick, the
JSON and CSV exports. (Two processes, kill -9 and bots: tests/client.)"""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest

from bench.devclient import WsClient, open_client
from crescent_wire import protocol as p
from server.core.tournaments import neutralise_cell
from tests.server.test_race_e2e import wait_until_started

DEAL = "CR1-N-AAAAAAB"


def is_push(kind: str, pred: Any = lambda m: True) -> Any:
    return lambda m: type(m).__name__ == kind and getattr(m, "id", None) is None and pred(m)


async def test_a_one_round_tournament_over_websockets(client: Any) -> None:
    host: WsClient = await open_client(client, "/ws", name="Host")
    ada: WsClient = await open_client(client, "/ws", name="Ada")
    created = await host.call(
        p.TCreate(name="Web cup", rounds=1, time_limit=30, max_players=2, deals=(DEAL,))
    )
    assert isinstance(created, p.TournamentSnapshot)
    code = created.tournament["code"]
    joined = await ada.call(p.TJoin(tournament=code.lower()))
    assert isinstance(joined, p.TournamentSnapshot) and joined.you["role"] == "player"
    refused = await ada.call(p.THost(tournament=code, op="start_round"))
    assert isinstance(refused, p.Error) and refused.code == "not_host"

    assert isinstance(await host.call(p.THost(tournament=code, op="start_round")), p.Ok)
    push = await ada.wait_for(
        is_push("TournamentSnapshot", lambda m: m.tournament["current"] is not None)
    )
    assert isinstance(push, p.TournamentSnapshot)
    room = push.tournament["current"]["room"]
    snap = await wait_until_started(ada, room)
    assert snap.room["tournament"] == code and snap.you["game"] is not None
    assert isinstance(await ada.act(room, 1, "resign"), p.Ack)
    final = await host.wait_for(
        is_push("TournamentSnapshot", lambda m: m.tournament["phase"] == "finished")
    )
    assert isinstance(final, p.TournamentSnapshot)
    assert final.tournament["deals"] == [DEAL]
    assert final.tournament["standings"][0]["points"] == 1
    results = await host.call(p.TGetResults(tournament=code, round=1))
    assert isinstance(results, p.TResults) and results.rows[0]["id"] == ada.player["id"]

    exported = await client.get(f"/api/tournaments/{code}.json")
    assert exported.status == 200
    data = await exported.json()
    assert data["rounds"][0]["deal"] == DEAL and data["standings"]["final"] is True
    lines = list(
        csv.reader(io.StringIO(await (await client.get(f"/api/tournaments/{code}.csv")).text()))
    )
    assert lines[0][:3] == ["round", "place", "id"] and lines[1][:3] == ["1", "1", ada.player["id"]]
    missing = await client.get("/api/tournaments/TZZZZZZ.json")
    assert missing.status == 404 and (await missing.json())["code"] == "tournament_not_found"
    page = await client.get(f"/t/{code}")
    assert page.status == 200
    await host.close()
    await ada.close()


FORMULA_NAMES = ['=HYPERLINK("x","y")', "+SUM(1,2)", "-2+3", "@cmd"]


async def test_the_csv_export_neutralises_formulas(client: Any) -> None:
    """A player named like a spreadsheet formula is exported as text (OWASP: a single
    quote in front; the csv module's quoting kept), in the round rows and the
    standings; the JSON export keeps the name as it is."""
    host: WsClient = await open_client(client, "/ws", name="Host")
    players: list[WsClient] = [await open_client(client, "/ws", name=n) for n in FORMULA_NAMES]
    created = await host.call(
        p.TCreate(name="Formulas", rounds=1, time_limit=30, max_players=4, deals=(DEAL,))
    )
    assert isinstance(created, p.TournamentSnapshot)
    code = created.tournament["code"]
    for player in players:
        assert isinstance(await player.call(p.TJoin(tournament=code)), p.TournamentSnapshot)
    assert isinstance(await host.call(p.THost(tournament=code, op="start_round")), p.Ok)
    room = ""
    for player in players:
        push = await player.wait_for(
            is_push("TournamentSnapshot", lambda m: m.tournament["current"] is not None)
        )
        assert isinstance(push, p.TournamentSnapshot)
        room = push.tournament["current"]["room"]
        await wait_until_started(player, room)
        assert isinstance(await player.act(room, 1, "resign"), p.Ack)
    await host.wait_for(
        is_push("TournamentSnapshot", lambda m: m.tournament["phase"] == "finished")
    )

    text = await (await client.get(f"/api/tournaments/{code}.csv")).text()
    assert '"\'=HYPERLINK(""x"",""y"")"' in text  # quoted as before, quote in front
    lines = list(csv.reader(io.StringIO(text)))
    blank = lines.index([])
    round_names = sorted(row[3] for row in lines[1:blank])
    standing_names = sorted(row[2] for row in lines[blank + 2 :])
    assert round_names == standing_names == sorted("'" + n for n in FORMULA_NAMES)
    data = await (await client.get(f"/api/tournaments/{code}.json")).json()
    assert sorted(pl["name"] for pl in data["players"]) == sorted(FORMULA_NAMES)
    for conn in (host, *players):
        await conn.close()


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_every_formula_start_is_neutralised(start: str) -> None:
    assert neutralise_cell(start + "1") == "'" + start + "1"
    assert neutralise_cell("a" + start) == "a" + start and neutralise_cell(-1) == -1
