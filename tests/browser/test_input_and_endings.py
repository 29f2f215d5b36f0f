"""Input that never drops a tap, the race's endings told to everyone, practice hints, and
an accessibility check (axe-core) of the lobby, the board and the results."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.async_api import Page, WebSocketRoute, expect

from server.game import Game
from tests.support import ServerProcess

from .conftest import DEAL, WEB, Pages
from .helpers import board_state, engine_state, race_of_two, resign, snapshot, wait_for_board
from .test_layouts import play_alone

AXE = WEB / "node_modules" / "axe-core" / "axe.min.js"


def single_fit_line(game: Game, length: int) -> list[str]:
    """Moves each made by one tap (the card has one fit), from different piles, each
    found on the board the previous one leaves."""
    line: list[str] = []
    used: set[str] = set()
    for _ in range(length):
        for n in range(1, 17):
            source = f"p{n}"
            fits = [str(m) for m in game.tap_targets(source)]
            if source not in used and len(fits) == 1:
                line.append(fits[0])
                used.add(source)
                game.play(fits[0])
                break
        else:
            raise AssertionError(f"no single-fit move after {line}")
    return line


async def hold_server_replies(page: Page) -> dict[str, Any]:
    """Route the page's WebSocket through the test: while `held` is on, what the server
    sends waits here (a slow network), and `release()` delivers it in order."""
    state: dict[str, Any] = {"held": False, "queue": [], "route": None}

    def handler(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        state["route"] = ws

        def from_server(message: str | bytes) -> None:
            if state["held"]:
                state["queue"].append(message)
            else:
                ws.send(message)

        server.on_message(from_server)
        ws.on_message(server.send)

    def release() -> None:
        state["held"] = False
        while state["queue"]:
            state["route"].send(state["queue"].pop(0))

    state["release"] = release
    await page.route_web_socket(re.compile(r"^wss?://"), handler)
    await page.reload()  # the page's connection now goes through the route
    await expect(page.get_by_test_id("play-alone")).to_be_visible()
    return state


async def test_taps_made_while_a_move_is_pending_are_played_in_order(
    server: ServerProcess, pages: Pages
) -> None:
    page = await pages.open(server.http_url + "/", width=390, height=844, touch=True, name="Pia")
    net = await hold_server_replies(page)
    await play_alone(page)
    line = single_fit_line(Game.from_code(DEAL), 3)
    sources = [move.split("-")[0] for move in line]

    # The server's replies are held: the first tap's move awaits its ack while the
    # player taps on.
    net["held"] = True
    for source in sources:
        await page.locator(f"[data-place={source}]").tap()
    await expect(page.get_by_test_id("moves")).to_have_text("0")
    await expect(page.locator(".place.queued")).to_have_count(2)
    net["release"]()
    # Each queued tap is played on the board the previous move left, in order.
    await expect(page.get_by_test_id("moves")).to_have_text("3")
    game = Game.from_code(DEAL)
    for move in line:
        game.play(move)
    assert (await board_state(page))["places"] == engine_state(game)
    await expect(page.locator(".place.queued")).to_have_count(0)


async def test_tapping_a_base_says_it_is_locked(server: ServerProcess, pages: Pages) -> None:
    page = await pages.open(server.http_url + "/", name="Pia")
    await play_alone(page)
    await page.locator("[data-place=as]").click()
    toast = page.get_by_test_id("toast")
    await expect(toast).to_have_text("The foundation's base is locked")
    await expect(toast).to_have_attribute("role", "alert")  # announced by screen readers


async def test_practice_hint_shows_a_legal_move_and_races_have_none(
    server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    page = await pages.open(server.http_url + "/", width=844, height=390, touch=True, name="Pia")
    await play_alone(page)
    game = Game.from_code(DEAL)
    legal = {str(m) for m in game.legal_moves()}
    foundation_moves = {m for m in legal if m.split("-")[1][0] in "ad"}
    await page.get_by_test_id("hint").click()
    hinted = page.locator(".place.hinted")
    await expect(hinted).to_have_count(2)
    source, target = [await el.get_attribute("data-place") for el in await hinted.all()]
    # Both places are lit; the move between them is legal and, since one exists, goes
    # to a foundation. (The order of the two in the page is the board's order.)
    move = next(m for m in (f"{source}-{target}", f"{target}-{source}") if m in legal)
    assert move in foundation_moves, (move, foundation_moves)
    await expect(page.get_by_test_id("toast")).to_contain_text("Hint:")
    await snapshot(page, artifacts / "hint-844x390.png")
    # The hinted move plays with a tap on its card.
    await page.locator(f"[data-place={move.split('-')[0]}]").click()
    await expect(page.get_by_test_id("moves")).to_have_text("1")

    # A race of two has no hint button (and no auto-finish).
    ada, _bo, _code = await race_of_two(pages, server.http_url)
    await expect(ada.get_by_test_id("redeal")).to_be_visible()
    await expect(ada.get_by_test_id("hint")).to_have_count(0)
    await expect(ada.get_by_test_id("auto-finish")).to_have_count(0)


async def test_race_endings_are_told_to_everyone(
    server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    ada = await pages.open(server.http_url + "/", name="Ada")
    await ada.get_by_test_id("deal-mode").select_option("code")
    await ada.get_by_test_id("deal-code").fill(DEAL)
    await ada.get_by_test_id("seats").select_option("2")
    await ada.get_by_test_id("time-limit").select_option("30")
    await ada.get_by_test_id("create").click()
    code = (await ada.get_by_test_id("room-code").text_content() or "").strip()
    bo = await pages.open(
        f"{server.http_url}/r/{code}", width=390, height=844, touch=True, name="Bo"
    )
    await ada.get_by_test_id("ready").click()
    await bo.get_by_test_id("ready").click()
    await wait_for_board(ada)
    await wait_for_board(bo)

    # Bo resigns: Ada is told, with how far Bo got.
    await resign(bo)
    await expect(ada.get_by_test_id("news")).to_contain_text("Bo resigned with 8/104")
    await snapshot(ada, artifacts / "news-resigned.png")
    # Ada plays on until the deadline: everyone is told time's up, and the results say
    # it for Ada (still playing when the clock ran out), not "playing".
    for page in (ada, bo):
        await expect(page.get_by_test_id("news")).to_contain_text("Time's up", timeout=45_000)
        results = page.get_by_test_id("results")
        await expect(results).to_be_visible()
        row = results.locator("tbody tr", has_text="Ada")
        await expect(row).to_contain_text("time's up")
        await expect(row).not_to_contain_text("playing")
    await snapshot(bo, artifacts / "results-timeout-390x844.png")


async def axe_violations(page: Page) -> list[dict[str, Any]]:
    await page.add_script_tag(path=str(AXE))
    result: dict[str, Any] = await page.evaluate(
        """async () => await axe.run(document, {
              runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}})"""
    )
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


async def test_accessibility_of_lobby_board_and_results(
    server: ServerProcess, pages: Pages
) -> None:
    page = await pages.open(server.http_url + "/", width=390, height=844, touch=True, name="Pia")
    await expect(page.get_by_test_id("play-alone")).to_be_visible()
    assert await axe_violations(page) == []
    await play_alone(page)
    # Places have names a screen reader can say.
    await expect(page.locator("[data-place=p7]")).to_have_accessible_name(
        re.compile(r"^\w+ of \w+ on pile 7, 6 cards$")
    )
    await expect(page.locator("[data-place=as]")).to_have_accessible_name(
        re.compile(r"^Ace of spades on the ascending foundation")
    )
    assert await axe_violations(page) == []
    await resign(page)
    await expect(page.get_by_test_id("results")).to_be_visible()
    assert await axe_violations(page) == []
