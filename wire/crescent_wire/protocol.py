"""The wire protocol (docs/protocol.md): typed messages both ways and the one msgpack codec.

Pure: imports msgpack and nothing of aiohttp or redis, so the Python client library
uses it too. Each message is a frozen dataclass; ``encode(msg)`` turns any of them into
one msgpack map (``{"t": type, ...}``). The server decodes requests with
``decode_client`` (strict: a listed field of the wrong type is ``bad_field``), a client
decodes replies with ``decode_server`` (lenient: unknown fields are ignored).
Nested structures (room snapshot, VIEW, PROGRESS, RESULTS) stay plain dicts/lists with
exactly the shape docs/protocol.md gives them.

>>> wire = encode_client(Act(room="K7PQ2X", seq=1, action="p10-p14", id=5))
>>> decode_client(wire)
Act(room='K7PQ2X', seq=1, action='p10-p14', id=5)
>>> decode_server(encode(Pong(server_time=1764500000000, id=5)))
Pong(server_time=1764500000000, id=5)
>>> try:
...     decode_client(encode_client(Ready(room="K7PQ2X", ready=True))[:-1])
... except ProtocolError as err:
...     print(err.code)
bad_message
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import msgpack

from crescent_wire.errors import ProtocolError

PROTOCOL_VERSIONS: tuple[int, ...] = (1,)
MAX_FRAME = 4096
RATE_PER_S = 30
RATE_BURST = 60
MAX_ID = 2**31
VARIANTS = ("N", "F", "O", "R")
ROOM_CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
ROOM_CODE_LENGTH = 6
MIN_SEATS, MAX_SEATS, DEFAULT_SEATS = 1, 8, 4  # one seat: a solo practice game
MIN_TIME_LIMIT_S, MAX_TIME_LIMIT_S = 30, 7200
MAX_TOKEN_LENGTH = 512
MAX_NAME_FIELD = 200  # raw length accepted on the wire; the 1-24 rule is checked later (bad_name)
MAX_ACTION_LENGTH = 32


# ----------------------------------------------------------------------------------------
# client -> server


@dataclass(frozen=True, slots=True)
class Hello:
    TYPE: ClassVar[str] = "hello"
    versions: tuple[int, ...] = PROTOCOL_VERSIONS
    token: str | None = None
    name: str | None = None
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {"t": "hello", "versions": list(self.versions), "token": self.token, "name": self.name},
            self.id,
        )


@dataclass(frozen=True, slots=True)
class CreateRoom:
    TYPE: ClassVar[str] = "create_room"
    variant: str = "N"
    deal: str | None = None
    seats: int = DEFAULT_SEATS
    time_limit: int | None = None  # seconds
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {
                "t": "create_room",
                "variant": self.variant,
                "deal": self.deal,
                "seats": self.seats,
                "time_limit": self.time_limit,
            },
            self.id,
        )


@dataclass(frozen=True, slots=True)
class Join:
    TYPE: ClassVar[str] = "join"
    room: str
    as_: str = "racer"  # "racer" or "spectator"; on the wire the key is "as"
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "join", "room": self.room, "as": self.as_}, self.id)


@dataclass(frozen=True, slots=True)
class Leave:
    TYPE: ClassVar[str] = "leave"
    room: str
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "leave", "room": self.room}, self.id)


@dataclass(frozen=True, slots=True)
class Ready:
    TYPE: ClassVar[str] = "ready"
    room: str
    ready: bool = True
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "ready", "room": self.room, "ready": self.ready}, self.id)


@dataclass(frozen=True, slots=True)
class Start:
    TYPE: ClassVar[str] = "start"
    room: str
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "start", "room": self.room}, self.id)


@dataclass(frozen=True, slots=True)
class Act:
    TYPE: ClassVar[str] = "act"
    room: str
    seq: int
    action: str
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {"t": "act", "room": self.room, "seq": self.seq, "action": self.action}, self.id
        )


@dataclass(frozen=True, slots=True)
class Sync:
    TYPE: ClassVar[str] = "sync"
    room: str
    since: int = 0
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "sync", "room": self.room, "since": self.since}, self.id)


@dataclass(frozen=True, slots=True)
class Rematch:
    TYPE: ClassVar[str] = "rematch"
    room: str
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "rematch", "room": self.room}, self.id)


# --- trust under faults and abuse (issue #10): the host ends a race


@dataclass(frozen=True, slots=True)
class EndRace:
    """The host ends the race now: ranked as at a deadline (racers still playing:
    ``timeout``)."""

    TYPE: ClassVar[str] = "end_race"
    room: str
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "end_race", "room": self.room}, self.id)


@dataclass(frozen=True, slots=True)
class Ping:
    TYPE: ClassVar[str] = "ping"
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "ping"}, self.id)


# --- practice games and the solver (protocol.md, "Practice games and solver")


@dataclass(frozen=True, slots=True)
class Hint:
    """A hint for the racer of a solo practice room (one seat) while racing."""

    TYPE: ClassVar[str] = "hint"
    room: str
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "hint", "room": self.room}, self.id)


@dataclass(frozen=True, slots=True)
class Winnable:
    """Was the room's deal winnable? Once its race is finished, for any member."""

    TYPE: ClassVar[str] = "winnable"
    room: str
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "winnable", "room": self.room}, self.id)


# ----------------------------------------------------------------------------------------
# the daily challenge (docs/protocol.md, "Daily challenge")

DAY_LENGTH = 10  # YYYY-MM-DD
_DAY_PATTERN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
MAX_BOARD_TOP, DEFAULT_BOARD_TOP = 100, 10
MAX_BOARD_AROUND, DEFAULT_BOARD_AROUND = 25, 5
MAX_DAYS_LISTED, DEFAULT_DAYS_LISTED = 30, 7


@dataclass(frozen=True, slots=True)
class DailyToday:
    """``daily``: today's challenge, tomorrow's commitment, the asker's attempt."""

    TYPE: ClassVar[str] = "daily"
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "daily"}, self.id)


@dataclass(frozen=True, slots=True)
class DailyStart:
    """``daily_start``: the ranked attempt (first start) or, after it, a practice game."""

    TYPE: ClassVar[str] = "daily_start"
    practice: bool = False
    day: str | None = None  # the day the client means (day_over after it ended)
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "daily_start", "practice": self.practice, "day": self.day}, self.id)


@dataclass(frozen=True, slots=True)
class DailyBoard:
    """``daily_board``: a day's leaderboard (today when ``day`` is None); ``watch``
    subscribes this connection to live updates of it (one board per connection)."""

    TYPE: ClassVar[str] = "daily_board"
    day: str | None = None
    top: int = DEFAULT_BOARD_TOP
    around: int = DEFAULT_BOARD_AROUND
    late: bool = False
    watch: bool = False
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {
                "t": "daily_board",
                "day": self.day,
                "top": self.top,
                "around": self.around,
                "late": self.late,
                "watch": self.watch,
            },
            self.id,
        )


@dataclass(frozen=True, slots=True)
class DailyDays:
    """``daily_days``: past days (before ``before``, newest first) with their reveals."""

    TYPE: ClassVar[str] = "daily_days"
    before: str | None = None
    limit: int = DEFAULT_DAYS_LISTED
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "daily_days", "before": self.before, "limit": self.limit}, self.id)


@dataclass(frozen=True, slots=True)
class DailyMe:
    """``daily_me``: the asker's streaks, best times and history."""

    TYPE: ClassVar[str] = "daily_me"
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "daily_me"}, self.id)


# ----------------------------------------------------------------------------------------
# tournaments (docs/protocol.md, "Tournaments"; issue #13)

MAX_ROUNDS = 20
MIN_T_PLAYERS, MAX_T_PLAYERS = 2, 200
MAX_T_NAME = 40
MAX_TOURNAMENT_CODE_FIELD = 32  # a longer string cannot be a code; shorter unknown ones
MAX_PLAYER_ID_FIELD = 64  # are tournament_not_found / not_registered (checked later)
TOURNAMENT_CODE_PREFIX = "T"
SCORINGS = ("placement", "time")
T_JOIN_AS = ("player", "spectator")
T_HOST_OPS = (
    "open_registration",
    "close_registration",
    "start_round",
    "pause",
    "resume",
    "remove",
    "end",
)
T_LIVE_TOP = 10


@dataclass(frozen=True, slots=True)
class TCreate:
    """``t_create``: a new tournament; the reply is its ``tournament`` snapshot."""

    TYPE: ClassVar[str] = "t_create"
    name: str
    rounds: int
    time_limit: int  # seconds per round
    max_players: int
    deals: tuple[str, ...] | None = None  # None: random deals; else exactly ``rounds`` codes
    variant: str = "N"
    scoring: str = "placement"
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {
                "t": "t_create",
                "name": self.name,
                "rounds": self.rounds,
                "deals": list(self.deals) if self.deals is not None else None,
                "variant": self.variant,
                "time_limit": self.time_limit,
                "max_players": self.max_players,
                "scoring": self.scoring,
            },
            self.id,
        )


@dataclass(frozen=True, slots=True)
class TJoin:
    """``t_join``: register (``player``) or watch (``spectator``); subscribes to pushes."""

    TYPE: ClassVar[str] = "t_join"
    tournament: str
    as_: str = "player"  # on the wire the key is "as"
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "t_join", "tournament": self.tournament, "as": self.as_}, self.id)


@dataclass(frozen=True, slots=True)
class TWithdraw:
    TYPE: ClassVar[str] = "t_withdraw"
    tournament: str
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "t_withdraw", "tournament": self.tournament}, self.id)


@dataclass(frozen=True, slots=True)
class THost:
    """``t_host``: a host operation (``T_HOST_OPS``); ``remove`` needs ``player``."""

    TYPE: ClassVar[str] = "t_host"
    tournament: str
    op: str
    player: str | None = None
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {"t": "t_host", "tournament": self.tournament, "op": self.op, "player": self.player},
            self.id,
        )


@dataclass(frozen=True, slots=True)
class TGet:
    """``t_get``: the ``tournament`` snapshot without subscribing."""

    TYPE: ClassVar[str] = "t_get"
    tournament: str
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "t_get", "tournament": self.tournament}, self.id)


@dataclass(frozen=True, slots=True)
class TUnwatch:
    TYPE: ClassVar[str] = "t_unwatch"
    tournament: str
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "t_unwatch", "tournament": self.tournament}, self.id)


@dataclass(frozen=True, slots=True)
class TGetResults:
    """``t_results`` (request): a finished round's full results."""

    TYPE: ClassVar[str] = "t_results"
    tournament: str
    round: int
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {"t": "t_results", "tournament": self.tournament, "round": self.round}, self.id
        )


@dataclass(frozen=True, slots=True)
class TGetStandings:
    """``t_standings`` (request): every row of the standings."""

    TYPE: ClassVar[str] = "t_standings"
    tournament: str
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "t_standings", "tournament": self.tournament}, self.id)


TournamentRequest = (
    TCreate | TJoin | TWithdraw | THost | TGet | TUnwatch | TGetResults | TGetStandings
)


@dataclass(frozen=True, slots=True)
class TournamentSnapshot:
    """``{"t": "tournament"}``: the tournament T and ``you`` Y (docs/protocol.md); a reply
    (with ``id``) or a push (without)."""

    TYPE: ClassVar[str] = "tournament"
    tournament: dict[str, Any]
    you: dict[str, Any]
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {"t": "tournament", "tournament": self.tournament, "you": self.you}, self.id
        )


@dataclass(frozen=True, slots=True)
class TLive:
    """``t_live``: a round's live summary (top 10, you, counts); pushed at most 1/s."""

    TYPE: ClassVar[str] = "t_live"
    tournament: str
    round: int
    top: tuple[dict[str, Any], ...]
    you: dict[str, Any] | None
    racing: int
    finished: int

    def to_wire(self) -> dict[str, Any]:
        return {
            "t": "t_live",
            "tournament": self.tournament,
            "round": self.round,
            "top": list(self.top),
            "racing": self.racing,
            "finished": self.finished,
            "you": self.you,  # last: encode_t_live appends it to the shared part
        }


@dataclass(frozen=True, slots=True)
class TResults:
    """``t_results`` (reply): every row of a finished round."""

    TYPE: ClassVar[str] = "t_results"
    tournament: str
    round: int
    deal: str | None
    rows: tuple[dict[str, Any], ...]
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {
                "t": "t_results",
                "tournament": self.tournament,
                "round": self.round,
                "deal": self.deal,
                "rows": list(self.rows),
            },
            self.id,
        )


@dataclass(frozen=True, slots=True)
class TStandings:
    """``t_standings`` (reply): every standings row; ``final`` once the tournament ended."""

    TYPE: ClassVar[str] = "t_standings"
    tournament: str
    final: bool
    rows: tuple[dict[str, Any], ...]
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {
                "t": "t_standings",
                "tournament": self.tournament,
                "final": self.final,
                "rows": list(self.rows),
            },
            self.id,
        )


TournamentReply = TournamentSnapshot | TLive | TResults | TStandings


ClientMessage = (
    Hello
    | CreateRoom
    | Join
    | Leave
    | Ready
    | Start
    | Act
    | Sync
    | Rematch
    | Ping
    | Hint
    | Winnable
    | EndRace
    | DailyToday
    | DailyStart
    | DailyBoard
    | DailyDays
    | DailyMe
    | TournamentRequest
)


# ----------------------------------------------------------------------------------------
# server -> client


@dataclass(frozen=True, slots=True)
class Welcome:
    TYPE: ClassVar[str] = "welcome"
    version: int
    player: dict[str, Any]  # {"id": str, "name": str}
    token: str
    server_time: int
    limits: dict[str, int] = field(
        default_factory=lambda: {
            "max_frame": MAX_FRAME,
            "rate_per_s": RATE_PER_S,
            "burst": RATE_BURST,
        }
    )
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {
                "t": "welcome",
                "version": self.version,
                "player": self.player,
                "token": self.token,
                "server_time": self.server_time,
                "limits": self.limits,
            },
            self.id,
        )


@dataclass(frozen=True, slots=True)
class RoomSnapshot:
    """``{"t": "room"}``: the room (see protocol.md) and ``you`` (role, game VIEW, last_seq)."""

    TYPE: ClassVar[str] = "room"
    room: dict[str, Any]
    you: dict[str, Any]
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "room", "room": self.room, "you": self.you}, self.id)


@dataclass(frozen=True, slots=True)
class Event:
    """A versioned room event. ``data`` holds the kind's own fields (flattened on the wire)."""

    TYPE: ClassVar[str] = "event"
    room: str
    ver: int
    kind: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        wire = {"t": "event", "room": self.room, "ver": self.ver, "kind": self.kind}
        wire.update(self.data)
        return wire


@dataclass(frozen=True, slots=True)
class Events:
    """Reply to ``sync``: every event after ``since``, oldest first."""

    TYPE: ClassVar[str] = "events"
    room: str
    events: tuple[Event, ...]
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {"t": "events", "room": self.room, "events": [e.to_wire() for e in self.events]},
            self.id,
        )


@dataclass(frozen=True, slots=True)
class Progress:
    TYPE: ClassVar[str] = "progress"
    room: str
    round: int
    racers: tuple[dict[str, Any], ...]

    def to_wire(self) -> dict[str, Any]:
        return {
            "t": "progress",
            "room": self.room,
            "round": self.round,
            "racers": list(self.racers),
        }


@dataclass(frozen=True, slots=True)
class Ack:
    TYPE: ClassVar[str] = "ack"
    room: str
    seq: int
    view: dict[str, Any] | None
    duplicate: bool = False
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {
                "t": "ack",
                "room": self.room,
                "seq": self.seq,
                "view": self.view,
                "duplicate": self.duplicate,
            },
            self.id,
        )


@dataclass(frozen=True, slots=True)
class Refused:
    TYPE: ClassVar[str] = "refused"
    room: str
    seq: int
    code: str
    message: str
    message_sv: str
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {
                "t": "refused",
                "room": self.room,
                "seq": self.seq,
                "code": self.code,
                "message": self.message,
                "message_sv": self.message_sv,
            },
            self.id,
        )


@dataclass(frozen=True, slots=True)
class Ok:
    TYPE: ClassVar[str] = "ok"
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "ok"}, self.id)


@dataclass(frozen=True, slots=True)
class Pong:
    TYPE: ClassVar[str] = "pong"
    server_time: int
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "pong", "server_time": self.server_time}, self.id)


@dataclass(frozen=True, slots=True)
class Error:
    TYPE: ClassVar[str] = "error"
    code: str
    message: str
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({"t": "error", "code": self.code, "message": self.message}, self.id)


# --- practice games and the solver: the replies


@dataclass(frozen=True, slots=True)
class HintReply:
    """``action``: the next action (notation or ``redeal``) or None; ``finishing``: every
    remaining card goes home by foundation moves alone, ``action`` starting such a line;
    ``source``: ``"solver"`` (a winning line starts with it) or ``"heuristic"``."""

    TYPE: ClassVar[str] = "hint"
    room: str
    action: str | None
    finishing: bool
    source: str
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {
                "t": "hint",
                "room": self.room,
                "action": self.action,
                "finishing": self.finishing,
                "source": self.source,
            },
            self.id,
        )


@dataclass(frozen=True, slots=True)
class WinnableReply:
    """The solver's answer for the finished round's deal: ``result`` ``won`` (``line``
    replays to a win from the deal), ``impossible`` or ``unknown`` (budget spent)."""

    TYPE: ClassVar[str] = "winnable"
    room: str
    code: str
    result: str
    line: tuple[str, ...] | None
    nodes: int
    seconds: float
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id(
            {
                "t": "winnable",
                "room": self.room,
                "code": self.code,
                "result": self.result,
                "line": list(self.line) if self.line is not None else None,
                "nodes": self.nodes,
                "seconds": self.seconds,
            },
            self.id,
        )


# the daily challenge's replies and pushes
@dataclass(frozen=True, slots=True)
class DailyReply:
    """A daily reply or push: ``kind`` is its ``t`` (``daily``, ``daily_board``,
    ``daily_days``, ``daily_me``), ``data`` its other fields as protocol.md lists them."""

    kind: str
    data: dict[str, Any]
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _with_id({**self.data, "t": self.kind}, self.id)


ServerMessage = (
    Welcome
    | RoomSnapshot
    | Event
    | Events
    | Progress
    | Ack
    | Refused
    | Ok
    | Pong
    | Error
    | HintReply
    | WinnableReply
    | DailyReply
    | TournamentReply
)
Message = ClientMessage | ServerMessage


# ----------------------------------------------------------------------------------------
# codec


# One Packer for every frame: msgpack.packb builds a new Packer per call, which costs
# more than packing a small map (the server is one thread: the Packer is never shared).
_PACK: Callable[[Any], bytes] = msgpack.Packer(use_bin_type=True).pack


def encode(msg: Message) -> bytes:
    """One msgpack map for any message, ready to send as one binary frame."""
    frame: bytes = _PACK(msg.to_wire())
    return frame


_ACK_HEAD = b"".join(msgpack.packb(k) for k in ("t", "ack", "room"))
_ACK_SEQ = msgpack.packb("seq")
_ACK_VIEW = msgpack.packb("view")
_ACK_DUPLICATE = (
    msgpack.packb("duplicate") + msgpack.packb(False),
    msgpack.packb("duplicate") + msgpack.packb(True),
)
_ACK_ID = msgpack.packb("id")


def encode_ack(
    room: str, seq: int, view: bytes, *, duplicate: bool = False, msg_id: int | None = None
) -> bytes:
    """``encode(Ack(...))`` for a VIEW that is already msgpack: the same bytes, without
    building and packing the view's map again (the server's hottest reply).

    >>> view = msgpack.packb({"moves": 1})
    >>> encode_ack("K7PQ2X", 3, view, msg_id=9) == encode(
    ...     Ack(room="K7PQ2X", seq=3, view={"moves": 1}, id=9))
    True
    """
    return b"".join(
        (
            b"\x86" if msg_id is not None else b"\x85",
            _ACK_HEAD,
            _PACK(room),
            _ACK_SEQ,
            _PACK(seq),
            _ACK_VIEW,
            view,
            _ACK_DUPLICATE[duplicate],
            b"" if msg_id is None else _ACK_ID + _PACK(msg_id),
        )
    )


def encode_client(msg: ClientMessage) -> bytes:
    """Encode a request (for client code; the same codec as ``encode``)."""
    if not isinstance(msg, _CLIENT_CLASSES):
        raise TypeError(f"{type(msg).__name__} is not a client message")
    return encode(msg)


def unpack_map(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Decode one frame into a map with a string ``t``; ``bad_message`` otherwise."""
    try:
        obj = msgpack.unpackb(data, raw=False, strict_map_key=True, use_list=True)
    except Exception as exc:  # msgpack raises several unrelated types on bad input
        raise ProtocolError("bad_message", f"Not a msgpack value: {type(exc).__name__}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("bad_message", "A message must be a msgpack map")
    kind = obj.get("t")
    if not isinstance(kind, str):
        raise ProtocolError("bad_message", "A message must have a string 't' (its type)")
    return obj


def decode_client(data: bytes | bytearray | memoryview) -> ClientMessage:
    """Decode and validate one request frame; raises ``ProtocolError`` with a wire code."""
    obj = unpack_map(data)
    msg_id = _opt_int(obj, "id", 0, MAX_ID)
    try:
        decoder = _CLIENT_DECODERS.get(obj["t"])
        if decoder is None:
            raise ProtocolError("unknown_type", f"Unknown message type {obj['t'][:40]!r}")
        return decoder(obj, msg_id)
    except ProtocolError as err:
        err.msg_id = msg_id  # so the error reply can carry the request's id
        raise


def decode_act(data: bytes | bytearray | memoryview) -> Act | None:
    """``decode_client`` for the hottest request, in a few checks: the ``Act`` if the
    frame is a well-formed ``act`` (the same one ``decode_client`` returns), else None
    (``decode_client`` then names what is wrong).

    >>> decode_act(msgpack.packb({"t": "act", "room": "k7pq2x", "seq": 3, "action": "redeal"}))
    Act(room='K7PQ2X', seq=3, action='redeal', id=None)
    >>> decode_act(msgpack.packb({"t": "act", "room": "K7PQ2X", "seq": 0, "action": "undo"}))
    """
    try:
        obj = _unpackb(data)
    except Exception:
        return None
    if type(obj) is not dict or obj.get("t") != "act":
        return None
    room, seq, action, msg_id = obj.get("room"), obj.get("seq"), obj.get("action"), obj.get("id")
    if (
        type(room) is not str
        or not 0 < len(room) <= 32
        or type(seq) is not int
        or not 1 <= seq <= MAX_ID
        or type(action) is not str
        or not 0 < len(action) <= MAX_ACTION_LENGTH
        or (msg_id is not None and (type(msg_id) is not int or not 0 <= msg_id <= MAX_ID))
    ):
        return None
    return Act(room=room.upper(), seq=seq, action=action, id=msg_id)


_unpackb = msgpack.unpackb  # raw=False, strict_map_key=True, use_list=True: as unpack_map


def decode_server(data: bytes | bytearray | memoryview) -> ServerMessage:
    """Decode one server frame into its dataclass (lenient: extra fields are ignored)."""
    obj = unpack_map(data)
    kind = obj["t"]
    msg_id = obj.get("id")
    if kind == "event":
        return _event_from_wire(obj)
    if kind == "events":
        return Events(
            room=obj.get("room", ""),
            events=tuple(_event_from_wire(e) for e in obj.get("events", [])),
            id=msg_id,
        )
    if kind == "welcome":
        return Welcome(
            version=obj["version"],
            player=obj["player"],
            token=obj["token"],
            server_time=obj["server_time"],
            limits=obj.get("limits", {}),
            id=msg_id,
        )
    if kind == "room":
        return RoomSnapshot(room=obj["room"], you=obj.get("you", {}), id=msg_id)
    if kind == "progress":
        return Progress(room=obj["room"], round=obj["round"], racers=tuple(obj["racers"]))
    if kind == "ack":
        return Ack(
            room=obj["room"],
            seq=obj["seq"],
            view=obj.get("view"),
            duplicate=bool(obj.get("duplicate", False)),
            id=msg_id,
        )
    if kind == "refused":
        return Refused(
            room=obj["room"],
            seq=obj["seq"],
            code=obj["code"],
            message=obj.get("message", ""),
            message_sv=obj.get("message_sv", ""),
            id=msg_id,
        )
    if kind == "ok":
        return Ok(id=msg_id)
    if kind == "pong":
        return Pong(server_time=obj["server_time"], id=msg_id)
    if kind == "error":
        return Error(code=obj["code"], message=obj.get("message", ""), id=msg_id)
    if kind == "hint":
        return HintReply(
            room=obj["room"],
            action=obj.get("action"),
            finishing=bool(obj.get("finishing", False)),
            source=obj.get("source", "heuristic"),
            id=msg_id,
        )
    if kind == "winnable":
        line = obj.get("line")
        return WinnableReply(
            room=obj["room"],
            code=obj["code"],
            result=obj["result"],
            line=tuple(line) if line is not None else None,
            nodes=obj.get("nodes", 0),
            seconds=obj.get("seconds", 0.0),
            id=msg_id,
        )
    tournament = _decode_server_tournament(obj)
    if tournament is not None:
        return tournament
    if kind in DAILY_REPLY_KINDS:
        return DailyReply(
            kind=kind, data={k: v for k, v in obj.items() if k not in ("t", "id")}, id=msg_id
        )
    raise ProtocolError("unknown_type", f"Unknown server message type {kind[:40]!r}")


def _event_from_wire(obj: dict[str, Any]) -> Event:
    data = {k: v for k, v in obj.items() if k not in ("t", "room", "ver", "kind")}
    return Event(room=obj["room"], ver=obj["ver"], kind=obj["kind"], data=data)


def _with_id(wire: dict[str, Any], msg_id: int | None) -> dict[str, Any]:
    if msg_id is not None:
        wire["id"] = msg_id
    return wire


# --- field validators (each names the field in its bad_field message)


def _bad(key: str, what: str) -> ProtocolError:
    return ProtocolError("bad_field", f"Field '{key}' {what}")


def _int(obj: dict[str, Any], key: str, lo: int, hi: int) -> int:
    value = obj.get(key)
    # bool is a subclass of int in Python; a msgpack true is not a number here.
    if type(value) is not int:
        raise _bad(key, "must be an integer" if key in obj else "is missing")
    if not lo <= value <= hi:
        raise _bad(key, f"must be between {lo} and {hi}")
    return value


def _opt_int(obj: dict[str, Any], key: str, lo: int, hi: int) -> int | None:
    if obj.get(key) is None:
        return None
    return _int(obj, key, lo, hi)


def _str(obj: dict[str, Any], key: str, max_len: int) -> str:
    value = obj.get(key)
    if type(value) is not str:
        raise _bad(key, "must be a string" if key in obj else "is missing")
    if not 0 < len(value) <= max_len:
        raise _bad(key, f"must have 1 to {max_len} characters")
    return value


def _opt_str(obj: dict[str, Any], key: str, max_len: int) -> str | None:
    if obj.get(key) is None:
        return None
    return _str(obj, key, max_len)


def _room(obj: dict[str, Any]) -> str:
    # Room codes are case-insensitive; the canonical form is upper case. A string that
    # cannot be a code is still a string: the lobby answers room_not_found for it.
    return _str(obj, "room", 32).upper()


def _choice(obj: dict[str, Any], key: str, choices: tuple[str, ...], default: str) -> str:
    value = obj.get(key)
    if value is None:
        return default
    if type(value) is not str or value.upper() not in choices:
        raise _bad(key, f"must be one of {', '.join(choices)}")
    return value.upper()


def _decode_hello(obj: dict[str, Any], msg_id: int | None) -> Hello:
    versions = obj.get("versions")
    if (
        type(versions) is not list
        or not 0 < len(versions) <= 16
        or any(type(v) is not int for v in versions)
    ):
        raise _bad("versions", "must be a non-empty list of integers")
    return Hello(
        versions=tuple(versions),
        token=_opt_str(obj, "token", MAX_TOKEN_LENGTH),
        name=_name(obj),
        id=msg_id,
    )


def _name(obj: dict[str, Any]) -> str | None:
    value = obj.get("name")
    if value is None:
        return None
    if type(value) is not str or len(value) > MAX_NAME_FIELD:
        raise _bad("name", f"must be a string of at most {MAX_NAME_FIELD} characters")
    return value  # may be empty or blank: the session layer refuses it with bad_name


def _decode_create_room(obj: dict[str, Any], msg_id: int | None) -> CreateRoom:
    seats = DEFAULT_SEATS if obj.get("seats") is None else _int(obj, "seats", MIN_SEATS, MAX_SEATS)
    return CreateRoom(
        variant=_choice(obj, "variant", VARIANTS, "N"),
        deal=_opt_str(obj, "deal", 32),
        seats=seats,
        time_limit=_opt_int(obj, "time_limit", MIN_TIME_LIMIT_S, MAX_TIME_LIMIT_S),
        id=msg_id,
    )


def _decode_join(obj: dict[str, Any], msg_id: int | None) -> Join:
    value = obj.get("as")
    if value is None:
        as_ = "racer"
    elif value in ("racer", "spectator"):
        as_ = value
    else:
        raise _bad("as", "must be 'racer' or 'spectator'")
    return Join(room=_room(obj), as_=as_, id=msg_id)


def _decode_ready(obj: dict[str, Any], msg_id: int | None) -> Ready:
    value = obj.get("ready")
    if type(value) is not bool:  # required: a missing field is not taken as true
        raise _bad("ready", "is required: true or false")
    return Ready(room=_room(obj), ready=value, id=msg_id)


def _decode_act(obj: dict[str, Any], msg_id: int | None) -> Act:
    return Act(
        room=_room(obj),
        seq=_int(obj, "seq", 1, MAX_ID),
        action=_str(obj, "action", MAX_ACTION_LENGTH),
        id=msg_id,
    )


def _decode_sync(obj: dict[str, Any], msg_id: int | None) -> Sync:
    return Sync(room=_room(obj), since=_int(obj, "since", 0, 2**53), id=msg_id)


_CLIENT_DECODERS: dict[str, Callable[[dict[str, Any], int | None], ClientMessage]] = {
    "hello": _decode_hello,
    "create_room": _decode_create_room,
    "join": _decode_join,
    "leave": lambda obj, msg_id: Leave(room=_room(obj), id=msg_id),
    "ready": _decode_ready,
    "start": lambda obj, msg_id: Start(room=_room(obj), id=msg_id),
    "act": _decode_act,
    "sync": _decode_sync,
    "rematch": lambda obj, msg_id: Rematch(room=_room(obj), id=msg_id),
    "ping": lambda obj, msg_id: Ping(id=msg_id),
    "hint": lambda obj, msg_id: Hint(room=_room(obj), id=msg_id),
    "winnable": lambda obj, msg_id: Winnable(room=_room(obj), id=msg_id),
    "end_race": lambda obj, msg_id: EndRace(room=_room(obj), id=msg_id),
}

_CLIENT_CLASSES: tuple[type, ...] = (
    Hello,
    CreateRoom,
    Join,
    Leave,
    Ready,
    Start,
    Act,
    Sync,
    Rematch,
    Ping,
    Hint,
    Winnable,
    EndRace,
)


# --- the daily challenge's decoders

DAILY_REPLY_KINDS = ("daily", "daily_board", "daily_days", "daily_me")


def _day(obj: dict[str, Any], key: str) -> str | None:
    """A calendar day in its one text form, ``YYYY-MM-DD``; anything else (``""``,
    ``"yesterday"``, ``"2025-02-30"``) is ``bad_field``: a client's mistake, told apart
    from ``day_not_found`` (a well-formed day that has no challenge)."""
    value = _opt_str(obj, key, DAY_LENGTH)
    if value is None:
        return None
    if _DAY_PATTERN.fullmatch(value) is None:
        raise _bad(key, "must be a day, YYYY-MM-DD")
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        raise _bad(key, "must be a day, YYYY-MM-DD") from None
    return value


def _bool(obj: dict[str, Any], key: str) -> bool:
    value = obj.get(key, False)
    if value is None:
        return False
    if type(value) is not bool:
        raise _bad(key, "must be true or false")
    return value


def _decode_daily_board(obj: dict[str, Any], msg_id: int | None) -> DailyBoard:
    top = _opt_int(obj, "top", 0, MAX_BOARD_TOP)
    around = _opt_int(obj, "around", 0, MAX_BOARD_AROUND)
    return DailyBoard(
        day=_day(obj, "day"),
        top=DEFAULT_BOARD_TOP if top is None else top,
        around=DEFAULT_BOARD_AROUND if around is None else around,
        late=_bool(obj, "late"),
        watch=_bool(obj, "watch"),
        id=msg_id,
    )


def _decode_daily_days(obj: dict[str, Any], msg_id: int | None) -> DailyDays:
    limit = _opt_int(obj, "limit", 1, MAX_DAYS_LISTED)
    return DailyDays(
        before=_day(obj, "before"), limit=DEFAULT_DAYS_LISTED if limit is None else limit, id=msg_id
    )


_DAILY_DECODERS: dict[str, Callable[[dict[str, Any], int | None], ClientMessage]] = {
    "daily": lambda obj, msg_id: DailyToday(id=msg_id),
    "daily_start": lambda obj, msg_id: DailyStart(
        practice=_bool(obj, "practice"), day=_day(obj, "day"), id=msg_id
    ),
    "daily_board": _decode_daily_board,
    "daily_days": _decode_daily_days,
    "daily_me": lambda obj, msg_id: DailyMe(id=msg_id),
}
_CLIENT_DECODERS.update(_DAILY_DECODERS)
_CLIENT_CLASSES = (*_CLIENT_CLASSES, DailyToday, DailyStart, DailyBoard, DailyDays, DailyMe)


def t_live_shared(
    tournament: str, round: int, top: tuple[dict[str, Any], ...], racing: int, finished: int
) -> bytes:
    """The part of a ``t_live`` frame every recipient shares, packed once per tick;
    ``encode_t_live`` adds one recipient's ``you``.

    >>> shared = t_live_shared("TK7PQ2X", 2, ({"place": 1},), 5, 1)
    >>> encode_t_live(shared, None) == encode(
    ...     TLive(tournament="TK7PQ2X", round=2, top=({"place": 1},), you=None,
    ...           racing=5, finished=1))
    True
    """
    return b"".join(
        (
            b"\x87",
            _PACK("t"),
            _PACK("t_live"),
            _PACK("tournament"),
            _PACK(tournament),
            _PACK("round"),
            _PACK(round),
            _PACK("top"),
            _PACK(list(top)),
            _PACK("racing"),
            _PACK(racing),
            _PACK("finished"),
            _PACK(finished),
        )
    )


_T_LIVE_YOU: bytes = _PACK("you")
_T_SNAPSHOT_HEAD = b"".join(_PACK(k) for k in ("t", "tournament", "tournament"))
_ID: bytes = _PACK("id")


def encode_tournament(shared: bytes, you: dict[str, Any], msg_id: int | None = None) -> bytes:
    """``encode(TournamentSnapshot(...))`` for a tournament map already packed
    (``shared``, packed once per push for every subscriber): the same bytes.

    >>> t = {"code": "TK7PQ2X", "ver": 3}
    >>> encode_tournament(_PACK(t), {"role": "none"}, 4) == encode(
    ...     TournamentSnapshot(tournament=t, you={"role": "none"}, id=4))
    True
    """
    frame: bytes = b"".join(
        (
            b"\x84" if msg_id is not None else b"\x83",
            _T_SNAPSHOT_HEAD,
            shared,
            _T_LIVE_YOU,
            _PACK(you),
            b"" if msg_id is None else _ID + _PACK(msg_id),
        )
    )
    return frame


def pack_value(value: Any) -> bytes:
    """One msgpack value with the codec's packer (for ``encode_tournament``)."""
    packed: bytes = _PACK(value)
    return packed


def encode_t_live(shared: bytes, you: dict[str, Any] | None) -> bytes:
    """One recipient's ``t_live`` frame from ``t_live_shared``'s bytes."""
    frame: bytes = shared + _T_LIVE_YOU + _PACK(you)
    return frame


def _tournament(obj: dict[str, Any]) -> str:
    # Like room codes: case-insensitive, canonical upper case; any short string is a
    # string (the service answers tournament_not_found for one that is not a code).
    return _str(obj, "tournament", MAX_TOURNAMENT_CODE_FIELD).upper()


def _t_name(obj: dict[str, Any]) -> str:
    value = obj.get("name")
    if type(value) is not str:
        raise _bad("name", "must be a string" if "name" in obj else "is missing")
    name = " ".join(value.split())
    if not 0 < len(name) <= MAX_T_NAME or any(ord(c) < 32 or 127 <= ord(c) < 160 for c in name):
        raise _bad("name", f"must have 1 to {MAX_T_NAME} characters and no control characters")
    return name


def _exact(obj: dict[str, Any], key: str, choices: tuple[str, ...], default: str) -> str:
    value = obj.get(key)
    if value is None:
        return default
    if type(value) is not str or value not in choices:
        raise _bad(key, f"must be one of {', '.join(choices)}")
    return value


def _decode_t_create(obj: dict[str, Any], msg_id: int | None) -> TCreate:
    rounds = _int(obj, "rounds", 1, MAX_ROUNDS)
    raw = obj.get("deals")
    deals: tuple[str, ...] | None = None
    if raw is not None:
        if (
            type(raw) is not list
            or len(raw) != rounds
            or any(type(d) is not str or not 0 < len(d) <= 32 for d in raw)
        ):
            raise _bad("deals", "must be nil or a list of exactly 'rounds' deal codes")
        deals = tuple(raw)
    return TCreate(
        name=_t_name(obj),
        rounds=rounds,
        time_limit=_int(obj, "time_limit", MIN_TIME_LIMIT_S, MAX_TIME_LIMIT_S),
        max_players=_int(obj, "max_players", MIN_T_PLAYERS, MAX_T_PLAYERS),
        deals=deals,
        variant=_choice(obj, "variant", VARIANTS, "N"),
        scoring=_exact(obj, "scoring", SCORINGS, "placement"),
        id=msg_id,
    )


def _decode_t_host(obj: dict[str, Any], msg_id: int | None) -> THost:
    op = obj.get("op")
    if type(op) is not str or op not in T_HOST_OPS:
        raise _bad("op", f"must be one of {', '.join(T_HOST_OPS)}")
    player = _opt_str(obj, "player", MAX_PLAYER_ID_FIELD)
    if op == "remove" and player is None:
        raise _bad("player", "is required for 'remove'")
    return THost(tournament=_tournament(obj), op=op, player=player, id=msg_id)


_TOURNAMENT_DECODERS: dict[str, Callable[[dict[str, Any], int | None], ClientMessage]] = {
    "t_create": _decode_t_create,
    "t_join": lambda obj, msg_id: TJoin(
        tournament=_tournament(obj), as_=_exact(obj, "as", T_JOIN_AS, "player"), id=msg_id
    ),
    "t_withdraw": lambda obj, msg_id: TWithdraw(tournament=_tournament(obj), id=msg_id),
    "t_host": _decode_t_host,
    "t_get": lambda obj, msg_id: TGet(tournament=_tournament(obj), id=msg_id),
    "t_unwatch": lambda obj, msg_id: TUnwatch(tournament=_tournament(obj), id=msg_id),
    "t_results": lambda obj, msg_id: TGetResults(
        tournament=_tournament(obj), round=_int(obj, "round", 1, MAX_ROUNDS), id=msg_id
    ),
    "t_standings": lambda obj, msg_id: TGetStandings(tournament=_tournament(obj), id=msg_id),
}
_CLIENT_DECODERS.update(_TOURNAMENT_DECODERS)
_CLIENT_CLASSES = (
    *_CLIENT_CLASSES,
    TCreate,
    TJoin,
    TWithdraw,
    THost,
    TGet,
    TUnwatch,
    TGetResults,
    TGetStandings,
)


def _decode_server_tournament(obj: dict[str, Any]) -> TournamentReply | None:
    """The tournament replies and pushes (lenient, like ``decode_server``); None if
    ``obj`` is not one."""
    kind, msg_id = obj["t"], obj.get("id")
    if kind == "tournament":
        return TournamentSnapshot(tournament=obj["tournament"], you=obj.get("you", {}), id=msg_id)
    if kind == "t_live":
        return TLive(
            tournament=obj["tournament"],
            round=obj["round"],
            top=tuple(obj.get("top", ())),
            you=obj.get("you"),
            racing=obj.get("racing", 0),
            finished=obj.get("finished", 0),
        )
    if kind == "t_results":
        return TResults(
            tournament=obj["tournament"],
            round=obj["round"],
            deal=obj.get("deal"),
            rows=tuple(obj.get("rows", ())),
            id=msg_id,
        )
    if kind == "t_standings":
        return TStandings(
            tournament=obj["tournament"],
            final=bool(obj.get("final", False)),
            rows=tuple(obj.get("rows", ())),
            id=msg_id,
        )
    return None
