"""The VIEW, typed: what a racer may see of their game (docs/protocol.md, "VIEW").

:meth:`Game.view <server.game.engine.Game.view>` builds it; the server sends the map
:meth:`View.to_wire` gives (keys in protocol.md's order, so the bytes the acks and
snapshots always carried). The hidden cards are not in it: a pile shows its count and
top card, and every card only in an open deal (variant O), where the rules show them.

Named tuples, as ``RacerProgress``: frozen dataclasses (``object.__setattr__`` per
field) made ``Game.view()``, 25 values, several times slower than the dicts it replaced;
with named tuples, and the engine sharing each foundation's and each closed pile's
value (they are immutable), a view costs about what the dicts did.

>>> from server.game import Game
>>> view = Game.from_code("CR1-N-AAAAAAB").view()
>>> view.piles[0], view.foundation("ah"), view.status
(PileView(n=6, top='TS', cards=None), FoundationView(name='ah', n=1, top='AH'), 'playing')
>>> view.to_wire()["piles"][0], view.to_wire()["foundations"]["ds"]
({'n': 6, 'top': 'TS'}, {'n': 1, 'top': 'KS'})
>>> view.resigned().status
'resigned'
"""

from __future__ import annotations

from typing import Any, NamedTuple


class PileView(NamedTuple):
    """A pile as the racer sees it: its card count and top card (None: empty)."""

    n: int
    top: str | None
    # Every card, bottom to top: open deals only (None elsewhere, and not on the wire).
    cards: tuple[str, ...] | None = None

    def to_wire(self) -> dict[str, Any]:
        if self.cards is None:
            return {"n": self.n, "top": self.top}
        return {"n": self.n, "top": self.top, "cards": list(self.cards)}


class FoundationView(NamedTuple):
    """A foundation (``name``: ``as`` … ``dc``): its card count and top card."""

    name: str
    n: int
    top: str

    def to_wire(self) -> dict[str, Any]:
        return {"n": self.n, "top": self.top}


class View(NamedTuple):
    """A racer's VIEW: the 16 piles, the 8 foundations (in ``FOUNDATION_NAMES`` order),
    the counters and the status (the game's, or ``resigned``)."""

    piles: tuple[PileView, ...]
    foundations: tuple[FoundationView, ...]
    redeals_left: int
    moves: int
    undo_left: int
    status: str

    def foundation(self, name: str) -> FoundationView:
        """The foundation called ``name`` (``KeyError`` if there is none)."""
        for f in self.foundations:
            if f.name == name:
                return f
        raise KeyError(name)

    def resigned(self) -> View:
        """The same view with status ``resigned`` (the racer gave up)."""
        return View(
            self.piles, self.foundations, self.redeals_left, self.moves, self.undo_left, "resigned"
        )

    def to_wire(self) -> dict[str, Any]:
        """The VIEW's map as protocol.md shows it (what ``msgpack`` packs)."""
        return {
            "piles": [p.to_wire() for p in self.piles],
            "foundations": {f.name: f.to_wire() for f in self.foundations},
            "redeals_left": self.redeals_left,
            "moves": self.moves,
            "undo_left": self.undo_left,
            "status": self.status,
        }


__all__ = ["FoundationView", "PileView", "View"]
