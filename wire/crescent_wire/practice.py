"""Practice games and the solver (docs/protocol.md, "Practice games and solver"): a hint
for the racer of a solo room, and whether a finished round's deal was winnable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from crescent_wire.fields import room_field
from crescent_wire.message import WireMessage


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
    action: str | None
    finishing: bool
    source: str
    id: int | None = None


@dataclass(frozen=True, slots=True)
class WinnableReply(WireMessage):
    """The solver's answer for the finished round's deal: ``result`` ``won`` (``line``
    replays to a win from the deal), ``impossible`` or ``unknown`` (budget spent)."""

    TYPE = "winnable"
    room: str
    code: str
    result: str
    line: tuple[str, ...] | None
    nodes: int
    seconds: float
    id: int | None = None


PracticeRequest = Hint | Winnable
PracticeReply = HintReply | WinnableReply

REQUESTS: dict[type[WireMessage], Callable[[dict[str, Any], int | None], PracticeRequest]] = {
    Hint: lambda obj, msg_id: Hint(room=room_field(obj), id=msg_id),
    Winnable: lambda obj, msg_id: Winnable(room=room_field(obj), id=msg_id),
}


def _winnable_reply(obj: dict[str, Any]) -> WinnableReply:
    line = obj.get("line")
    return WinnableReply(
        room=obj["room"],
        code=obj["code"],
        result=obj["result"],
        line=tuple(line) if line is not None else None,
        nodes=obj.get("nodes", 0),
        seconds=obj.get("seconds", 0.0),
        id=obj.get("id"),
    )


REPLIES: dict[str, Callable[[dict[str, Any]], PracticeReply]] = {
    "hint": lambda obj: HintReply(
        room=obj["room"],
        action=obj.get("action"),
        finishing=bool(obj.get("finishing", False)),
        source=obj.get("source", "heuristic"),
        id=obj.get("id"),
    ),
    "winnable": _winnable_reply,
}
