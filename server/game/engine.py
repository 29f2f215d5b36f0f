"""The game: a deal's game of Crescent on its :class:`server.game.board.Board`: moves,
redeal, undo, status, view, and every rule of rules.md the board does not hold (the
counters, the end of the game). ``_history``: the last (at most 100) moves since the
last redeal, for undo. The JSON position is read by :mod:`server.game.position`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any, Final, Literal

from .board import (
    ASC_BASE,
    DESC_BASE,
    FCARD,
    SUIT,
    TOTAL_CARDS,
    Board,
    Status,
    foundation_ranks,
)
from .cards import (
    CARD_TEXT,
    FIRST_FOUNDATION,
    FOUNDATION_NAMES,
    MOVES,
    Move,
    Variant,
    place_index,
)
from .deal import DealCode, deal_piles
from .errors import CrescentError, IllegalMove, InvalidMove, ReplayError
from .position import parse_position
from .view import FoundationView, PileView, View

UNDO_LIMIT: Final = 100
AMBIGUOUS: Final = "ambiguous"

DropResult = Move | None | Literal["ambiguous"]


def _refuse(code: str) -> IllegalMove:
    # A fresh exception each time: raising a shared instance would chain tracebacks.
    return IllegalMove(code)


class Game(Board):
    """One game of Crescent. Create with ``Game.from_code`` or ``Game.from_position``."""

    __slots__ = ("_code", "_history", "_moves", "_redeals_left", "_variant")

    _code: DealCode
    _variant: Variant
    _history: deque[Move]
    _moves: int
    _redeals_left: int

    def __init__(
        self,
        code: DealCode,
        piles: list[list[int]],
        ftop: list[int],
        redeals_left: int,
        moves: int,
    ) -> None:
        """Low level: prefer ``from_code``/``from_position`` (which validate)."""
        super().__init__(piles, ftop, code.variant.returns)
        self._code = code
        self._variant = code.variant
        self._redeals_left = redeals_left
        self._moves = moves
        self._history = deque(maxlen=UNDO_LIMIT)

    # ------------------------------------------------------------------ creation

    @classmethod
    def from_code(cls, code: str | DealCode) -> Game:
        """A new game of a deal code (a ``DealCode`` or its text)."""
        deal = DealCode.parse(code)
        return cls(
            deal, deal_piles(deal), [ASC_BASE] * 4 + [DESC_BASE] * 4, deal.variant.redeals, 0
        )

    @classmethod
    def from_position(cls, position: object) -> Game:
        """A game from rules.md's JSON position (validated; ``InvalidPosition`` if not)."""
        code, piles, ftop, redeals_left, moves = parse_position(position)
        return cls(code, piles, ftop, redeals_left, moves)

    def copy(self) -> Game:
        """An independent copy, undo history included."""
        twin = Game(
            self._code,
            [list(p) for p in self._piles],
            list(self._ftop),
            self._redeals_left,
            self._moves,
        )
        twin._history.extend(self._history)
        return twin

    # ------------------------------------------------------------------ reading

    @property
    def code(self) -> DealCode:
        return self._code

    @property
    def variant(self) -> Variant:
        return self._variant

    @property
    def moves(self) -> int:
        """Moves made (undo lowers it; a redeal is not a move)."""
        return self._moves

    @property
    def redeals_left(self) -> int:
        return self._redeals_left

    @property
    def undo_left(self) -> int:
        """How many undos are available now (at most 100; 0 after a redeal)."""
        return len(self._history)

    @property
    def history(self) -> tuple[Move, ...]:
        """The moves undo can take back, oldest first."""
        return tuple(self._history)

    def peek(self) -> Move:
        """The last move made (the one ``undo`` would take back), as python-chess's
        ``Board.peek()``; ``IndexError`` when there is none since the last redeal.

        >>> game = Game.from_code("CR1-N-AAAAAAB")
        >>> move = next(game.legal_moves())
        >>> game.play(move)
        >>> game.peek() == move
        True
        """
        return self._history[-1]

    @property
    def status(self) -> Status:
        """``"won"``, ``"locked"`` (rules.md's definition) or ``"playing"``."""
        status = self._cache_status
        if status is None:
            if self._on_foundations == TOTAL_CARDS:
                status = "won"
            elif self._redeals_left == 0 and not self._any_move_possible():
                status = "locked"
            else:
                status = "playing"
            self._cache_status = status
        return status

    def position(self) -> dict[str, Any]:
        """rules.md's JSON position: every card (full information; not for players)."""
        foundations: dict[str, list[str]] = {}
        for f, name in enumerate(FOUNDATION_NAMES):
            ranks = foundation_ranks(f, self._ftop[f])
            foundations[name] = [CARD_TEXT[FCARD[f][r]] for r in ranks]
        return {
            "code": str(self._code),
            "piles": [[CARD_TEXT[c] for c in pile] for pile in self._piles],
            "foundations": foundations,
            "redeals_left": self._redeals_left,
            "moves": self._moves,
        }

    def view(self) -> View:
        """What the player may see: each pile's count and top card (every card in O)."""
        if self._variant.open:
            piles = tuple([_open_pile_view(pile) for pile in self._piles])
        else:
            piles = tuple([_pile_view(pile) for pile in self._piles])
        ftop = self._ftop
        return View(
            piles,
            tuple([FOUNDATION_VIEWS[f << 4 | ftop[f]] for f in range(8)]),
            self._redeals_left,
            self._moves,
            len(self._history),
            self.status,
        )

    def top_card(self, place: str) -> str | None:
        """The top card of a place in notation, ``None`` for an empty pile."""
        p = place_index(place)
        card = self._source_card(p)
        return None if card < 0 else CARD_TEXT[card]

    def __repr__(self) -> str:
        return (
            f"<Game {self._code} moves={self._moves} redeals_left={self._redeals_left}"
            f" foundations={self._on_foundations} {self.status}>"
        )

    # ------------------------------------------------------------------ moves

    def refusal(self, move: Move | str) -> str | None:
        """The reason code ``play(move)`` would raise, or ``None`` if it is legal."""
        if not isinstance(move, Move):
            move = Move.parse(move)
        if self._on_foundations == TOTAL_CARDS:
            return "game_over"
        return self._check(move.src, move.dst)

    def is_legal(self, move: Move | str) -> bool:
        return self.refusal(move) is None

    def play(self, move: object) -> None:
        """Make a move (a ``Move`` or its notation; anything else is ``bad_move``).

        Raises ``InvalidMove`` (``bad_move``) for bad notation and ``IllegalMove``
        with rules.md's reason code for a refused move.
        """
        valid = move if type(move) is Move else Move.parse(move)
        if self._on_foundations == TOTAL_CARDS:
            raise _refuse("game_over")
        src = valid.src
        dst = valid.dst
        reason = self._check(src, dst)
        if reason is not None:
            raise _refuse(reason)
        self._transfer(src, dst)
        self._history.append(valid)
        self._moves += 1

    def undo(self) -> None:
        """Take back the last move (``nothing_to_undo`` / ``game_over`` where refused)."""
        if self._on_foundations == TOTAL_CARDS:
            raise _refuse("game_over")
        history = self._history
        if not history:
            raise _refuse("nothing_to_undo")
        move = history.pop()
        self._transfer(move.dst, move.src)
        self._moves -= 1

    def redeal(self) -> None:
        """In every pile of 2+ cards move the bottom card to the top; clears undo."""
        if self._on_foundations == TOTAL_CARDS:
            raise _refuse("game_over")
        if self._redeals_left <= 0:
            raise _refuse("no_redeals")
        self._rotate_piles()
        self._redeals_left -= 1
        self._history.clear()

    def apply(self, action: object) -> None:
        """Apply one logged action: move notation, ``"redeal"`` or ``"undo"`` (anything
        else is ``bad_move``)."""
        if action == "redeal":
            self.redeal()
        elif action == "undo":
            self.undo()
        elif isinstance(action, str):
            lowered = action.lower()
            if lowered == "redeal":
                self.redeal()
            elif lowered == "undo":
                self.undo()
            else:
                self.play(action)
        else:
            raise InvalidMove(action)

    # ------------------------------------------------------------------ conveniences

    def moves_from(self, source: str) -> list[Move]:
        """Every legal move of the top card of ``source`` (a place name), in place order."""
        src = place_index(source)
        if self._on_foundations == TOTAL_CARDS:
            return []
        return [m for m in self.legal_moves() if m.src == src]

    def tap_targets(self, source: str) -> list[Move]:
        """The moves a tap on ``source`` could make: one means the tap plays it.

        Same as ``moves_from``: every place that accepts the top card.
        """
        return self.moves_from(source)

    def drop_on_foundations(self, source: str) -> DropResult:
        """The move for a card of ``source`` dropped on the foundation area.

        The foundation of its suit that accepts it; ``"ambiguous"`` where both do
        (ask the player); ``None`` where neither does.
        """
        src = place_index(source)
        card = self._source_card(src)
        if card < 0 or self._on_foundations == TOTAL_CARDS:
            return None
        suit = SUIT[card]
        fits = [
            MOVES[src][dst]
            for dst in (FIRST_FOUNDATION + suit, FIRST_FOUNDATION + 4 + suit)
            if self._check(src, dst) is None
        ]
        if len(fits) == 2:
            return AMBIGUOUS
        return fits[0] if fits else None


# The VIEW's parts are immutable values: each foundation's (by foundation and top rank)
# and each closed pile's (by count and top card) is made once and shared, so a view
# costs about what the dicts it replaced did (named tuples cost more to build).
FOUNDATION_VIEWS: Final = {
    f << 4 | rank: FoundationView(name, rank if f < 4 else 14 - rank, CARD_TEXT[FCARD[f][rank]])
    for f, name in enumerate(FOUNDATION_NAMES)
    for rank in range(1, 14)
}
_PILE_VIEWS: dict[int, PileView] = {}  # count << 7 | top card -> the pile's view


def _pile_view(pile: list[int]) -> PileView:
    """A pile's view, the count and top card (shared: see ``FOUNDATION_VIEWS``)."""
    key = len(pile) << 7 | pile[-1] if pile else 127
    view = _PILE_VIEWS.get(key)
    if view is None:
        view = _PILE_VIEWS[key] = PileView(len(pile), CARD_TEXT[pile[-1]] if pile else None)
    return view


def _open_pile_view(pile: list[int]) -> PileView:
    """An open deal's pile: every card shown, bottom to top."""
    cards = tuple([CARD_TEXT[c] for c in pile])
    return PileView(len(pile), cards[-1] if cards else None, cards)


def replay(code: str | DealCode, actions: Iterable[str]) -> Game:
    """Rebuild a game from its deal code and its actions (moves, ``redeal``, ``undo``).

    Raises ``ReplayError`` naming the index, action and reason of the first bad action.
    """
    game = Game.from_code(code)
    for index, action in enumerate(actions):
        try:
            game.apply(action)
        except CrescentError as error:
            raise ReplayError(index, str(action), error) from error
    return game
