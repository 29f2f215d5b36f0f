"""Practice games and the solver (docs/protocol.md, "Practice games and solver"): a hint
for the racer of a solo room, and whether a finished round's deal was winnable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from crescent_wire.fields import room_field
from crescent_wire.message import FLAG, WireMessage, absent


@dataclass(frozen=True, slots=True)
class Hint(WireMessage):
    """A hint for the racer of a solo practice room (one seat) while racing."""

    TYPE = "hint"
    room: str
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Winnable(WireMessage):
    """Was the room's deal winnable? Once its race is finished, for any member."""

    TYPE = "winnable"
    room: str
    id: int | None = None


@dataclass(frozen=True, slots=True)
class HintReply(WireMessage):
    """``action``: the next action (notation or ``redeal``) or None; ``finishing``: every
    remaining card goes home by foundation moves alone, ``action`` starting such a line;
    ``source``: ``"solver"`` (a winning line starts with it) or ``"heuristic"``."""

    TYPE = "hint"
    room: str
    action: str | None = field(metadata=absent(None))
    finishing: bool = field(metadata=FLAG)
    source: str = field(metadata=absent("heuristic"))
    id: int | None = None


@dataclass(frozen=True, slots=True)
class WinnableReply(WireMessage):
    """The solver's answer for the finished round's deal: ``result`` ``won`` (``line``
    replays to a win from the deal), ``impossible`` or ``unknown`` (budget spent)."""

    TYPE = "winnable"
    room: str
    code: str
    result: str
    line: tuple[str, ...] | None = field(metadata=absent(None))
    nodes: int = field(metadata=absent(0))
    seconds: float = field(metadata=absent(0.0))
    id: int | None = None


PracticeRequest = Hint | Winnable
PracticeReply = HintReply | WinnableReply

REQUESTS: dict[type[WireMessage], Callable[[dict[str, Any], int | None], PracticeRequest]] = {
    Hint: lambda obj, msg_id: Hint(room=room_field(obj), id=msg_id),
    Winnable: lambda obj, msg_id: Winnable(room=room_field(obj), id=msg_id),
}


REPLIES: dict[str, Callable[[dict[str, Any]], PracticeReply]] = {
    "hint": HintReply.from_wire,
    "winnable": WinnableReply.from_wire,
}
