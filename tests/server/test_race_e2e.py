"""End to end over real WebSockets and real Redis: rooms, a 3-racer race, results, rematch."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import msgpack

from bench.devclient import WsClient, open_client
from crescent_wire import protocol as p
from server.game import Game
from tests.support import view_of

DEAL = "CR1-N-AAAAAAB"
CARD_RE = re.compile(r"^(10|[A2-9TJQK])[SHDC]$")


def legal_line(deal: str, count: int) -> list[str]:
    """The first legal move, ``count`` times (a valid line of play for tests)."""
    game = Game.from_code(deal)
    line = []
    for _ in range(count):
        move = str(next(game.legal_moves()))
        game.play(move)
        line.append(move)
    return line


def replay_count(moves: list[str]) -> int:
    """Cards on the foundations after playing ``moves`` on DEAL."""
    game = Game.from_code(DEAL)
    for move in moves:
        game.play(move)
    return game.foundation_count


def first_refused_move(deal: str) -> tuple[str, str]:
    """A pile-to-pile move the rules refuse, and its code."""
    game = Game.from_code(deal)
    for a in range(1, 17):
        for b in range(1, 17):
            if a != b:
                code = game.refusal(f"p{a}-p{b}")
                if code is not None:
                    return f"p{a}-p{b}", code
    raise AssertionError("no refused move")


def cards_in(obj: object) -> set[str]:
    """Every string in a nested structure that looks like a card."""
    found: set[str] = set()
    if isinstance(obj, str):
        if CARD_RE.match(obj):
            found.add(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            found |= cards_in(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            found |= cards_in(v)
    return found


async def start_race(
    host: WsClient, others: list[WsClient], **create: object
) -> tuple[str, p.Event]:
    """Create a room, seat everyone, start; return the code and the countdown event."""
    snap = await host.create(deal=DEAL, seats=len(others) + 1, **create)
    code = snap.room["code"]
    for c in others:
        await c.join(code)
    assert isinstance(await host.call(p.Start(room=code)), p.Ok)
    countdown = await host.event("countdown")
    for c in others:
        assert (await c.event("countdown")).data["start_at"] == countdown.data["start_at"]
    return code, countdown


async def wait_until_started(client: WsClient, code: str) -> p.RoomSnapshot:
    """Wait for the race's start (server clock) and return a fresh snapshot."""
    while True:
        snap = await client.join(code)
        if snap.room["phase"] == "racing":
            return snap
        await asyncio.sleep(0.05)


async def test_create_join_snapshot_and_fairness(client: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    bo = await open_client(client, "/ws", name="Bo")
    snap = await ada.create(deal=DEAL.lower(), seats=3, time_limit=600)
    room = snap.room
    assert re.fullmatch(r"[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{6}", room["code"])
    assert room["link"] == f"/r/{room['code']}"
    assert (room["phase"], room["round"], room["seats"], room["time_limit"]) == (
        "waiting",
        1,
        3,
        600,
    )
    assert room["host"] == ada.player["id"]
    assert room["deal"] == DEAL  # the host who chose the deal knows it anyway
    assert snap.you == {"role": "racer", "game": None, "last_seq": 0}

    joined = await bo.join(room["code"].lower())  # codes are case-insensitive
    assert joined.room["deal"] == DEAL  # a known-deal room: everyone sees the chosen code
    assert [pl["name"] for pl in joined.room["players"]] == ["Ada", "Bo"]
    event = await ada.event("joined")
    assert event.data["player"] == {"id": bo.player["id"], "name": "Bo", "role": "racer"}
    assert event.ver == joined.room["ver"]

    again = await bo.join(room["code"])  # joining again just returns the room
    assert [pl["id"] for pl in again.room["players"]] == [ada.player["id"], bo.player["id"]]


async def test_three_racers_race_to_results(client: object) -> None:
    ada, bo, cy = [await open_client(client, "/ws", name=n) for n in ("Ada", "Bo", "Cy")]
    watcher = await open_client(client, "/ws", name="Watcher")
    code, countdown = await start_race(ada, [bo, cy])
    spec = await watcher.join(code, as_="spectator")
    assert spec.you["role"] == "spectator" and spec.you["game"] is None
    assert countdown.data["round"] == 1 and countdown.data["deadline"] is None

    early = await ada.act(code, 1, legal_line(DEAL, 1)[0])
    assert isinstance(early, p.Error) and early.code in ("not_started",)
    before_start = await bo.join(code)
    if before_start.room["phase"] == "countdown":  # no card before the start
        assert before_start.you["game"] is None and not cards_in(before_start.to_wire())

    snaps = [await wait_until_started(c, code) for c in (ada, bo, cy)]
    for snap in snaps:
        assert snap.you["game"] == Game.from_code(DEAL).view().to_wire()
        assert snap.room["deal"] in (None, DEAL)

    # Ada plays 3 moves, Bo 2, then everyone resigns: the race ends.
    line = legal_line(DEAL, 3)
    for seq, move in enumerate(line, 1):
        ack = await ada.act(code, seq, move)
        assert isinstance(ack, p.Ack) and not ack.duplicate and view_of(ack)["moves"] == seq
    for seq, move in enumerate(line[:2], 1):
        assert isinstance(await bo.act(code, seq, move), p.Ack)

    progress = await watcher.wait_for(
        lambda m: (
            isinstance(m, p.Progress)
            and {r["player"]: r["moves"] for r in m.racers}.get(ada.player["id"]) == 3
        )
    )
    assert isinstance(progress, p.Progress)
    by_player = {r["player"]: r for r in progress.racers}
    assert set(by_player) == {ada.player["id"], bo.player["id"], cy.player["id"]}
    assert by_player[ada.player["id"]]["status"] == "playing"
    # Nobody receives a card of anyone's game but their own acks and their own view.
    for msg in watcher.received:
        assert not cards_in(msg.to_wire()), msg
    for racer in (ada, bo, cy):
        for msg in racer.received:
            if isinstance(msg, p.Ack):
                continue  # the racer's own game
            if isinstance(msg, p.RoomSnapshot):
                assert not cards_in(msg.room), msg.room
            else:
                assert not cards_in(msg.to_wire()), msg

    assert isinstance(await cy.act(code, 1, "resign"), p.Ack)
    assert isinstance(await bo.act(code, 3, "resign"), p.Ack)
    resigned = await ada.act(code, 4, "resign")
    assert isinstance(resigned, p.Ack) and view_of(resigned)["status"] == "resigned"

    finished = await watcher.event("finished")
    results = finished.data["results"]
    assert finished.data["deal"] == DEAL
    # Nobody won: more cards on the foundations first, then fewer moves.
    played = {ada.player["id"]: line, bo.player["id"]: line[:2], cy.player["id"]: []}
    foundation = {pid: replay_count(moves) for pid, moves in played.items()}
    expected = sorted(played, key=lambda pid: (-foundation[pid], len(played[pid])))
    assert [r["player"] for r in results] == expected
    assert [r["rank"] for r in results] == [1, 2, 3]
    assert all(r["status"] == "resigned" for r in results)
    assert {r["player"]: r["moves"] for r in results} == {
        pid: len(moves) for pid, moves in played.items()
    }
    assert {r["player"]: r["foundation"] for r in results} == foundation

    after = await ada.act(code, 5, "undo")
    assert isinstance(after, p.Error) and after.code == "race_over"
    final = await watcher.join(code, as_="spectator")
    assert final.room["phase"] == "finished" and final.room["deal"] == DEAL
    assert final.room["results"] == results

    # Rematch: same players, a new deal, round 2, back to waiting.
    assert isinstance(await bo.call(p.Rematch(room=code)), p.Error)  # not the host
    assert isinstance(await ada.call(p.Rematch(room=code)), p.Ok)
    rematch = await cy.event("rematch")
    assert rematch.data == {"round": 2, "phase": "waiting", "deal_known": False}
    snap = await cy.join(code)
    assert snap.room["round"] == 2 and snap.room["phase"] == "waiting"
    assert snap.room["results"] is None and snap.room["deal"] is None
    assert all(not pl["ready"] for pl in snap.room["players"])


async def test_refused_and_duplicate_actions(client: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    snap = await ada.create(deal=DEAL, seats=2)
    code = snap.room["code"]
    await ada.call(p.Start(room=code))
    await wait_until_started(ada, code)
    bad, reason = first_refused_move(DEAL)
    refused = await ada.act(code, 1, bad)
    assert isinstance(refused, p.Refused)
    assert refused.code == reason and refused.message and refused.message_sv
    unparsable = await ada.act(code, 1, "p99-zz")
    assert isinstance(unparsable, p.Refused) and unparsable.code == "bad_move"
    nothing = await ada.act(code, 1, "undo")
    assert isinstance(nothing, p.Refused) and nothing.code == "nothing_to_undo"

    move = legal_line(DEAL, 1)[0]
    ack = await ada.act(code, 1, move)  # a refused action did not use up seq 1
    assert isinstance(ack, p.Ack) and view_of(ack)["moves"] == 1
    dup = await ada.act(code, 1, move)  # resent: never applied twice
    assert isinstance(dup, p.Ack) and dup.duplicate and view_of(dup)["moves"] == 1
    redeal = await ada.act(code, 2, "redeal")
    assert isinstance(redeal, p.Ack) and view_of(redeal)["redeals_left"] == 2


async def test_ready_autostart_and_roles(client: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    bo = await open_client(client, "/ws", name="Bo")
    cy = await open_client(client, "/ws", name="Cy")
    code = (await ada.create(seats=2)).room["code"]
    await bo.join(code)
    full = await cy.call(p.Join(room=code))
    assert isinstance(full, p.Error) and full.code == "room_full"
    assert (await cy.join(code, as_="spectator")).you["role"] == "spectator"
    not_racer = await cy.call(p.Ready(room=code, ready=True))
    assert isinstance(not_racer, p.Error) and not_racer.code == "not_racer"
    not_host = await bo.call(p.Start(room=code))
    assert isinstance(not_host, p.Error) and not_host.code == "not_host"
    assert isinstance(await ada.call(p.Ready(room=code, ready=True)), p.Ok)
    # The event a request causes reaches its sender before the reply.
    assert any(isinstance(m, p.Event) and m.kind == "ready" for m in ada.inbox)
    assert isinstance(await bo.call(p.Ready(room=code, ready=True)), p.Ok)
    countdown = await cy.event("countdown")  # every seat taken and ready: it starts
    assert countdown.data["start_at"] > 0
    late = await open_client(client, "/ws", name="Late")
    started = await late.call(p.Join(room=code))
    assert isinstance(started, p.Error) and started.code == "already_started"
    wrong = await ada.call(p.Ready(room=code, ready=False))
    assert isinstance(wrong, p.Error) and wrong.code == "wrong_phase"


async def test_host_leaves_new_host_and_sync(client: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    bo = await open_client(client, "/ws", name="Bo")
    code = (await ada.create(seats=3)).room["code"]
    base = (await bo.join(code)).room["ver"]
    assert isinstance(await ada.call(p.Leave(room=code)), p.Ok)
    host = await bo.event("host")
    assert host.data == {"player": bo.player["id"]}
    synced = await bo.call(p.Sync(room=code, since=base))
    assert isinstance(synced, p.Events)
    assert [(e.kind, e.ver) for e in synced.events] == [("left", base + 1), ("host", base + 2)]
    fresh = await bo.call(p.Sync(room=code, since=0))  # history reaches back: all events
    assert isinstance(fresh, p.Events) and fresh.events[0].ver == 1


async def test_time_limit_ends_race(client: object, clock: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    bo = await open_client(client, "/ws", name="Bo")
    code, countdown = await start_race(ada, [bo], time_limit=30)
    assert countdown.data["deadline"] == countdown.data["start_at"] + 30_000
    await wait_until_started(ada, code)
    line = legal_line(DEAL, 2)
    for seq, move in enumerate(line, 1):
        assert isinstance(await bo.act(code, seq, move), p.Ack)
    clock.offset_ms = 31_000  # type: ignore[attr-defined]
    late = await ada.act(code, 1, line[0])
    assert isinstance(late, p.Error) and late.code == "race_over"
    finished = await ada.event("finished")
    results = finished.data["results"]
    assert [r["player"] for r in results] == [bo.player["id"], ada.player["id"]]
    assert results[0]["status"] == "timeout" and results[0]["moves"] == 2
    assert [r["time_ms"] for r in results] == [30_000, 30_000]  # ended at the deadline


async def test_deadline_ends_race_without_any_action(client: object, clock: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    bo = await open_client(client, "/ws", name="Bo")
    code, _ = await start_race(ada, [bo], time_limit=30)
    await wait_until_started(ada, code)
    to_foundation = next(
        str(m) for m in Game.from_code(DEAL).legal_moves() if str(m).split("-")[1][0] in "ad"
    )
    ack = await ada.act(code, 1, to_foundation)
    assert isinstance(ack, p.Ack)
    clock.offset_ms = 30_500  # type: ignore[attr-defined]
    finished = await bo.event("finished", timeout=5)  # nobody acts: the server ends it
    results = finished.data["results"]
    assert [r["player"] for r in results] == [ada.player["id"], bo.player["id"]]
    assert all(r["time_ms"] == 30_000 for r in results)


async def test_reconnect_with_token_resends_action(client: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    bo = await open_client(client, "/ws", name="Bo")
    code, _ = await start_race(ada, [bo])
    await wait_until_started(ada, code)
    line = legal_line(DEAL, 3)
    for seq, move in enumerate(line[:2], 1):
        assert isinstance(await ada.act(code, seq, move), p.Ack)
    # Seq 3 is sent, then the connection drops before the ack is read.
    await ada.ws.send_bytes(p.encode_client(p.Act(room=code, seq=3, action=line[2], id=99)))
    await asyncio.sleep(0.2)
    await ada.close()
    offline = await bo.wait_for(
        lambda m: isinstance(m, p.Event) and m.kind == "connected" and m.data["connected"] is False
    )
    assert isinstance(offline, p.Event) and offline.data["player"] == ada.player["id"]
    shown = await bo.wait_for(
        lambda m: (
            isinstance(m, p.Progress)
            and any(
                r["player"] == ada.player["id"] and r["status"] == "disconnected" for r in m.racers
            )
        )
    )
    assert isinstance(shown, p.Progress)

    again = await open_client(client, "/ws", token=ada.token)
    assert again.player == ada.player
    snap = await again.join(code)
    assert snap.you["last_seq"] == 3 and snap.you["game"]["moves"] == 3
    resent = await again.act(code, 3, line[2])
    assert isinstance(resent, p.Ack) and resent.duplicate and view_of(resent)["moves"] == 3
    online = await bo.event("connected")
    assert online.data == {"player": ada.player["id"], "connected": True}


async def test_two_connections_same_player_cannot_corrupt(client: object) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    code = (await ada.create(deal=DEAL, seats=2)).room["code"]
    await ada.call(p.Start(room=code))
    await wait_until_started(ada, code)
    twin = await open_client(client, "/ws", token=ada.token)
    await twin.join(code)
    line = legal_line(DEAL, 6)
    # Both sockets send the same seqs at the same time: each seq applies exactly once.
    replies = await asyncio.gather(
        *(c.act(code, seq, move) for seq, move in enumerate(line, 1) for c in (ada, twin))
    )
    assert all(isinstance(r, p.Ack) for r in replies), replies
    assert sum(1 for r in replies if isinstance(r, p.Ack) and not r.duplicate) == len(line)
    snap = await ada.join(code)
    assert snap.you["last_seq"] == 6 and snap.you["game"]["moves"] == 6


async def test_frames_are_msgpack_maps(client: object) -> None:
    ws = await client.ws_connect("/ws")  # type: ignore[attr-defined]
    await ws.send_bytes(msgpack.packb({"t": "ping", "id": 3}))
    frame = await ws.receive()
    assert msgpack.unpackb(frame.data) == {
        "t": "error",
        "id": 3,
        "code": "not_authenticated",
        "message": "Send 'hello' first",
    }
    await ws.close()


WINNING = json.loads(
    (Path(__file__).resolve().parent.parent / "game" / "data" / "winning_line.json").read_text()
)


async def test_winners_ranked_by_server_time(aiohttp_client: object, make_app: object) -> None:
    """Two racers win the same deal by the known winning line; the first to finish ranks
    first; a resigned racer ranks after both."""
    app = make_app(rate_per_s=10_000, rate_burst=10_000)  # type: ignore[operator]
    client = await aiohttp_client(app)  # type: ignore[operator]
    deal, line = WINNING["code"], WINNING["actions"]
    ada, bo, cy = [await open_client(client, "/ws", name=n) for n in ("Ada", "Bo", "Cy")]
    code = (await ada.create(deal=deal, seats=3)).room["code"]
    await bo.join(code)
    await cy.join(code)
    assert isinstance(await ada.call(p.Start(room=code)), p.Ok)
    await wait_until_started(ada, code)
    await wait_until_started(bo, code)
    for seq, action in enumerate(line, 1):
        ack = await ada.act(code, seq, action)
        assert isinstance(ack, p.Ack), (seq, action, ack)
    assert view_of(ack)["status"] == "won" and view_of(ack)["foundations"]["as"]["n"] == 13
    over = await ada.act(code, len(line) + 1, "undo")
    assert isinstance(over, p.Refused) and over.code == "game_over"
    await asyncio.sleep(0.05)
    for seq, action in enumerate(line, 1):
        assert isinstance(await bo.act(code, seq, action), p.Ack)
    assert isinstance(await cy.act(code, 1, "resign"), p.Ack)
    finished = await cy.event("finished")
    results = finished.data["results"]
    assert [(r["player"], r["status"]) for r in results] == [
        (ada.player["id"], "won"),
        (bo.player["id"], "won"),
        (cy.player["id"], "resigned"),
    ]
    assert results[0]["time_ms"] < results[1]["time_ms"]
    assert results[0]["foundation"] == 104 and results[0]["moves"] == 120
    progress = [m for m in cy.received if isinstance(m, p.Progress)]
    assert any(
        r["status"] == "won" and r["finished_ms"] is not None for m in progress for r in m.racers
    )


async def test_sync_beyond_history_returns_fresh_room(
    aiohttp_client: object, make_app: object
) -> None:
    client = await aiohttp_client(make_app(rate_per_s=10_000, rate_burst=10_000))  # type: ignore[operator]
    ada = await open_client(client, "/ws", name="Ada")
    code = (await ada.create(seats=3)).room["code"]
    for i in range(205):  # 205 events: the history keeps the last 200
        assert isinstance(await ada.call(p.Ready(room=code, ready=i % 2 == 0)), p.Ok)
    old = await ada.call(p.Sync(room=code, since=2))
    assert isinstance(old, p.RoomSnapshot) and old.room["ver"] == 205
    recent = await ada.call(p.Sync(room=code, since=200))
    assert isinstance(recent, p.Events)
    assert [e.ver for e in recent.events] == [201, 202, 203, 204, 205]
