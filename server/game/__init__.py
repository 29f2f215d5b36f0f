"""Crescent rules engine: pure Python, standard library only, no I/O.

Implements every rule of rules.md for the variants N, F, O and R. Full guide:
docs/engine.md. A short tour (these examples run as doctests):

>>> from server.game import Game, Move, IllegalMove, replay
>>> game = Game.from_code("CR1-N-AAAAAAB")
>>> game.status, game.moves, game.redeals_left, game.foundation_count
('playing', 0, 3, 8)
>>> game.view().piles[0]  # what the racer sees (server/game/view.py)
PileView(n=6, top='TS', cards=None)
>>> [str(m) for m in game.legal_moves()][:4]
['p2-p8', 'p7-dc', 'p8-p2', 'p9-p15']
>>> game.play("p2-p8")
>>> game.moves, game.undo_left
(1, 1)
>>> try:
...     game.play("p1-p2")
... except IllegalMove as refused:
...     print(refused.code, "/", refused.message, "/", refused.message_sv)
wrong_suit / Must be the same suit / Måste vara i samma färg
>>> game.undo()
>>> game.moves
0
>>> game.redeal()
>>> game.redeals_left, game.undo_left
(2, 0)
>>> again = replay("CR1-N-AAAAAAB", ["p2-p8", "undo", "redeal"])
>>> again.position() == game.position()
True
>>> Game.from_position(game.position()).position() == game.position()
True

Errors form one tree (``CrescentError`` with ``.code``, ``.message``,
``.message_sv``): ``InvalidMove`` (``bad_move``), ``InvalidCard`` (``bad_card``),
``InvalidDealCode`` (``bad_deal_code``), ``InvalidPosition`` (``bad_position``),
``IllegalMove`` (rules.md's reason codes plus ``empty_source``, ``same_place``,
``nothing_to_undo``, ``game_over``) and ``ReplayError`` (``.index``, ``.action``).
"""

from .board import Status
from .cards import (
    CARDS,
    FOUNDATION_NAMES,
    MOVES_ALL,
    PLACE_NAMES,
    SUITS,
    Card,
    Move,
    Variant,
    place_index,
)
from .deal import DealCode, Sha256Stream, SplitMix64, canonical_cards, deal_piles
from .engine import AMBIGUOUS, UNDO_LIMIT, DropResult, Game, replay
from .errors import (
    REASONS,
    CrescentError,
    IllegalMove,
    InvalidCard,
    InvalidDealCode,
    InvalidMove,
    InvalidPosition,
    ReplayError,
)
from .view import FoundationView, PileView, View

__all__ = [
    "AMBIGUOUS",
    "CARDS",
    "FOUNDATION_NAMES",
    "MOVES_ALL",
    "PLACE_NAMES",
    "REASONS",
    "SUITS",
    "UNDO_LIMIT",
    "Card",
    "CrescentError",
    "DealCode",
    "DropResult",
    "FoundationView",
    "Game",
    "IllegalMove",
    "InvalidCard",
    "InvalidDealCode",
    "InvalidMove",
    "InvalidPosition",
    "Move",
    "PileView",
    "ReplayError",
    "Sha256Stream",
    "SplitMix64",
    "Status",
    "Variant",
    "View",
    "canonical_cards",
    "deal_piles",
    "place_index",
    "replay",
]
