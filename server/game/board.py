"""The board: the 104 cards in their 24 places, and the rules of moving one card.

:class:`Board` is what :class:`server.game.engine.Game` is made of: the piles, the
foundations, which moves are legal, why one is refused, the move itself (unchecked),
the redeal's turn of the piles and the closed form of "locked". The game adds the deal,
the counters, undo and the public API. Representation (chosen for speed, see
docs/engine.md):

- ``_piles``: 16 lists of card ints, bottom to top.
- ``_ftop``: 8 foundation top *ranks*; ascending foundations (0..3 = as ah ad ac)
  hold A..top, descending ones (4..7 = ds dh dd dc) hold K..top, so the rank is
  all there is to know about a foundation.
- ``_tops``: for each of the 52 cards a bit mask of the piles whose top card it
  is. A pile's top card c fits on the piles in ``_tops[UP[c]] | _tops[DOWN[c]]``,
  so ``legal_moves`` looks up two ints per pile instead of scanning 16x16 pairs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, Literal

from .cards import FIRST_FOUNDATION, MOVES, PILE_COUNT, PILE_LIMIT, Move

TOTAL_CARDS: Final = 104

Status = Literal["playing", "won", "locked"]

# Per-card lookup tables (card int -> ...).
SUIT: Final = tuple(c // 13 for c in range(52))
RANK: Final = tuple(c % 13 + 1 for c in range(52))
# The card one rank above / below, in the same suit, wrapping K <-> A.
UP: Final = tuple((c // 13) * 13 + (c % 13 + 1) % 13 for c in range(52))
DOWN: Final = tuple((c // 13) * 13 + (c % 13 - 1) % 13 for c in range(52))
# FCARD[f][rank]: the card int of rank `rank` in foundation f's suit.
FCARD: Final = tuple(tuple((f % 4) * 13 + r - 1 if r else -1 for r in range(14)) for f in range(8))
BIT: Final = tuple(1 << p for p in range(PILE_COUNT))
BIT_INDEX: Final = {1 << p: p for p in range(PILE_COUNT)}
ASC_BASE: Final = 1  # rank of an ascending foundation's base (ace)
DESC_BASE: Final = 13  # rank of a descending foundation's base (king)


def foundation_ranks(f: int, top: int) -> range:
    """Ranks on foundation f (bottom to top) when its top rank is ``top``."""
    return range(1, top + 1) if f < 4 else range(13, top - 1, -1)


class Board:
    """The cards in their places: piles, foundations and the rules of one move."""

    __slots__ = (
        "_cache_status",
        "_ftop",
        "_on_foundations",
        "_piles",
        "_returns",
        "_tops",
    )

    _returns: bool
    _piles: list[list[int]]
    _ftop: list[int]
    _tops: list[int]
    _on_foundations: int
    _cache_status: Status | None

    def __init__(self, piles: list[list[int]], ftop: list[int], returns: bool) -> None:
        """``returns``: whether a foundation card may go back to a pile (variant R)."""
        self._returns = returns
        self._piles = piles
        self._ftop = ftop
        self._cache_status = None
        self._on_foundations = sum(ftop[:4]) + sum(14 - r for r in ftop[4:])
        tops = [0] * 52
        for p, pile in enumerate(piles):
            if pile:
                tops[pile[-1]] |= BIT[p]
        self._tops = tops

    @property
    def foundation_count(self) -> int:
        """Cards on the 8 foundations, bases included (8 at the start, 104 when won)."""
        return self._on_foundations

    def pile_size_and_top(self, index: int) -> tuple[int, int]:
        """Pile ``index`` (0..15): how many cards it holds and its top card as an index
        into ``cards.CARD_TEXT`` (-1 when empty). Cheap: made for hot encoders.

        >>> from server.game import Game
        >>> from server.game.cards import CARD_TEXT
        >>> game = Game.from_code("CR1-N-AAAAAAB")
        >>> size, top = game.pile_size_and_top(0)
        >>> size, CARD_TEXT[top] == game.top_card("p1")
        (6, True)
        """
        pile = self._piles[index]
        return (len(pile), pile[-1]) if pile else (0, -1)

    def pile_cards(self, index: int) -> tuple[int, ...]:
        """Every card of pile ``index`` (0..15), bottom to top, as indexes into
        ``cards.CARD_TEXT``: what an open deal's VIEW shows (for its encoder).

        >>> from server.game import Game
        >>> from server.game.cards import CARD_TEXT
        >>> game = Game.from_code("CR1-O-AAAAAAB")
        >>> cards = game.pile_cards(0)
        >>> len(cards) == game.pile_size_and_top(0)[0], CARD_TEXT[cards[-1]] == game.top_card("p1")
        (True, True)
        """
        return tuple(self._piles[index])

    def foundation_rank(self, index: int) -> int:
        """The top rank of foundation ``index`` (0..7, in ``FOUNDATION_NAMES`` order):
        what identifies a foundation's state (see the module docstring).

        >>> from server.game import Game
        >>> Game.from_code("CR1-N-AAAAAAB").foundation_rank(0)  # the ace base
        1
        """
        return self._ftop[index]

    def legal_moves(self) -> Iterator[Move]:
        """Every legal move, grouped by source in place order, targets in place order."""
        piles = self._piles
        ftop = self._ftop
        for p in range(PILE_COUNT):
            pile = piles[p]
            if not pile:
                continue
            card = pile[-1]
            row = MOVES[p]
            targets = self._pile_fits(card)
            while targets:
                low = targets & -targets
                targets ^= low
                yield row[BIT_INDEX[low]]
            suit = SUIT[card]
            rank = RANK[card]
            if ftop[suit] == rank - 1:
                yield row[16 + suit]
            if ftop[suit + 4] == rank + 1:
                yield row[20 + suit]
        returns = self._returns
        for f in range(8):
            rank = ftop[f]
            if rank == (ASC_BASE if f < 4 else DESC_BASE):
                continue  # bases never move
            row = MOVES[16 + f]
            if returns:  # variant R: back onto a pile (pile targets come first in place order)
                targets = self._pile_fits(FCARD[f][rank])
                while targets:
                    low = targets & -targets
                    targets ^= low
                    yield row[BIT_INDEX[low]]
            if f < 4:
                if ftop[f + 4] == rank + 1:  # onto the descending foundation of its suit
                    yield row[FIRST_FOUNDATION + f + 4]
            elif ftop[f - 4] == rank - 1:  # onto the ascending foundation of its suit
                yield row[FIRST_FOUNDATION + f - 4]

    def _source_card(self, src: int) -> int:
        """The top card int of a place, -1 for an empty pile."""
        if src < PILE_COUNT:
            pile = self._piles[src]
            return pile[-1] if pile else -1
        f = src - FIRST_FOUNDATION
        return FCARD[f][self._ftop[f]]

    def _check(self, src: int, dst: int) -> str | None:
        """The reason code refusing src -> dst, in rules.md's order; None if legal."""
        piles = self._piles
        if src < PILE_COUNT:
            pile = piles[src]
            if not pile:
                return "empty_source"
            card = pile[-1]
        else:
            f = src - FIRST_FOUNDATION
            rank = self._ftop[f]
            if rank == (ASC_BASE if f < 4 else DESC_BASE):
                return "base_locked"
            if dst < PILE_COUNT and not self._returns:
                return "no_return"
            card = FCARD[f][rank]
        if src == dst:
            return "same_place"
        if dst < PILE_COUNT:
            target = piles[dst]
            if not target:
                return "empty_pile"
            top = target[-1]
            if SUIT[top] != SUIT[card]:
                return "wrong_suit"
            if top != UP[card] and top != DOWN[card]:
                return "wrong_rank"
            if len(target) >= PILE_LIMIT:
                return "pile_full"
            return None
        f = dst - FIRST_FOUNDATION
        if f % 4 != SUIT[card]:
            return "wrong_suit"
        if RANK[card] != (self._ftop[f] + 1 if f < 4 else self._ftop[f] - 1):
            return "wrong_rank"
        return None

    def _transfer(self, src: int, dst: int) -> None:
        """Move the top card of src onto dst, unchecked (play and undo use it)."""
        self._cache_status = None
        tops = self._tops
        if src < PILE_COUNT:
            pile = self._piles[src]
            card = pile.pop()
            tops[card] &= ~BIT[src]
            if pile:
                tops[pile[-1]] |= BIT[src]
            if dst >= PILE_COUNT:
                self._on_foundations += 1
        else:
            f = src - FIRST_FOUNDATION
            rank = self._ftop[f]
            card = FCARD[f][rank]
            self._ftop[f] = rank - 1 if f < 4 else rank + 1
            if dst < PILE_COUNT:
                self._on_foundations -= 1
        if dst < PILE_COUNT:
            pile = self._piles[dst]
            if pile:
                tops[pile[-1]] &= ~BIT[dst]
            pile.append(card)
            tops[card] |= BIT[dst]
        else:
            self._ftop[dst - FIRST_FOUNDATION] = RANK[card]

    def _rotate_piles(self) -> None:
        """The redeal's turn: in every pile of 2+ cards the bottom card goes to the top."""
        tops = self._tops
        for p, pile in enumerate(self._piles):
            if len(pile) >= 2:
                tops[pile[-1]] &= ~BIT[p]
                pile.append(pile.pop(0))
                tops[pile[-1]] |= BIT[p]
        self._cache_status = None

    def _pile_fits(self, card: int) -> int:
        """The piles that take ``card``, a bit a pile: the non-full ones whose top is a
        neighbour of it in its suit (wrap included)."""
        fits = targets = self._tops[UP[card]] | self._tops[DOWN[card]]
        piles = self._piles
        while targets:
            low = targets & -targets
            targets ^= low
            if len(piles[BIT_INDEX[low]]) >= PILE_LIMIT:
                fits ^= low
        return fits

    def _any_move_possible(self) -> bool:
        """Closed form of rules.md's "not locked" (redeals aside).

        Foundation-to-foundation moves exist only in a suit whose foundations
        meet (descending top = ascending top + 1: 13 of its cards on the
        foundations, one of each rank). Then every split between them is
        reachable (bases never move), so every rank of that suit has a
        foundation that accepts it: any pile top of that suit can move. In a
        suit that does not meet, the foundations cannot change without another
        move, so only direct moves count.

        Variant R adds foundation-to-pile moves. A foundation card only goes on
        a pile topped by its own suit; in a meeting suit that pile's top can
        move anyway (above), so only the fixed tops of non-meeting suits need a
        look. tests/game/test_locked.py checks all this against a brute-force
        search of the reachable foundation states.
        """
        ftop = self._ftop
        for pile in self._piles:
            if not pile:
                continue
            card = pile[-1]
            if self._pile_fits(card):
                return True
            suit = SUIT[card]
            rank = RANK[card]
            asc = ftop[suit]
            desc = ftop[suit + 4]
            if asc == rank - 1 or desc == rank + 1 or desc == asc + 1:
                return True
        if self._returns:
            for suit in range(4):
                asc = ftop[suit]
                desc = ftop[suit + 4]
                if desc == asc + 1:
                    continue  # meeting suit: covered by the pile loop above
                if asc != ASC_BASE and self._pile_fits(FCARD[suit][asc]):
                    return True
                if desc != DESC_BASE and self._pile_fits(FCARD[suit + 4][desc]):
                    return True
        return False
