"""Hand-built near-end positions with known answers (rules.md position format).

Suits not named are complete (ascending at K, descending at A). Spades at
ascending J, descending 3 leave QS KS AS 2S in the piles; hearts meeting at
6/7 leave one heart of each rank.
"""

from __future__ import annotations

from typing import Any

from server.game import Card

DONE = {"a": 13, "d": 1}


def foundation_list(name: str, top: int) -> list[str]:
    suit = name[1].upper()
    ranks = range(1, top + 1) if name[0] == "a" else range(13, top - 1, -1)
    return [str(Card(suit, r)) for r in ranks]


def position(
    piles: dict[int, list[str]], tops: dict[str, int], *, variant: str = "N", redeals_left: int = 0
) -> dict[str, Any]:
    foundations = {}
    for kind in "ad":
        for suit in "shdc":
            name = kind + suit
            foundations[name] = foundation_list(name, tops.get(name, DONE[kind]))
    return {
        "code": f"CR1-{variant}-AAAAAAA",
        "piles": [piles.get(p, []) for p in range(1, 17)],
        "foundations": foundations,
        "redeals_left": redeals_left,
        "moves": 0,
    }


SPADES_OPEN = {"as": 11, "ds": 3}  # QS KS AS 2S still in the piles
HEARTS_MEET = {"ah": 6, "dh": 7}  # one heart of each rank in the piles

# KS then AS: two moves.
TWO_MOVES = position({1: ["AS", "KS"]}, {"as": 12, "ds": 2})
# AS waits for 2S under KS, KS waits for QS under AS: a cross lock (no redeal).
CROSS_LOCK = position({1: ["QS", "AS"], 2: ["2S", "KS"]}, SPADES_OPEN)
# The same with one redeal left: the redeal turns both piles over, and it wins.
CROSS_LOCK_REDEAL = position({1: ["QS", "AS"], 2: ["2S", "KS"]}, SPADES_OPEN, redeals_left=1)
_HEARTS = [str(Card("H", r)) for r in range(1, 13)]  # AH .. QH
# AS must go onto KS to free 2S and QS, but KS tops a full pile of 13: lost.
CAPPED = position(
    {1: [*_HEARTS, "KS"], 2: ["QS", "2S", "AS"], 3: ["KH"]}, {**SPADES_OPEN, **HEARTS_MEET}
)
# The same with AH moved off the full pile (12 cards there): AS goes onto KS and it wins.
UNCAPPED = position(
    {1: [*_HEARTS[1:], "KS"], 2: ["QS", "2S", "AS"], 3: ["AH", "KH"]},
    {**SPADES_OPEN, **HEARTS_MEET},
)
