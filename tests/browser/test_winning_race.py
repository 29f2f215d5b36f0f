"""A whole game won in the browser: 130 actions by tap, drag and the redeal button.

The line was found once with the greedy strategy of crescent_client (it wins this deal;
it won 1 of 600 deals tried) and is kept here as test data.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import expect

from server.game import Game
from tests.support import ServerProcess

from .conftest import Pages
from .helpers import (
    board_state,
    engine_state,
    play_line,
    race_of_two,
    resign,
    snapshot,
)

WINNING_DEAL = "CR1-N-AAAAAUV"


def _actions(text: str) -> list[str]:
    return text.split()


WINNING_LINE = _actions(
    "p6-ad p6-dh p6-dh p14-dc p1-p8 p1-p8 p1-ad p11-ad p1-p2 p1-dh p5-p9 p5-p12 p5-ac p3-ac "
    "p5-p6 p6-p12 p6-p12 p6-p10 p6-dc p10-dc p10-dc p7-dc p10-ah p16-dc p16-dd p3-dd p3-as "
    "p3-dd p8-dd p8-dd p5-dd p2-p7 p2-ah p7-ah p7-ah p15-ah p5-ah p13-ah p13-dd p3-p13 p3-ah "
    "p2-ah p4-p10 redeal p2-dc p4-as p7-ac p9-ad p11-ad p12-dh p12-p15 p12-as p15-as p15-as "
    "p15-ac p15-ac p11-p15 p12-p16 p12-p16 p8-p12 p8-ad redeal p7-dc p10-dh p11-as p10-as "
    "p14-as p12-as p1-as p15-as p14-as p7-p8 p10-p11 p10-p11 p10-ad p2-ad p2-p9 p11-p16 "
    "p11-p16 p11-p16 p11-ah p9-ah p9-ah p4-p9 p12-p14 p12-p14 p12-dc p8-dc p8-dc p13-p15 "
    "redeal p9-dd p13-ad p4-p12 p4-dd p4-ds p8-dd p8-ad p8-dh p13-dh p12-dh p12-dh p14-ds "
    "p7-ds p15-ad p16-dh p9-p13 p9-p13 p9-ac p9-ds p13-ac p13-ac p13-ac p13-ac p14-ac p14-ac "
    "p14-dc p14-dh p9-dh p16-ds p16-ds p16-ds p16-ds p16-ds p16-ds p16-ds p2-ds p16-dd "
    "p15-dd p15-ad"
)


def test_the_line_wins() -> None:
    game = Game.from_code(WINNING_DEAL)
    for action in WINNING_LINE:
        game.apply(action)
    assert game.status == "won"


@pytest.mark.timeout(360)  # 130 actions through a real page: slow on a loaded machine
async def test_a_won_game_says_so(server: ServerProcess, pages: Pages, artifacts: Path) -> None:
    ada, bo, _code = await race_of_two(pages, server.http_url, deal=WINNING_DEAL)

    game = Game.from_code(WINNING_DEAL)
    await play_line(ada, game, WINNING_LINE)
    assert game.status == "won"
    assert (await board_state(ada))["places"] == engine_state(game)
    await expect(ada.get_by_test_id("game-status")).to_contain_text("You won!")
    # The win is celebrated (cards cascade), and the other racer is told.
    await expect(ada.get_by_test_id("celebration")).to_have_count(1)
    await expect(bo.get_by_test_id("news")).to_contain_text(re.compile(r"Ada won in \d+:\d\d"))
    await expect(bo.locator("[data-testid=racer]", has_text="Ada")).to_contain_text("104/104")
    await expect(bo.locator("[data-testid=racer]", has_text="Ada")).to_contain_text("won")
    await snapshot(ada, artifacts / "won.png")

    await resign(bo)
    first = ada.locator("[data-testid=results] tbody tr").first
    await expect(first).to_contain_text("Ada")
    await expect(first).to_contain_text("won")
    await expect(first).to_contain_text("104/104")
    await snapshot(ada, artifacts / "results-won.png")
