"""What a client knows about one tournament: its snapshot and the live round (sans-I/O).

The server answers ``t_create``/``t_join``/``t_get`` with a ``tournament`` snapshot and
then, to subscribers, pushes a new snapshot whenever the tournament changes and a
``t_live`` summary of the running round (docs/protocol.md, "Tournaments").
:class:`TournamentState` keeps the newest of each: a snapshot older than the one held
(its ``ver`` is lower) is ignored, and ``t_live`` of another round than the current
one is dropped.

>>> t = {"code": "TK7PQ2X", "name": "Friday", "phase": "registration", "ver": 3,
...      "round": 0, "rounds": 3, "current": None, "standings": [], "deals": [None] * 3}
>>> state = TournamentState.from_snapshot(t, {"role": "player", "status": "active"})
>>> state.phase, state.role, state.seated_room(), state.finished
('registration', 'player', None, False)
>>> state.load_snapshot({**t, "ver": 2, "phase": "finished"}, {"role": "player"})
False
>>> state.load_snapshot({**t, "ver": 4, "phase": "countdown", "round": 1,
...     "current": {"round": 1, "room": "K7PQ2X", "start_at": 1, "deadline": 2}},
...     {"role": "player", "status": "active"})
True
>>> state.seated_room()
('K7PQ2X', 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crescent_wire.protocol import TLive, TResults


@dataclass
class TournamentState:
    """The client's copy of a tournament; ``role`` is this client's role in it
    (``host``, ``player``, ``spectator`` or ``none``), ``you`` the server's Y map."""

    code: str
    data: dict[str, Any]
    you: dict[str, Any]
    live: TLive | None = None
    results: dict[int, TResults] = field(default_factory=dict)
    # How this connection subscribed (``player``/``spectator``), so that a reconnect
    # subscribes again the same way; None: not subscribed (``t_get`` only).
    subscribed_as: str | None = None

    @classmethod
    def from_snapshot(cls, tournament: dict[str, Any], you: dict[str, Any]) -> TournamentState:
        state = cls(code=str(tournament["code"]).upper(), data={}, you={})
        state.load_snapshot(tournament, you)
        return state

    def load_snapshot(self, tournament: dict[str, Any], you: dict[str, Any]) -> bool:
        """Adopt a snapshot unless it is older than the one held; True if adopted."""
        ver = int(tournament.get("ver", 0))
        if self.data and ver < self.version:
            return False
        self.data = dict(tournament)
        self.you = dict(you)
        if self.subscribed_as == "player" and self.status in ("withdrawn", "removed"):
            # A reconnect must not register again (t_join as player would bring a
            # withdrawn player back): it watches from now on.
            self.subscribed_as = "spectator"
        if self.live is not None and self.live.round != self.round:
            self.live = None
        return True

    def apply_live(self, live: TLive) -> bool:
        """Keep a ``t_live`` of the current (or a newer) round; True if kept."""
        if live.round < self.round:
            return False
        self.live = live
        return True

    # ------------------------------------------------------------------ views

    @property
    def version(self) -> int:
        return int(self.data.get("ver", 0))

    @property
    def phase(self) -> str:
        return str(self.data.get("phase", "registration"))

    @property
    def round(self) -> int:
        """Rounds started so far (0 before round 1)."""
        return int(self.data.get("round", 0))

    @property
    def rounds(self) -> int:
        return int(self.data.get("rounds", 0))

    @property
    def role(self) -> str:
        return str(self.you.get("role") or "none")

    @property
    def is_player(self) -> bool:
        """Registered as a player (also a host who joined as one)."""
        return self.role == "player" or bool(self.you.get("also_player"))

    @property
    def status(self) -> str | None:
        """This player's status (``active``, ``withdrawn``, ``removed``) or None."""
        status = self.you.get("status")
        return None if status is None else str(status)

    @property
    def current(self) -> dict[str, Any] | None:
        current = self.data.get("current")
        return dict(current) if current else None

    @property
    def finished(self) -> bool:
        return self.phase == "finished"

    @property
    def standings(self) -> list[dict[str, Any]]:
        return list(self.data.get("standings") or [])

    def seated_room(self) -> tuple[str, int] | None:
        """``(room code, round)`` of the round under way (countdown or racing), if any."""
        current = self.current
        if current is None or not current.get("room"):
            return None
        return str(current["room"]).upper(), int(current.get("round", self.round))
