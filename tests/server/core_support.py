"""The core without sockets or Redis: hubs over in-memory storage, a manual clock and
connections that record what they are sent (``bench/_support.py``, shared with
``bench/act_cpu.py``)."""

from __future__ import annotations

from typing import Any

from bench._support import (
    COUNTDOWN_MS,
    DEAL,
    ManualClock,
    RecordingConnection,
    SettlingHub,
    connect,
    memory_parts,
    racing_room,
    start_hub,
)
from crescent_wire import protocol as p
from server.storage.memory import MemoryStorage


def reply_of(frames: list[bytes]) -> Any:
    """The one reply a fast-path ``respond`` got."""
    assert len(frames) == 1, frames
    return p.decode_server(frames[0])


__all__ = [
    "COUNTDOWN_MS",
    "DEAL",
    "ManualClock",
    "MemoryStorage",
    "RecordingConnection",
    "SettlingHub",
    "connect",
    "memory_parts",
    "racing_room",
    "reply_of",
    "start_hub",
]
