"""The greedy strategy against the real rules engine: every move it picks is legal."""

from __future__ import annotations

import doctest

import pytest

import crescent_client.display
import crescent_client.errors
import crescent_client.rooms
import crescent_client.strategy
from crescent_client.strategy import GreedyStrategy, fingerprint
from server.game import DealCode, Game, IllegalMove


@pytest.mark.parametrize(
    "module",
    [
        crescent_client.strategy,
        crescent_client.rooms,
        crescent_client.display,
        crescent_client.errors,
    ],
)
def test_doctests(module: object) -> None:
    result = doctest.testmod(module)  # type: ignore[arg-type]
    assert result.attempted > 0 and result.failed == 0


def play_with_engine(code: str) -> tuple[Game, list[str]]:
    """Drive a real engine game with the strategy until it stops; return the actions."""
    game = Game.from_code(code)
    strategy = GreedyStrategy()
    actions: list[str] = []
    while True:
        action = strategy.next_action({**game.view().to_wire(), "status": game.status})
        if action is None or action == "resign":
            return game, actions
        game.apply(action)  # raises IllegalMove if the strategy picked an illegal move
        actions.append(action)


@pytest.mark.parametrize("variant", ["N", "F", "O", "R"])
def test_every_action_is_legal_and_the_game_ends(variant: str) -> None:
    for seed in range(1, 13):
        code = f"CR1-{variant}-" + "".join(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[d] for d in _base26(seed * 7919, 7)
        )
        assert str(DealCode.parse(code)) == code
        game, actions = play_with_engine(code)
        assert actions, code
        assert game.status in ("won", "locked", "playing")
        if game.status == "playing":
            # The bot gave up: then it has used every redeal and tried every move it saw.
            assert game.redeals_left == 0
        assert actions.count("redeal") <= (4 if variant == "F" else 3)


def _base26(number: int, width: int) -> list[int]:
    digits = []
    for _ in range(width):
        number, digit = divmod(number, 26)
        digits.append(digit)
    return digits[::-1]


def test_foundation_moves_come_first() -> None:
    game = Game.from_code("CR1-N-AAAAAAB")
    view = game.view().to_wire()
    action = GreedyStrategy().next_action(view)
    assert action is not None
    legal = {str(m) for m in game.legal_moves()}
    to_foundation = [m for m in legal if m.split("-")[1][0] in "ad"]
    if to_foundation:
        assert action in to_foundation
    else:
        assert action in legal or action == "redeal"


def test_never_repeats_a_move_from_the_same_state() -> None:
    game = Game.from_code("CR1-N-AAAAAAC")
    strategy = GreedyStrategy()
    seen: set[tuple[object, str]] = set()
    while (action := strategy.next_action(game.view().to_wire())) not in (None, "resign"):
        assert action is not None
        key = (fingerprint(game.view().to_wire()), action)
        assert key not in seen
        seen.add(key)
        game.apply(action)


def test_refused_illegal_move_is_an_engine_error() -> None:
    """Sanity check of the test oracle itself: the engine refuses what is illegal."""
    game = Game.from_code("CR1-N-AAAAAAB")
    with pytest.raises(IllegalMove):
        game.apply("as-ds")


def test_stops_when_the_game_is_over() -> None:
    view = Game.from_code("CR1-N-AAAAAAB").view().to_wire()
    assert GreedyStrategy().next_action({**view, "status": "won"}) is None
    assert GreedyStrategy(max_actions=0).next_action(view) == "resign"
