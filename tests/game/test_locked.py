"""The closed form of "locked" against a brute-force search.

rules.md: locked = no redeals left and no pile card can move anywhere, neither
directly nor after any series of foundation-to-foundation moves (variant R: a
foundation-to-pile move also counts). The search below explores every
foundation state reachable by foundation-to-foundation moves, exactly as the
definition says, and looks for any other legal move on the way.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.game import CARDS, FOUNDATION_NAMES, Game
from tests.game.helpers import build, foundation_cards


def brute_force_locked(game: Game) -> bool:
    if game.foundation_count == 104 or game.redeals_left:
        return False
    seen: set[tuple[str, ...]] = set()
    frontier = [game]
    while frontier:
        current = frontier.pop()
        for move in current.legal_moves():
            if move.source.startswith("p") or move.target.startswith("p"):
                return False  # a pile card moves (or, in R, a foundation card returns)
            child = current.copy()
            child.play(move)
            key = tuple(f["top"] for f in child.view().to_wire()["foundations"].values())
            if key not in seen:
                seen.add(key)
                frontier.append(child)
    return True


def random_end_position(rng: random.Random) -> dict[str, Any]:
    """Random foundations (some suits meeting), the other cards in a few piles."""
    tops: dict[str, int] = {}
    meeting = 0
    for suit in "shdc":
        kind = rng.choice(["meet", "free", "free", "complete"])
        if kind == "meet" and meeting < 3:
            meeting += 1
            asc = rng.randint(1, 12)
            tops["a" + suit], tops["d" + suit] = asc, asc + 1
        elif kind == "complete":
            tops["a" + suit], tops["d" + suit] = 13, 1
        else:
            tops["a" + suit], tops["d" + suit] = rng.randint(1, 13), rng.randint(1, 13)
    pool = Counter({str(c): 2 for c in CARDS})
    for name, top in tops.items():
        pool.subtract(foundation_cards(name, top))
    cards = sorted(pool.elements())
    rng.shuffle(cards)
    count = max(-(-len(cards) // 13), min(len(cards), rng.choice([1, 2, 2, 3, 3, 4, 6, 10])))
    chosen = rng.sample(range(16), count)
    piles: list[list[str]] = [[] for _ in range(16)]
    for i, p in enumerate(chosen):  # one card each, then the rest at random
        if i < len(cards):
            piles[p].append(cards[i])
    for card in cards[count:]:
        p = rng.choice([q for q in chosen if len(piles[q]) < 13])
        piles[p].append(card)
    return {
        "code": f"CR1-{rng.choice('NR')}-AAAAAAB",
        "piles": piles,
        "foundations": {n: foundation_cards(n, tops[n]) for n in FOUNDATION_NAMES},
        "redeals_left": 0,
        "moves": rng.randint(0, 500),
    }


def test_closed_form_matches_brute_force_on_seeded_random_positions() -> None:
    rng = random.Random(20261130)
    outcomes: Counter[tuple[str, str, bool]] = Counter()
    for _ in range(600):
        pos = random_end_position(rng)
        game = Game.from_position(pos)
        expected = brute_force_locked(game)
        assert (game.status == "locked") == expected, pos
        met = any(
            game.view().to_wire()["foundations"]["d" + s]["n"]
            + game.view().to_wire()["foundations"]["a" + s]["n"]
            == 13
            for s in "shdc"
        )
        outcomes[(pos["code"][4], game.status, met)] += 1
    # The sample covers both outcomes in both variants, with and without meeting suits.
    for variant in "NR":
        for status in ("locked", "playing"):
            assert outcomes[(variant, status, True)] + outcomes[(variant, status, False)] >= 10
    assert outcomes[("N", "locked", True)] + outcomes[("R", "locked", True)] >= 5
    assert outcomes[("N", "playing", True)] + outcomes[("R", "playing", True)] >= 5


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_closed_form_matches_brute_force(rng: random.Random) -> None:
    game = Game.from_position(random_end_position(rng))
    assert (game.status == "locked") == brute_force_locked(game)


def test_shuttling_alone_is_not_a_way_out() -> None:
    # Hearts meet (up to 5, down to 6), so foundation-to-foundation moves exist,
    # but every heart is buried under spades that cannot move: locked.
    game = build(
        {1: ["7S"], 2: ["7S"], 3: ["KS"]},
        counts={1: 13, 2: 13},
        redeals_left=0,
        foundations={"as": 3, "ds": 10, "ah": 5, "dh": 6, "ad": 13, "dd": 1, "ac": 13, "dc": 1},
    )
    assert {str(m) for m in game.legal_moves()} == {"ah-dh", "dh-ah"}
    assert game.status == "locked" and brute_force_locked(game)


def test_a_met_suit_frees_every_pile_card_of_its_suit() -> None:
    # Hearts meet; a heart on top of a pile always has a foundation after shuttling.
    for top in ("AH", "2H", "7H", "QH", "KH"):
        game = build(
            {1: [top], 2: ["7S"], 3: ["7S"]},
            counts={2: 13, 3: 13},
            redeals_left=0,
            foundations={"as": 3, "ds": 10, "ah": 5, "dh": 6, "ad": 13, "dd": 1, "ac": 13, "dc": 1},
        )
        assert game.status == "playing" and not brute_force_locked(game), top
