"""End-to-end in headless Chromium: the lobby, a two-racer race, moves by tap, drag and
keyboard, refusals, a spectator, reload mid-race, results and rematch.

The room is created with a fixed deal code, so the test follows the game with the rules
engine and checks that the page shows exactly the board the server holds.
"""

from __future__ import annotations

import re
from pathlib import Path

from playwright.async_api import expect

from server.game import Game
from tests.support import ServerProcess

from .conftest import DEAL, Pages
from .helpers import (
    board_state,
    confirm_redeal,
    create_room,
    drag,
    engine_state,
    ready_up,
    resign,
    snapshot,
    wait_for_board,
)


async def test_two_racers_race_in_the_browser(
    server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    ada = await pages.open(server.http_url + "/", name="Ada")
    await expect(ada.get_by_test_id("create")).to_have_text("Create room")
    await snapshot(ada, artifacts / "lobby.png", full_page=True)

    code = await create_room(ada, seats=2)
    bertil = await pages.open(f"{server.http_url}/r/{code}")
    # Came by link with no name yet: the page asks for one first.
    await bertil.get_by_test_id("name").fill("Bertil")
    await bertil.get_by_test_id("join").click()
    players = ada.get_by_test_id("players")
    await expect(players).to_contain_text("Bertil")
    await expect(bertil.get_by_test_id("players")).to_contain_text("Ada")
    await snapshot(ada, artifacts / "waiting-room.png", full_page=True)

    # A spectator by the same link.
    cecilia = await pages.open(f"{server.http_url}/r/{code}")
    await cecilia.get_by_test_id("name").fill("Cecilia")
    await cecilia.get_by_test_id("watch").click()
    await expect(ada.get_by_test_id("waiting-room")).to_contain_text("Cecilia")

    await ready_up(ada)
    await ready_up(bertil)  # every seat ready: the countdown starts by itself
    await expect(ada.get_by_test_id("countdown")).to_be_visible()
    # The table is dealt face down meanwhile: no card of the deal is on the page yet.
    await expect(ada.locator(".table.dealing .card-back")).to_have_count(16)
    assert await ada.locator("[data-place]").count() == 0
    await snapshot(ada, artifacts / "countdown.png")
    await wait_for_board(ada)
    await wait_for_board(bertil)

    game = Game.from_code(DEAL)
    state = await board_state(ada)
    assert state["places"] == engine_state(game)
    assert state["moves"] == 0
    await expect(ada.get_by_test_id("redeal")).to_contain_text("3 left")

    # Tap: QC on pile 7 has one place to go (the descending clubs): one tap plays it.
    assert [str(m) for m in game.tap_targets("p7")] == ["p7-dc"]
    await ada.locator("[data-place=p7]").click()
    game.play("p7-dc")
    await expect(ada.get_by_test_id("moves")).to_have_text("1")
    assert (await board_state(ada))["places"] == engine_state(game)

    # Drag and drop onto a pile: 7C from pile 2 onto 6C on pile 8.
    await drag(ada, "p2", "[data-place=p8] .slot")
    game.play("p2-p8")
    await expect(ada.get_by_test_id("moves")).to_have_text("2")
    assert (await board_state(ada))["places"] == engine_state(game)

    # Drag onto the foundation area (not onto a foundation): QS goes where it fits.
    assert str(game.drop_on_foundations("p12")) == "p12-ds"
    await drag(ada, "p12", "[data-area=foundations]")
    game.play("p12-ds")
    await expect(ada.get_by_test_id("moves")).to_have_text("3")
    assert (await board_state(ada))["places"] == engine_state(game)

    # Tap a pile with several fits: it is selected; the next tap picks the target.
    assert len(game.tap_targets("p15")) > 1
    await ada.locator("[data-place=p15]").click()
    await expect(ada.locator("[data-place=p15]")).to_have_class(re.compile(r"\bselected\b"))
    await ada.locator("[data-place=dh]").click()
    game.play("p15-dh")
    await expect(ada.get_by_test_id("moves")).to_have_text("4")

    # A refused move: 5♠ (pile 4, no fit: a tap selects it) onto 7♠ (pile 3).
    assert game.tap_targets("p4") == [] and game.refusal("p4-p3") == "wrong_rank"
    await ada.locator("[data-place=p4]").click()
    await ada.locator("[data-place=p3]").click()
    toast = ada.get_by_test_id("toast")
    await expect(toast).to_have_text("Must be one rank higher or lower")
    await expect(toast).to_have_class(re.compile(r"\bshow\b"))
    await expect(ada.get_by_test_id("moves")).to_have_text("4")
    await snapshot(ada, artifacts / "refused.png")

    # The keyboard: focus a pile, Enter taps it; U undoes.
    assert [str(m) for m in game.tap_targets("p9")] == ["p9-dh"]
    await ada.locator("[data-place=p9]").focus()
    await ada.keyboard.press("Enter")
    game.play("p9-dh")
    await expect(ada.get_by_test_id("moves")).to_have_text("5")
    # Arrow keys walk the horseshoe: from pile 16 on to the first foundation.
    await ada.locator("[data-place=p16]").focus()
    await ada.keyboard.press("ArrowRight")
    focused = "() => document.activeElement && document.activeElement.dataset.place"
    assert await ada.evaluate(focused) == "as"
    await ada.keyboard.press("ArrowLeft")
    await ada.keyboard.press("ArrowLeft")
    assert await ada.evaluate(focused) == "p15"
    await ada.keyboard.press("u")
    game.undo()
    await expect(ada.get_by_test_id("moves")).to_have_text("4")
    assert (await board_state(ada))["places"] == engine_state(game)

    # Everyone sees Ada's progress: 8 bases + QC + QS + QH = 11 cards on the foundations.
    for watcher in (bertil, cecilia):
        row = watcher.locator("[data-testid=racer]", has_text="Ada")
        await expect(row).to_contain_text("11/104")
        await expect(row).to_contain_text("Moves: 4")
    await snapshot(ada, artifacts / "board.png")
    await snapshot(cecilia, artifacts / "spectator.png")

    # Reload mid-race: the same board comes back (token in localStorage, room from the URL).
    before = await board_state(ada)
    await ada.reload()
    await wait_for_board(ada)
    await expect(ada.get_by_test_id("moves")).to_have_text("4")
    assert await board_state(ada) == before
    # … and the game goes on from there with the next seq.
    await ada.locator("[data-place=p9]").click()
    game.play("p9-dh")
    await expect(ada.get_by_test_id("moves")).to_have_text("5")
    assert (await board_state(ada))["places"] == engine_state(game)

    # Redeal: the counter on the button goes down.
    await ada.get_by_test_id("redeal").click()
    await confirm_redeal(ada)
    game.redeal()
    await expect(ada.get_by_test_id("redeal")).to_contain_text("2 left")
    assert (await board_state(ada))["places"] == engine_state(game)

    # Both resign: the race ends and everyone sees the results.
    await resign(bertil)
    await resign(ada)
    for page in (ada, bertil, cecilia):
        results = page.get_by_test_id("results")
        await expect(results).to_be_visible()
        await expect(results).to_contain_text("Ada")
        await expect(results).to_contain_text("Bertil")
    # Ada has more cards on the foundations: she ranks first.
    first_row = ada.locator("[data-testid=results] tbody tr").first
    await expect(first_row).to_contain_text("Ada")
    await expect(ada.get_by_test_id("results")).to_contain_text(DEAL)
    await snapshot(ada, artifacts / "results.png")

    # Rematch (host): back to the waiting room, round 2, ready flags cleared.
    await ada.get_by_test_id("rematch").click()
    for page in (ada, bertil):
        await expect(page.get_by_test_id("waiting-room")).to_contain_text("Round 2")
        await expect(page.get_by_test_id("ready")).to_have_text("I'm ready")


async def test_swedish_page_speaks_swedish(
    server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    # Picked from the browser's language.
    sv = await pages.open(server.http_url + "/", locale="sv-SE", name="Astrid")
    await expect(sv.get_by_test_id("create")).to_have_text("Skapa rum")
    await snapshot(sv, artifacts / "lobby-sv.png", full_page=True)
    code = await create_room(sv, seats=2)
    await expect(sv.get_by_test_id("ready")).to_have_text("Jag är redo")
    other = await pages.open(f"{server.http_url}/r/{code}", name="Bo")
    await expect(other.get_by_test_id("players")).to_contain_text("Astrid")
    await ready_up(sv)
    await ready_up(other)
    await wait_for_board(sv)
    await expect(sv.get_by_test_id("redeal")).to_contain_text("Omfördela")
    await expect(sv.get_by_test_id("redeal")).to_contain_text("3 kvar")
    # A refusal in Swedish: 10♠ onto 7♣ is the wrong suit.
    await sv.locator("[data-place=p1]").click()
    await sv.locator("[data-place=p2]").click()
    await expect(sv.get_by_test_id("toast")).to_have_text("Måste vara i samma färg")
    await expect(sv.get_by_test_id("toast")).to_have_class(re.compile(r"\bshow\b"))
    await snapshot(sv, artifacts / "board-sv.png")

    # Switchable: Dutch on the same page, and the choice survives a reload.
    await sv.get_by_test_id("language").select_option("nl")
    await expect(sv.get_by_test_id("redeal")).to_contain_text("Schudden")
    await sv.reload()
    await wait_for_board(sv)
    await expect(sv.get_by_test_id("redeal")).to_contain_text("Schudden")

    # Three redeals, then the button says there are none left.
    for left in ("nog 2", "nog 1"):
        await sv.get_by_test_id("redeal").click()
        await confirm_redeal(sv, dont_ask_again=False)
        await expect(sv.get_by_test_id("redeal")).to_contain_text(left)
    await sv.get_by_test_id("redeal").click()
    await confirm_redeal(sv, dont_ask_again=False)
    await expect(sv.get_by_test_id("redeal")).to_have_text("⟳Geen schudbeurten meer")
    await expect(sv.get_by_test_id("redeal")).to_be_disabled()
    await sv.get_by_test_id("language").select_option("sv")
    await expect(sv.get_by_test_id("redeal")).to_contain_text("Inga omfördelningar kvar")
