"""The worked examples of seed 000 (the won game's listings around move 10 and
the first redeal), on positions built to agree with every listed fact."""

from __future__ import annotations

from typing import Any

import pytest

from server.game import Game, IllegalMove
from tests.game.helpers import position

# Foundation tops (rank) of the listings.
BEFORE_MOVE_10 = {"as": 2, "ah": 2, "ad": 1, "ac": 1, "ds": 12, "dh": 12, "dd": 13, "dc": 9}
AROUND_REDEAL = {"as": 2, "ah": 2, "ad": 1, "ac": 1, "ds": 10, "dh": 10, "dd": 13, "dc": 9}

# (count, top) of piles 1..16, as listed.
LISTING_MOVE_10 = [
    (4, "JD"),
    (6, "8S"),
    (4, "7D"),
    (5, "4D"),
    (6, "TS"),
    (4, "QS"),
    (6, "5H"),
    (6, "6S"),
    (5, "5C"),
    (6, "AS"),
    (6, "KC"),
    (6, "TC"),
    (6, "7C"),
    (6, "KS"),
    (6, "6S"),
    (6, "AC"),
]
LISTING_BEFORE_REDEAL = [
    (4, "JD"),
    (6, "8S"),
    (4, "7D"),
    (5, "4D"),
    (5, "5H"),
    (4, "QS"),
    (6, "5H"),
    (6, "6S"),
    (5, "5C"),
    (4, "9D"),
    (7, "AC"),
    (6, "TC"),
    (6, "7C"),
    (7, "AS"),
    (4, "KH"),
    (5, "6S"),
]
LISTING_AFTER_REDEAL = [
    (4, "2H"),
    (6, "7H"),
    (4, "4C"),
    (5, "5C"),
    (5, "8D"),
    (4, "JS"),
    (6, "TS"),
    (6, "AD"),
    (5, "7S"),
    (4, "QC"),
    (7, "8C"),
    (6, "2C"),
    (6, "6D"),
    (7, "4S"),
    (4, "8D"),
    (5, "3D"),
]


def listing(game: Game) -> list[tuple[int, str | None]]:
    return [(p["n"], p["top"]) for p in game.view().to_wire()["piles"]]


def foundation_tops(game: Game) -> dict[str, str]:
    return {name: f["top"] for name, f in game.view().to_wire()["foundations"].items()}


def build_listing(
    rows: list[tuple[int, str]], foundations: dict[str, int], moves: int, **extra: Any
) -> Game:
    pos = position(
        {p: [top] for p, (_, top) in enumerate(rows, start=1)},
        counts={p: n for p, (n, _) in enumerate(rows, start=1)},
        foundations=foundations,
        moves=moves,
        **extra,
    )
    return Game.from_position(pos)


def test_move_10_wraps_the_ace_onto_the_king() -> None:
    game = build_listing(LISTING_MOVE_10, BEFORE_MOVE_10, moves=9)
    assert listing(game) == LISTING_MOVE_10
    assert game.foundation_count == 16  # 2+2+1+1+2+2+1+5, as listed
    assert "p10-p14" in {str(m) for m in game.legal_moves()}
    game.play("p10-p14")  # move 10: AS from pile 10 onto KS at the top of pile 14
    assert game.moves == 10
    assert game.view().to_wire()["piles"][13] == {"n": 7, "top": "AS"}
    assert game.view().to_wire()["piles"][9]["n"] == 5
    assert game.position()["piles"][13][-2:] == ["KS", "AS"]


def test_the_listed_refusals_of_seed_000() -> None:
    game = build_listing(LISTING_MOVE_10, BEFORE_MOVE_10, moves=9)
    with pytest.raises(IllegalMove) as info:
        game.play("p10-p8")  # AS on 6S: same suit, not adjacent
    assert info.value.message_sv == "Måste ha en högre eller lägre valör"
    with pytest.raises(IllegalMove) as info:
        game.play("p10-p11")  # AS on KC: adjacent ranks, other suit
    assert info.value.message_sv == "Måste vara i samma färg"


def test_first_redeal_of_seed_000() -> None:
    # Piles before the redeal with the listed tops and counts, the bottoms that
    # the listing after the redeal shows on top, and pile 1 exactly as the seed
    # spells it out (bottom to top 2H 9C JD JD).
    game = Game.from_position(
        position(
            {p: [top] for p, (_, top) in enumerate(LISTING_BEFORE_REDEAL, start=1)}
            | {1: ["2H", "9C", "JD", "JD"]},
            counts={p: n for p, (n, _) in enumerate(LISTING_BEFORE_REDEAL, start=1)},
            bottoms={p: [top] for p, (_, top) in enumerate(LISTING_AFTER_REDEAL, start=1) if p > 1},
            foundations=AROUND_REDEAL,
            moves=40,
        )
    )
    assert listing(game) == LISTING_BEFORE_REDEAL
    tops_before = foundation_tops(game)
    assert tops_before == {
        "as": "2S",
        "ah": "2H",
        "ad": "AD",
        "ac": "AC",
        "ds": "TS",
        "dh": "TH",
        "dd": "KD",
        "dc": "9C",
    }
    assert game.redeals_left == 3
    before = game.position()
    game.redeal()
    assert listing(game) == LISTING_AFTER_REDEAL
    assert game.position()["piles"][0] == ["9C", "JD", "JD", "2H"]
    assert foundation_tops(game) == tops_before
    assert game.position()["foundations"] == before["foundations"]
    assert (game.moves, game.redeals_left, game.undo_left) == (40, 2, 0)
    # The order of the other cards does not change.
    for old, new in zip(before["piles"], game.position()["piles"], strict=True):
        assert new == (old[1:] + old[:1] if len(old) >= 2 else old)


def test_listings_are_consistent_with_the_rules() -> None:
    # Between the first two listings the pile counts change exactly as the moves
    # onto foundations and piles account for: 104 cards both times.
    for rows, found in ((LISTING_MOVE_10, BEFORE_MOVE_10), (LISTING_BEFORE_REDEAL, AROUND_REDEAL)):
        on_foundations = sum(r if n.startswith("a") else 14 - r for n, r in found.items())
        assert sum(n for n, _ in rows) + on_foundations == 104
