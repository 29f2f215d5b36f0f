"""Position builders for the engine tests.

``build`` makes a legal position (each card exactly twice) from the parts a test
cares about, the top cards of piles and the foundation tops, and buries every
other card under the given pile segments, where it cannot affect any move.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from server.game import CARDS, FOUNDATION_NAMES, Card, Game

ASC = ("as", "ah", "ad", "ac")
DESC = ("ds", "dh", "dd", "dc")


def foundation_cards(name: str, top: int) -> list[str]:
    suit = name[1].upper()
    ranks = range(1, top + 1) if name.startswith("a") else range(13, top - 1, -1)
    return [str(Card(suit, r)) for r in ranks]


def position(
    piles: Mapping[int, Sequence[str]],
    *,
    counts: Mapping[int, int] | None = None,
    bottoms: Mapping[int, Sequence[str]] | None = None,
    foundations: Mapping[str, int] | None = None,
    variant: str = "N",
    redeals_left: int | None = None,
    moves: int = 0,
) -> dict[str, Any]:
    """A legal position dict.

    ``piles``: pile number (1..16) -> its top segment, bottom to top; piles not
    named are empty. ``counts``: exact card counts for some piles; ``bottoms``:
    cards at the very bottom of some piles. ``foundations``: name -> top rank
    (default: only the bases). Every card not placed is buried, in a fixed order,
    between the bottom and top segments: exact-count piles first, then the
    others round robin, at most 12 cards a pile (so each still takes a card).
    """
    counts = dict(counts or {})
    bottoms = dict(bottoms or {})
    ftops = {name: (1 if name in ASC else 13) for name in FOUNDATION_NAMES}
    ftops.update(foundations or {})
    found = {name: foundation_cards(name, top) for name, top in ftops.items()}
    pool = Counter({str(c): 2 for c in CARDS})
    for cards in found.values():
        pool.subtract(cards)
    for segment in [*piles.values(), *bottoms.values()]:
        pool.subtract(segment)
    if any(n < 0 for n in pool.values()):
        raise ValueError(f"a card is used more than twice: {+(-pool)}")
    filler = sorted(pool.elements(), key=lambda t: Card.parse(t).index)
    middles: dict[int, list[str]] = {p: [] for p in piles}
    for p, total in counts.items():
        need = total - len(piles[p]) - len(bottoms.get(p, ()))
        middles[p], filler = filler[:need], filler[need:]
    free = [p for p in piles if p not in counts]
    while filler:
        progressed = False
        for p in free:
            if filler and len(piles[p]) + len(bottoms.get(p, ())) + len(middles[p]) < 12:
                middles[p].append(filler.pop())
                progressed = True
        if not progressed:
            raise ValueError(f"no room for {len(filler)} more cards")
    return {
        "code": f"CR1-{variant}-AAAAAAB",
        "piles": [
            [*bottoms.get(p, ()), *middles.get(p, ()), *piles.get(p, ())] for p in range(1, 17)
        ],
        "foundations": found,
        "redeals_left": (4 if variant == "F" else 3) if redeals_left is None else redeals_left,
        "moves": moves,
    }


def build(piles: Mapping[int, Sequence[str]], **options: Any) -> Game:
    """``Game.from_position(position(piles, **options))``."""
    return Game.from_position(position(piles, **options))


def all_cards(position_dict: dict[str, Any]) -> Counter[str]:
    counter: Counter[str] = Counter()
    for pile in position_dict["piles"]:
        counter.update(pile)
    for cards in position_dict["foundations"].values():
        counter.update(cards)
    return counter


def status(game: Game) -> str:
    """The game's status read afresh: after ``assert game.status == "playing"`` mypy
    keeps the narrowed literal, though a move may have changed it since."""
    return game.status
