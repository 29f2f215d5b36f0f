"""The race (docs/protocol.md, "Racing"): a racer's ``act``, its ``ack`` with the new
VIEW or ``refused`` with the reason, and the room's ``progress`` pushes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from crescent_wire.fields import int_field, room_field, str_field
from crescent_wire.limits import MAX_ACTION_LENGTH, MAX_ID
from crescent_wire.message import FLAG, WireMessage, absent


@dataclass(frozen=True, slots=True)
class Act(WireMessage):
    TYPE = "act"
    room: str
    seq: int
    action: str
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Ack(WireMessage):
    TYPE = "ack"
    room: str
    seq: int
    view: dict[str, Any] | None = field(metadata=absent(None))
    duplicate: bool = field(default=False, metadata=FLAG)
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Refused(WireMessage):
    TYPE = "refused"
    room: str
    seq: int
    code: str
    message: str = field(metadata=absent(""))
    message_sv: str = field(metadata=absent(""))
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Progress(WireMessage):
    TYPE = "progress"
    room: str
    round: int
    racers: tuple[dict[str, Any], ...]


RaceReply = Ack | Refused | Progress


def _decode_act(obj: dict[str, Any], msg_id: int | None) -> Act:
    return Act(
        room=room_field(obj),
        seq=int_field(obj, "seq", 1, MAX_ID),
        action=str_field(obj, "action", MAX_ACTION_LENGTH),
        id=msg_id,
    )


REQUESTS: dict[type[WireMessage], Callable[[dict[str, Any], int | None], Act]] = {
    Act: _decode_act,
}

REPLIES: dict[str, Callable[[dict[str, Any]], RaceReply]] = {
    "ack": Ack.from_wire,
    "refused": Refused.from_wire,
    "progress": Progress.from_wire,
}
