"""The archive: every finished game kept and replayable (docs/archive.md).

The :class:`Archive` port and its values. Pure: no I/O here, every time is server ms
passed in. Adapters: :mod:`server.storage.postgres_archive` (PostgreSQL: production
and the end-to-end tests) and :mod:`server.storage.memory_archive` (one process, no
I/O: the fast tests). One contract test module (tests/archive/test_contract.py)
runs against both.

The rules every adapter keeps:

- **Written at least once, stored once.** The outbox that feeds :meth:`Archive.write`
  delivers at least once, so a write is idempotent: a game, tournament or daily day
  whose id is already stored is skipped (not compared, not replaced). The caller
  derives stable ids (``<room code>-<round>``, a UUID made at the game's end, ...).
- **Nothing archived is readable before its deal is revealed.** Each record carries
  ``revealed_at``; every read takes ``now`` and sees only records with
  ``revealed_at <= now`` (a sealed daily day stays sealed).
- **Bounded reads.** Pages hold 1 … :data:`MAX_PAGE` rows (else
  :class:`ArchiveQueryError` ``bad_page_size``); history and board pages are keyset
  paginated, so a page costs the same however deep it is and games arriving between
  two pages neither repeat nor hide a row.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from operator import itemgetter
from typing import NamedTuple

from server.game import CrescentError, DealCode

DAY_MS = 86_400_000
MAX_PAGE = 100  # rows of a history or board page, at most
HISTORY_PAGE = 20  # the default
BOARD_PAGE = 50
EXPIRE_BATCH = 1_000  # games deleted by one retention call, at most (short transactions)
MAX_ID_LENGTH = 64
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
# A logged action's text: move notation, redeal, undo or resign (no spaces: the
# PostgreSQL adapter stores a log as one space-separated text)
_ACTION = re.compile(r"[A-Za-z0-9-]{1,16}")
_LOG = re.compile(r"[A-Za-z0-9-]{1,16}(?: [A-Za-z0-9-]{1,16})*")  # actions, one space apart


class GameKind(StrEnum):
    ROOM = "room"
    DAILY = "daily"
    TOURNAMENT = "tournament"
    PRACTICE = "practice"


# How long each kind of game is kept (ms after it ended); a kind not listed is kept for
# good. Daily and tournament games make the boards and standings people come back to;
# a room's race matters to its players for a while; practice is a scratch pad.
RETENTION_MS: Mapping[GameKind, int] = {
    GameKind.ROOM: 365 * DAY_MS,
    GameKind.PRACTICE: 30 * DAY_MS,
}


def _valid_log(actions: Sequence[tuple[int, str]]) -> bool:
    """Every offset >= 0 and every text an action's: one ``min`` and one match of the
    joined log, in C (a log is hundreds of actions, checked at each end of a race)."""
    text = " ".join(map(itemgetter(1), actions))
    return (
        min(map(itemgetter(0), actions)) >= 0
        and text.count(" ") == len(actions) - 1
        and _LOG.fullmatch(text) is not None
    )


class ArchiveError(ValueError):
    """Bad input to the archive; ``code`` is the documented error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ArchiveQueryError(ArchiveError):
    """A read asked for something out of bounds (``bad_page_size``)."""


class ArchiveValueError(ArchiveError):
    """A record that cannot be archived (``bad_game_id``, ``bad_deal_code``,
    ``bad_variant``, ``bad_game``)."""


def check_id(value: str, what: str = "game") -> str:
    """``value`` if it is a well-formed id (1 … 64 of ``A-Z a-z 0-9 _ . : -``, starting
    with a letter or digit), else ``ArchiveValueError("bad_<what>_id")``.

    >>> check_id("ABCD-3")
    'ABCD-3'
    >>> check_id("../etc")
    Traceback (most recent call last):
    ...
    server.core.archive.ArchiveValueError: bad game id: '../etc'
    """
    if len(value) > MAX_ID_LENGTH or not _ID.fullmatch(value):
        raise ArchiveValueError(f"bad_{what}_id", f"bad {what} id: {value!r}")
    return value


def check_page_size(limit: int) -> int:
    if not 1 <= limit <= MAX_PAGE:
        raise ArchiveQueryError("bad_page_size", f"page size {limit} is not in 1 … {MAX_PAGE}")
    return limit


class Action(NamedTuple):
    """One action of a racer's log: ``a`` (move notation, ``redeal``, ``undo`` or
    ``resign``) stored ``t`` ms of server time after the game's ``start_at``."""

    t: int
    a: str


@dataclass(frozen=True, slots=True)
class RacerResult:
    """A racer's row of the results table (server.lobby.race.rank): ``status`` is
    ``won``, ``locked``, ``resigned`` or ``timeout``; ``time_ms`` the finishing time
    (for a winner, the offset of the winning action), ``foundation`` counts the 8 bases."""

    rank: int
    status: str
    time_ms: int
    moves: int
    foundation: int


@dataclass(frozen=True, slots=True)
class ArchivedRacer:
    player: str
    name: str
    actions: tuple[Action, ...]
    result: RacerResult


@dataclass(frozen=True, slots=True)
class ArchivedGame:
    """A finished game: every racer's log and result.

    ``origin`` says where it was played: the room code, the daily day
    (``YYYY-MM-DD``), the tournament id, or ``""`` for practice. ``start_at`` and
    ``ended_at`` are server ms; ``revealed_at`` is when its deal is revealed: before
    then no read returns the game (for a room, its end; for a daily attempt, the day's
    reveal)."""

    id: str
    kind: GameKind
    deal: str
    variant: str
    origin: str
    start_at: int
    ended_at: int
    revealed_at: int
    racers: tuple[ArchivedRacer, ...]

    def __post_init__(self) -> None:
        check_id(self.id)
        if not isinstance(self.kind, GameKind):
            raise ArchiveValueError("bad_game", f"unknown kind {self.kind!r}")
        try:
            code = DealCode.parse(self.deal)
        except CrescentError as exc:  # InvalidDealCode
            raise ArchiveValueError("bad_deal_code", str(exc)) from exc
        if str(code) != self.deal:
            raise ArchiveValueError("bad_deal_code", f"not canonical: {self.deal!r}")
        if self.variant != str(code.variant):
            raise ArchiveValueError(
                "bad_variant", f"variant {self.variant!r} is not the deal's {code.variant}"
            )
        if not self.racers:
            raise ArchiveValueError("bad_game", "a game has at least one racer")
        if len({r.player for r in self.racers}) != len(self.racers):
            raise ArchiveValueError("bad_game", "a player races at most once in a game")
        for racer in self.racers:
            if racer.actions and not _valid_log(racer.actions):
                t, a = next((t, a) for t, a in racer.actions if t < 0 or not _ACTION.fullmatch(a))
                raise ArchiveValueError("bad_game", f"bad action {a!r} at {t} ms")


@dataclass(frozen=True, slots=True)
class TournamentPlacing:
    rank: int
    player: str
    name: str
    points: int


@dataclass(frozen=True, slots=True)
class ArchivedTournament:
    """A finished tournament: its final standings and its rounds' game ids."""

    id: str
    name: str
    variant: str
    started_at: int
    ended_at: int
    revealed_at: int
    standings: tuple[TournamentPlacing, ...]
    games: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_id(self.id, "tournament")


@dataclass(frozen=True, slots=True)
class PlayerTournament:
    """A player's place in a finished tournament (a public profile's list)."""

    id: str  # the tournament's code
    name: str
    variant: str
    ended_at: int
    rank: int
    points: int
    players: int  # how many were ranked


def player_tournaments_of(
    tournaments: Sequence[ArchivedTournament], player: str, *, now: int, limit: int
) -> tuple[PlayerTournament, ...]:
    """``player``'s revealed tournaments, newest first (``ended_at`` then id, both
    descending), at most ``limit``: the memory adapter's read, and the order the
    PostgreSQL adapter keeps."""
    found = [
        PlayerTournament(t.id, t.name, t.variant, t.ended_at, p.rank, p.points, len(t.standings))
        for t in tournaments
        if t.revealed_at <= now
        for p in t.standings
        if p.player == player
    ]
    found.sort(key=lambda row: (row.ended_at, row.id), reverse=True)
    return tuple(found[:limit])


@dataclass(frozen=True, slots=True)
class DailyPlacing:
    rank: int
    player: str
    name: str
    status: str
    time_ms: int
    moves: int


@dataclass(frozen=True, slots=True)
class ArchivedDailyDay:
    """A finished daily day (``YYYY-MM-DD``): its deal and final board."""

    day: str
    deal: str
    revealed_at: int
    attempts: int
    board: tuple[DailyPlacing, ...]

    def __post_init__(self) -> None:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", self.day):
            raise ArchiveValueError("bad_day", f"bad day: {self.day!r}")


@dataclass(frozen=True, slots=True)
class ArchiveBatch:
    """What one :meth:`Archive.write` stores (in one transaction where the adapter can)."""

    games: tuple[ArchivedGame, ...] = ()
    tournaments: tuple[ArchivedTournament, ...] = ()
    daily_days: tuple[ArchivedDailyDay, ...] = ()


@dataclass(frozen=True, slots=True)
class WriteReport:
    """How many records of a batch were new (the rest were stored already: skipped)."""

    games: int = 0
    tournaments: int = 0
    daily_days: int = 0


class HistoryCursor(NamedTuple):
    """Where a history page ended: the next page starts strictly after it."""

    ended_at: int
    game_id: str


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    game_id: str
    kind: GameKind
    deal: str
    variant: str
    origin: str
    start_at: int
    ended_at: int
    racers: int  # how many raced
    result: RacerResult  # the player's own

    @property
    def cursor(self) -> HistoryCursor:
        return HistoryCursor(self.ended_at, self.game_id)


@dataclass(frozen=True, slots=True)
class HistoryPage:
    entries: tuple[HistoryEntry, ...]
    next: HistoryCursor | None  # None: no more


class BoardCursor(NamedTuple):
    """A board row's place in the order (see :func:`board_key`); unique per row."""

    finished: int  # 0 won, 1 not
    score: int  # time_ms when won, else -foundation
    moves: int
    game_id: str
    seat: int


def board_key(result: RacerResult, game_id: str, seat: int) -> BoardCursor:
    """A deal's board order: winners by time then moves, then the others by more cards
    on the foundations then fewer moves; ties by game id and seat (stable pages).

    >>> won = RacerResult(1, "won", 90_000, 120, 104)
    >>> locked = RacerResult(2, "locked", 95_000, 80, 60)
    >>> board_key(won, "a", 0) < board_key(locked, "a", 1)
    True
    """
    if result.status == "won":
        return BoardCursor(0, result.time_ms, result.moves, game_id, seat)
    return BoardCursor(1, -result.foundation, result.moves, game_id, seat)


@dataclass(frozen=True, slots=True)
class BoardEntry:
    game_id: str
    kind: GameKind
    origin: str
    seat: int  # the racer's index in the game's racers
    player: str
    name: str
    ended_at: int
    result: RacerResult

    @property
    def cursor(self) -> BoardCursor:
        return board_key(self.result, self.game_id, self.seat)


@dataclass(frozen=True, slots=True)
class BoardPage:
    entries: tuple[BoardEntry, ...]
    next: BoardCursor | None


@dataclass(frozen=True, slots=True)
class ArchiveCounts:
    """For /metrics: records stored (revealed or not)."""

    games: Mapping[GameKind, int] = field(default_factory=dict)
    racers: int = 0
    tournaments: int = 0
    daily_days: int = 0


class Archive(ABC):
    """Finished games, tournaments and daily days, kept for good or until retention.

    The port: an adapter implements the abstract methods. The paged reads are this
    class's own, so every adapter pages alike: :meth:`history` and :meth:`board` check
    the page size (``bad_page_size``), ask the adapter for one row more than the page
    (``_history_rows``, ``_board_rows``: rows in page order after the cursor) and cut
    the page there, the extra row saying whether a next page exists."""

    @abstractmethod
    async def write(self, batch: ArchiveBatch) -> WriteReport:
        """Store every record of ``batch`` whose id is new; skip the others (idempotent:
        the outbox may deliver a batch twice). Atomic where the adapter can be."""

    @abstractmethod
    async def game(self, game_id: str, *, now: int) -> ArchivedGame | None:
        """The game, or None if unknown or not revealed at ``now``."""

    async def ping(self) -> bool:
        """Whether the archive answers now (/healthz of a process that does not drain
        the outbox itself); an adapter with nothing to ask answers True."""
        return True

    async def history(
        self,
        player: str,
        *,
        now: int,
        limit: int = HISTORY_PAGE,
        after: HistoryCursor | None = None,
    ) -> HistoryPage:
        """The player's revealed games, newest first (``ended_at`` then id, both
        descending), starting after ``after``."""
        rows = await self._history_rows(player, now, check_page_size(limit) + 1, after)
        entries = tuple(rows[:limit])
        return HistoryPage(entries, entries[-1].cursor if len(rows) > limit else None)

    async def board(
        self,
        deal: str,
        *,
        now: int,
        limit: int = BOARD_PAGE,
        after: BoardCursor | None = None,
    ) -> BoardPage:
        """Every racer's result on ``deal`` over every revealed game (rooms, daily,
        tournaments, practice), best first (:func:`board_key`), starting after ``after``."""
        rows = await self._board_rows(deal, now, check_page_size(limit) + 1, after)
        entries = tuple(rows[:limit])
        return BoardPage(entries, entries[-1].cursor if len(rows) > limit else None)

    @abstractmethod
    async def _history_rows(
        self, player: str, now: int, count: int, after: HistoryCursor | None
    ) -> Sequence[HistoryEntry]:
        """At most ``count`` of :meth:`history`'s rows, in its order, after ``after``."""

    @abstractmethod
    async def _board_rows(
        self, deal: str, now: int, count: int, after: BoardCursor | None
    ) -> Sequence[BoardEntry]:
        """At most ``count`` of :meth:`board`'s rows, in its order, after ``after``."""

    @abstractmethod
    async def tournament(self, tournament_id: str, *, now: int) -> ArchivedTournament | None:
        """The finished tournament, or None if unknown or not revealed at ``now``."""

    @abstractmethod
    async def daily_day(self, day: str, *, now: int) -> ArchivedDailyDay | None:
        """The finished daily day, or None if unknown or not revealed at ``now``."""

    async def player_tournaments(
        self, player: str, *, now: int, limit: int = HISTORY_PAGE
    ) -> tuple[PlayerTournament, ...]:
        """The finished tournaments ``player`` is ranked in, revealed at ``now``, newest
        first (``ended_at`` then id, both descending), at most ``limit``."""
        return await self._player_tournaments(player, now, check_page_size(limit))

    @abstractmethod
    async def _player_tournaments(
        self, player: str, now: int, limit: int
    ) -> tuple[PlayerTournament, ...]:
        """:meth:`player_tournaments` with a checked ``limit``."""

    @abstractmethod
    async def rename_player(self, player: str, name: str) -> int:
        """Write ``name`` for ``player`` wherever the archive keeps their name (their
        racer rows, tournament standings and daily boards): a deleted account's results
        then read "deleted player". How many records changed."""

    @abstractmethod
    async def expire(
        self, max_age_ms: Mapping[GameKind, int], *, now: int, limit: int = EXPIRE_BATCH
    ) -> int:
        """Delete at most ``limit`` games of the listed kinds that ended more than their
        kind's max age before ``now``; how many were deleted (call again while it
        returns ``limit``). Kinds not listed are kept."""

    @abstractmethod
    async def counts(self) -> ArchiveCounts: ...

    @abstractmethod
    async def close(self) -> None: ...


def ended_before(max_age_ms: Mapping[GameKind, int], now: int) -> dict[GameKind, int]:
    """Per kind, the ``ended_at`` below which a game is past its retention.

    >>> ended_before({GameKind.PRACTICE: 10}, now=100)
    {<GameKind.PRACTICE: 'practice'>: 90}
    """
    for kind, age in max_age_ms.items():
        if age < 0:
            raise ArchiveQueryError("bad_retention", f"negative max age for {kind}: {age}")
    return {GameKind(kind): now - age for kind, age in max_age_ms.items()}


def history_entry(game: ArchivedGame, racer: ArchivedRacer) -> HistoryEntry:
    return HistoryEntry(
        game_id=game.id,
        kind=game.kind,
        deal=game.deal,
        variant=game.variant,
        origin=game.origin,
        start_at=game.start_at,
        ended_at=game.ended_at,
        racers=len(game.racers),
        result=racer.result,
    )


def board_entries(game: ArchivedGame) -> Sequence[BoardEntry]:
    return [
        BoardEntry(
            game_id=game.id,
            kind=game.kind,
            origin=game.origin,
            seat=seat,
            player=racer.player,
            name=racer.name,
            ended_at=game.ended_at,
            result=racer.result,
        )
        for seat, racer in enumerate(game.racers)
    ]
