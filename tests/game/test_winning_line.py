"""A whole won game of a real deal: tests/game/data/winning_line.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server.game import Game, IllegalMove, replay
from tests.game.helpers import status

LINE = json.loads((Path(__file__).parent / "data" / "winning_line.json").read_text())


def test_the_winning_line_wins() -> None:
    game = Game.from_code(LINE["code"])
    actions: list[str] = LINE["actions"]
    for index, action in enumerate(actions):
        assert game.status == "playing", index
        game.apply(action)
    assert game.status == "won" and game.foundation_count == 104
    assert (game.moves, game.redeals_left) == (120, 0)
    view = game.view().to_wire()
    assert view["status"] == "won"
    assert all(p == {"n": 0, "top": None} for p in view["piles"])
    assert {name: f["n"] for name, f in view["foundations"].items()} == dict.fromkeys(
        ("as", "ah", "ad", "ac", "ds", "dh", "dd", "dc"), 13
    )
    assert list(game.legal_moves()) == []
    for action in ("undo", "redeal", "p1-p2"):
        with pytest.raises(IllegalMove) as info:
            game.apply(action)
        assert info.value.code == "game_over"
    assert replay(LINE["code"], actions).position() == game.position()


def test_one_card_before_the_end_undo_still_works() -> None:
    game = replay(LINE["code"], LINE["actions"][:-1])
    assert game.status == "playing" and game.foundation_count == 103
    before = game.position()
    game.apply(LINE["actions"][-1])
    assert status(game) == "won"
    almost = replay(LINE["code"], LINE["actions"][:-1])
    almost.apply(LINE["actions"][-1])
    with pytest.raises(IllegalMove):
        almost.undo()  # won: game_over
    again = replay(LINE["code"], LINE["actions"][:-1])
    again.play(LINE["actions"][-1])
    assert again.status == "won"
    assert Game.from_position(before).status == "playing"
