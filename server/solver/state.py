"""The solver's compact state: what a search needs of a position, nothing more.

Cards are the engine's ints (``suit * 13 + rank - 1``). A state holds the 16 piles
(bottom to top), per suit the ascending top rank ``asc[s]`` (1 = only the base ace)
and the descending top rank ``desc[s]`` (13 = only the base king), the redeals left
and whether foundation cards may go back to a pile (variant R).

Solver moves ("macro moves") are triples ``(src, dst, card)``: ``src``/``dst`` a pile
0..15 or ``FOUNDATION + suit`` (16..19: *the foundations of that suit*, either of
the two), ``REDEAL`` for a redeal. Foundation-to-foundation moves never appear: they
are possible only while a suit's two foundations *meet* (13 cards of the suit on
them, one of each rank: ``desc == asc + 1``), and then every split between the two
is reachable for free, so a meeting suit is one state whatever its split, and any
card of that suit moves to (or in R from) the foundations in one macro move.
``expand`` turns macro moves back into the engine's notation, inserting the
foundation-to-foundation shifts a meeting suit needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from server.game import Card, DealCode, Game, deal_piles

PILES: Final = 16
PILE_LIMIT: Final = 13
FOUNDATION: Final = 16  # dst/src 16 + suit: the foundations of that suit
REDEAL: Final = -1
SUIT_LETTERS: Final = "shdc"

MacroMove = tuple[int, int, int]
REDEAL_MOVE: Final[MacroMove] = (REDEAL, REDEAL, -1)


def neighbours(card: int) -> tuple[int, int]:
    """The cards one rank above and below in the same suit, wrapping K <-> A."""
    base = card - card % 13
    return base + (card % 13 + 1) % 13, base + (card % 13 - 1) % 13


@dataclass(slots=True)
class State:
    """A mutable position for searching (see the module docstring)."""

    piles: list[list[int]]
    asc: list[int]
    desc: list[int]
    redeals: int
    returns: bool

    @classmethod
    def from_game(cls, game: Game) -> State:
        return cls.from_position(game.position())

    @classmethod
    def from_code(cls, code: str | DealCode) -> State:
        deal = DealCode.parse(code)
        return cls(deal_piles(deal), [1] * 4, [13] * 4, deal.variant.redeals, deal.variant.returns)

    @classmethod
    def from_position(cls, position: dict[str, Any]) -> State:
        """From rules.md's JSON position (validate it first with ``Game.from_position``)."""
        variant = DealCode.parse(position["code"]).variant
        piles = [[Card.parse(text).index for text in pile] for pile in position["piles"]]
        foundations = position["foundations"]
        asc = [Card.parse(foundations[f"a{s}"][-1]).rank for s in SUIT_LETTERS]
        desc = [Card.parse(foundations[f"d{s}"][-1]).rank for s in SUIT_LETTERS]
        return cls(piles, asc, desc, int(position["redeals_left"]), variant.returns)

    def copy(self) -> State:
        return State(
            [list(p) for p in self.piles],
            list(self.asc),
            list(self.desc),
            self.redeals,
            self.returns,
        )

    def meeting(self, suit: int) -> bool:
        return self.desc[suit] == self.asc[suit] + 1

    def won(self) -> bool:
        return not any(self.piles)

    # ------------------------------------------------------------------ moves

    def macro_moves(self) -> Iterator[MacroMove]:
        """Every macro move, in the search's order: to foundations, pile to pile,
        (R) foundation to pile, then redeal."""
        piles = self.piles
        asc = self.asc
        desc = self.desc
        for p in range(PILES):
            pile = piles[p]
            if pile:
                card = pile[-1]
                s = card // 13
                r = card % 13 + 1
                if asc[s] == r - 1 or desc[s] == r + 1 or desc[s] == asc[s] + 1:
                    yield (p, FOUNDATION + s, card)
        for p in range(PILES):
            pile = piles[p]
            if pile:
                card = pile[-1]
                up, down = neighbours(card)
                for q in range(PILES):
                    target = piles[q]
                    if (
                        q != p
                        and target
                        and len(target) < PILE_LIMIT
                        and (target[-1] == up or target[-1] == down)
                    ):
                        yield (p, q, card)
        if self.returns:
            for s in range(4):
                for card in self.returnable(s):
                    up, down = neighbours(card)
                    for q in range(PILES):
                        target = piles[q]
                        if (
                            target
                            and len(target) < PILE_LIMIT
                            and (target[-1] == up or target[-1] == down)
                        ):
                            yield (FOUNDATION + s, q, card)
        if self.redeals > 0:
            yield REDEAL_MOVE

    def returnable(self, suit: int) -> list[int]:
        """The cards of a suit that can leave its foundations (bases never move)."""
        a, d = self.asc[suit], self.desc[suit]
        if d == a + 1:  # meeting: any rank but the bases' is reachable by shifting
            ranks = list(range(2, 13))
        else:
            ranks = []
            if a >= 2:
                ranks.append(a)
            # d == a is one card twice (two decks), unless a is the ace base: then the
            # descending run has reached the ace, and that ace can leave.
            if d <= 12 and (d != a or a < 2):
                ranks.append(d)
        return [suit * 13 + r - 1 for r in ranks]

    def apply(self, move: MacroMove) -> None:
        src, dst, card = move
        if src == REDEAL:
            for pile in self.piles:
                if len(pile) >= 2:
                    pile.append(pile.pop(0))
            self.redeals -= 1
            return
        if src < FOUNDATION:
            self.piles[src].pop()
        else:
            self._take_from_foundations(card)
        if dst < FOUNDATION:
            self.piles[dst].append(card)
        else:
            self._put_on_foundations(card)

    def _put_on_foundations(self, card: int) -> None:
        # Ascending if it fits there, else descending; when a suit meets (or both
        # fit) the results are the same state up to a free shift.
        s, r = card // 13, card % 13 + 1
        if self.desc[s] == self.asc[s] + 1:
            self.asc[s], self.desc[s] = r, r
        elif self.asc[s] == r - 1:
            self.asc[s] = r
        else:
            self.desc[s] = r

    def _take_from_foundations(self, card: int) -> None:
        s, r = card // 13, card % 13 + 1
        if self.desc[s] == self.asc[s] + 1:
            self.asc[s], self.desc[s] = r - 1, r + 1
        elif self.asc[s] == r and r >= 2:  # the ace base never leaves
            self.asc[s] = r - 1
        else:
            self.desc[s] = r + 1


def expand(state: State, line: list[MacroMove]) -> list[str]:
    """The engine actions of a macro line played from ``state`` (which it changes)."""
    actions: list[str] = []
    for move in line:
        src, dst, card = move
        if src == REDEAL:
            actions.append("redeal")
            state.apply(move)
            continue
        s, r = card // 13, card % 13 + 1
        letter = SUIT_LETTERS[s]
        if src < FOUNDATION:
            source = f"p{src + 1}"
        else:  # R: from the foundations of the suit; shift until the card is a top
            if state.meeting(s):
                _shift(state, s, r, actions)  # now asc top == r
                source = f"a{letter}"
            else:
                source = f"a{letter}" if state.asc[s] == r and r >= 2 else f"d{letter}"
        if dst < FOUNDATION:
            target = f"p{dst + 1}"
        elif state.meeting(s):
            if r >= 2:
                _shift(state, s, r - 1, actions)
                target = f"a{letter}"
            else:
                _shift(state, s, 1, actions)
                target = f"d{letter}"
        else:
            target = f"a{letter}" if state.asc[s] == r - 1 else f"d{letter}"
        actions.append(f"{source}-{target}")
        state.apply(move)
    return actions


def _shift(state: State, suit: int, asc_top: int, actions: list[str]) -> None:
    """Foundation-to-foundation moves in a meeting suit until asc's top is ``asc_top``."""
    letter = SUIT_LETTERS[suit]
    while state.asc[suit] < asc_top:
        actions.append(f"d{letter}-a{letter}")
        state.asc[suit] += 1
        state.desc[suit] += 1
    while state.asc[suit] > asc_top:
        actions.append(f"a{letter}-d{letter}")
        state.asc[suit] -= 1
        state.desc[suit] -= 1
