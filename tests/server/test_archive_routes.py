"""The archive's reads end to end: real Redis, real PostgreSQL (a private schema), real
sockets. A race and a daily attempt finish; the outbox drains them; the HTTP routes and
the ``replay`` wire request serve them, and a sealed daily attempt stays a 404 until
its day is revealed (docs/archive.md, "Reading")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from bench.devclient import WsClient, open_client
from crescent_wire import protocol as p
from server.config import Settings
from server.core.archive_records import game_id
from server.core.outbox import Archiver
from server.core.replay import parse_replay, verify_game
from server.daily import Day, reveal_at
from server.game import Game
from server.web.app import HUB
from tests.archive.conftest import _create_schema, _drop_schema, postgres_dsn
from tests.server.conftest import Clock
from tests.server.test_race_e2e import wait_until_started

__all__ = ["postgres_dsn"]

DEAL = "CR1-N-AAAAAAB"


@pytest.fixture
async def archived_app(
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., object],
    postgres_dsn: str,
) -> AsyncIterator[Any]:
    schema = await _create_schema(postgres_dsn)
    sep = "&" if "?" in postgres_dsn else "?"
    app = make_app(database_url=f"{postgres_dsn}{sep}search_path={schema}")
    client = await aiohttp_client(app)
    yield client
    await client.close()  # the app's pool closed before its schema goes
    await _drop_schema(postgres_dsn, schema)


def archiver_of(client: Any) -> Archiver:
    archiver = client.server.app[HUB].archiver
    assert archiver is not None
    return archiver  # type: ignore[no-any-return]


async def drained(client: Any, games: int) -> None:
    """Wait until this app's drainer has written ``games`` games to the archive."""
    archiver = archiver_of(client)
    while archiver.written < games:
        archiver.caught_up.clear()
        try:
            await asyncio.wait_for(archiver.caught_up.wait(), 20)
        except TimeoutError:
            lag = await archiver.lag()
            raise AssertionError(f"{archiver.written} games written; outbox {lag}") from None


async def race(client: Any, players: list[WsClient], moves: int) -> str:
    """The first racer plays ``moves`` moves, then everyone resigns: the room's code."""
    snap = await players[0].create(deal=DEAL, seats=len(players))
    code = str(snap.room["code"])
    for other in players[1:]:
        await other.join(code)
    for racer in players:
        assert isinstance(await racer.call(p.Ready(room=code)), p.Ok)
    await wait_until_started(players[0], code)
    game = Game.from_code(DEAL)
    for seq in range(1, moves + 1):
        move = str(next(iter(game.legal_moves())))
        game.apply(move)
        assert isinstance(await players[0].act(code, seq, move), p.Ack)
    for racer, seq in zip(players, [moves + 1] + [1] * (len(players) - 1), strict=True):
        assert isinstance(await racer.act(code, seq, "resign"), p.Ack)
    await players[0].event("finished")
    return code


async def get(client: Any, path: str) -> tuple[int, Any]:
    response = await client.get(path)
    return response.status, await response.json()


async def test_replay_history_and_board_of_real_races(archived_app: Any) -> None:
    client = archived_app
    ada = await open_client(client, "/ws", name="Ada")
    bo = await open_client(client, "/ws", name="Bo")
    first = await race(client, [ada, bo], moves=2)
    second = await race(client, [ada, bo], moves=0)
    await drained(client, 2)
    ada_id = ada.player["id"]

    status, history = await get(client, f"/api/players/{ada_id}/games")
    assert status == 200 and [g["game"].split("-")[0] for g in history["games"]] == [
        second,
        first,
    ]  # newest first
    assert history["next"] is None
    status, page = await get(client, f"/api/players/{ada_id}/games?limit=1")
    assert status == 200 and len(page["games"]) == 1 and page["next"] is not None
    status, rest = await get(client, f"/api/players/{ada_id}/games?limit=1&before={page['next']}")
    assert status == 200 and rest["games"] == history["games"][1:] and rest["next"] is None

    first_id = history["games"][1]["game"]
    status, document = await get(client, history["games"][1]["replay"])
    assert status == 200 and document["id"] == first_id
    game = parse_replay(document)
    assert all(verdict.ok for verdict in verify_game(game))
    assert [a.a for a in game.racers[0].actions][-1] == "resign"

    status, board = await get(client, f"/api/deals/{DEAL.lower()}/games")
    assert status == 200 and board["deal"] == DEAL and len(board["rows"]) == 4
    foundations = [row["result"]["foundation"] for row in board["rows"]]
    assert foundations == sorted(foundations, reverse=True)  # nobody won: most cards first

    metrics = await (await client.get("/metrics")).text()
    assert "crescent_archive_outbox_pending 0.0" in metrics
    assert "crescent_archive_oldest_pending_seconds 0.0" in metrics
    status, health = await get(client, "/healthz")
    assert status == 200 and health["archive"] == {
        "pending": 0,
        "oldest_pending_s": 0.0,
        "archive": "up",
    }

    reply = await ada.call(p.Replay(game=first_id))
    assert isinstance(reply, p.ReplayReply) and reply.replay == document
    missing = await ada.call(p.Replay(game="NOPE-1-x"))
    assert isinstance(missing, p.Error) and missing.code == "game_not_found"


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/api/games/NOPE-1-x.json", 404, "game_not_found"),
        ("/api/games/..%2Fetc.json", 404, "game_not_found"),
        ("/api/games/NOPE-1-x.xml", 404, "game_not_found"),
        ("/api/players/ada/games?limit=0", 400, "bad_page_size"),
        ("/api/players/ada/games?limit=101", 400, "bad_page_size"),
        ("/api/players/ada/games?before=12", 400, "bad_cursor"),
        (f"/api/players/{'x' * 65}/games", 400, "bad_player_id"),
        ("/api/deals/CR9-Q/games", 400, "bad_deal_code"),
        (f"/api/deals/{DEAL}/games?after=0~1~2", 400, "bad_cursor"),
    ],
)
async def test_bad_input_gets_a_coded_answer(
    archived_app: Any, path: str, status: int, code: str
) -> None:
    got_status, body = await get(archived_app, path)
    assert (got_status, body["code"]) == (status, code) and body["message"]


async def test_a_sealed_daily_attempt_is_not_readable_before_the_reveal(
    archived_app: Any, clock: Clock, settings: Settings
) -> None:
    client = archived_app
    # Today's record is prepared in the background at start-up: before it, DailyStart
    # answers day_not_ready (a loaded machine got there first). Prepared here, awaited.
    assert await client.server.app[HUB].daily.prepare()
    ada = await open_client(client, "/ws", name="Ada")
    snap = await ada.call(p.DailyStart())
    assert isinstance(snap, p.RoomSnapshot)
    code = str(snap.room["code"])
    await wait_until_started(ada, code)
    assert isinstance(await ada.act(code, 1, "resign"), p.Ack)
    await ada.event("finished")
    await drained(client, 1)
    status, history = await get(client, f"/api/players/{ada.player['id']}/games")
    assert status == 200 and history["games"] == []  # sealed: not even in the history
    room = await client.server.app[HUB].rooms.load(code)
    day = Day.of(room.created_at)
    reveal = reveal_at(day, settings.daily_time_limit_s * 1000 + settings.countdown_ms)
    assert room.deal_sealed_until == reveal
    # The id is derivable from the room: a guess must not tell that it exists.
    sealed = game_id(room)
    status, body = await get(client, f"/api/games/{sealed}.json")
    assert (status, body["code"]) == (404, "game_not_found")
    status, board = await get(client, f"/api/deals/{DEAL}/games")
    assert status == 200 and board["rows"] == []

    clock.offset_ms += reveal - clock() + 1  # the day is revealed
    status, document = await get(client, f"/api/games/{sealed}.json")
    assert status == 200 and document["kind"] == "daily" and document["origin"] == str(day)
    status, history = await get(client, f"/api/players/{ada.player['id']}/games")
    assert [g["game"] for g in history["games"]] == [sealed]
