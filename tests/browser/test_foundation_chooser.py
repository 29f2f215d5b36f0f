"""Dropping a card on the foundation area where both foundations of its suit accept it:
the page asks which one (rules.md, Player conveniences)."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import expect

from server.game import AMBIGUOUS, Game
from tests.support import ServerProcess

from .conftest import Pages
from .helpers import (
    board_state,
    drag,
    engine_state,
    play_line,
    race_of_two,
    snapshot,
)

# Found once with the rules engine (random play-outs): after these moves of this deal,
# 5♥ tops pile 15 while the hearts foundations show 4♥ (ascending) and 6♥ (descending).
AMBIGUOUS_DEAL = "CR1-N-AAAABZP"
AMBIGUOUS_LINE = [
    "p8-dh",
    "p7-as",
    "p4-dd",
    "p8-ds",
    "p12-dd",
    "p12-dh",
    "p12-ah",
    "p1-dh",
    "p1-p15",
    "p1-dh",
    "p8-dh",
    "p8-ah",
    "p8-dh",
    "p3-dh",
    "p15-ah",
]


async def test_drop_asks_which_foundation_when_both_accept(
    server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    ada, _bo, _code = await race_of_two(pages, server.http_url, deal=AMBIGUOUS_DEAL)

    game = Game.from_code(AMBIGUOUS_DEAL)
    await play_line(ada, game, AMBIGUOUS_LINE)
    assert game.drop_on_foundations("p15") == AMBIGUOUS
    assert (await board_state(ada))["places"] == engine_state(game)

    # Dropped on the area between the foundations: the page asks.
    await drag(ada, "p15", "[data-area=foundations]")
    chooser = ada.get_by_test_id("chooser")
    await expect(chooser).to_be_visible()
    await expect(chooser).to_contain_text("Which foundation?")
    await expect(chooser.locator("[data-choice]")).to_have_count(2)
    await snapshot(ada, artifacts / "foundation-chooser.png")
    moves_before = game.moves
    await chooser.locator("[data-choice=dh]").click()
    game.play("p15-dh")
    await expect(ada.get_by_test_id("moves")).to_have_text(str(moves_before + 1))
    await expect(chooser).to_have_count(0)
    assert (await board_state(ada))["places"] == engine_state(game)

    # Undo, then a tap: 5♥ has two fits, so the tap selects and does not guess.
    await ada.get_by_test_id("undo").click()
    game.undo()
    await expect(ada.get_by_test_id("moves")).to_have_text(str(moves_before))
    await ada.locator("[data-place=p15]").click()
    await expect(ada.locator("[data-place=p15].selected")).to_have_count(1)
    await expect(ada.locator(".place.target")).to_have_count(len(game.tap_targets("p15")))
    # Escape cancels the selection.
    await ada.keyboard.press("Escape")
    await expect(ada.locator(".place.selected")).to_have_count(0)
