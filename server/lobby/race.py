"""The race: one racer's game (engine + resignation), its progress, the end and the ranking.

Pure: the engine (server.game) does the rules; this module adds what a race needs on
top: ``resign``, the PROGRESS record of protocol.md, when the race is over, and the
results table. Time comes in as ``now`` (server ms).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgpack

from server.game import CrescentError, Game, replay
from server.game.cards import CARD_TEXT, PILE_COUNT

TERMINAL = frozenset({"won", "locked", "resigned"})
RESIGN = "resign"


@dataclass(frozen=True, slots=True)
class Refusal:
    """An action refused by the rules: the engine's code and texts."""

    code: str
    message: str
    message_sv: str


_GAME_OVER_RESIGNED = Refusal("game_over", "You have resigned this game",
                              "Du har gett upp det här spelet")


class RacerGame:
    """One racer's game in one round: the engine's Game, the action log, resignation.

    ``log`` is exactly what is stored in Redis (actions as strings, ``resign`` last if
    any), so ``from_log`` rebuilds the same state in any process.
    """

    __slots__ = ("_open", "_parts", "_touched", "finished_ms", "game", "initial_redeals",
                 "last_seq", "log_len", "resigned")

    def __init__(self, game: Game, *, initial_redeals: int, log_len: int = 0,
                 last_seq: int = 0, resigned: bool = False,
                 finished_ms: int | None = None) -> None:
        self.game = game
        self.initial_redeals = initial_redeals
        self.log_len = log_len
        self.last_seq = last_seq
        self.resigned = resigned
        self.finished_ms = finished_ms
        # The encoded VIEW's pieces (see _view_parts), kept up to date move by move: a
        # move changes two places (``_touched``) and the counters; None: rebuild all
        # (redeal, undo; open deals always).
        self._open = game.variant.open
        self._parts: list[bytes] | None = None
        self._touched: list[int] = []

    @classmethod
    def new(cls, deal: str) -> RacerGame:
        game = Game.from_code(deal)
        return cls(game, initial_redeals=game.redeals_left)

    @classmethod
    def from_log(cls, deal: str, actions: list[str], *, last_seq: int,
                 finished_ms: int | None) -> RacerGame:
        """Rebuild from the stored log (the engine replays every move, redeal and undo)."""
        initial_redeals = Game.from_code(deal).redeals_left
        resigned = bool(actions) and actions[-1] == RESIGN
        moves = actions[:-1] if resigned else actions
        game = replay(deal, moves)
        return cls(game, initial_redeals=initial_redeals, log_len=len(actions),
                   last_seq=last_seq, resigned=resigned, finished_ms=finished_ms)

    @property
    def status(self) -> str:
        return "resigned" if self.resigned else str(self.game.status)

    def apply(self, action: str, *, elapsed_ms: int) -> Refusal | None:
        """Apply ``action`` (notation, ``redeal``, ``undo`` or ``resign``) or say why not.

        On success the caller must store ``action`` before acknowledging it; if storing
        fails it must drop this object and rebuild it from the log (no partial state).
        """
        if self.resigned:
            return _GAME_OVER_RESIGNED
        if action == RESIGN:
            if self.game.status == "won":
                return Refusal("game_over", "The game is already won", "Spelet är redan vunnet")
            self.resigned = True
        else:
            game = self.game
            moves_before = game.moves
            try:
                game.apply(action)
            except CrescentError as err:
                return Refusal(err.code, err.message, err.message_sv)
            if game.moves > moves_before:  # a move: the last of the history
                move = game._history[-1]
                self._touched += (move.src, move.dst)
            else:  # redeal or undo
                self._parts = None
        self.log_len += 1
        self.finished_ms = elapsed_ms if self.status in TERMINAL else None
        return None

    def view(self) -> dict[str, Any]:
        view = self.game.view()
        if self.resigned:
            view = dict(view)
            view["status"] = "resigned"
        return view

    def view_msgpack(self) -> bytes:
        """``msgpack(view())``, the same bytes, built from cached pieces (see encode_view)."""
        game = self.game
        parts = self._parts
        if parts is None:
            if self._open:
                return encode_view(game, resigned=self.resigned)
            parts = self._parts = _view_parts(game)
        else:
            piles = game._piles
            for index in self._touched:
                if index < PILE_COUNT:
                    parts[_FIRST_PILE + index] = _pile_part(piles[index])
                else:
                    index -= PILE_COUNT
                    parts[_FIRST_FOUNDATION + index] = _foundation_part(game, index)
        self._touched.clear()
        parts[_REDEALS_LEFT] = _uint(game.redeals_left)
        parts[_MOVES] = _uint(game.moves)
        parts[_UNDO_LEFT] = _uint(game.undo_left)
        parts[_STATUS_AT] = _STATUS["resigned" if self.resigned else game.status]
        return b"".join(parts)

    def progress(self, player_id: str, now: int) -> dict[str, Any]:
        """The stored progress record: protocol.md's PROGRESS plus ``at`` (for tie-breaks)."""
        return {
            "player": player_id,
            "moves": self.game.moves,
            "foundation": self.game.foundation_count,
            "redeals_used": self.initial_redeals - self.game.redeals_left,
            "status": self.status,
            "finished_ms": self.finished_ms,
            "at": now,
        }


def initial_progress(player_id: str) -> dict[str, Any]:
    """Progress of a racer who has not acted yet (8 bases on the foundations)."""
    return {"player": player_id, "moves": 0, "foundation": 8, "redeals_used": 0,
            "status": "playing", "finished_ms": None, "at": 0}


def wire_progress(stored: Mapping[str, Any], connected: bool) -> dict[str, Any]:
    """PROGRESS as sent: without the internal ``at``; a playing racer offline is
    ``disconnected``."""
    status = stored["status"]
    if status == "playing" and not connected:
        status = "disconnected"
    return {"player": stored["player"], "moves": stored["moves"],
            "foundation": stored["foundation"], "redeals_used": stored["redeals_used"],
            "status": status, "finished_ms": stored["finished_ms"]}


def race_over(progress: Iterable[Mapping[str, Any]]) -> bool:
    """True when every racer has won, is locked or has resigned."""
    return all(p["status"] in TERMINAL for p in progress)


def rank(entrants: Iterable[tuple[str, str]], progress: Mapping[str, Mapping[str, Any]],
         *, start_at: int, now: int) -> list[dict[str, Any]]:
    """The results table.

    Winners by time (server clock), then fewer moves; then the others by more cards on
    the foundations, then fewer moves; a remaining tie goes to whoever reached that
    state first (``at``, the server time of their last stored action).

    >>> p = {"a": {"status": "won", "finished_ms": 900, "moves": 100, "foundation": 104,
    ...            "at": 5}, "b": {"status": "locked", "finished_ms": 50, "moves": 10,
    ...            "foundation": 30, "at": 2}, "c": {"status": "won", "finished_ms": 800,
    ...            "moves": 120, "foundation": 104, "at": 4}}
    >>> [(r["rank"], r["player"]) for r in rank([("a", "A"), ("b", "B"), ("c", "C")], p,
    ...                                         start_at=0, now=1000)]
    [(1, 'c'), (2, 'a'), (3, 'b')]
    """
    rows = []
    for player_id, name in entrants:
        p = progress.get(player_id) or initial_progress(player_id)
        won = p["status"] == "won"
        time_ms = p["finished_ms"] if p["finished_ms"] is not None else max(0, now - start_at)
        key = ((0, time_ms, p["moves"], p["at"]) if won
               else (1, -p["foundation"], p["moves"], p["at"]))
        rows.append((key, {"player": player_id, "name": name, "status": p["status"],
                           "time_ms": time_ms, "moves": p["moves"],
                           "foundation": p["foundation"]}))
    rows.sort(key=lambda row: row[0])
    return [{"rank": i + 1, **row} for i, (_, row) in enumerate(rows)]


# ---------------------------------------------------------------- the VIEW, encoded fast

_PACK = msgpack.Packer(use_bin_type=True).pack  # reused: see crescent_wire.protocol._PACK


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


def encode_view(game: Game, *, resigned: bool = False) -> bytes:
    """The racer's VIEW (``Game.view()``, status ``resigned`` if so) as msgpack.

    The same bytes as ``msgpack.packb(view)``, but an ack needs a new view after every
    action and only one or two of its 16 piles and 8 foundations changed: each pile's
    entry is cached by (count, top card) and each foundation's by its top, so building
    and packing the ~400 B map per ack costs a few dictionary lookups. Open deals (every
    card shown) take the plain route. Reads the engine's pile and foundation lists
    (``_piles``, ``_ftop``) without changing them; tests/server compare the bytes with
    ``packb(view())`` over whole games, so a change of the engine's internals shows.
    """
    if game.variant.open:
        view = game.view()
        if resigned:
            view["status"] = "resigned"
        return _packb(view)
    parts = _view_parts(game)
    if resigned:
        parts[_STATUS_AT] = _STATUS["resigned"]
    return b"".join(parts)


def _view_parts(game: Game) -> list[bytes]:
    """The VIEW's msgpack as a list of pieces: the map's keys and headers, one piece per
    pile entry and per foundation (name and entry), one per counter and the status."""
    piles = game._piles
    return [_VIEW_HEAD, _array_header(len(piles)),
            *[_pile_part(pile) for pile in piles],
            _K_FOUNDATIONS, _map_header(len(game._ftop)),
            *[_foundation_part(game, f) for f in range(len(game._ftop))],
            _K_REDEALS_LEFT, _uint(game.redeals_left), _K_MOVES, _uint(game.moves),
            _K_UNDO_LEFT, _uint(game.undo_left), _K_STATUS, _STATUS[game.status]]


# Where the pieces are in _view_parts' list (16 piles, 8 foundations).
_FIRST_PILE = 2
_FIRST_FOUNDATION = _FIRST_PILE + PILE_COUNT + 2
_REDEALS_LEFT = _FIRST_FOUNDATION + 8 + 1
_MOVES = _REDEALS_LEFT + 2
_UNDO_LEFT = _MOVES + 2
_STATUS_AT = _UNDO_LEFT + 2


def _foundation_part(game: Game, f: int) -> bytes:
    """Foundation ``f``'s name and VIEW entry as msgpack (cached by its top)."""
    key = f << 8 | game._ftop[f]
    part = _FOUNDATION_PARTS.get(key)
    if part is None:
        name, entry = list(game.view()["foundations"].items())[f]
        part = _FOUNDATION_PARTS[key] = _packb(name) + _packb(entry)
    return part


_FIXINT = tuple(bytes((i,)) for i in range(128))  # msgpack's positive fixint: one byte
_STATUS = {s: _packb(s) for s in ("playing", "won", "locked", "resigned")}


def _pile_part(pile: list[int]) -> bytes:
    """A pile's VIEW entry ``{"n": count, "top": card}`` as msgpack (cached)."""
    key = len(pile) << 7 | pile[-1] if pile else 127
    part = _PILE_PARTS.get(key)
    if part is None:
        part = _PILE_PARTS[key] = _packb(
            {"n": len(pile), "top": CARD_TEXT[pile[-1]] if pile else None})
    return part


def _uint(value: int) -> bytes:
    return _FIXINT[value] if 0 <= value < 128 else _packb(value)


def _map_header(length: int) -> bytes:
    return bytes([0x80 | length]) if length < 16 else b"\xde" + length.to_bytes(2, "big")


def _array_header(length: int) -> bytes:
    return bytes([0x90 | length]) if length < 16 else b"\xdc" + length.to_bytes(2, "big")
