"""Messages between server processes, on each room's bus channel (see docs/server.md).

One frozen dataclass per kind; :func:`encode` / :func:`decode` turn them into msgpack
arrays whose first element names the kind. The layout is version 1 of the bus format
(the one every process of a deployment must speak); a kind this process does not know
decodes to None and is ignored, so a new kind can be added without breaking older
processes during a rolling deploy.

>>> msg = RoomEvents(record={"code": "K7PQ2X", "ver": 3}, frames=(b"e1",), first_ver=3)
>>> decode(encode(msg)) == msg
True
>>> decode(encode(ProgressFrame(frame=b"p", origin=b"12345678")))
ProgressFrame(frame=b'p', origin=b'12345678')
>>> decode(encode(TournamentChanged(ver=4, urgent=True)))
TournamentChanged(ver=4, urgent=True)
>>> decode(encode(SessionsRevoked(ids=("s1", "s2"))))
SessionsRevoked(ids=('s1', 's2'))
>>> decode(b"\\x91\\xa1z") is None
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgpack

BUS_VERSION = 1


@dataclass(frozen=True, slots=True)
class RoomEvents:
    """A committed room transition: the new room record and its event frames (already
    encoded for clients), versions ``first_ver`` onwards. Kind ``"e"``."""

    record: dict[str, Any]
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
class SessionsRevoked:
    """Account sessions signed out (or ended by the cap, or by a deleted account): every
    process closes its sockets of them (on the accounts channel). Kind ``"s"``."""

    ids: tuple[str, ...]


BusMessage = RoomEvents | ProgressFrame | TournamentChanged | SessionsRevoked

_PACK: Callable[[Any], bytes] = msgpack.Packer(use_bin_type=True).pack


def encode(message: BusMessage) -> bytes:
    if isinstance(message, RoomEvents):
        return _PACK(["e", message.record, list(message.frames), message.first_ver])
    if isinstance(message, TournamentChanged):
        return _PACK(["t", message.ver, message.urgent])
    if isinstance(message, SessionsRevoked):
        return _PACK(["s", list(message.ids)])
    return _PACK(["p", message.frame, message.origin])


def decode(payload: bytes) -> BusMessage | None:
    """The message, or None for a kind this process does not know (ignored)."""
    data = msgpack.unpackb(payload, raw=False)
    kind = data[0]
    if kind == "e":
        return RoomEvents(record=data[1], frames=tuple(data[2]), first_ver=data[3])
    if kind == "p":
        return ProgressFrame(frame=data[1], origin=data[2])
    if kind == "t":
        return TournamentChanged(ver=data[1], urgent=bool(data[2]))
    if kind == "s":
        return SessionsRevoked(ids=tuple(data[1]))
    return None
