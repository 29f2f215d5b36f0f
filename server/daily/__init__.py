"""The daily challenge, pure: UTC days, commitments, leaderboard keys, streaks.

No I/O and no clock: every function takes ``now`` (server ms) or a day. The core
(:mod:`server.core.daily`) stores what these build through the ``DailyStorage`` port.

>>> day = Day.of(1_764_460_800_000)  # 2025-11-30 00:00 UTC
>>> str(day), day.starts_at, str(day.next())
('2025-11-30', 1764460800000, '2025-12-01')
>>> Day.parse("2025-11-30") == day
True
>>> c = Commitment.make("CR2-N-EXAMPLE", "00ff")
>>> c.digest == hashlib.sha256(b"CR2-N-EXAMPLE:00ff").hexdigest(), c.verify()
(True, True)
>>> won = Result("won", time_ms=183_000, moves=140, foundation=104)
>>> locked = Result("locked", time_ms=60_000, moves=20, foundation=90)
>>> won.sort_score() < locked.sort_score()
True
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Final

from server.lobby.race import ResultRow
from server.lobby.values import record_of, value_of

DAY_MS: Final = 86_400_000
# A day's commitment is published this long before the day starts, at least.
COMMIT_AHEAD_DAYS: Final = 2  # today, tomorrow and the day after exist at any time
STATUSES: Final = ("won", "locked", "resigned", "playing", "disconnected")
# Packed sort score (lower ranks first), below 2**53 so a Redis double holds it exactly:
# bit 35: 0 won, 1 not won; then 23 bits of time (won) or of 104 - foundation cards
# (not won); then 12 bits of moves. Equal scores are ordered by the member, which
# starts with the finish order (see ``board_member``).
MOVES_BITS: Final = 12
TIME_BITS: Final = 23
MAX_MOVES: Final = (1 << MOVES_BITS) - 1
MAX_TIME_MS: Final = (1 << TIME_BITS) - 1  # 2 h 19 min: above the longest attempt
FOUNDATION_CARDS: Final = 104
NOT_WON_BIT: Final = 1 << (TIME_BITS + MOVES_BITS)
ORDER_DIGITS: Final = 10
DAY_PATTERN: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class InvalidDay(ValueError):
    """A day that is not ``YYYY-MM-DD``."""


@dataclass(frozen=True, order=True, slots=True)
class Day:
    """One UTC day, the unit of the daily challenge; text form ``YYYY-MM-DD``."""

    date: dt.date

    @classmethod
    def of(cls, now_ms: int) -> Day:
        return cls(dt.datetime.fromtimestamp(now_ms / 1000, tz=dt.UTC).date())

    @classmethod
    def parse(cls, text: str) -> Day:
        """Only the canonical ``YYYY-MM-DD`` of a calendar day: Python's own
        ``fromisoformat`` also takes week dates (``2025-W48-7``) and ``YYYYMMDD``,
        which would name a day by another string than ``str(day)``."""
        try:
            if DAY_PATTERN.fullmatch(text) is None:
                raise ValueError(text)
            return cls(dt.date.fromisoformat(text))
        except ValueError:
            raise InvalidDay(f"Not a day (YYYY-MM-DD): {text[:20]!r}") from None

    def __str__(self) -> str:
        return self.date.isoformat()

    @property
    def starts_at(self) -> int:
        start = dt.datetime.combine(self.date, dt.time(), tzinfo=dt.UTC)
        return int(start.timestamp()) * 1000

    @property
    def ends_at(self) -> int:
        return self.starts_at + DAY_MS

    def next(self, days: int = 1) -> Day:
        return Day(self.date + dt.timedelta(days=days))

    def previous(self, days: int = 1) -> Day:
        return Day(self.date - dt.timedelta(days=days))


def days_to_prepare(now: int) -> list[Day]:
    """The days whose deal and commitment must exist at ``now``: today, tomorrow and
    the day after (so tomorrow's commitment was public a whole day before it starts)."""
    today = Day.of(now)
    return [today.next(i) for i in range(COMMIT_AHEAD_DAYS + 1)]


def reveal_at(day: Day, attempt_limit_ms: int) -> int:
    """When the day's deal and salt become public: its end plus the longest attempt, so
    no game started before midnight is still running when the cards are known."""
    return day.ends_at + attempt_limit_ms


@dataclass(frozen=True, slots=True)
class Commitment:
    """SHA-256 of ``"<deal code>:<salt>"`` (hex): fixes the day's deal without showing it.

    Verify a revealed day: ``printf '%s' 'CODE:SALT' | sha256sum`` equals the digest.
    """

    code: str
    salt: str
    digest: str

    @classmethod
    def make(cls, code: str, salt: str | None = None) -> Commitment:
        salt = salt if salt is not None else secrets.token_hex(16)
        return cls(code, salt, digest_of(code, salt))

    def verify(self) -> bool:
        return digest_of(self.code, self.salt) == self.digest


def digest_of(code: str, salt: str) -> str:
    return hashlib.sha256(f"{code}:{salt}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class DayRecord:
    """A day's challenge as stored: variant, deal, salt, digest, when it was committed."""

    day: Day
    variant: str
    commitment: Commitment
    committed_at: int

    def to_record(self) -> dict[str, Any]:
        return {
            "day": str(self.day),
            "variant": self.variant,
            "code": self.commitment.code,
            "salt": self.commitment.salt,
            "digest": self.commitment.digest,
            "committed_at": self.committed_at,
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> DayRecord:
        return cls(
            Day.parse(r["day"]),
            r["variant"],
            Commitment(r["code"], r["salt"], r["digest"]),
            r["committed_at"],
        )


@dataclass(frozen=True, slots=True)
class Result:
    """How a ranked attempt ended (a row of the race's RESULTS)."""

    status: str
    time_ms: int | None
    moves: int
    foundation: int

    @classmethod
    def from_race(cls, row: ResultRow) -> Result:
        return cls(row.status, row.time_ms, row.moves, row.foundation)

    def sort_score(self) -> int:
        """Lower ranks first: winners by time then moves; the others by more cards on
        the foundations then fewer moves."""
        moves = min(max(self.moves, 0), MAX_MOVES)
        if self.status == "won":
            time_ms = min(max(self.time_ms or 0, 0), MAX_TIME_MS)
            return (time_ms << MOVES_BITS) | moves
        missing = FOUNDATION_CARDS - min(max(self.foundation, 0), FOUNDATION_CARDS)
        return NOT_WON_BIT | (missing << MOVES_BITS) | moves

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "time_ms": self.time_ms,
            "moves": self.moves,
            "foundation": self.foundation,
        }


@dataclass(frozen=True, slots=True)
class ResultEntry:
    """A ranked attempt's result as stored (the ``DailyStorage`` port's board rows and
    the player's history): how it ended, the player's name, when it ended (server ms)
    and the board it went to (None until it is on one). Its record is its fields in
    this order, the map stored before it was typed.

    >>> e = ResultEntry.of(Result("won", 61_000, 120, 104), "Ada", 5)
    >>> ResultEntry.from_record(e.on_board("ranked").to_record()).board
    'ranked'
    """

    status: str
    time_ms: int | None
    moves: int
    foundation: int
    name: str = ""
    finished_at: int = 0
    board: str | None = None

    @classmethod
    def of(cls, result: Result, name: str, finished_at: int) -> ResultEntry:
        return cls(
            result.status, result.time_ms, result.moves, result.foundation, name, finished_at
        )

    def on_board(self, board: str) -> ResultEntry:
        return replace(self, board=board)

    def to_record(self) -> dict[str, Any]:
        return record_of(self)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> ResultEntry:
        return value_of(cls, record)


def board_member(order: int, player_id: str) -> str:
    """The sorted-set member: the finish order first, so equal scores rank whoever
    finished first higher (Redis orders equal scores by member bytes)."""
    return f"{order:0{ORDER_DIGITS}d}:{player_id}"


def player_of_member(member: str) -> str:
    return member.split(":", 1)[1]


def is_late_identity(created_at: int | None, day: Day) -> bool:
    """An identity first seen after the day's deal went live is ranked apart: it may be
    a fresh guest made to retry a deal its owner already knows."""
    return created_at is None or created_at >= day.starts_at


@dataclass(frozen=True, slots=True)
class Streaks:
    played: int
    won: int


def streaks(history: Iterable[tuple[Day, str]], today: Day) -> Streaks:
    """Consecutive days played and won, as ``daily_me`` reports them (docs/daily.md):
    ``history`` is (day, status) of the player's finished ranked attempts.

    Both streaks end today once today's ranked attempt is finished (so a lost today
    makes ``won`` 0); while it is not finished (not started, or still being played)
    they end yesterday, since today can still extend them.

    >>> d = Day.parse("2025-11-30")
    >>> streaks([(d.previous(), "won"), (d, "resigned")], d)
    Streaks(played=2, won=0)
    >>> streaks([(d.previous(), "won")], d)
    Streaks(played=1, won=1)
    """
    status_of = dict(history)
    last = today if today in status_of else today.previous()

    def run(counted: set[Day]) -> int:
        day, count = last, 0
        while day in counted:
            count += 1
            day = day.previous()
        return count

    return Streaks(
        played=run(set(status_of)), won=run({d for d, s in status_of.items() if s == "won"})
    )


__all__ = [
    "COMMIT_AHEAD_DAYS",
    "DAY_MS",
    "Commitment",
    "Day",
    "DayRecord",
    "InvalidDay",
    "Result",
    "ResultEntry",
    "Streaks",
    "board_member",
    "days_to_prepare",
    "digest_of",
    "is_late_identity",
    "player_of_member",
    "reveal_at",
    "streaks",
]
