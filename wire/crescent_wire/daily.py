"""The daily challenge (docs/protocol.md, "Daily challenge"): today's challenge and the
ranked attempt or a practice game of it, a day's leaderboard (watched live or not),
past days with their reveals, the asker's own record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self

from crescent_wire.fields import bool_field, day_field, int_or_default
from crescent_wire.limits import (
    DEFAULT_BOARD_AROUND,
    DEFAULT_BOARD_TOP,
    DEFAULT_DAYS_LISTED,
    MAX_BOARD_AROUND,
    MAX_BOARD_TOP,
    MAX_DAYS_LISTED,
)
from crescent_wire.message import WireMessage


@dataclass(frozen=True, slots=True)
class DailyToday(WireMessage):
    """``daily``: today's challenge, tomorrow's commitment, the asker's attempt."""

    TYPE = "daily"
    id: int | None = None


@dataclass(frozen=True, slots=True)
class DailyStart(WireMessage):
    """``daily_start``: the ranked attempt (first start) or, after it, a practice game."""

    TYPE = "daily_start"
    practice: bool = False
    day: str | None = None  # the day the client means (day_over after it ended)
    id: int | None = None


@dataclass(frozen=True, slots=True)
class DailyBoard(WireMessage):
    """``daily_board``: a day's leaderboard (today when ``day`` is None); ``watch``
    subscribes this connection to live updates of it (one board per connection)."""

    TYPE = "daily_board"
    day: str | None = None
    top: int = DEFAULT_BOARD_TOP
    around: int = DEFAULT_BOARD_AROUND
    late: bool = False
    watch: bool = False
    id: int | None = None


@dataclass(frozen=True, slots=True)
class DailyDays(WireMessage):
    """``daily_days``: past days (before ``before``, newest first) with their reveals."""

    TYPE = "daily_days"
    before: str | None = None
    limit: int = DEFAULT_DAYS_LISTED
    id: int | None = None


@dataclass(frozen=True, slots=True)
class DailyMe(WireMessage):
    """``daily_me``: the asker's streaks, best times and history."""

    TYPE = "daily_me"
    id: int | None = None


DailyRequest = DailyToday | DailyStart | DailyBoard | DailyDays | DailyMe

# The review of a result whose pace was flagged (docs/daily.md, "Review of implausible
# times"): shown to everyone while an operator looks at its replay, then confirmed (it
# stays, marked) or disqualified (it leaves the board, listed apart with the reason).
UNDER_REVIEW = "under_review"
CONFIRMED = "confirmed"
REVIEW_STATES = (UNDER_REVIEW, CONFIRMED)


def replay_path(game: str) -> str:
    """Where an archived game's replay is read (readable once the day is revealed)."""
    return f"/api/games/{game}.json"


@dataclass(frozen=True, slots=True)
class BoardRow:
    """ROW of a daily board (docs/protocol.md, "Daily challenge"). A flagged result
    also has ``review`` (:data:`REVIEW_STATES`) and, when its game is known, ``game``:
    the archived game's id (the replay ``/g/<game>`` in the browser, ``replay`` the
    JSON's path)."""

    rank: int
    player: str
    name: str
    status: str
    time_ms: int | None
    moves: int
    foundation: int
    review: str | None = None
    game: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "rank": self.rank,
            "player": self.player,
            "name": self.name,
            "status": self.status,
            "time_ms": self.time_ms,
            "moves": self.moves,
            "foundation": self.foundation,
        }
        if self.review is not None:
            wire["review"] = self.review
            if self.game is not None:
                wire["game"] = self.game
                wire["replay"] = replay_path(self.game)
        return wire


@dataclass(frozen=True, slots=True)
class Flagged:
    """One of a day's flagged results, wherever it ranks (``flagged`` of a board):
    ``state`` one of :data:`REVIEW_STATES`; ``game`` its archived game, or None."""

    player: str
    name: str
    state: str
    game: str | None

    def to_wire(self) -> dict[str, Any]:
        return {"player": self.player, "name": self.name, "state": self.state, "game": self.game}


@dataclass(frozen=True, slots=True)
class Disqualified:
    """A result an operator took off the day's boards (``disqualified`` of a board),
    with the reason shown to everyone and its archived game (None if unknown)."""

    player: str
    name: str
    reason: str
    game: str | None

    def to_wire(self) -> dict[str, Any]:
        return {"player": self.player, "name": self.name, "reason": self.reason, "game": self.game}


DAILY_REPLY_KINDS = ("daily", "daily_board", "daily_days", "daily_me")


@dataclass(frozen=True, slots=True)
class DailyReply(WireMessage):
    """A daily reply or push: ``kind`` is its ``t`` (``daily``, ``daily_board``,
    ``daily_days``, ``daily_me``), ``data`` its other fields as protocol.md lists them."""

    kind: str
    data: dict[str, Any]
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        # Hand-written: one class for four replies, its type in ``kind``, written after
        # the reply's own fields.
        wire = {**self.data, "t": self.kind}
        if self.id is not None:
            wire["id"] = self.id
        return wire

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> Self:
        data = {k: v for k, v in obj.items() if k not in ("t", "id")}
        return cls(kind=obj["t"], data=data, id=obj.get("id"))


def _decode_daily_board(obj: dict[str, Any], msg_id: int | None) -> DailyBoard:
    # The fields are checked in this order (the first bad one is the one named).
    top = int_or_default(obj, "top", 0, MAX_BOARD_TOP, DEFAULT_BOARD_TOP)
    around = int_or_default(obj, "around", 0, MAX_BOARD_AROUND, DEFAULT_BOARD_AROUND)
    return DailyBoard(
        day=day_field(obj, "day"),
        top=top,
        around=around,
        late=bool_field(obj, "late"),
        watch=bool_field(obj, "watch"),
        id=msg_id,
    )


def _decode_daily_days(obj: dict[str, Any], msg_id: int | None) -> DailyDays:
    limit = int_or_default(obj, "limit", 1, MAX_DAYS_LISTED, DEFAULT_DAYS_LISTED)
    return DailyDays(before=day_field(obj, "before"), limit=limit, id=msg_id)


REQUESTS: dict[type[WireMessage], Callable[[dict[str, Any], int | None], DailyRequest]] = {
    DailyToday: lambda obj, msg_id: DailyToday(id=msg_id),
    DailyStart: lambda obj, msg_id: DailyStart(
        practice=bool_field(obj, "practice"), day=day_field(obj, "day"), id=msg_id
    ),
    DailyBoard: _decode_daily_board,
    DailyDays: _decode_daily_days,
    DailyMe: lambda obj, msg_id: DailyMe(id=msg_id),
}


REPLIES: dict[str, Callable[[dict[str, Any]], DailyReply]] = dict.fromkeys(
    DAILY_REPLY_KINDS, DailyReply.from_wire
)
