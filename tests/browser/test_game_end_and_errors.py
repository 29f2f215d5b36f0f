"""A locked game says so and offers undo; the race's end by resignation shows a locked
racer; the host ends a race; the lobby explains a bad deal code and an unknown room
code."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import expect

from server.game import Game
from tests.support import ServerProcess

from .conftest import Pages
from .helpers import confirm_redeal, race_of_two, resign, snapshot, wait_for_board

# Found once with the rules engine: after three redeals at the start, this deal has one
# legal move left (p4-ad), and after it none: the game is locked with one move to undo.
LOCKING_DEAL = "CR1-N-AAAAFXT"


async def test_locked_game_offers_undo(
    server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    game = Game.from_code(LOCKING_DEAL)
    for _ in range(3):
        game.redeal()
    assert [str(m) for m in game.legal_moves()] == ["p4-ad"]

    ada, bo, _code = await race_of_two(pages, server.http_url, deal=LOCKING_DEAL)

    # Three redeals with the keyboard shortcut R. The page asks first (a redeal cannot
    # be undone): cancel once, then confirm and tell it not to ask again.
    await ada.keyboard.press("r")
    await ada.get_by_test_id("confirm-no").click()
    await expect(ada.get_by_test_id("redeal")).to_contain_text("3 left")
    await ada.keyboard.press("r")
    await confirm_redeal(ada)
    await expect(ada.get_by_test_id("redeal")).to_contain_text("2 left")
    for left in ("1 left",):
        await ada.keyboard.press("r")
        await expect(ada.get_by_test_id("redeal")).to_contain_text(left)
    await ada.keyboard.press("r")
    await expect(ada.get_by_test_id("redeal")).to_contain_text("No redeals left")
    await expect(ada.get_by_test_id("undo")).to_be_disabled()  # a redeal clears the history

    await ada.locator("[data-place=p4]").click()  # the one move left: 4th card to the aces
    status = ada.get_by_test_id("game-status")
    await expect(status).to_contain_text("Locked")
    await expect(status).to_contain_text("Undo a move")
    await expect(ada.get_by_test_id("resign")).to_be_disabled()
    await snapshot(ada, artifacts / "locked.png")
    # Bo sees Ada locked.
    await expect(bo.locator("[data-testid=racer]", has_text="Ada")).to_contain_text("locked")

    # Undo from the locked banner: the game is playable again.
    await status.get_by_role("button", name="Undo").click()
    await expect(ada.get_by_test_id("moves")).to_have_text("0")
    await expect(status).not_to_contain_text("Locked")
    await ada.locator("[data-place=p4]").click()
    await expect(status).to_contain_text("Locked")

    # Bo resigns: every racer is done; Ada (locked, more cards) ranks first.
    await resign(bo)
    results = ada.get_by_test_id("results")
    await expect(results).to_be_visible()
    first = results.locator("tbody tr").first
    await expect(first).to_contain_text("Ada")
    await expect(first).to_contain_text("locked")
    # The race is over: Ada's undo, open while the race ran, is closed now.
    await ada.get_by_test_id("close-results").click()
    await expect(ada.get_by_test_id("undo")).to_be_disabled()
    await expect(status.get_by_role("button", name="Undo")).to_have_count(0)
    await ada.get_by_test_id("show-results").click()
    # The non-host sees the results too, and is told the host can start a rematch.
    await expect(bo.get_by_test_id("results")).to_contain_text("The host can start a rematch")
    await expect(bo.get_by_test_id("rematch")).to_have_count(0)


async def test_host_ends_a_race_and_both_see_results(
    server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    ada, bo, _code = await race_of_two(pages, server.http_url)
    await wait_for_board(bo)
    end = ada.get_by_test_id("end-race")
    await expect(end).to_be_visible()
    await expect(bo.get_by_test_id("end-race")).to_have_count(0)  # only the host has it
    # The page asks first; cancelling leaves the race running.
    await end.click()
    dialog = ada.get_by_test_id("confirm-end-race")
    await expect(dialog).to_contain_text("End the race now?")
    await snapshot(ada, artifacts / "end-race-confirm.png")
    await dialog.get_by_test_id("confirm-no").click()
    await expect(dialog).to_have_count(0)
    await ada.locator("[data-place=p7]").click()  # still racing: a move is played
    await expect(ada.get_by_test_id("moves")).to_have_text("1")
    # A tap whose release comes after the race panel was rebuilt (a progress frame
    # between press and release) still opens the question.
    box = await end.bounding_box()
    assert box is not None
    await ada.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    await ada.mouse.down()
    await ada.evaluate("() => window.crescent.updateRacePanel()")
    await ada.mouse.up()
    await dialog.get_by_test_id("confirm-yes").click()
    # Both racers were still playing: both ranked with "time's up".
    for page in (ada, bo):
        results = page.get_by_test_id("results")
        await expect(results).to_be_visible()
        rows = results.locator("tbody tr")
        await expect(rows).to_have_count(2)
        await expect(rows.first).to_contain_text("Ada")  # more cards home
        await expect(rows.first).to_contain_text("time's up")
        await expect(rows.nth(1)).to_contain_text("time's up")
    await snapshot(bo, artifacts / "ended-by-host.png")
    await expect(ada.get_by_test_id("end-race")).to_have_count(0)  # the race is over


async def test_lobby_explains_bad_codes(server: ServerProcess, pages: Pages) -> None:
    page = await pages.open(server.http_url + "/", name="Ada")
    await page.get_by_test_id("deal-mode").select_option("code")
    await page.get_by_test_id("deal-code").fill("CR1-N-nope!")
    await page.get_by_test_id("create").click()
    await expect(page.get_by_test_id("error")).to_contain_text("That is not a deal code")

    await page.get_by_test_id("join-code").fill("ZZZZZZ")
    await page.get_by_test_id("join").click()
    await expect(page.get_by_role("alert").first).to_contain_text("No room has that code")

    # An unknown room by link says the same, in Dutch for a Dutch browser.
    nl = await pages.open(server.http_url + "/r/ZZZZZZ", locale="nl-NL", name="Noor")
    await expect(nl.get_by_role("alert").first).to_contain_text("Geen kamer heeft die code")
