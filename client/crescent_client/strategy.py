"""A greedy Crescent player that sees only what a racer sees: the VIEW.

The view (docs/protocol.md) holds each pile's card count and top card and each
foundation's top card. That is enough to know every legal move, because a move
only ever involves top cards. The strategy is sans-I/O: give it a view, it
answers an action string in the rules notation (``"p3-ad"``, ``"redeal"``…).

Order of preference (the issue's "simple greedy strategy"):

1. a pile's top card onto a foundation;
2. a pile → pile move that *reveals* a card (its source holds two or more);
3. ``redeal`` while redeals remain;
4. with no redeals left: any other legal move (emptying a pile,
   foundation → foundation);
5. otherwise ``resign`` (the server normally reports ``locked`` first).

A move can undo an earlier one (a card moved back and forth between two piles
reveals nothing new), so the strategy remembers which moves it already tried from
each visible state and never repeats one: that bounds the game, whatever the deal.

>>> view = {
...     "piles": [{"n": 2, "top": "2S"}, {"n": 1, "top": "3S"}] + [{"n": 0, "top": None}] * 14,
...     "foundations": {k: {"n": 1, "top": ("A" if k[0] == "a" else "K") + k[1].upper()}
...                     for k in ("as", "ah", "ad", "ac", "ds", "dh", "dd", "dc")},
...     "redeals_left": 3, "moves": 0, "undo_left": 0, "status": "playing"}
>>> GreedyStrategy().next_action(view)
'p1-as'
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

RANKS = {
    "A": 1,
    "2": 2,
    "3": 3,
    "4": 4,
    "5": 5,
    "6": 6,
    "7": 7,
    "8": 8,
    "9": 9,
    "T": 10,
    "J": 11,
    "Q": 12,
    "K": 13,
}
SUITS = "SHDC"
PILE_LIMIT = 13

View = Mapping[str, Any]


# Every card's text → (rank, suit): one dict lookup per card on the hot path (the load
# benchmark runs this strategy for every acknowledged action).
_CARDS: dict[str, tuple[int, str]] = {
    rank_text + suit: (rank, suit) for rank_text, rank in RANKS.items() for suit in SUITS
}


def parse_card(text: str) -> tuple[int, str]:
    """``"TH"`` → ``(10, "H")``; also accepts ``"10H"``.

    >>> parse_card("QS"), parse_card("10h")
    ((12, 'S'), (10, 'H'))
    """
    known = _CARDS.get(text)
    if known is not None:
        return known
    text = text.upper()
    rank_text, suit = text[:-1], text[-1:]
    if rank_text == "10":
        rank_text = "T"
    if rank_text not in RANKS or suit not in SUITS or not suit:
        raise ValueError(f"not a card: {text!r}")
    return RANKS[rank_text], suit


def adjacent(rank_a: int, rank_b: int) -> bool:
    """One rank apart, wrapping K–A (the pile rule)."""
    return (rank_a - rank_b) % 13 in (1, 12)


# A visible pile top: (pile number 1-16, card count, rank, suit). Plain tuples: this
# runs for every action of every racer in the load benchmark.
Top = tuple[int, int, int, str]


def _tops(view: View) -> list[Top]:
    tops = []
    for number, pile in enumerate(view["piles"], 1):
        card = pile.get("top")
        if card is not None:
            rank, suit = _CARDS.get(card) or parse_card(card)
            tops.append((number, pile["n"], rank, suit))
    return tops


def _foundation_tops(view: View) -> dict[str, int]:
    """Rank of each foundation's top card (its base when nothing else is on it)."""
    return {
        name: (_CARDS.get(f["top"]) or parse_card(f["top"]))[0]
        for name, f in view["foundations"].items()
    }


def _foundation_moves(tops: list[Top], foundations: dict[str, int]) -> Iterator[str]:
    for number, _count, rank, suit in tops:
        suit = suit.lower()
        up = foundations.get("a" + suit)
        if up is not None and up < 13 and rank == up + 1:
            yield f"p{number}-a{suit}"
        down = foundations.get("d" + suit)
        if down is not None and down > 1 and rank == down - 1:
            yield f"p{number}-d{suit}"


def _pile_moves(tops: list[Top], revealing: bool) -> Iterator[str]:
    by_suit: dict[str, list[Top]] = {}
    for top in tops:
        by_suit.setdefault(top[3], []).append(top)
    for source in tops:
        if (source[1] >= 2) != revealing:
            continue
        for target in by_suit[source[3]]:
            if (
                target[0] != source[0]
                and target[1] < PILE_LIMIT
                and (source[2] - target[2]) % 13 in (1, 12)
            ):
                yield f"p{source[0]}-p{target[0]}"


def foundation_moves(view: View) -> Iterator[str]:
    """Every pile top → foundation move of the view."""
    return _foundation_moves(_tops(view), _foundation_tops(view))


def pile_moves(view: View, *, revealing: bool) -> Iterator[str]:
    """Pile → pile moves; ``revealing`` picks those whose source keeps a card under it
    (True) or those that empty their source (False)."""
    return _pile_moves(_tops(view), revealing)


def foundation_to_foundation_moves(view: View) -> Iterator[str]:
    """A foundation's top card (not its base) onto the other foundation of its suit."""
    foundations = view["foundations"]
    tops = _foundation_tops(view)
    for suit in "shdc":
        up, down = "a" + suit, "d" + suit
        if up not in tops or down not in tops:
            continue
        if foundations[up]["n"] > 1 and tops[up] == tops[down] - 1 and tops[down] > 1:
            yield f"{up}-{down}"
        if foundations[down]["n"] > 1 and tops[down] == tops[up] + 1 and tops[up] < 13:
            yield f"{down}-{up}"


def fingerprint(view: View) -> tuple[object, ...]:
    """What the player can see, as a hashable value (to notice repeated states)."""
    return (
        tuple([p["top"] for p in view["piles"]]),
        tuple([p["n"] for p in view["piles"]]),
        tuple([f["n"] for f in view["foundations"].values()]),
        view["redeals_left"],
    )


@dataclass
class GreedyStrategy:
    """Picks the next action from a view; never repeats a move from the same visible state.

    ``max_actions`` bounds a game whatever happens (then it resigns).
    """

    max_actions: int = 3000
    actions_sent: int = 0
    _tried: dict[tuple[object, ...], set[str]] = field(default_factory=dict)

    def candidates(self, view: View) -> Iterator[str]:
        """Every action worth trying, best first (may repeat; filtered by the caller)."""
        tops = _tops(view)
        yield from _foundation_moves(tops, _foundation_tops(view))
        yield from _pile_moves(tops, revealing=True)
        if view["redeals_left"] > 0:
            yield "redeal"
            return
        yield from _pile_moves(tops, revealing=False)
        yield from foundation_to_foundation_moves(view)

    def next_action(self, view: View) -> str | None:
        """The action to send next, or ``None`` when the game is over."""
        if view["status"] != "playing":
            return None
        if self.actions_sent >= self.max_actions:
            self.actions_sent += 1
            return "resign"
        tried = self._tried.setdefault(fingerprint(view), set())
        for action in self.candidates(view):
            if action not in tried:
                tried.add(action)
                self.actions_sent += 1
                return action
        self.actions_sent += 1
        return "resign"

    def forget(self) -> None:
        """Start afresh (a new round)."""
        self._tried.clear()
        self.actions_sent = 0
