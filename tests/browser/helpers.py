"""Steps the browser tests share: create a room through the lobby, join, ready, read the board."""

from __future__ import annotations

import re
from typing import Any

from playwright.async_api import Page, expect

from server.game import Game

from .conftest import DEAL


async def create_room(
    page: Page,
    *,
    seats: int = 2,
    deal: str | None = DEAL,
    time_limit: str = "",
    name: str | None = None,
) -> str:
    """Fill the lobby's form and create a room; returns its join code."""
    if name is not None:
        await page.get_by_test_id("name").fill(name)
    if deal:
        await page.get_by_test_id("deal-mode").select_option("code")
        await page.get_by_test_id("deal-code").fill(deal)
    await page.get_by_test_id("seats").select_option(str(seats))
    await page.get_by_test_id("time-limit").select_option(time_limit)
    await page.get_by_test_id("create").click()
    code_el = page.get_by_test_id("room-code")
    await expect(code_el).to_have_text(re.compile(r"^[23456789A-Z]{6}$"))
    code = (await code_el.text_content() or "").strip()
    assert page.url.endswith(f"/r/{code}")
    return code


async def ready_up(page: Page) -> None:
    button = page.get_by_test_id("ready")
    await button.click()


async def race_of_two(
    pages: Any, base_url: str, *, deal: str | None = DEAL
) -> tuple[Page, Page, str]:
    """Ada creates a two-seat room on ``deal``, Bo joins by its link, both ready:
    returns (ada, bo, join code) once Ada's game is on the table."""
    ada = await pages.open(base_url + "/", name="Ada")
    code = await create_room(ada, seats=2, deal=deal)
    bo = await pages.open(f"{base_url}/r/{code}", name="Bo")
    await ready_up(ada)
    await ready_up(bo)
    await wait_for_board(ada)
    return ada, bo, code


async def wait_for_board(page: Page) -> None:
    """The countdown has run and the racer's own game is on the table."""
    await expect(page.locator("[data-place=p1]")).to_be_visible(timeout=20000)


async def board_state(page: Page) -> dict[str, Any]:
    """Every place's top card and count as the page shows them, plus the move counter."""
    places: dict[str, list[Any]] = await page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('[data-place]')]
              .map(el => [el.dataset.place, [el.dataset.top, Number(el.dataset.count)]]))"""
    )
    moves = await page.get_by_test_id("moves").text_content()
    return {"places": places, "moves": int(moves or "-1")}


def engine_state(game: Game) -> dict[str, list[Any]]:
    """The same picture from the rules engine (the test's own record of the game)."""
    view = game.view().to_wire()
    places: dict[str, list[Any]] = {
        f"p{i + 1}": [pile["top"] or "", pile["n"]] for i, pile in enumerate(view["piles"])
    }
    for name, foundation in view["foundations"].items():
        places[name] = [foundation["top"] or "", foundation["n"]]
    return places


async def drag(page: Page, source: str, target_selector: str) -> None:
    """Drag the top card of ``source`` with the mouse and drop it on the target element."""
    src = await page.locator(f"[data-place={source}] .slot").bounding_box()
    dst = await page.locator(target_selector).first.bounding_box()
    assert src and dst
    await page.mouse.move(src["x"] + src["width"] / 2, src["y"] + src["height"] / 2)
    await page.mouse.down()
    steps = [(0.2, 0.2), (0.5, 0.5), (0.8, 0.8), (1.0, 1.0)]
    for fx, fy in steps:
        x = (
            src["x"]
            + src["width"] / 2
            + (dst["x"] + dst["width"] / 2 - src["x"] - src["width"] / 2) * fx
        )
        y = (
            src["y"]
            + src["height"] / 2
            + (dst["y"] + dst["height"] / 2 - src["y"] - src["height"] / 2) * fy
        )
        await page.mouse.move(x, y, steps=4)
    await page.mouse.up()


async def confirm_redeal(page: Page, *, dont_ask_again: bool = True) -> None:
    """Answer the page's "Redeal?" question, if it asks (it does until told not to)."""
    dialog = page.get_by_test_id("confirm-redeal")
    if await dialog.count():
        if dont_ask_again:
            await page.get_by_test_id("dont-ask").check()
        await dialog.get_by_test_id("confirm-yes").click()
        await expect(dialog).to_have_count(0)


async def resign(page: Page) -> None:
    """Resign through the page's own dialog."""
    await page.get_by_test_id("resign").click()
    await page.get_by_test_id("confirm-resign").get_by_test_id("confirm-yes").click()


async def play_line(page: Page, game: Game, line: list[str]) -> None:
    """Play each action through the page as a player would, checking the move counter.

    A source with one fit takes one tap; otherwise a tap selects it and a second tap
    picks the target. Two taps on the same place in quick succession are a double-tap,
    so a move from the same place as the one before is dragged instead.
    """
    previous_source = None
    for action in line:
        if action == "redeal":
            await page.get_by_test_id("redeal").click()
            await confirm_redeal(page)
            left = game.redeals_left - 1
            game.redeal()
            await expect(page.get_by_test_id("redeal")).to_contain_text(
                f"{left} left" if left else "No redeals left"
            )
            previous_source = None
            continue
        source, target = action.split("-")
        if source == previous_source:
            await drag(page, source, f"[data-place={target}] .slot")
        else:
            fits = [str(m) for m in game.tap_targets(source)]
            await page.locator(f"[data-place={source}]").click()
            if fits != [action]:
                await page.locator(f"[data-place={target}]").click()
        game.play(action)
        await expect(page.get_by_test_id("moves")).to_have_text(str(game.moves))
        previous_source = source


async def snapshot(page: Page, path: Any, **options: Any) -> None:
    """A screenshot once every animation and transition on the page has finished."""
    await page.wait_for_function("() => document.getAnimations().length === 0")
    await page.screenshot(path=path, **options)
