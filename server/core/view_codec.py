"""The racer's VIEW as msgpack, fast: an ack carries a new view after every action.

The same bytes as ``msgpack.packb(view.to_wire())``, but only one or two of the 16 piles
and 8 foundations change per action: each pile's entry is cached by (count, top card) and
each foundation's by its top rank, so building and packing the ~400 B map per ack
costs a few dictionary lookups. In an open deal (every card shown) a pile's entry
holds its cards: the changed piles' entries are packed again (not cached). Reads the
engine only through its public accessors (``pile_size_and_top``, ``pile_cards``,
``foundation_rank``); tests/server compare the bytes with ``packb(view().to_wire())``
over whole games, so any drift shows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack

from server.game import Game
from server.game.cards import CARD_TEXT, FOUNDATION_NAMES, PILE_COUNT
from server.lobby import RacerGame

_PACK: Callable[[Any], bytes] = msgpack.Packer(use_bin_type=True).pack  # reused


def _packb(obj: Any) -> bytes:
    return _PACK(obj)


_VIEW_HEAD = b"\x86" + _packb("piles")  # a map of 6: piles, foundations, redeals_left, …
_K_FOUNDATIONS = _packb("foundations")
_K_REDEALS_LEFT = _packb("redeals_left")
_K_MOVES = _packb("moves")
_K_UNDO_LEFT = _packb("undo_left")
_K_STATUS = _packb("status")
_PILE_PARTS: dict[int, bytes] = {}  # (len, top card) -> msgpack {"n": len, "top": text}
_FOUNDATION_PARTS: dict[int, bytes] = {}  # (foundation, top rank) -> name + its entry
_FIXINT = tuple(bytes((i,)) for i in range(128))  # msgpack's positive fixint: one byte
_STATUS = {s: _packb(s) for s in ("playing", "won", "locked", "resigned")}
FOUNDATION_COUNT = len(FOUNDATION_NAMES)

# Where the pieces are in _view_parts' list (16 piles, 8 foundations).
_FIRST_PILE = 2
_FIRST_FOUNDATION = _FIRST_PILE + PILE_COUNT + 2
_REDEALS_LEFT = _FIRST_FOUNDATION + FOUNDATION_COUNT + 1
_MOVES = _REDEALS_LEFT + 2
_UNDO_LEFT = _MOVES + 2
_STATUS_AT = _UNDO_LEFT + 2


def encode_view(game: Game, *, resigned: bool = False) -> bytes:
    """The racer's VIEW (``Game.view()``, status ``resigned`` if so) as msgpack."""
    parts = _view_parts(game)
    if resigned:
        parts[_STATUS_AT] = _STATUS["resigned"]
    return b"".join(parts)


class ViewEncoder:
    """One racer's VIEW encoding, kept up to date place by place.

    ``encode(racer)`` follows the places the racer's actions changed since the last call
    (``RacerGame.take_changed_places``); a different racer object (the game was rebuilt)
    starts afresh.
    """

    __slots__ = ("_parts", "_racer")

    def __init__(self) -> None:
        self._racer: RacerGame | None = None
        self._parts: list[bytes] | None = None

    def encode(self, racer: RacerGame) -> bytes:
        """``msgpack.packb(racer.view().to_wire())``, the same bytes."""
        game = racer.game
        changed = racer.take_changed_places()
        parts = self._parts
        if parts is None or racer is not self._racer or changed is None:
            self._racer = racer
            parts = self._parts = _view_parts(game)
        else:
            open_deal = game.variant.open
            for index in changed:
                if index < PILE_COUNT:
                    # Direct calls, not a chosen function in a variable: compiled, that
                    # would be a Python-level call per pile.
                    parts[_FIRST_PILE + index] = (
                        _open_pile_part(game, index) if open_deal else _pile_part(game, index)
                    )
                else:
                    index -= PILE_COUNT
                    parts[_FIRST_FOUNDATION + index] = _foundation_part(game, index)
        parts[_REDEALS_LEFT] = _uint(game.redeals_left)
        parts[_MOVES] = _uint(game.moves)
        parts[_UNDO_LEFT] = _uint(game.undo_left)
        parts[_STATUS_AT] = _STATUS["resigned" if racer.resigned else game.status]
        return b"".join(parts)


def _view_parts(game: Game) -> list[bytes]:
    """The VIEW's msgpack as a list of pieces: the map's keys and headers, one piece per
    pile entry and per foundation (name and entry), one per counter and the status."""
    if game.variant.open:
        piles = [_open_pile_part(game, p) for p in range(PILE_COUNT)]
    else:
        piles = [_pile_part(game, p) for p in range(PILE_COUNT)]
    return [
        _VIEW_HEAD,
        _array_header(PILE_COUNT),
        *piles,
        _K_FOUNDATIONS,
        _map_header(FOUNDATION_COUNT),
        *[_foundation_part(game, f) for f in range(FOUNDATION_COUNT)],
        _K_REDEALS_LEFT,
        _uint(game.redeals_left),
        _K_MOVES,
        _uint(game.moves),
        _K_UNDO_LEFT,
        _uint(game.undo_left),
        _K_STATUS,
        _STATUS[game.status],
    ]


def _foundation_part(game: Game, f: int) -> bytes:
    """Foundation ``f``'s name and VIEW entry as msgpack (cached by its top)."""
    key = f << 8 | game.foundation_rank(f)
    part = _FOUNDATION_PARTS.get(key)
    if part is None:
        name = FOUNDATION_NAMES[f]
        entry = game.view().foundations[f].to_wire()
        part = _FOUNDATION_PARTS[key] = _packb(name) + _packb(entry)
    return part


def _pile_part(game: Game, index: int) -> bytes:
    """A pile's VIEW entry ``{"n": count, "top": card}`` as msgpack (cached)."""
    size, top = game.pile_size_and_top(index)
    key = size << 7 | top if size else 127
    part = _PILE_PARTS.get(key)
    if part is None:
        part = _PILE_PARTS[key] = _packb({"n": size, "top": CARD_TEXT[top] if size else None})
    return part


def _open_pile_part(game: Game, index: int) -> bytes:
    """An open deal's pile entry ``{"n": count, "top": card, "cards": [...]}`` as msgpack
    (packed anew: its key would be the whole pile)."""
    cards = game.pile_cards(index)
    return _packb(
        {
            "n": len(cards),
            "top": CARD_TEXT[cards[-1]] if cards else None,
            "cards": [CARD_TEXT[c] for c in cards],
        }
    )


def _uint(value: int) -> bytes:
    return _FIXINT[value] if 0 <= value < 128 else _packb(value)


def _map_header(length: int) -> bytes:
    return bytes([0x80 | length]) if length < 16 else b"\xde" + length.to_bytes(2, "big")


def _array_header(length: int) -> bytes:
    return bytes([0x90 | length]) if length < 16 else b"\xdc" + length.to_bytes(2, "big")
