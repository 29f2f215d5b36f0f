"""The daily challenge (docs/protocol.md, "Daily challenge"): today's challenge and the
ranked attempt or a practice game of it, a day's leaderboard (watched live or not),
past days with their reveals, the asker's own record.

The replies are one :class:`DailyReply` each (its ``data`` the reply's fields); the
server builds that data from typed values (:class:`TodayData`, :class:`BoardData`,
:class:`DaysData`, :class:`SummaryData` and the rows in them), each a frozen dataclass
whose map is its fields in order (:func:`wire_map`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

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


# Field metadata: the key is left out of the map while the value is None.
OMITTED_IF_NONE: dict[str, Any] = {"crescent_wire.omitted_if_none": True}


def wire_map(value: Any) -> dict[str, Any]:
    """A daily value (a dataclass) as its map: each field in order under its name, a
    nested value as its own map (its ``to_wire``), a tuple as a list, a field marked
    :data:`OMITTED_IF_NONE` left out while None.

    >>> wire_map(Disqualified("p1", "Ada", "a program"))
    {'player': 'p1', 'name': 'Ada', 'reason': 'a program', 'game': None}
    """
    wire: dict[str, Any] = {}
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        if item is None and f.metadata.get("crescent_wire.omitted_if_none"):
            continue
        wire[f.name] = _wire_item(item)
    return wire


def _wire_item(item: Any) -> Any:
    if isinstance(item, tuple):
        return [_wire_item(x) for x in item]
    to_wire = getattr(item, "to_wire", None)
    return to_wire() if to_wire is not None else item


class _Value:
    """A daily value sent inside a reply: its map is :func:`wire_map`'s."""

    __slots__ = ()

    def to_wire(self) -> dict[str, Any]:
        return wire_map(self)


class _Data(_Value):
    """A daily reply's data: ``KIND`` is the reply's ``t``."""

    __slots__ = ()
    KIND: ClassVar[str]

    def reply(self, msg_id: int | None = None) -> DailyReply:
        return DailyReply(self.KIND, self.to_wire(), id=msg_id)


@dataclass(frozen=True, slots=True)
class DayInfo(_Value):
    """A day as a client may see it: its commitment, and the code and salt once
    revealed (None before)."""

    day: str
    variant: str
    starts_at: int
    ends_at: int
    commitment: str
    committed_at: int
    reveal_at: int
    code: str | None
    salt: str | None


@dataclass(frozen=True, slots=True)
class BoardRow(_Value):
    """ROW of a daily board (docs/protocol.md, "Daily challenge"). A flagged result
    also has ``review`` (:data:`REVIEW_STATES`) and, when its game is known, ``game``:
    the archived game's id (the replay ``/g/<game>`` in the browser) and ``replay``,
    the JSON's path (:func:`replay_path`)."""

    rank: int
    player: str
    name: str
    status: str
    time_ms: int | None
    moves: int
    foundation: int
    review: str | None = field(default=None, metadata=OMITTED_IF_NONE)
    game: str | None = field(default=None, metadata=OMITTED_IF_NONE)
    replay: str | None = field(default=None, metadata=OMITTED_IF_NONE)


@dataclass(frozen=True, slots=True)
class YourRow(_Value):
    """The asker's own row: the board it is on, then the row's fields."""

    board: str
    row: BoardRow

    def to_wire(self) -> dict[str, Any]:
        return {"board": self.board, **self.row.to_wire()}


@dataclass(frozen=True, slots=True)
class Flagged(_Value):
    """One of a day's flagged results, wherever it ranks (``flagged`` of a board):
    ``state`` one of :data:`REVIEW_STATES`; ``game`` its archived game, or None."""

    player: str
    name: str
    state: str
    game: str | None = None


@dataclass(frozen=True, slots=True)
class Disqualified(_Value):
    """A result an operator took off the day's boards (``disqualified`` of a board),
    with the reason shown to everyone and its archived game (None if unknown)."""

    player: str
    name: str
    reason: str
    game: str | None = None


@dataclass(frozen=True, slots=True)
class TodayYou(_Value):
    """The asker's attempt of today: its room, whether it is on a board, its row."""

    attempt: str | None
    finished: bool  # also when disqualified (off the board, finished all the same)
    board: str | None
    result: BoardRow | None
    disqualified: str | None = None  # the reason, if an operator disqualified it


@dataclass(frozen=True, slots=True)
class TodayData(_Data):
    """``daily``: today, tomorrow's commitment, the time limit, the server's clock."""

    KIND: ClassVar[str] = "daily"
    today: DayInfo
    tomorrow: DayInfo | None
    time_limit: int
    server_time: int
    you: TodayYou


@dataclass(frozen=True, slots=True)
class BoardData(_Data):
    """``daily_board``: one board of one day, as a reply or a push."""

    KIND: ClassVar[str] = "daily_board"
    day: str
    board: str
    count: int
    late_count: int
    ranks: str
    reveal_at: int  # the replays of the day's games are readable from then
    top: tuple[BoardRow, ...]
    around: tuple[BoardRow, ...]
    you: YourRow | None
    flagged: tuple[Flagged, ...]
    disqualified: tuple[Disqualified, ...]
    watching: bool = False


@dataclass(frozen=True, slots=True)
class ListedDay(_Value):
    """A past day of ``daily_days``: the day's fields, then its reviews (empty until
    it is revealed), beside its replays."""

    day: DayInfo
    flagged: tuple[Flagged, ...] = ()
    disqualified: tuple[Disqualified, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        return {
            **self.day.to_wire(),
            "flagged": [f.to_wire() for f in self.flagged],
            "disqualified": [d.to_wire() for d in self.disqualified],
        }


@dataclass(frozen=True, slots=True)
class DaysData(_Data):
    """``daily_days``: past days, newest first."""

    KIND: ClassVar[str] = "daily_days"
    days: tuple[ListedDay, ...]


@dataclass(frozen=True, slots=True)
class HistoryRow(_Value):
    """A day of the asker's history."""

    day: str
    board: str | None
    status: str
    time_ms: int | None
    moves: int
    foundation: int


@dataclass(frozen=True, slots=True)
class SummaryData(_Data):
    """``daily_me`` (and the account page's ``daily``): streaks, best times, counts,
    the latest results."""

    KIND: ClassVar[str] = "daily_me"
    streak_played: int
    streak_won: int
    best_time_ms: int | None
    best_times: tuple[int, ...]
    days_played: int
    days_won: int
    history: tuple[HistoryRow, ...]


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
