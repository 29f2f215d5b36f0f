"""Rooms and races: pure logic (no I/O), time passed in as ``now`` (server ms).

- :mod:`server.lobby.room`: the ``Room`` value and its transitions (join, leave, ready,
  start/countdown, finish, rematch, host change), each returning the new room and its
  versioned events; :mod:`server.lobby.room_state`: its fields, record and queries
  (``RoomState``, its base) and ``Member``.
- :mod:`server.lobby.events`: those events as typed values, one class per kind.
- :mod:`server.lobby.race`: one racer's game (engine + resignation), progress, the end of
  the race and the ranking.
"""

from __future__ import annotations

from server.lobby.events import RoomEvent, RoomEventData
from server.lobby.race import (
    RESIGN,
    TERMINAL,
    TIMEOUT,
    RacerGame,
    RacerProgress,
    Refusal,
    ResultRow,
    initial_progress,
    race_over,
    rank,
    wire_progress,
)
from server.lobby.room import Member, Room, Transition

__all__ = [
    "RESIGN",
    "TERMINAL",
    "TIMEOUT",
    "Member",
    "RacerGame",
    "RacerProgress",
    "Refusal",
    "ResultRow",
    "Room",
    "RoomEvent",
    "RoomEventData",
    "Transition",
    "initial_progress",
    "race_over",
    "rank",
    "wire_progress",
]
