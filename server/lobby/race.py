"""The race: one racer's game (engine + resignation), its progress, the end and the ranking.

Pure: the engine (server.game) does the rules; this module adds what a race needs on
top: ``resign``, the PROGRESS record of protocol.md, when the race is over, and the
results table. Time comes in as ``now`` (server ms).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from server.game import CrescentError, Game, View, replay
from server.lobby.values import record_of, value_of

TERMINAL = frozenset({"won", "locked", "resigned"})
# A racer still playing when the race ended (its deadline, or the host's end_race).
TIMEOUT = "timeout"
RESIGN = "resign"
# How many of a racer's latest seqs keep their action, to tell a resent action (a
# duplicate) from a different one reusing a stored seq (``seq_conflict``).
SEQ_WINDOW = 64


@dataclass(frozen=True, slots=True)
class Refusal:
    """An action refused by the rules: the engine's code and texts."""

    code: str
    message: str
    message_sv: str


_GAME_OVER_RESIGNED = Refusal(
    "game_over", "You have resigned this game", "Du har gett upp det här spelet"
)


class RacerGame:
    """One racer's game in one round: the engine's Game, the action log, resignation.

    ``log`` is exactly what is stored in Redis (actions as strings, ``resign`` last if
    any), so ``from_log`` rebuilds the same state in any process.
    """

    __slots__ = (
        "_changed",
        "finished_ms",
        "game",
        "initial_redeals",
        "last_seq",
        "log_len",
        "resigned",
        "seq_actions",
    )

    def __init__(
        self,
        game: Game,
        *,
        initial_redeals: int,
        log_len: int = 0,
        last_seq: int = 0,
        resigned: bool = False,
        finished_ms: int | None = None,
        seq_actions: dict[int, str] | None = None,
    ) -> None:
        self.game = game
        # seq -> action of the latest stored client actions (at most SEQ_WINDOW)
        self.seq_actions: dict[int, str] = dict(seq_actions or {})
        self.initial_redeals = initial_redeals
        self.log_len = log_len
        self.last_seq = last_seq
        self.resigned = resigned
        self.finished_ms = finished_ms
        # The places (engine indexes) changed since take_changed_places last ran; None:
        # anything may have changed (a redeal or an undo, or nobody asked yet).
        self._changed: list[int] | None = None

    @classmethod
    def new(cls, deal: str) -> RacerGame:
        game = Game.from_code(deal)
        return cls(game, initial_redeals=game.redeals_left)

    @classmethod
    def from_log(
        cls,
        deal: str,
        actions: list[str],
        *,
        last_seq: int,
        finished_ms: int | None,
        seq_actions: dict[int, str] | None = None,
    ) -> RacerGame:
        """Rebuild from the stored log (the engine replays every move, redeal and undo)."""
        initial_redeals = Game.from_code(deal).redeals_left
        resigned = bool(actions) and actions[-1] == RESIGN
        moves = actions[:-1] if resigned else actions
        game = replay(deal, moves)
        return cls(
            game,
            initial_redeals=initial_redeals,
            log_len=len(actions),
            last_seq=last_seq,
            resigned=resigned,
            finished_ms=finished_ms,
            seq_actions=seq_actions,
        )

    def stored_seq(self, seq: int, action: str) -> None:
        """``action`` was stored under the client's ``seq`` (above every earlier one)."""
        self.seq_actions[seq] = action
        if len(self.seq_actions) > SEQ_WINDOW:
            del self.seq_actions[next(iter(self.seq_actions))]

    def reuses_seq(self, seq: int, action: str) -> bool:
        """True if ``seq`` was stored with another action (as far as the window knows).

        >>> racer = RacerGame.new("CR1-N-AAAAAAB")
        >>> racer.stored_seq(1, "redeal")
        >>> racer.reuses_seq(1, "redeal"), racer.reuses_seq(1, "undo"), racer.reuses_seq(0, "x")
        (False, True, False)
        """
        stored = self.seq_actions.get(seq)
        return stored is not None and stored != action

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
                changed = self._changed
                if changed is not None:
                    move = game.peek()
                    changed += (move.src, move.dst)
                    if len(changed) > 32:  # nobody is taking them: stop collecting
                        self._changed = None
            else:  # redeal or undo
                self._changed = None
        self.log_len += 1
        self.finished_ms = elapsed_ms if self.status in TERMINAL else None
        return None

    def view(self) -> View:
        """The racer's VIEW: the game's, with status ``resigned`` if they resigned."""
        view = self.game.view()
        return view.resigned() if self.resigned else view

    def take_changed_places(self) -> list[int] | None:
        """The places (pile 0..15, foundation 16..23) actions changed since the last
        call, for encoders that keep a view up to date; None: anything may have changed
        (a redeal or an undo since, or the first call).

        >>> racer = RacerGame.new("CR1-N-AAAAAAB")
        >>> racer.take_changed_places() is None
        True
        >>> move = next(racer.game.legal_moves())
        >>> racer.apply(str(move), elapsed_ms=0) is None
        True
        >>> racer.take_changed_places() == [move.src, move.dst]
        True
        """
        changed, self._changed = self._changed, []
        return changed

    def progress(self, player_id: str, now: int) -> RacerProgress:
        """The stored progress: protocol.md's PROGRESS plus ``at`` (for tie-breaks)."""
        return RacerProgress(
            player_id,
            self.game.moves,
            self.game.foundation_count,
            self.initial_redeals - self.game.redeals_left,
            self.status,
            self.finished_ms,
            now,
        )


class RacerProgress(NamedTuple):
    """A racer's progress as stored: protocol.md's PROGRESS plus ``at``, the server time
    of their last stored action (for tie-breaks). Its record (:meth:`to_record`) is the
    dict stored in Redis since before it was typed: the same keys in the same order.

    A named tuple, not a frozen dataclass: one is built per action, on the hot path, and
    a frozen dataclass's ``__init__`` (``object.__setattr__`` per field) cost 2 µs there
    in the compiled build, a named tuple's a fraction of that."""

    player: str
    moves: int
    foundation: int
    redeals_used: int
    status: str
    finished_ms: int | None
    at: int

    def to_record(self) -> dict[str, Any]:
        # Spelled out, not record_of(self): one is made per action and the literal costs
        # a third (tests/server/test_records.py checks the two agree).
        player, moves, foundation, redeals_used, status, finished_ms, at = self
        return {
            "player": player,
            "moves": moves,
            "foundation": foundation,
            "redeals_used": redeals_used,
            "status": status,
            "finished_ms": finished_ms,
            "at": at,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RacerProgress:
        return value_of(cls, record)


@dataclass(frozen=True, slots=True)
class ResultRow:
    """A racer's row of the results table (protocol.md RESULTS, :func:`rank`). Its record
    is the dict stored in the room record and sent in ``finished``, keys in this order."""

    rank: int
    player: str
    name: str
    status: str
    time_ms: int
    moves: int
    foundation: int

    def to_record(self) -> dict[str, Any]:
        return record_of(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ResultRow:
        return value_of(cls, record)


def initial_progress(player_id: str) -> RacerProgress:
    """Progress of a racer who has not acted yet (8 bases on the foundations)."""
    return RacerProgress(player_id, 0, 8, 0, "playing", None, 0)


def wire_progress(stored: RacerProgress, connected: bool, *, over: bool = False) -> dict[str, Any]:
    """PROGRESS as sent: without the internal ``at``; a playing racer offline is
    ``disconnected``; once the race is ``over`` (its deadline passed, or the host ended
    it) a racer still playing has run out of time: ``timeout``.

    >>> [wire_progress(initial_progress("a"), c, over=o)["status"]
    ...  for c, o in ((True, False), (False, False), (False, True))]
    ['playing', 'disconnected', 'timeout']
    """
    status = stored.status
    if status == "playing":
        if over:
            status = TIMEOUT
        elif not connected:
            status = "disconnected"
    return {
        "player": stored.player,
        "moves": stored.moves,
        "foundation": stored.foundation,
        "redeals_used": stored.redeals_used,
        "status": status,
        "finished_ms": stored.finished_ms,
    }


def race_over(progress: Iterable[RacerProgress]) -> bool:
    """True when every racer has won, is locked or has resigned."""
    return all(p.status in TERMINAL for p in progress)


def rank(
    entrants: Iterable[tuple[str, str]],
    progress: Mapping[str, RacerProgress],
    *,
    start_at: int,
    now: int,
) -> list[ResultRow]:
    """The results table.

    Winners by time (server clock), then fewer moves; then the others by more cards on
    the foundations, then fewer moves; a remaining tie goes to whoever reached that
    state first (``at``, the server time of their last stored action). The race has
    ended, so a racer still playing ran out of time: status ``timeout``.

    >>> p = {"a": RacerProgress("a", 100, 104, 0, "won", 900, 5),
    ...      "b": RacerProgress("b", 10, 30, 0, "locked", 50, 2),
    ...      "c": RacerProgress("c", 120, 104, 0, "won", 800, 4)}
    >>> [(r.rank, r.player) for r in rank([("a", "A"), ("b", "B"), ("c", "C")], p,
    ...                                         start_at=0, now=1000)]
    [(1, 'c'), (2, 'a'), (3, 'b')]
    >>> [r.status for r in rank([("a", "A"), ("d", "D")], p, start_at=0, now=1000)]
    ['won', 'timeout']
    """
    rows = []
    for player_id, name in entrants:
        p = progress.get(player_id) or initial_progress(player_id)
        won = p.status == "won"
        time_ms = p.finished_ms if p.finished_ms is not None else max(0, now - start_at)
        key = (0, time_ms, p.moves, p.at) if won else (1, -p.foundation, p.moves, p.at)
        status = TIMEOUT if p.status == "playing" else p.status
        rows.append((key, (player_id, name, status, time_ms, p.moves, p.foundation)))
    rows.sort(key=lambda row: row[0])
    return [ResultRow(i + 1, *row) for i, (_, row) in enumerate(rows)]
