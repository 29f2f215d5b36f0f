"""The game state and every rule of rules.md: moves, redeal, undo, status, view.

Representation (chosen for speed, see docs/engine.md):

- ``_piles``: 16 lists of card ints, bottom to top.
- ``_ftop``: 8 foundation top *ranks*; ascending foundations (0..3 = as ah ad ac)
  hold A..top, descending ones (4..7 = ds dh dd dc) hold K..top, so the rank is
  all there is to know about a foundation.
- ``_tops``: for each of the 52 cards a bit mask of the piles whose top card it
  is. A pile's top card c fits on the piles in ``_tops[UP[c]] | _tops[DOWN[c]]``,
  so ``legal_moves`` looks up two ints per pile instead of scanning 16x16 pairs.
- ``_history``: the last (at most 100) moves since the last redeal, for undo.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, Final, Literal

from .cards import (
    CARD_INDEX,
    CARD_TEXT,
    FIRST_FOUNDATION,
    FOUNDATION_NAMES,
    MOVES,
    PILE_COUNT,
    PILE_LIMIT,
    Move,
    Variant,
    place_index,
)
from .deal import DealCode, deal_piles
from .errors import (
    CrescentError,
    IllegalMove,
    InvalidDealCode,
    InvalidMove,
    InvalidPosition,
    ReplayError,
)
from .view import FoundationView, PileView, View

UNDO_LIMIT: Final = 100
TOTAL_CARDS: Final = 104
AMBIGUOUS: Final = "ambiguous"

Status = Literal["playing", "won", "locked"]
DropResult = Move | None | Literal["ambiguous"]

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


def _refuse(code: str) -> IllegalMove:
    # A fresh exception each time: raising a shared instance would chain tracebacks.
    return IllegalMove(code)


class Game:
    """One game of Crescent. Create with ``Game.from_code`` or ``Game.from_position``."""

    __slots__ = (
        "_cache_status",
        "_code",
        "_ftop",
        "_history",
        "_moves",
        "_on_foundations",
        "_piles",
        "_redeals_left",
        "_returns",
        "_tops",
        "_variant",
    )

    _code: DealCode
    _variant: Variant
    _returns: bool
    _piles: list[list[int]]
    _ftop: list[int]
    _tops: list[int]
    _history: deque[Move]
    _moves: int
    _redeals_left: int
    _on_foundations: int
    _cache_status: Status | None

    def __init__(
        self,
        code: DealCode,
        piles: list[list[int]],
        ftop: list[int],
        redeals_left: int,
        moves: int,
    ) -> None:
        """Low level: prefer ``from_code``/``from_position`` (which validate)."""
        self._code = code
        self._variant = code.variant
        self._returns = code.variant.returns
        self._piles = piles
        self._ftop = ftop
        self._redeals_left = redeals_left
        self._moves = moves
        self._history = deque(maxlen=UNDO_LIMIT)
        self._cache_status = None
        self._on_foundations = sum(ftop[:4]) + sum(14 - r for r in ftop[4:])
        tops = [0] * 52
        for p, pile in enumerate(piles):
            if pile:
                tops[pile[-1]] |= BIT[p]
        self._tops = tops

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
        return _parse_position(cls, position)

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
    def foundation_count(self) -> int:
        """Cards on the 8 foundations, bases included (8 at the start, 104 when won)."""
        return self._on_foundations

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

    def pile_size_and_top(self, index: int) -> tuple[int, int]:
        """Pile ``index`` (0..15): how many cards it holds and its top card as an index
        into ``cards.CARD_TEXT`` (-1 when empty). Cheap: made for hot encoders.

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

        >>> game = Game.from_code("CR1-O-AAAAAAB")
        >>> cards = game.pile_cards(0)
        >>> len(cards) == game.pile_size_and_top(0)[0], CARD_TEXT[cards[-1]] == game.top_card("p1")
        (True, True)
        """
        return tuple(self._piles[index])

    def foundation_rank(self, index: int) -> int:
        """The top rank of foundation ``index`` (0..7, in ``FOUNDATION_NAMES`` order):
        what identifies a foundation's state (see the module docstring).

        >>> Game.from_code("CR1-N-AAAAAAB").foundation_rank(0)  # the ace base
        1
        """
        return self._ftop[index]

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
            ranks = _foundation_ranks(f, self._ftop[f])
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

    def legal_moves(self) -> Iterator[Move]:
        """Every legal move, grouped by source in place order, targets in place order."""
        piles = self._piles
        tops = self._tops
        ftop = self._ftop
        for p in range(PILE_COUNT):
            pile = piles[p]
            if not pile:
                continue
            card = pile[-1]
            row = MOVES[p]
            targets = tops[UP[card]] | tops[DOWN[card]]
            while targets:
                low = targets & -targets
                targets ^= low
                t = BIT_INDEX[low]
                if len(piles[t]) < PILE_LIMIT:
                    yield row[t]
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
                card = FCARD[f][rank]
                targets = tops[UP[card]] | tops[DOWN[card]]
                while targets:
                    low = targets & -targets
                    targets ^= low
                    t = BIT_INDEX[low]
                    if len(piles[t]) < PILE_LIMIT:
                        yield row[t]
            if f < 4:
                if ftop[f + 4] == rank + 1:  # onto the descending foundation of its suit
                    yield row[FIRST_FOUNDATION + f + 4]
            elif ftop[f - 4] == rank - 1:  # onto the ascending foundation of its suit
                yield row[FIRST_FOUNDATION + f - 4]

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
        tops = self._tops
        for p, pile in enumerate(self._piles):
            if len(pile) >= 2:
                tops[pile[-1]] &= ~BIT[p]
                pile.append(pile.pop(0))
                tops[pile[-1]] |= BIT[p]
        self._redeals_left -= 1
        self._history.clear()
        self._cache_status = None

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

    # ------------------------------------------------------------------ internals

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

    def _fits_a_pile(self, card: int) -> bool:
        """True if some non-full pile's top accepts ``card`` (wrap included)."""
        targets = self._tops[UP[card]] | self._tops[DOWN[card]]
        piles = self._piles
        while targets:
            low = targets & -targets
            targets ^= low
            if len(piles[BIT_INDEX[low]]) < PILE_LIMIT:
                return True
        return False

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
            if self._fits_a_pile(card):
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
                if asc != ASC_BASE and self._fits_a_pile(FCARD[suit][asc]):
                    return True
                if desc != DESC_BASE and self._fits_a_pile(FCARD[suit + 4][desc]):
                    return True
        return False


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


def _foundation_ranks(f: int, top: int) -> range:
    """Ranks on foundation f (bottom to top) when its top rank is ``top``."""
    return range(1, top + 1) if f < 4 else range(13, top - 1, -1)


def _parse_position(cls: type[Game], position: object) -> Game:
    def bad(detail: str, detail_sv: str) -> InvalidPosition:
        return InvalidPosition(detail, detail_sv)

    if not isinstance(position, dict):
        raise bad("a position is a JSON object", "en ställning är ett JSON-objekt")
    expected = {"code", "piles", "foundations", "redeals_left", "moves"}
    if set(position) != expected:
        missing = sorted(expected - set(position))
        extra = sorted(set(position) - expected, key=str)
        raise bad(
            f"keys must be {sorted(expected)}; missing {missing}, unknown {extra}",
            f"nycklarna måste vara {sorted(expected)}; saknas {missing}, okända {extra}",
        )
    try:
        code = DealCode.parse(position["code"])
    except InvalidDealCode as error:
        raise bad(f"code: {error.message}", f"code: {error.message_sv}") from None

    def card_of(text: object, where: str) -> int:
        index = CARD_INDEX.get(text.upper()) if isinstance(text, str) else None
        if index is None:
            raise bad(f"{where}: {text!r} is not a card", f"{where}: {text!r} är inget kort")
        return index

    raw_piles = position["piles"]
    if not isinstance(raw_piles, list) or len(raw_piles) != PILE_COUNT:
        raise bad("piles must be a list of 16 lists", "piles måste vara en lista med 16 listor")
    piles: list[list[int]] = []
    for p, raw in enumerate(raw_piles, start=1):
        if not isinstance(raw, list):
            raise bad(
                f"pile p{p} must be a list of cards", f"hög p{p} måste vara en lista med kort"
            )
        if len(raw) > PILE_LIMIT:
            raise bad(
                f"pile p{p} has {len(raw)} cards (at most {PILE_LIMIT})",
                f"hög p{p} har {len(raw)} kort (högst {PILE_LIMIT})",
            )
        piles.append([card_of(c, f"pile p{p}") for c in raw])

    raw_found = position["foundations"]
    if not isinstance(raw_found, dict) or set(raw_found) != set(FOUNDATION_NAMES):
        raise bad(
            f"foundations must have exactly the keys {list(FOUNDATION_NAMES)}",
            f"foundations måste ha exakt nycklarna {list(FOUNDATION_NAMES)}",
        )
    ftop: list[int] = []
    for f, name in enumerate(FOUNDATION_NAMES):
        raw = raw_found[name]
        if not isinstance(raw, list) or not raw:
            raise bad(
                f"foundation {name} must be a non-empty list (its base first)",
                f"grundhög {name} måste vara en icke-tom lista (basen först)",
            )
        cards = [card_of(c, f"foundation {name}") for c in raw]
        top = cards[-1] % 13 + 1
        if len(cards) > 13 or cards != [FCARD[f][r] for r in _foundation_ranks(f, top)]:
            raise bad(
                f"foundation {name} must run {'A, 2, 3' if f < 4 else 'K, Q, J'} ... "
                f"in its suit, got {raw}",
                f"grundhög {name} måste gå {'A, 2, 3' if f < 4 else 'K, Q, J'} ... "
                f"i sin färg, fick {raw}",
            )
        ftop.append(top)

    counts = [0] * 52
    for pile in piles:
        for c in pile:
            counts[c] += 1
    for f, top in enumerate(ftop):
        for r in _foundation_ranks(f, top):
            counts[FCARD[f][r]] += 1
    wrong = [f"{CARD_TEXT[c]} x{n}" for c, n in enumerate(counts) if n != 2]
    if wrong:
        raise bad(
            f"every card must appear exactly twice: {', '.join(wrong)}",
            f"varje kort måste finnas exakt två gånger: {', '.join(wrong)}",
        )

    redeals = position["redeals_left"]
    if type(redeals) is not int or not 0 <= redeals <= code.variant.redeals:
        raise bad(
            f"redeals_left must be an integer 0 .. {code.variant.redeals}",
            f"redeals_left måste vara ett heltal 0 .. {code.variant.redeals}",
        )
    moves = position["moves"]
    if type(moves) is not int or moves < 0:
        raise bad("moves must be an integer >= 0", "moves måste vara ett heltal >= 0")
    return cls(code, piles, ftop, redeals, moves)


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
