"""Session and rooms (docs/protocol.md, "Session" and "Rooms"): hello and welcome,
ping, ok and error; creating, joining and leaving rooms, readiness, the start, sync,
rematch and the host's end of a race; the room snapshot and its versioned events."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

from crescent_wire.fields import (
    bad,
    choice_field,
    int_field,
    name_field,
    opt_int_field,
    opt_str_field,
    room_field,
)
from crescent_wire.limits import (
    DEFAULT_SEATS,
    MAX_DEAL_FIELD,
    MAX_FRAME,
    MAX_SEATS,
    MAX_SINCE,
    MAX_TIME_LIMIT_S,
    MAX_TOKEN_LENGTH,
    MAX_VERSIONS,
    MIN_SEATS,
    MIN_TIME_LIMIT_S,
    PROTOCOL_VERSIONS,
    RATE_BURST,
    RATE_PER_S,
    VARIANTS,
)
from crescent_wire.message import WireMessage, absent

# ----------------------------------------------------------------------------------------
# client -> server


@dataclass(frozen=True, slots=True)
class Hello(WireMessage):
    TYPE = "hello"
    versions: tuple[int, ...] = PROTOCOL_VERSIONS
    token: str | None = None
    name: str | None = None
    id: int | None = None


@dataclass(frozen=True, slots=True)
class CreateRoom(WireMessage):
    TYPE = "create_room"
    variant: str = "N"
    deal: str | None = None
    seats: int = DEFAULT_SEATS
    time_limit: int | None = None  # seconds
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Join(WireMessage):
    TYPE = "join"
    room: str
    as_: str = "racer"  # "racer" or "spectator"; on the wire the key is "as"
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Leave(WireMessage):
    TYPE = "leave"
    room: str
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Ready(WireMessage):
    TYPE = "ready"
    room: str
    ready: bool = True
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Start(WireMessage):
    TYPE = "start"
    room: str
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Sync(WireMessage):
    TYPE = "sync"
    room: str
    since: int = 0
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Rematch(WireMessage):
    TYPE = "rematch"
    room: str
    id: int | None = None


@dataclass(frozen=True, slots=True)
class EndRace(WireMessage):
    """The host ends the race now: ranked as at a deadline (racers still playing:
    ``timeout``). Trust under faults and abuse, issue #10."""

    TYPE = "end_race"
    room: str
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Ping(WireMessage):
    TYPE = "ping"
    id: int | None = None


SessionRequest = Hello | CreateRoom | Join | Leave | Ready | Start | Sync | Rematch | EndRace | Ping


# ----------------------------------------------------------------------------------------
# server -> client


def _default_limits() -> dict[str, int]:
    return {"max_frame": MAX_FRAME, "rate_per_s": RATE_PER_S, "burst": RATE_BURST}


@dataclass(frozen=True, slots=True)
class Welcome(WireMessage):
    TYPE = "welcome"
    version: int
    player: dict[str, Any]  # {"id": str, "name": str}
    token: str
    server_time: int
    limits: dict[str, int] = field(default_factory=_default_limits, metadata=absent(dict))
    id: int | None = None


@dataclass(frozen=True, slots=True)
class RoomSnapshot(WireMessage):
    """``{"t": "room"}``: the room (see protocol.md) and ``you`` (role, game VIEW, last_seq)."""

    TYPE = "room"
    room: dict[str, Any]
    you: dict[str, Any] = field(metadata=absent(dict))
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Event(WireMessage):
    """A versioned room event. ``data`` holds the kind's own fields (flattened on the wire)."""

    TYPE = "event"
    room: str
    ver: int
    kind: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        # Hand-written: the kind's own fields are flattened into the map, not one field.
        wire = {"t": "event", "room": self.room, "ver": self.ver, "kind": self.kind}
        wire.update(self.data)
        return wire

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> Self:
        data = {k: v for k, v in obj.items() if k not in ("t", "room", "ver", "kind")}
        return cls(room=obj["room"], ver=obj["ver"], kind=obj["kind"], data=data)


@dataclass(frozen=True, slots=True)
class Events(WireMessage):
    """Reply to ``sync``: every event after ``since``, oldest first."""

    TYPE = "events"
    room: str
    events: tuple[Event, ...]
    id: int | None = None

    def to_wire(self) -> dict[str, Any]:
        # Hand-written: the events are messages themselves, each a map of its own.
        wire: dict[str, Any] = {
            "t": "events",
            "room": self.room,
            "events": [e.to_wire() for e in self.events],
        }
        if self.id is not None:
            wire["id"] = self.id
        return wire

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> Self:
        return cls(
            room=obj.get("room", ""),
            events=tuple(Event.from_wire(e) for e in obj.get("events", [])),
            id=obj.get("id"),
        )


@dataclass(frozen=True, slots=True)
class Ok(WireMessage):
    TYPE = "ok"
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Pong(WireMessage):
    TYPE = "pong"
    server_time: int
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Error(WireMessage):
    TYPE = "error"
    code: str
    message: str = field(metadata=absent(""))
    id: int | None = None


SessionReply = Welcome | RoomSnapshot | Event | Events | Ok | Pong | Error


# ----------------------------------------------------------------------------------------
# request decoders (strict: bad_field); replies are read by their from_wire (lenient)


def _decode_hello(obj: dict[str, Any], msg_id: int | None) -> Hello:
    versions = obj.get("versions")
    if (
        type(versions) is not list
        or not 0 < len(versions) <= MAX_VERSIONS
        or any(type(v) is not int for v in versions)
    ):
        raise bad("versions", "must be a non-empty list of integers")
    return Hello(
        versions=tuple(versions),
        token=opt_str_field(obj, "token", MAX_TOKEN_LENGTH),
        name=name_field(obj),
        id=msg_id,
    )


def _decode_create_room(obj: dict[str, Any], msg_id: int | None) -> CreateRoom:
    seats = opt_int_field(obj, "seats", MIN_SEATS, MAX_SEATS)
    return CreateRoom(
        variant=choice_field(obj, "variant", VARIANTS, "N"),
        deal=opt_str_field(obj, "deal", MAX_DEAL_FIELD),
        seats=DEFAULT_SEATS if seats is None else seats,
        time_limit=opt_int_field(obj, "time_limit", MIN_TIME_LIMIT_S, MAX_TIME_LIMIT_S),
        id=msg_id,
    )


def _decode_join(obj: dict[str, Any], msg_id: int | None) -> Join:
    value = obj.get("as")
    if value is None:
        as_ = "racer"
    elif value in ("racer", "spectator"):
        as_ = value
    else:
        raise bad("as", "must be 'racer' or 'spectator'")
    return Join(room=room_field(obj), as_=as_, id=msg_id)


def _decode_ready(obj: dict[str, Any], msg_id: int | None) -> Ready:
    value = obj.get("ready")
    if type(value) is not bool:  # required: a missing field is not taken as true
        raise bad("ready", "is required: true or false")
    return Ready(room=room_field(obj), ready=value, id=msg_id)


REQUESTS: dict[type[WireMessage], Callable[[dict[str, Any], int | None], SessionRequest]] = {
    Hello: _decode_hello,
    CreateRoom: _decode_create_room,
    Join: _decode_join,
    Leave: lambda obj, msg_id: Leave(room=room_field(obj), id=msg_id),
    Ready: _decode_ready,
    Start: lambda obj, msg_id: Start(room=room_field(obj), id=msg_id),
    Sync: lambda obj, msg_id: Sync(
        room=room_field(obj), since=int_field(obj, "since", 0, MAX_SINCE), id=msg_id
    ),
    Rematch: lambda obj, msg_id: Rematch(room=room_field(obj), id=msg_id),
    EndRace: lambda obj, msg_id: EndRace(room=room_field(obj), id=msg_id),
    Ping: lambda obj, msg_id: Ping(id=msg_id),
}


REPLIES: dict[str, Callable[[dict[str, Any]], SessionReply]] = {
    "event": Event.from_wire,
    "events": Events.from_wire,
    "welcome": Welcome.from_wire,
    "room": RoomSnapshot.from_wire,
    "ok": Ok.from_wire,
    "pong": Pong.from_wire,
    "error": Error.from_wire,
}
