"""Variants in the page: Open Crescent shows every card of a pile; Crescent Four has four
redeals; a time limit shows the time left."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.async_api import expect

from server.game import Game
from tests.support import ServerProcess

from .conftest import Pages
from .helpers import create_room, race_of_two, ready_up, snapshot, wait_for_board

SUIT_SIGNS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}


def card_text(code: str) -> str:
    rank = "10" if code[0] == "T" else code[0]
    return rank + SUIT_SIGNS[code[1]]


async def test_open_crescent_shows_every_card(
    server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    deal = "CR1-O-AAAAAAB"
    ada, _bo, _code = await race_of_two(pages, server.http_url, deal=deal)
    view = Game.from_code(deal).view().to_wire()
    for i, pile in enumerate(view["piles"]):
        fan = ada.locator(f"[data-place=p{i + 1}] [data-testid=fan] .fan-card")
        # Bottom → top; the top card itself is the big card.
        await expect(fan).to_have_text([card_text(c) for c in pile["cards"][:-1]])
    await snapshot(ada, artifacts / "board-open.png")


async def test_crescent_four_with_a_time_limit(server: ServerProcess, pages: Pages) -> None:
    ada = await pages.open(server.http_url + "/", name="Ada")
    await ada.get_by_test_id("variant").select_option("F")
    await create_room(ada, seats=2, deal=None, time_limit="600")
    await expect(ada.get_by_test_id("waiting-room")).to_contain_text("Crescent Four")
    await expect(ada.get_by_test_id("waiting-room")).to_contain_text("time limit 10:00")
    code = (await ada.get_by_test_id("room-code").text_content() or "").strip()
    bo = await pages.open(f"{server.http_url}/r/{code}", name="Bo")
    await ready_up(ada)
    await ready_up(bo)
    await wait_for_board(ada)
    await expect(ada.get_by_test_id("redeal")).to_contain_text("4 left")
    await expect(ada.get_by_test_id("time-left")).to_have_text(re.compile(r"^9:[0-5]\d left$"))
    # A random deal's code (a CR2 code; CR1 for older deals) stays hidden until the race
    # is over.
    content = await ada.content()
    assert "CR1-" not in content and "CR2-" not in content
