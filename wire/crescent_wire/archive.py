"""The archive (docs/protocol.md, "The archive"): a finished game's replay, by its id.
The same document is served over HTTP at ``/api/games/<id>.json``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from crescent_wire.fields import str_field
from crescent_wire.message import WireMessage, absent

MAX_GAME_ID = 64  # an archived game's id: 1 … 64 of A-Z a-z 0-9 _ . : -


@dataclass(frozen=True, slots=True)
class Replay(WireMessage):
    """The replay of an archived game (``game``: its id): any player, once revealed."""

    TYPE = "replay"
    game: str
    id: int | None = None


@dataclass(frozen=True, slots=True)
class ReplayReply(WireMessage):
    """``replay``: the game as a ``crescent-replay/1`` document (docs/replay.md)."""

    TYPE = "replay"
    game: str
    replay: dict[str, Any] = field(metadata=absent(dict))
    id: int | None = None


ArchiveRequest = Replay
ArchiveReply = ReplayReply

REQUESTS: dict[type[WireMessage], Callable[[dict[str, Any], int | None], ArchiveRequest]] = {
    Replay: lambda obj, msg_id: Replay(game=str_field(obj, "game", MAX_GAME_ID), id=msg_id),
}

REPLIES: dict[str, Callable[[dict[str, Any]], ArchiveReply]] = {
    "replay": ReplayReply.from_wire,
}
