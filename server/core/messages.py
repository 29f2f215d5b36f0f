"""Messages between server processes, on the bus channels (see docs/server.md).

One frozen dataclass per kind; :func:`encode` / :func:`decode` turn them into msgpack
arrays whose first element names the kind. The layout is version 1 of the bus format
(the one every process of a deployment must speak). :func:`decode` checks the kind and
every field and raises :class:`BadBusMessage`, naming what is wrong, for anything else
(a kind this process does not know, e.g. from a newer process during a rolling deploy,
or a malformed payload): the caller logs it once and drops it.

>>> from server.lobby import Member, Room
>>> room = Room.create("K7PQ2X", host=Member("p1", "Ada"), variant="N", deal="CR1-N-AAAAAAB",
...                    deal_public=False, seats=2, time_limit=None, now=0)
>>> msg = RoomEvents(room=room, frames=(b"e1",), first_ver=1)
>>> decode(encode(msg)) == msg
True
>>> decode(encode(ProgressFrame(frame=b"p", origin=b"12345678")))
ProgressFrame(frame=b'p', origin=b'12345678')
>>> decode(encode(TournamentChanged(ver=4, urgent=True)))
TournamentChanged(ver=4, urgent=True)
>>> decode(encode(DailyChanged(day="2026-12-01")))
DailyChanged(day='2026-12-01')
>>> decode(encode(SessionsRevoked(ids=("s1", "s2"))))
SessionsRevoked(ids=('s1', 's2'))
>>> decode(b"\\x91\\xa1z")
Traceback (most recent call last):
...
server.core.messages.BadBusMessage: unknown kind 'z'
>>> decode(b"\\x93\\xa1t\\xa1x\\xc3")
Traceback (most recent call last):
...
server.core.messages.BadBusMessage: kind 't': field 'ver' must be an integer, not str
>>> decode(b"\\x92\\xa1s\\x91\\x01")
Traceback (most recent call last):
...
server.core.messages.BadBusMessage: kind 's': field 'ids' must be a list of strings, not list
>>> decode(encode(msg).replace(b"host", b"hose"))
Traceback (most recent call last):
...
server.core.messages.BadBusMessage: kind 'e': field 'record' is not a room (KeyError 'host')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgpack

from server.lobby import Room

BUS_VERSION = 1


@dataclass(frozen=True, slots=True)
class RoomEvents:
    """A committed room transition: the new room (its record on the bus) and its event
    frames (already encoded for clients), versions ``first_ver`` onwards. Kind ``"e"``."""

    room: Room
    frames: tuple[bytes, ...]
    first_ver: int


@dataclass(frozen=True, slots=True)
class ProgressFrame:
    """A ``progress`` frame for the room's sockets, from the process tagged ``origin``
    (which already sent it to its own sockets). Kind ``"p"``."""

    frame: bytes
    origin: bytes


@dataclass(frozen=True, slots=True)
class TournamentChanged:
    """A tournament's record reached version ``ver`` (on the tournament's channel);
    ``urgent``: a round started or ended, push it at once. Kind ``"t"``."""

    ver: int
    urgent: bool


@dataclass(frozen=True, slots=True)
class DailyChanged:
    """A daily board of ``day`` (YYYY-MM-DD) has a new result (on the daily channel):
    push the boards of that day to their watchers. Kind ``"d"``."""

    day: str


@dataclass(frozen=True, slots=True)
class SessionsRevoked:
    """Account sessions signed out (or ended by the cap, or by a deleted account): every
    process closes its sockets of them (on the accounts channel). Kind ``"s"``."""

    ids: tuple[str, ...]


BusMessage = RoomEvents | ProgressFrame | TournamentChanged | DailyChanged | SessionsRevoked


class BadBusMessage(ValueError):
    """A bus payload this process cannot take: not msgpack, not an array, an unknown
    kind, or a field missing or of the wrong type (the message names which)."""


_PACK: Callable[[Any], bytes] = msgpack.Packer(use_bin_type=True).pack


def encode(message: BusMessage) -> bytes:
    if isinstance(message, RoomEvents):
        return _PACK(["e", message.room.to_record(), list(message.frames), message.first_ver])
    if isinstance(message, TournamentChanged):
        return _PACK(["t", message.ver, message.urgent])
    if isinstance(message, DailyChanged):
        return _PACK(["d", message.day])
    if isinstance(message, SessionsRevoked):
        return _PACK(["s", list(message.ids)])
    return _PACK(["p", message.frame, message.origin])


def _integer(value: object) -> bool:
    return type(value) is int


def _boolean(value: object) -> bool:
    return type(value) is bool


def _bytes(value: object) -> bool:
    return type(value) is bytes


def _text(value: object) -> bool:
    return type(value) is str


def _map(value: object) -> bool:
    return type(value) is dict


def _frames(value: object) -> bool:
    return type(value) is list and all(type(frame) is bytes for frame in value)


def _texts(value: object) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


_CHECKS: dict[Callable[[object], bool], str] = {
    _integer: "an integer",
    _boolean: "a boolean",
    _bytes: "bytes",
    _text: "a string",
    _map: "a map",
    _frames: "a list of bytes",
    _texts: "a list of strings",
}

# kind -> its dataclass and its fields in payload order, each with its check
_KINDS: dict[str, tuple[type, tuple[tuple[str, Callable[[object], bool]], ...]]] = {
    "e": (RoomEvents, (("record", _map), ("frames", _frames), ("first_ver", _integer))),
    "p": (ProgressFrame, (("frame", _bytes), ("origin", _bytes))),
    "t": (TournamentChanged, (("ver", _integer), ("urgent", _boolean))),
    "d": (DailyChanged, (("day", _text),)),
    "s": (SessionsRevoked, (("ids", _texts),)),
}


def decode(payload: bytes) -> BusMessage:
    """The message; raises :class:`BadBusMessage` naming the fault for anything else."""
    try:
        data = msgpack.unpackb(payload, raw=False)
    except Exception as exc:  # msgpack raises several kinds, all of them "not msgpack"
        raise BadBusMessage(f"not msgpack ({type(exc).__name__})") from None
    if type(data) is not list or not data:
        raise BadBusMessage(f"not a non-empty array but {type(data).__name__}")
    kind = data[0]
    known = _KINDS.get(kind) if type(kind) is str else None
    if known is None:
        raise BadBusMessage(f"unknown kind {kind!r}")
    cls, fields = known
    if len(data) != len(fields) + 1:
        raise BadBusMessage(f"kind {kind!r}: {len(data) - 1} fields, expected {len(fields)}")
    for (name, check), value in zip(fields, data[1:], strict=True):
        if not check(value):
            raise BadBusMessage(
                f"kind {kind!r}: field {name!r} must be {_CHECKS[check]}, "
                f"not {type(value).__name__}"
            )
    if cls is RoomEvents:
        return RoomEvents(room=_room(data[1]), frames=tuple(data[2]), first_ver=data[3])
    if cls is SessionsRevoked:
        return SessionsRevoked(ids=tuple(data[1]))
    message: BusMessage = cls(*data[1:])
    return message


def _room(record: dict[str, Any]) -> Room:
    try:
        return Room.from_record(record)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise BadBusMessage(
            f"kind 'e': field 'record' is not a room ({type(exc).__name__} {exc})"
        ) from None


__all__ = [
    "BUS_VERSION",
    "BadBusMessage",
    "BusMessage",
    "DailyChanged",
    "ProgressFrame",
    "RoomEvents",
    "SessionsRevoked",
    "TournamentChanged",
    "decode",
    "encode",
]
