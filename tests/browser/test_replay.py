"""The replay viewer (/g/<id>, docs/browser.md "Replays"): a real practice game played
in the page, archived in a real PostgreSQL, opened from the results dialog and stepped
through with the keyboard; the board it draws is the rules engine's, move by move."""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from playwright.async_api import Page, expect

from bench.devclient import open_client
from crescent_wire import protocol as p
from server.core.archive import (
    Action,
    ArchiveBatch,
    ArchivedGame,
    ArchivedRacer,
    GameKind,
    RacerResult,
)
from server.daily import Day
from server.game import Game
from server.storage.postgres_archive import connect
from tests.server.test_race_e2e import wait_until_started
from tests.support import ServerProcess, start_server_process

from .conftest import COUNTDOWN_MS, DEAL, Pages
from .helpers import engine_state, play_line, resign, snapshot, wait_for_board
from .test_accessibility import serious_axe_findings
from .test_daily import seed_past_day


@pytest.fixture
def archive_server(prefix: str, database_url: str) -> Iterator[ServerProcess]:
    env = {"CRESCENT_DATABASE_URL": database_url, "CRESCENT_ARCHIVE": "on"}
    with start_server_process(prefix, extra_env=env, countdown_ms=COUNTDOWN_MS) as proc:
        yield proc


def get_json(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def replay_board(page: Page) -> dict[str, list[Any]]:
    """Every place's top card and count as the replay's board shows them."""
    places: dict[str, list[Any]] = await page.evaluate(
        """() => Object.fromEntries(
              [...document.querySelectorAll('[data-testid=replay] [data-place]')]
              .map(el => [el.dataset.place, [el.dataset.top, Number(el.dataset.count)]]))"""
    )
    return places


def first_moves(n: int) -> list[str]:
    """``n`` legal moves from the deal's start, each from a different source than the last."""
    game = Game.from_code(DEAL)
    line: list[str] = []
    for _ in range(n):
        move = next(
            str(m)
            for m in game.legal_moves()
            if not line or str(m).split("-")[0] != line[-1].split("-")[0]
        )
        game.play(move)
        line.append(move)
    return line


def after(line: list[str]) -> dict[str, list[Any]]:
    game = Game.from_code(DEAL)
    for action in line:
        game.play(action)
    return engine_state(game)


async def test_a_practice_game_replays_move_by_move(
    archive_server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    line = first_moves(4)
    ada = await pages.open(archive_server.http_url + "/", name="Ada")
    await ada.get_by_test_id("deal-mode").select_option("code")
    await ada.get_by_test_id("deal-code").fill(DEAL)
    await ada.get_by_test_id("play-alone").click()
    await wait_for_board(ada)
    await play_line(ada, Game.from_code(DEAL), line)
    await resign(ada)
    results = ada.get_by_test_id("results")
    await expect(results).to_be_visible()
    # The link appears once the game is archived (the page asks the JSON route).
    watch = results.get_by_test_id("watch-replay")
    await expect(watch).to_be_visible(timeout=30000)
    href = await watch.get_attribute("href")
    assert href and href.startswith("/g/")
    game_id = href.removeprefix("/g/")
    status, doc = await asyncio.to_thread(
        get_json, f"{archive_server.http_url}/api/games/{game_id}.json"
    )
    assert status == 200 and [a["a"] for a in doc["racers"][0]["actions"]] == [*line, "resign"]
    await watch.press("Enter")  # keyboard only from here
    await expect(ada).to_have_url(f"{archive_server.http_url}/g/{game_id}")
    step = ada.get_by_test_id("replay-step")
    await expect(step).to_contain_text("Start: 5 actions")
    assert await replay_board(ada) == after([])
    forward = ada.get_by_test_id("replay-forward")
    await forward.focus()
    await ada.keyboard.press("Enter")
    await ada.keyboard.press("Enter")
    await expect(step).to_contain_text("Action 2 of 5")
    assert await replay_board(ada) == after(line[:2])
    moves = ada.get_by_test_id("replay-moves")
    await expect(moves.locator("[aria-current=step]")).to_have_attribute("data-step", "2")
    back = ada.get_by_test_id("replay-back")
    await back.focus()
    await ada.keyboard.press("Enter")
    await expect(step).to_contain_text("Action 1 of 5")
    assert await replay_board(ada) == after(line[:1])
    # The scrubber: End is the last action (the resign), Home the deal.
    scrubber = ada.get_by_test_id("replay-scrubber")
    await scrubber.focus()
    await ada.keyboard.press("End")
    await expect(step).to_contain_text("Action 5 of 5: Resign")
    assert await replay_board(ada) == after(line)
    await expect(forward).to_be_disabled()
    await ada.keyboard.press("Home")
    await expect(step).to_contain_text("Start")
    await ada.keyboard.press("ArrowRight")
    await ada.keyboard.press("ArrowRight")
    await ada.keyboard.press("ArrowRight")
    await expect(step).to_contain_text("Action 3 of 5")
    assert await replay_board(ada) == after(line[:3])
    # Speed 16× and play: it runs to the end by itself.
    fast = ada.get_by_test_id("replay-speed-16")
    await fast.focus()
    await ada.keyboard.press("Enter")
    await expect(fast).to_have_attribute("aria-pressed", "true")
    await expect(ada.get_by_test_id("replay-speed-1")).to_have_attribute("aria-pressed", "false")
    play = ada.get_by_test_id("replay-play")
    await play.focus()
    await ada.keyboard.press("Enter")
    await expect(step).to_contain_text("Action 5 of 5", timeout=15000)
    await expect(play).to_have_text("Play")
    # A move in the list is a step to go to.
    await moves.locator("[data-step='2']").focus()
    await ada.keyboard.press("Enter")
    await expect(step).to_contain_text("Action 2 of 5")
    assert await replay_board(ada) == after(line[:2])
    # One racer: one line in the chart; the share link, with the loopback warning.
    await expect(ada.get_by_test_id("replay-chart").locator("polyline")).to_have_count(1)
    link = ada.get_by_test_id("replay-link")
    await expect(link).to_have_value(f"{archive_server.http_url}/g/{game_id}")
    await expect(ada.get_by_test_id("local-only")).to_be_visible()
    for width, height in ((390, 844), (1280, 800)):
        await ada.set_viewport_size({"width": width, "height": height})
        await expect(ada.get_by_test_id("replay-board")).to_be_visible()
        assert await serious_axe_findings(ada) == [], (width, height)
        await snapshot(ada, artifacts / f"replay-{width}.png", full_page=True)
        assert await ada.evaluate("document.documentElement.scrollWidth <= innerWidth + 1")
    assert not pages.errors


async def test_an_unknown_game_says_it_is_not_available(
    archive_server: ServerProcess, pages: Pages
) -> None:
    page = await pages.open(f"{archive_server.http_url}/g/NOSUCH-1-abc", name="Ada")
    await expect(page.get_by_test_id("replay-message")).to_have_text(
        "This game is not available (yet). A game can be watched once it is over and its "
        "deal is revealed."
    )
    await page.get_by_test_id("language").select_option("sv")
    await expect(page.get_by_test_id("replay-message")).to_contain_text("går inte att se (än)")
    assert await serious_axe_findings(page) == []
    assert not pages.errors


async def test_my_games_newest_first_with_load_more(
    archive_server: ServerProcess, pages: Pages
) -> None:
    ada = await pages.open(archive_server.http_url + "/", name="Ada")
    await ada.get_by_test_id("deal-mode").select_option("code")
    await ada.get_by_test_id("deal-code").fill(DEAL)
    await ada.get_by_test_id("play-alone").click()
    ids = []
    for _ in range(2):
        await wait_for_board(ada)
        await resign(ada)
        watch = ada.get_by_test_id("results").get_by_test_id("watch-replay")
        await expect(watch).to_be_visible(timeout=30000)
        ids.append((await watch.get_attribute("href") or "").removeprefix("/g/"))
        await ada.get_by_test_id("rematch").click()
    assert ids[0] != ids[1]
    await ada.goto(archive_server.http_url + "/me/games?limit=1")
    games = ada.get_by_test_id("history-game")
    await expect(games).to_have_count(1)
    await expect(games.get_by_test_id("watch-replay")).to_have_attribute("href", f"/g/{ids[1]}")
    more = ada.get_by_test_id("history-more")
    await more.focus()
    await ada.keyboard.press("Enter")
    await expect(games).to_have_count(2)
    await expect(games.nth(1).get_by_test_id("watch-replay")).to_have_attribute(
        "href", f"/g/{ids[0]}"
    )
    await expect(games.nth(1).get_by_test_id("watch-replay")).to_be_focused()
    if await more.count():  # the server may not know page 2 was the last
        await more.click()
    await expect(more).to_have_count(0)
    await expect(games).to_have_count(2)
    assert await serious_axe_findings(ada) == []
    await games.nth(1).get_by_test_id("watch-replay").press("Enter")
    await expect(ada).to_have_url(f"{archive_server.http_url}/g/{ids[0]}")
    await expect(ada.get_by_test_id("replay-step")).to_contain_text("Start: 1 action")
    assert not pages.errors


async def test_a_tournament_round_links_its_replay(
    archive_server: ServerProcess, pages: Pages
) -> None:
    async with aiohttp.ClientSession() as session:
        host = await open_client(session, archive_server.ws_url, name="Host")
        ada = await open_client(session, archive_server.ws_url, name="Ada")
        created = await host.call(
            p.TCreate(name="Replay cup", rounds=1, time_limit=30, max_players=2, deals=(DEAL,))
        )
        assert isinstance(created, p.TournamentSnapshot)
        code = created.tournament["code"]
        assert isinstance(await ada.call(p.TJoin(tournament=code)), p.TournamentSnapshot)
        assert isinstance(await host.call(p.THost(tournament=code, op="start_round")), p.Ok)
        push = await ada.wait_for(
            lambda m: isinstance(m, p.TournamentSnapshot) and m.tournament["current"] is not None
        )
        assert isinstance(push, p.TournamentSnapshot)
        room = push.tournament["current"]["room"]
        await wait_until_started(ada, room)
        assert isinstance(await ada.act(room, 1, "resign"), p.Ack)
        await host.wait_for(
            lambda m: isinstance(m, p.TournamentSnapshot) and m.tournament["phase"] == "finished"
        )
        await host.close()
        await ada.close()
    page = await pages.open(f"{archive_server.http_url}/t/{code}", name="Cy")
    round_one = page.get_by_test_id("t-round-1")  # the last round's results open at once
    link = round_one.get_by_test_id("t-round-replay")
    await expect(link).to_be_visible(timeout=30000)
    await link.press("Enter")
    await expect(page).to_have_url(re.compile(rf"/g/{room}-1-[0-9a-z]+$"))
    await expect(page.get_by_test_id("replay-deal")).to_contain_text(
        f"A tournament round on deal {DEAL}"
    )
    await expect(page.get_by_test_id("replay-step")).to_contain_text("Start: 1 action")
    assert not pages.errors


async def test_racing_a_replay_as_a_ghost_says_where_you_diverged(
    archive_server: ServerProcess, pages: Pages
) -> None:
    line = first_moves(3)
    ada = await pages.open(archive_server.http_url + "/", name="Ada")
    await ada.get_by_test_id("deal-mode").select_option("code")
    await ada.get_by_test_id("deal-code").fill(DEAL)
    await ada.get_by_test_id("play-alone").click()
    await wait_for_board(ada)
    await play_line(ada, Game.from_code(DEAL), line)
    await resign(ada)
    watch = ada.get_by_test_id("results").get_by_test_id("watch-replay")
    await expect(watch).to_be_visible(timeout=30000)
    await watch.press("Enter")
    await ada.get_by_test_id("race-ghost").press("Enter")
    await wait_for_board(ada)
    ghost = ada.get_by_test_id("ghost")
    await expect(ghost).to_contain_text("Ada's ghost")
    await expect(ghost.get_by_role("progressbar")).to_have_attribute("aria-valuemax", "104")
    # The same first move, then another one than the ghost's.
    game = Game.from_code(DEAL)
    game.play(line[0])
    other = next(
        str(m)
        for m in game.legal_moves()
        if str(m) != line[1] and str(m).split("-")[0] != line[0].split("-")[0]
    )
    await play_line(ada, Game.from_code(DEAL), [line[0], other])
    await resign(ada)
    compare = ada.get_by_test_id("results").get_by_test_id("ghost-compare")
    await expect(compare).to_be_visible(timeout=30000)
    await expect(compare.get_by_test_id("ghost-diverged")).to_have_text(
        f"You left the ghost's line at move 2: you played {other.replace('-', ' → ')}, "
        f"Ada played {line[1].replace('-', ' → ')}."
    )
    await expect(compare.locator("polyline")).to_have_count(2)
    assert await serious_axe_findings(ada) == []
    assert not pages.errors


async def test_a_revealed_daily_day_lists_its_replays_and_races_the_best(
    prefix: str, database_url: str, pages: Pages
) -> None:
    env = {"CRESCENT_DATABASE_URL": database_url, "CRESCENT_DAILY_DEAL": DEAL}
    with start_server_process(prefix, extra_env=env, countdown_ms=COUNTDOWN_MS) as server:
        await seed_past_day(server)
        day = Day.of(int(time.time() * 1000)).previous(2)
        line = first_moves(3)
        start = day.starts_at + 3_600_000
        bo = ArchivedRacer(
            "bo-player",
            "Bo",
            tuple(Action(700 * (i + 1), a) for i, a in enumerate([*line, "resign"])),
            RacerResult(rank=1, status="resigned", time_ms=2800, moves=3, foundation=9),
        )
        game = ArchivedGame(
            id="DAYROOM-1-test",
            kind=GameKind.DAILY,
            deal=DEAL,
            variant="N",
            origin=str(day),
            start_at=start,
            ended_at=start + 2800,
            revealed_at=start + 2800,
            racers=(bo,),
        )
        schema = database_url.rsplit("search_path=", 1)[1]
        archive = await connect(database_url.split("?")[0], server_settings={"search_path": schema})
        try:
            await archive.write(ArchiveBatch(games=(game,)))
        finally:
            await archive.close()
        page = await pages.open(server.http_url + "/daily", name="Ada")
        replays = page.get_by_test_id("daily-replays")
        await expect(replays).to_contain_text("Bo: resigned · 9/104", timeout=20000)
        await expect(replays.get_by_test_id("daily-replay")).to_have_attribute(
            "href", "/g/DAYROOM-1-test"
        )
        await page.get_by_test_id("race-best").press("Enter")
        await wait_for_board(page)
        await expect(page.get_by_test_id("ghost")).to_contain_text("Bo's ghost")
        await page.goto(server.http_url + "/g/DAYROOM-1-test")
        await expect(page.get_by_test_id("replay-deal")).to_contain_text(
            f"A daily challenge on deal {DEAL}"
        )
        await expect(page.get_by_test_id("replay-step")).to_contain_text("Start: 4 actions")
        assert not pages.errors
