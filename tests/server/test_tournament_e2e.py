"""Tournaments end to end: real server processes, the real Redis, real WebSockets, and
the Python client (crescent_client) as host, players and spectators.

- a 3-round tournament with a late join, a removal by the host and a withdrawal, its
  final standings recomputed here from each round's results with the documented
  scoring (docs/tournaments.md), and the JSON and CSV exports;
- kill -9 of one of two server processes mid-round: its players reconnect to the
  other, every acknowledged action is still there, the round ends and is scored;
- authorisation: host operations from others are ``not_host``, a removed player
  cannot rejoin, a spectator cannot act.

The servers allow a high message rate so that the bots need no pacing, and the bots
play their games out (greedy strategy), so that no round waits for its time limit.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import aiohttp
import pytest

from bench.devclient import open_client as open_client_raw
from crescent_client import Ack, CrescentClient, RequestFailed, RoomState, TournamentState
from crescent_client.strategy import GreedyStrategy
from crescent_wire import protocol as wire
from server.game import Game
from tests.support import (
    ServerProcess,
    delete_prefix,
    launch_server_process,
    random_prefix,
    require_redis,
    start_server_process,
)

DEALS = ["CR1-N-AAAAAAB", "CR1-N-AAAAAAC", "CR1-N-AAAAAAD"]
FAST = ["--rate-per-s", "5000", "--rate-burst", "5000"]
TIMEOUT = 30.0


@pytest.fixture(scope="module")
def module_prefix() -> Iterator[str]:
    url = require_redis()
    name = random_prefix("tour")
    yield name
    delete_prefix(name, url)


@pytest.fixture(scope="module")
def server(module_prefix: str) -> Iterator[ServerProcess]:
    with start_server_process(module_prefix, countdown_ms=200, extra_args=FAST) as proc:
        yield proc


@pytest.fixture
async def clients() -> AsyncIterator[list[CrescentClient]]:
    """Every client a test opens, closed at its end."""
    opened: list[CrescentClient] = []
    yield opened
    for client in opened:
        await client.close()


async def open_client(
    opened: list[CrescentClient], url: str, name: str, token: str | None = None
) -> CrescentClient:
    client = CrescentClient(
        url,
        name=name,
        token=token,
        pace=None,
        request_timeout=TIMEOUT,
        reconnect_delays=(0.05, 0.1, 0.2, 0.3, 0.5),
    )
    await client.open()
    opened.append(client)
    return client


async def seat(client: CrescentClient, state: TournamentState, round_: int) -> RoomState:
    """Wait until round ``round_`` is under way, take the seat, wait for the start."""

    def under_way() -> bool:
        seated = state.seated_room()
        return seated is not None and seated[1] == round_

    await client.wait_until(under_way, timeout=TIMEOUT)
    seated = state.seated_room()
    assert seated is not None
    room = await client.join(seated[0], as_="racer")
    assert room.role == "racer"
    await client.wait_for_start(room.code, timeout=TIMEOUT)
    assert room.view is not None
    return room


async def play(
    client: CrescentClient, room: RoomState, *, moves: int | None = None, resign: bool = False
) -> list[str]:
    """Greedy play: to the end, or ``moves`` acknowledged actions (then resign if asked).
    Returns the acknowledged actions."""
    strategy = GreedyStrategy()
    acked: list[str] = []
    while room.view is not None and (moves is None or len(acked) < moves):
        action = strategy.next_action(room.view)
        if action is None:
            break
        reply = await client.act(action, room.code)
        if isinstance(reply, Ack):
            acked.append(action)
            if action == "resign" or room.view["status"] != "playing":
                return acked
    if resign:
        assert isinstance(await client.act("resign", room.code), Ack)
    return acked


async def round_over(client: CrescentClient, state: TournamentState, round_: int) -> None:
    """Wait until round ``round_`` has ended and been scored (the host's pushes)."""

    def over() -> bool:
        done = {r["round"] for r in state.data.get("finished_rounds") or []}
        return round_ in done and state.current is None

    await client.wait_until(over, timeout=TIMEOUT)


def expected_standings(
    results: dict[int, list[dict[str, Any]]],
    players: list[dict[str, Any]],
) -> list[tuple[int | None, str, int, int]]:
    """Standings by the documented placement scoring: per round, P − place + 1 points
    (P: racers seated in that round), 0 for a round not played; ties broken by more
    rounds won, then better best place, then earlier registration; removed players
    after everyone, unranked. ``players`` in registration order. Returns
    (rank, id, points, rounds_played) rows."""
    # points, won, best (None: no round yet), played
    totals: dict[str, list[Any]] = {p["id"]: [0, 0, None, 0] for p in players}
    for rows in results.values():
        seated = len(rows)
        for row in rows:
            entry = totals[row["id"]]
            entry[0] += seated - row["place"] + 1
            entry[1] += row["place"] == 1
            entry[2] = row["place"] if entry[2] is None else min(entry[2], row["place"])
            entry[3] += 1
    order = {p["id"]: i for i, p in enumerate(players)}
    ranked = [p["id"] for p in players if p["status"] != "removed"]
    ranked.sort(
        key=lambda pid: (
            -totals[pid][0],
            -totals[pid][1],
            totals[pid][2] if totals[pid][2] is not None else 10**6,
            order[pid],
        )
    )
    out: list[tuple[int | None, str, int, int]] = [
        (i + 1, pid, totals[pid][0], totals[pid][3]) for i, pid in enumerate(ranked)
    ]
    out += [
        (None, p["id"], totals[p["id"]][0], totals[p["id"]][3])
        for p in players
        if p["status"] == "removed"
    ]
    return out


def http_get(server: ServerProcess, path: str) -> bytes:
    with urllib.request.urlopen(f"{server.http_url}{path}", timeout=10) as resp:
        assert resp.status == 200
        body: bytes = resp.read()
        return body


def reconnected_once(client: CrescentClient) -> Callable[[], bool]:
    return lambda: client.reconnects == 1


async def test_three_rounds_with_late_join_removal_and_withdrawal(
    server: ServerProcess, clients: list[CrescentClient]
) -> None:
    url = server.ws_url
    host = await open_client(clients, url, "Hal")
    ada, bo, cy, dee = [await open_client(clients, url, n) for n in ("Ada", "Bo", "Cy", "Dee")]
    watcher = await open_client(clients, url, "Eve")
    t = await host.create_tournament(
        "Friday cup", rounds=3, time_limit=600, max_players=8, deals=DEALS
    )
    assert t.role == "host" and t.phase == "registration" and t.code.startswith("T")
    states = {c: await c.join_tournament(t.code) for c in (ada, bo, cy)}
    assert all(s.role == "player" and s.status == "active" for s in states.values())
    spectated = await watcher.join_tournament(t.code, as_="spectator")
    assert spectated.role == "spectator"

    # Round 1: Ada plays her game out, Bo plays 5 actions and resigns, Cy resigns at once.
    await host.host(t.code, "start_round")
    rooms = {c: await seat(c, states[c], 1) for c in (ada, bo, cy)}
    assert len({r.code for r in rooms.values()}) == 1  # one race room for everyone
    assert rooms[ada].deal is None  # the deal stays secret until the round ends
    await asyncio.gather(
        play(ada, rooms[ada]),
        play(bo, rooms[bo], moves=5, resign=True),
        cy.act("resign", rooms[cy].code),
    )
    await round_over(host, t, 1)
    results1 = await host.tournament_results(t.code, 1)
    assert results1.deal == DEALS[0] and t.data["deals"][0] == DEALS[0]
    assert [r["id"] for r in results1.rows][-1] == cy.player["id"]  # fewest cards: last
    assert t.data["deals"][1] is None  # the next round's deal is still secret

    # Between rounds: Dee joins late (round 1 missed: it scores nothing).
    states[dee] = await dee.join_tournament(t.code)
    assert states[dee].status == "active"

    # Round 2: the host removes Cy mid-round; Bo withdraws mid-round; Ada and Dee finish.
    await host.host(t.code, "start_round")
    rooms = {c: await seat(c, states[c], 2) for c in (ada, bo, cy, dee)}
    await play(bo, rooms[bo], moves=3)
    await bo.withdraw(t.code)
    await host.host(t.code, "remove", cy.player["id"])
    await asyncio.gather(play(ada, rooms[ada]), play(dee, rooms[dee]))
    await round_over(host, t, 2)
    await cy.wait_until(lambda: states[cy].status == "removed", timeout=TIMEOUT)
    with pytest.raises(RequestFailed) as refused:
        await cy.join_tournament(t.code)
    assert refused.value.code == "removed_from_tournament"

    # Round 3: only Ada and Dee are seated.
    await host.host(t.code, "start_round")
    rooms = {c: await seat(c, states[c], 3) for c in (ada, dee)}
    assert t.live is None or t.live.racing + t.live.finished <= 2
    await asyncio.gather(play(ada, rooms[ada]), play(dee, rooms[dee]))
    await round_over(host, t, 3)
    if not t.finished:
        with pytest.raises(RequestFailed) as more:
            await host.host(t.code, "start_round")
        assert more.value.code == "no_more_rounds"
        await host.host(t.code, "end")
    await host.wait_until(lambda: t.finished, timeout=TIMEOUT)
    await watcher.wait_until(lambda: spectated.finished, timeout=TIMEOUT)  # pushes arrived

    # The final standings, recomputed from the rounds' results.
    results = {n: list((await host.tournament_results(t.code, n)).rows) for n in (1, 2, 3)}
    assert {r["id"] for r in results[1]} == {ada.player["id"], bo.player["id"], cy.player["id"]}
    assert len(results[2]) == 4 and len(results[3]) == 2
    final = await host.standings(t.code)
    assert final.final
    registered = [
        {"id": c.player["id"], "status": s}
        for c, s in ((ada, "active"), (bo, "withdrawn"), (cy, "removed"), (dee, "active"))
    ]
    expected = expected_standings(results, registered)
    got = [(r["rank"], r["id"], r["points"], r["rounds_played"]) for r in final.rows]
    assert got == expected
    by_id = {r["id"]: r for r in final.rows}
    assert by_id[bo.player["id"]]["status"] == "withdrawn"
    assert by_id[cy.player["id"]]["status"] == "removed" and by_id[cy.player["id"]]["rank"] is None
    assert final.rows[-1]["id"] == cy.player["id"]  # removed: listed after everyone
    assert by_id[dee.player["id"]]["rounds_played"] == 2  # round 1 missed
    assert t.data["deals"] == DEALS  # every deal shown once its round ended

    # The exports: JSON with everything, CSV with a line per player per round.
    exported = json.loads(http_get(server, f"/api/tournaments/{t.code}.json"))
    text = json.dumps(exported)
    assert t.code in text and "Friday cup" in text and all(d in text for d in DEALS)
    table = list(
        csv.reader(io.StringIO(http_get(server, f"/api/tournaments/{t.code}.csv").decode()))
    )
    assert table[0][:3] == ["round", "place", "id"]
    round_lines = table[1 : table.index([])]  # then an empty line and the standings
    assert len(round_lines) == 3 + 4 + 2
    for n, rows in results.items():
        for row in rows:
            assert [str(n), str(row["place"]), row["id"]] in [line[:3] for line in round_lines]
    with pytest.raises(urllib.error.HTTPError) as missing:
        http_get(server, "/api/tournaments/TZZZZZZ.json")
    assert missing.value.code == 404
    missing.value.close()  # it holds the response's socket


async def test_authorisation(server: ServerProcess, clients: list[CrescentClient]) -> None:
    url = server.ws_url
    host = await open_client(clients, url, "Hal")
    ada = await open_client(clients, url, "Ada")
    eve = await open_client(clients, url, "Eve")
    t = await host.create_tournament("Rules", rounds=2, time_limit=600, max_players=4)
    await ada.join_tournament(t.code)
    await eve.join_tournament(t.code, as_="spectator")
    for client in (ada, eve):
        for op, player in (
            ("start_round", None),
            ("close_registration", None),
            ("pause", None),
            ("remove", ada.player["id"]),
            ("end", None),
        ):
            with pytest.raises(RequestFailed) as info:
                await client.host(t.code, op, player)
            assert info.value.code == "not_host", (op, info.value)
    # Nothing changed: the host can still do all of it.
    await host.host(t.code, "start_round")
    ada_state = ada.tournament_state(t.code)
    room = await seat(ada, ada_state, 1)
    # The round's room is the tournament host's to control, ready included (protocol.md).
    for control in (ada.ready, ada.start, ada.rematch):
        with pytest.raises(RequestFailed) as info:
            await control(room.code)
        assert info.value.code == "not_host", (control, info.value)
    with pytest.raises(RequestFailed) as info:
        await host.host(t.code, "remove", host.player["id"])
    assert info.value.code == "cannot_remove_host"
    # A spectator of the tournament cannot take a seat in its round, nor act in it.
    for as_ in ("racer", "spectator"):
        with pytest.raises(RequestFailed) as info:
            await eve.join(room.code, as_=as_)
        assert info.value.code == "already_started"
    async with aiohttp.ClientSession() as session:
        raw = await open_client_raw(session, server.ws_url, token=eve.token)
        try:
            refused = await raw.act(room.code, 1, "redeal")
            assert isinstance(refused, wire.Error) and refused.code == "not_in_room", refused
        finally:
            await raw.close()
    assert room.view is not None and room.view["moves"] == 0  # nothing happened to Ada
    await host.host(t.code, "remove", ada.player["id"])
    await ada.wait_until(lambda: ada_state.status == "removed", timeout=TIMEOUT)
    with pytest.raises(RequestFailed) as info:
        await ada.join_tournament(t.code)
    assert info.value.code == "removed_from_tournament"
    with pytest.raises(RequestFailed) as info:
        await eve.join_tournament("TZZZZZZ")
    assert info.value.code == "tournament_not_found"


async def test_kill_9_of_a_server_mid_round_loses_no_acknowledged_action(
    server: ServerProcess, module_prefix: str, clients: list[CrescentClient]
) -> None:
    # A second process on the same Redis and key prefix; the module's server survives.
    one = await asyncio.to_thread(
        launch_server_process, module_prefix, None, countdown_ms=300, extra_args=FAST
    )
    two = server
    try:
        host = await open_client(clients, two.ws_url, "Hal")
        t = await host.create_tournament("Crash", rounds=1, time_limit=600, max_players=8)
        names = ["P1", "P2", "P3", "P4", "P5", "P6"]
        # Players spread over both processes: even ones on the process that dies.
        players = [
            await open_client(clients, (one if i % 2 == 0 else two).ws_url, name)
            for i, name in enumerate(names)
        ]
        states = await asyncio.gather(*(p.join_tournament(t.code) for p in players))
        await host.host(t.code, "start_round")
        rooms = await asyncio.gather(*(seat(p, s, 1) for p, s in zip(players, states, strict=True)))
        # Everyone plays a few actions; each is acknowledged.
        acked = await asyncio.gather(
            *(play(p, r, moves=6 + i) for i, (p, r) in enumerate(zip(players, rooms, strict=True)))
        )
        before = [(r.last_seq, r.view) for r in rooms]
        assert [seq for seq, _ in before] == [len(a) for a in acked]

        one.kill()  # SIGKILL: no goodbye, nothing flushed on the way out
        for player in players[::2]:
            player.url = two.ws_url  # as a load balancer would send them
        await asyncio.gather(
            *(p.wait_until(reconnected_once(p), timeout=TIMEOUT) for p in players[::2])
        )
        # The server's own view after the reconnect: every acknowledged action is there.
        for player, room, (seq, view) in zip(players, rooms, before, strict=True):
            again = await player.join(room.code, as_="racer")
            assert again.last_seq == seq and again.view == view

        # The round goes on to its end on the surviving process and is scored.
        await asyncio.gather(*(play(p, r) for p, r in zip(players, rooms, strict=True)))
        await round_over(host, t, 1)
        results = await host.tournament_results(t.code, 1)
        assert sorted(r["id"] for r in results.rows) == sorted(p.player["id"] for p in players)
        moves = {r["id"]: r["moves"] for r in results.rows}
        for player, room in zip(players, rooms, strict=True):
            assert room.view is not None
            assert moves[player.player["id"]] == room.view["moves"]
        # What the server kept is the acknowledged actions themselves: replayed on the
        # round's deal (shown now that it ended) they give the views it returned.
        assert results.deal is not None
        for actions, (_, view) in zip(acked, before, strict=True):
            game = Game.from_code(results.deal)
            for action in actions:
                game.apply(action)
            assert view is not None and game.view().to_wire()["piles"] == view["piles"]
    finally:
        one.kill()
