"""The act decision: what one ``act`` (or a server-side resign) leads to. Pure: no I/O,
time comes in as ``now``.

:func:`decide` looks at the room, the racer's game in memory (None: not loaded) and the
request, and returns one of:

- :class:`Reject`: the room does not allow it (an ``error`` reply: not_started, …);
- :class:`NeedsLoad`: the game is not in memory: load it and decide again;
- :class:`Duplicate`: the seq was already stored (the ack again, ``duplicate``); a
  stored seq with a different action is a :class:`Reject` (``seq_conflict``);
- :class:`Refuse`: the rules refuse it (a ``refused`` reply; the game is unchanged);
- :class:`Append`: the action is applied in memory; store it, then ack.

The caller (:mod:`server.core.games`) does the I/O the decision asks for, in one place
for the fast path, the slow path, retries and server-side resigns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from crescent_wire.errors import RoomError
from server.lobby import RESIGN, TERMINAL, RacerGame, RacerProgress, Refusal, Room


@dataclass(frozen=True, slots=True)
class Reject:
    error: RoomError


@dataclass(frozen=True, slots=True)
class NeedsLoad:
    pass


@dataclass(frozen=True, slots=True)
class Duplicate:
    """Already stored (a client retry) — or, server side, nothing left to do."""


@dataclass(frozen=True, slots=True)
class Refuse:
    refusal: Refusal


class Append(NamedTuple):
    """Store ``action`` if the log still has ``expected_len`` actions and last seq
    ``expected_last_seq``; then the last seq is ``seq`` and the progress ``progress``.
    (A named tuple: one is built per action, on the hot path.)"""

    expected_len: int
    expected_last_seq: int
    seq: int
    progress: RacerProgress


Decision = Reject | NeedsLoad | Duplicate | Refuse | Append
NEEDS_LOAD = NeedsLoad()
DUPLICATE = Duplicate()


def decide(
    room: Room,
    racer: RacerGame | None,
    player_id: str,
    seq: int,
    action: str,
    now: int,
    *,
    server_side: bool = False,
) -> Decision:
    """The decision for ``action`` with client ``seq`` (see the module docstring).

    On :class:`Append` the action has been applied to ``racer``: if storing it fails,
    the caller must drop ``racer`` and rebuild it from the log. A server-side action
    (a resign on leave) skips the room and duplicate checks and does nothing to a game
    already over.
    """
    if not server_side and not (room.is_racing(now) and room.is_entrant(player_id)):
        try:
            room.check_can_act(player_id, now)
        except RoomError as err:
            return Reject(err)
        return Reject(RoomError("not_started"))  # unreachable: check_can_act names it
    if racer is None:
        return NEEDS_LOAD
    if server_side:
        if racer.status in TERMINAL:
            return DUPLICATE
        seq = racer.last_seq
    elif seq <= racer.last_seq:
        if racer.reuses_seq(seq, action):
            return Reject(RoomError("seq_conflict"))
        return DUPLICATE
    expected_len, expected_last_seq = racer.log_len, racer.last_seq
    start_at = room.start_at if room.start_at is not None else now
    refusal = racer.apply(action, elapsed_ms=max(0, now - start_at))
    if refusal is not None:
        return Refuse(refusal)
    return Append(
        expected_len, expected_last_seq, max(seq, expected_last_seq), racer.progress(player_id, now)
    )


__all__ = [
    "DUPLICATE",
    "NEEDS_LOAD",
    "RESIGN",
    "Append",
    "Decision",
    "Duplicate",
    "NeedsLoad",
    "Refuse",
    "Reject",
    "decide",
]
