"""A room's versioned events as typed values (docs/protocol.md, "event"): what each
kind carries, built by the room's transitions (:mod:`server.lobby.room`).

On the wire an event is one map: ``t``, ``room``, ``ver``, ``kind`` and then the kind's
own fields, flattened (``crescent_wire``'s ``Event``). :meth:`to_wire` gives those own
fields, keys in the order the protocol has always sent them, so the frames' bytes do
not change with the types.

>>> Ready("p1", True).to_wire()
{'player': 'p1', 'ready': True}
>>> Joined("p2", "Bo", "racer").to_wire()
{'player': {'id': 'p2', 'name': 'Bo', 'role': 'racer'}}
>>> RoomEvent(4, HostChanged("p2")).kind
'host'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from server.lobby.race import ResultRow
from server.lobby.values import record_of


class _Flat:
    """An event whose own fields are its dataclass fields, in order."""

    __slots__ = ()
    KIND: ClassVar[str]

    def to_wire(self) -> dict[str, Any]:
        return record_of(self)


@dataclass(frozen=True, slots=True)
class Joined:
    """A member joined (``player``: their id; on the wire the member's map)."""

    KIND: ClassVar[str] = "joined"
    player: str
    name: str
    role: str

    def to_wire(self) -> dict[str, Any]:
        return {"player": {"id": self.player, "name": self.name, "role": self.role}}


@dataclass(frozen=True, slots=True)
class Left(_Flat):
    KIND: ClassVar[str] = "left"
    player: str


@dataclass(frozen=True, slots=True)
class HostChanged(_Flat):
    """The host left: ``player`` is the new host."""

    KIND: ClassVar[str] = "host"
    player: str


@dataclass(frozen=True, slots=True)
class Ready(_Flat):
    KIND: ClassVar[str] = "ready"
    player: str
    ready: bool


@dataclass(frozen=True, slots=True)
class Connected(_Flat):
    KIND: ClassVar[str] = "connected"
    player: str
    connected: bool


@dataclass(frozen=True, slots=True)
class Countdown(_Flat):
    """The race starts at ``start_at`` (server ms); ``deadline`` None: no time limit."""

    KIND: ClassVar[str] = "countdown"
    start_at: int
    deadline: int | None
    round: int


@dataclass(frozen=True, slots=True)
class Finished:
    """The results table; ``deal`` only once it may be shown (else None)."""

    KIND: ClassVar[str] = "finished"
    results: tuple[ResultRow, ...]
    deal: str | None

    def to_wire(self) -> dict[str, Any]:
        return {"results": [row.to_record() for row in self.results], "deal": self.deal}


@dataclass(frozen=True, slots=True)
class Rematch(_Flat):
    KIND: ClassVar[str] = "rematch"
    round: int
    phase: str
    deal_known: bool


RoomEventData = Joined | Left | HostChanged | Ready | Connected | Countdown | Finished | Rematch


@dataclass(frozen=True, slots=True)
class RoomEvent:
    """One versioned event: its version and what it says (``data``; its kind is
    ``data.KIND``)."""

    ver: int
    data: RoomEventData

    @property
    def kind(self) -> str:
        return self.data.KIND


__all__ = [
    "Connected",
    "Countdown",
    "Finished",
    "HostChanged",
    "Joined",
    "Left",
    "Ready",
    "Rematch",
    "RoomEvent",
    "RoomEventData",
]
