"""The whole server, WebSocket layer included, on the in-memory storage (``--storage
memory``): real sockets against the app the composition root builds, no Redis. Fast: a
room from hello to a race with acks and progress in well under a second."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import pytest

from bench.devclient import WsClient, open_client
from crescent_wire import protocol as p
from server.compose import build_parts
from server.config import Settings, parse_args
from server.core.games import untimed
from server.game import Game
from server.storage.memory import MemoryStorage
from server.web import HUB, PARTS, create_app
from tests.server.conftest import Clock

DEAL = "CR1-N-AAAAAAB"


def legal_line(count: int) -> list[str]:
    game = Game.from_code(DEAL)
    line = []
    for _ in range(count):
        move = str(next(game.legal_moves()))
        game.play(move)
        line.append(move)
    return line


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def client(aiohttp_client: Callable[..., Any], clock: Clock) -> Any:
    settings = Settings(
        storage="memory",
        secret=secrets.token_urlsafe(32),
        countdown_ms=3000,  # the tests move the clock past it
        daily_deal=DEAL,  # no solver at start-up
    )
    return await aiohttp_client(create_app(settings, build_parts, clock=clock))


async def test_the_app_runs_on_memory(client: Any) -> None:
    parts = client.server.app[PARTS]
    assert isinstance(parts.storage, MemoryStorage)
    health = await client.get("/healthz")
    assert health.status == 200 and (await health.json())["redis"] == "up"


async def test_hello_create_join_ready_start_act_progress(client: Any, clock: Clock) -> None:
    ada: WsClient = await open_client(client, "/ws", name="Ada")
    bo: WsClient = await open_client(client, "/ws", name="Bo")
    assert ada.player["name"] == "Ada" and ada.token

    snap = await ada.create(deal=DEAL, seats=3)
    code = snap.room["code"]
    joined = await bo.join(code)
    assert [pl["name"] for pl in joined.room["players"]] == ["Ada", "Bo"]
    assert (await ada.event("joined")).data["player"]["name"] == "Bo"

    assert isinstance(await bo.call(p.Ready(room=code)), p.Ok)
    ready = await ada.event("ready")
    assert ready.data["player"] == bo.player["id"]
    assert isinstance(await ada.call(p.Start(room=code)), p.Ok)  # the host starts: 2 of 3
    countdown = await bo.event("countdown")

    early = await ada.act(code, 1, legal_line(1)[0])
    assert isinstance(early, p.Error) and early.code == "not_started"
    clock.offset_ms += countdown.data["start_at"] - clock()  # the countdown is over

    line = legal_line(3)
    expected = Game.from_code(DEAL)
    for seq, move in enumerate(line, 1):
        ack = await ada.act(code, seq, move)
        expected.play(move)
        assert isinstance(ack, p.Ack) and not ack.duplicate
        assert ack.view == expected.view().to_wire()
    again = await ada.act(code, 3, line[2])  # a resent seq: acknowledged once
    assert isinstance(again, p.Ack) and again.duplicate

    progress = await bo.wait_for(
        lambda m: (
            isinstance(m, p.Progress)
            and {r["player"]: r["moves"] for r in m.racers}.get(ada.player["id"]) == 3
        )
    )
    assert isinstance(progress, p.Progress) and progress.room == code

    # Stored where the app's parts say: the memory storage holds Ada's log.
    storage = client.server.app[PARTS].storage
    assert isinstance(storage, MemoryStorage)
    stored = await storage.load_game(code, 1, ada.player["id"])
    assert [untimed(a)[0] for a in stored.actions] == line and stored.last_seq == 3
    assert client.server.app[HUB].storage is storage


async def test_reconnect_with_token_keeps_the_player(client: Any) -> None:
    ada = await open_client(client, "/ws", name="Ada")
    await ada.close()
    back = await open_client(client, "/ws", token=ada.token)
    assert back.player["id"] == ada.player["id"]


def test_storage_setting() -> None:
    assert parse_args([]).storage == "redis"
    assert parse_args(["--storage", "memory"]).storage == "memory"
    with pytest.raises(SystemExit):
        parse_args(["--storage", "disk"])
