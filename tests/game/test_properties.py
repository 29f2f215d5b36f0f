"""Property-based tests (hypothesis) over random play in all four variants."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from server.game import (
    MOVES_ALL,
    DealCode,
    Game,
    IllegalMove,
    Variant,
    replay,
)
from server.game.deal import SEED_LIMIT

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def check_invariants(game: Game) -> None:
    pos = game.position()
    cards: Counter[str] = Counter()
    for pile in pos["piles"]:
        assert len(pile) <= 13
        cards.update(pile)
    for cards_on in pos["foundations"].values():
        cards.update(cards_on)
    assert len(cards) == 52 and set(cards.values()) == {2}  # 104 cards, each twice
    assert sum(cards.values()) == 104
    assert game.foundation_count == sum(len(f) for f in pos["foundations"].values())
    view = game.view().to_wire()
    for entry, pile in zip(view["piles"], pos["piles"], strict=True):
        assert entry["n"] == len(pile)
        assert entry["top"] == (pile[-1] if pile else None)
        if game.variant is Variant.O:
            assert entry["cards"] == pile
        else:
            assert set(entry) == {"n", "top"}  # never a card below the top
    for name, entry in view["foundations"].items():
        assert entry == {"n": len(pos["foundations"][name]), "top": pos["foundations"][name][-1]}
    assert (view["moves"], view["redeals_left"], view["undo_left"], view["status"]) == (
        game.moves,
        game.redeals_left,
        game.undo_left,
        game.status,
    )
    assert view["status"] in ("playing", "won", "locked")


def check_legal_moves_match_refusals(game: Game) -> None:
    listed = list(game.legal_moves())
    legal = set(listed)
    assert len(legal) == len(listed)  # no duplicates
    assert listed == sorted(listed, key=lambda m: (m.src, m.dst))  # documented order
    for move in MOVES_ALL:
        reason = game.refusal(move)
        assert (reason is None) == (move in legal), (str(move), reason)


def rotated(piles: list[list[str]]) -> list[list[str]]:
    return [p[1:] + p[:1] if len(p) >= 2 else p for p in piles]


@SETTINGS
@given(
    variant=st.sampled_from("NFOR"),
    seed=st.integers(0, SEED_LIMIT - 1),
    length=st.integers(1, 400),
    rng=st.randoms(use_true_random=False),
)
def test_random_play(variant: str, seed: int, length: int, rng: random.Random) -> None:
    code = DealCode(Variant(variant), seed)
    game = Game.from_code(code)
    actions: list[str] = []
    undo_stack: list[dict[str, Any]] = []
    check_invariants(game)
    for step in range(length):
        choice = rng.randrange(2**20)
        if game.status != "playing":
            break
        moves = list(game.legal_moves())
        kind = choice % 20
        before = game.position()
        if (kind == 0 or not moves) and game.redeals_left:
            game.redeal()
            action = "redeal"
            after = game.position()
            assert after["piles"] == rotated(before["piles"])
            assert after["foundations"] == before["foundations"]
            assert after["moves"] == before["moves"]
            assert after["redeals_left"] == before["redeals_left"] - 1
            assert game.undo_left == 0
            undo_stack.clear()
        elif (kind in (1, 2) or not moves) and game.undo_left:
            game.undo()
            action = "undo"
            assert game.position() == undo_stack.pop()  # exactly the position before
        elif moves:
            move = moves[(choice // 20) % len(moves)]
            undo_left = game.undo_left
            game.play(move)
            action = str(move)
            assert game.moves == before["moves"] + 1
            assert game.undo_left == min(undo_left + 1, 100)
            undo_stack.append(before)
            del undo_stack[:-100]
            twin = game.copy()
            twin.undo()
            assert twin.position() == before
        else:
            break
        actions.append(action)
        check_invariants(game)
        if step % 15 == 0:
            check_legal_moves_match_refusals(game)
        # A refused move changes nothing and names its reason.
        probe = rng.choice(MOVES_ALL)
        reason = game.refusal(probe)
        if reason is not None:
            snapshot = game.position()
            try:
                game.play(probe)
            except IllegalMove as error:
                assert error.code == reason
            else:
                raise AssertionError(f"{probe} was played although refused with {reason}")
            assert game.position() == snapshot
    event(f"final status {game.status}")
    event(f"actions: {len(actions) // 50 * 50}+")
    again = replay(code, actions)
    assert again.position() == game.position()
    assert (again.undo_left, again.status, again.moves) == (game.undo_left, game.status, game.moves)
    assert [str(m) for m in again.legal_moves()] == [str(m) for m in game.legal_moves()]
    if game.status == "locked":
        assert game.redeals_left == 0
        assert not any(
            m.source.startswith("p") or m.target.startswith("p") for m in game.legal_moves()
        )


@SETTINGS
@given(variant=st.sampled_from("NFOR"), seed=st.integers(0, SEED_LIMIT - 1))
def test_position_round_trip_after_redeals(variant: str, seed: int) -> None:
    game = Game.from_code(DealCode(Variant(variant), seed))
    while game.redeals_left:
        for move in list(game.legal_moves())[:3]:
            if game.is_legal(move):
                game.play(move)
        game.redeal()
        pos = game.position()
        assert Game.from_position(pos).position() == pos
