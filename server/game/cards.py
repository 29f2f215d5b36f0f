"""Value objects: cards, variants, places and moves, with their notation.

Internally a card is a small int ``suit * 13 + rank - 1`` (suits S H D C = 0..3,
ranks A..K = 1..13), a place is an int (piles p1..p16 = 0..15, ascending
foundations as ah ad ac = 16..19, descending ds dh dd dc = 20..23). The public
objects below wrap those ints; every distinct card and move exists once
(interned), so parsing and comparing them is cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from .errors import InvalidCard, InvalidMove

SUITS: Final = "SHDC"
RANKS: Final = "A23456789TJQK"

PILE_COUNT: Final = 16
FIRST_FOUNDATION: Final = 16
PILE_LIMIT: Final = 13
# Place names in index order: p1..p16, then as ah ad ac, then ds dh dd dc.
PLACE_NAMES: Final[tuple[str, ...]] = (
    *(f"p{i}" for i in range(1, PILE_COUNT + 1)),
    *(f"a{s.lower()}" for s in SUITS),
    *(f"d{s.lower()}" for s in SUITS),
)
FOUNDATION_NAMES: Final[tuple[str, ...]] = PLACE_NAMES[FIRST_FOUNDATION:]
PLACE_INDEX: Final[dict[str, int]] = {name: i for i, name in enumerate(PLACE_NAMES)}


class Variant(StrEnum):
    """The four rule variants of rules.md."""

    N = "N"  # the default game
    F = "F"  # Crescent Four: 4 redeals
    O = "O"  # Open Crescent: every card shown  # noqa: E741
    R = "R"  # foundation cards may go back to a pile

    @property
    def redeals(self) -> int:
        """Redeals per game: 4 in Crescent Four, else 3."""
        return 4 if self is Variant.F else 3

    @property
    def open(self) -> bool:
        """True where the player sees every card of every pile (variant O)."""
        return self is Variant.O

    @property
    def returns(self) -> bool:
        """True where a foundation card may go back to a pile (variant R)."""
        return self is Variant.R

    @classmethod
    def parse(cls, text: str | Variant) -> Variant:
        """``Variant.parse("n") is Variant.N``; anything else raises ValueError."""
        try:
            return cls(str(text).upper())
        except ValueError:
            raise ValueError(f"unknown variant {text!r}: expected one of N, F, O, R") from None


@dataclass(frozen=True, slots=True)
class Card:
    """One card: ``suit`` is a letter of ``SHDC``, ``rank`` 1 (ace) .. 13 (king).

    >>> Card.parse("10h"), str(Card.parse("TH")), Card.parse("QC").rank
    (Card('TH'), 'TH', 12)
    """

    suit: str
    rank: int

    def __post_init__(self) -> None:
        if self.suit not in SUITS or len(self.suit) != 1 or not 1 <= self.rank <= 13:
            raise InvalidCard(f"{self.rank}{self.suit}")

    @property
    def index(self) -> int:
        """The engine's int for this card: ``suit * 13 + rank - 1``."""
        return SUITS.index(self.suit) * 13 + self.rank - 1

    @staticmethod
    def from_index(index: int) -> Card:
        """The card of an engine int (0..51)."""
        return CARDS[index]

    @staticmethod
    def parse(text: object) -> Card:
        """Parse ``TH``/``10H``/``th``; raise ``InvalidCard`` (code ``bad_card``) otherwise."""
        if not isinstance(text, str):
            raise InvalidCard(text)
        card = _CARD_BY_TEXT.get(text.upper())
        if card is None:
            raise InvalidCard(text)
        return card

    def __str__(self) -> str:
        return RANKS[self.rank - 1] + self.suit

    def __repr__(self) -> str:
        return f"Card({str(self)!r})"


CARDS: Final[tuple[Card, ...]] = tuple(Card(s, r) for s in SUITS for r in range(1, 14))
CARD_TEXT: Final[tuple[str, ...]] = tuple(str(c) for c in CARDS)
_CARD_BY_TEXT: Final[dict[str, Card]] = {str(c): c for c in CARDS} | {
    f"10{s}": CARDS[i * 13 + 9] for i, s in enumerate(SUITS)
}
CARD_INDEX: Final[dict[str, int]] = {text: card.index for text, card in _CARD_BY_TEXT.items()}


@dataclass(frozen=True, slots=True)
class Move:
    """A move of one top card from ``source`` to ``target`` (place names).

    ``str(move)`` is the notation. Moves are interned: ``Move.parse`` returns the
    same object for the same move.

    >>> m = Move.parse("P10-p14")
    >>> str(m), m.source, m.target, m is Move.parse("p10-p14")
    ('p10-p14', 'p10', 'p14', True)
    """

    source: str
    target: str
    src: int = field(init=False, repr=False, compare=False)
    dst: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        src = PLACE_INDEX.get(self.source)
        dst = PLACE_INDEX.get(self.target)
        if src is None or dst is None:
            raise InvalidMove(f"{self.source}-{self.target}")
        object.__setattr__(self, "src", src)
        object.__setattr__(self, "dst", dst)

    @staticmethod
    def parse(text: object) -> Move:
        """Parse ``p10-p14`` (case-insensitive); raise ``InvalidMove`` (``bad_move``)."""
        move = _MOVE_BY_TEXT.get(text) if isinstance(text, str) else None
        if move is None:
            move = _MOVE_BY_TEXT.get(text.lower()) if isinstance(text, str) else None
            if move is None:
                raise InvalidMove(text)
        return move

    @staticmethod
    def between(src: int, dst: int) -> Move:
        """The interned move between two place ints."""
        return MOVES[src][dst]

    def __str__(self) -> str:
        return f"{self.source}-{self.target}"

    def __repr__(self) -> str:
        return f"Move({str(self)!r})"


# MOVES[src][dst]: every possible (src, dst) pair, including the nonsense
# same-place ones, so that parsing never allocates and the engine can refuse them
# with a precise reason instead of a parse error.
MOVES: Final[tuple[tuple[Move, ...], ...]] = tuple(
    tuple(Move(a, b) for b in PLACE_NAMES) for a in PLACE_NAMES
)
MOVES_ALL: Final[tuple[Move, ...]] = tuple(m for row in MOVES for m in row)
_MOVE_BY_TEXT: Final[dict[str, Move]] = {str(m): m for m in MOVES_ALL}


def place_index(name: str) -> int:
    """Place int of a place name (``p1``..``p16``, ``as``..``dc``; case-insensitive).

    Raises ``InvalidMove`` (code ``bad_move``) for anything else.
    """
    index = PLACE_INDEX.get(name.lower()) if isinstance(name, str) else None
    if index is None:
        raise InvalidMove(
            name,
            " (a place is p1..p16, as ah ad ac or ds dh dd dc)",
            " (en plats är p1..p16, as ah ad ac eller ds dh dd dc)",
        )
    return index
