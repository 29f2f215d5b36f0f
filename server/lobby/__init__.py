"""Rooms and races: pure logic (no I/O), time passed in as ``now`` (server ms).

- :mod:`server.lobby.room`: the ``Room`` value and its transitions (join, leave, ready,
  start/countdown, finish, rematch, host change), each returning the new room and its
  versioned events.
- :mod:`server.lobby.race`: one racer's game (engine + resignation), progress, the end of
  the race and the ranking.
"""

from __future__ import annotations

import secrets

from crescent_wire.protocol import ROOM_CODE_ALPHABET, ROOM_CODE_LENGTH
from server.lobby.race import (
    RESIGN,
    TERMINAL,
    RacerGame,
    Refusal,
    initial_progress,
    race_over,
    rank,
    wire_progress,
)
from server.lobby.room import Member, Room, RoomEvent, Transition

__all__ = [
    "RESIGN", "TERMINAL", "Member", "RacerGame", "Refusal", "Room", "RoomEvent", "Transition",
    "initial_progress", "is_room_code", "new_room_code", "race_over", "rank", "wire_progress",
]


def new_room_code() -> str:
    """A random join code: 6 characters without look-alikes (no 0/O, 1/I/L)."""
    return "".join(secrets.choice(ROOM_CODE_ALPHABET) for _ in range(ROOM_CODE_LENGTH))


def is_room_code(text: str) -> bool:
    """Whether ``text`` (already upper case) can be a join code."""
    return len(text) == ROOM_CODE_LENGTH and all(c in ROOM_CODE_ALPHABET for c in text)
