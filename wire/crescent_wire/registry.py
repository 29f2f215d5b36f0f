"""The one registry of message types, built once from the areas' declared messages.

Each area module (session, race, practice, daily, tournaments) declares its requests
with their strict decoders (``REQUESTS``: class to decoder; the class's ``TYPE`` is the
wire type) and its replies with their lenient decoders (``REPLIES``: wire type to
decoder; one class may answer to several types). A type declared twice is an error
here, at import, not a silently shadowed decoder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from crescent_wire import archive, daily, practice, race, session, tournaments
from crescent_wire.archive import ArchiveReply, ArchiveRequest
from crescent_wire.daily import DailyReply, DailyRequest
from crescent_wire.message import WireMessage
from crescent_wire.practice import PracticeReply, PracticeRequest
from crescent_wire.race import Act, RaceReply
from crescent_wire.session import SessionReply, SessionRequest
from crescent_wire.tournaments import TournamentReply, TournamentRequest

ClientMessage = (
    SessionRequest | Act | PracticeRequest | DailyRequest | TournamentRequest | ArchiveRequest
)
ServerMessage = (
    SessionReply | RaceReply | PracticeReply | DailyReply | TournamentReply | ArchiveReply
)
Message = ClientMessage | ServerMessage

ClientDecoder = Callable[[dict[str, Any], int | None], ClientMessage]
ServerDecoder = Callable[[dict[str, Any]], ServerMessage]

_REQUESTS: tuple[Mapping[type[WireMessage], ClientDecoder], ...] = (
    session.REQUESTS,
    race.REQUESTS,
    practice.REQUESTS,
    daily.REQUESTS,
    tournaments.REQUESTS,
    archive.REQUESTS,
)
_REPLIES: tuple[Mapping[str, ServerDecoder], ...] = (
    session.REPLIES,
    race.REPLIES,
    practice.REPLIES,
    daily.REPLIES,
    tournaments.REPLIES,
    archive.REPLIES,
)

_V = TypeVar("_V")


def merge_unique(pairs: Iterable[tuple[str, _V]], what: str) -> dict[str, _V]:
    """The pairs as one table; a wire type that comes twice is a ``TypeError``."""
    merged: dict[str, _V] = {}
    for kind, value in pairs:
        if kind in merged:
            raise TypeError(f"{what} type {kind!r} is declared twice")
        merged[kind] = value
    return merged


CLIENT_CLASSES: tuple[type[WireMessage], ...] = tuple(cls for t in _REQUESTS for cls in t)
CLIENT_DECODERS: dict[str, ClientDecoder] = merge_unique(
    ((cls.TYPE, decoder) for table in _REQUESTS for cls, decoder in table.items()), "request"
)
SERVER_DECODERS: dict[str, ServerDecoder] = merge_unique(
    (item for table in _REPLIES for item in table.items()), "reply"
)
