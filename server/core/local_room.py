"""A room this process serves (:class:`~server.core.rooms.Rooms`' local rooms): the latest
room, its sockets here, what was forwarded to them, its deadline timer and lock."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from server.core.ports import Connection
from server.lobby import Room


@dataclass
class LocalRoom:
    room: Room
    conns: set[Connection] = field(default_factory=set)
    sent_ver: int = 0  # the highest event version already forwarded to the local sockets
    player_conns: dict[str, int] = field(default_factory=dict)
    deadline_timer: asyncio.TimerHandle | None = None
    # Serialises this process's transitions of the room: four racers readying at once
    # then commit one after the other on the fresh cached room instead of losing the
    # compare-and-set to each other and reloading from storage (1 + 2 + 3 + 4 attempts).
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # (round, player) of offline racers this process has resigned (or is resigning)
    resigned: set[tuple[int, str]] = field(default_factory=set)
