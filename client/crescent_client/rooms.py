"""What a client knows about one room: the snapshot kept current by events (sans-I/O).

The server sends a ``room`` snapshot on join and then versioned ``event`` messages
(docs/protocol.md, "event"). :class:`RoomState` applies them in order, notices gaps
(so the client can ``sync``), keeps the latest ``progress`` of every racer and,
for a racer, the own game: its VIEW and the highest acknowledged ``seq``.

>>> snap = {"code": "K7PQ2X", "ver": 3, "phase": "waiting", "round": 1, "host": "p1",
...         "players": [{"id": "p1", "name": "Ada", "role": "racer", "ready": False,
...                      "connected": True, "progress": None}]}
>>> room = RoomState.from_snapshot(snap, {"role": "racer", "game": None, "last_seq": 0})
>>> room.apply_event(4, "ready", {"player": "p1", "ready": True})
'applied'
>>> room.players["p1"]["ready"], room.ver
(True, 4)
>>> room.apply_event(6, "left", {"player": "p1"})
'gap'
>>> room.apply_event(5, "countdown", {"start_at": 1000, "deadline": None, "round": 1})
'applied'
>>> room.phase_at(999), room.phase_at(1000)
('countdown', 'racing')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

EventOutcome = Literal["applied", "stale", "gap"]


@dataclass
class RoomState:
    """The client's copy of a room; ``role`` is this client's role in it."""

    code: str
    role: str
    ver: int
    phase: str
    round: int
    host: str | None
    start_at: int | None
    deadline: int | None
    deal: str | None
    players: dict[str, dict[str, Any]]
    results: list[dict[str, Any]] | None
    settings: dict[str, Any]
    view: dict[str, Any] | None = None
    last_seq: int = 0
    progress: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_snapshot(cls, room: dict[str, Any], you: dict[str, Any]) -> RoomState:
        state = cls(
            code=room["code"],
            role=you.get("role") or "spectator",
            ver=0,
            phase="waiting",
            round=0,
            host=None,
            start_at=None,
            deadline=None,
            deal=None,
            players={},
            results=None,
            settings={},
        )
        state.load_snapshot(room, you)
        return state

    def load_snapshot(self, room: dict[str, Any], you: dict[str, Any]) -> None:
        """Replace everything with a fresh snapshot (after join or a too-old ``sync``)."""
        if room.get("round", 0) != self.round:
            self.progress = {}
        self.ver = int(room.get("ver", 0))
        self.phase = room.get("phase", "waiting")
        self.round = int(room.get("round", 0))
        self.host = room.get("host")
        self.start_at = room.get("start_at")
        self.deadline = room.get("deadline")
        self.deal = room.get("deal")
        self.results = room.get("results")
        self.settings = {k: room.get(k) for k in ("variant", "seats", "time_limit", "link")}
        self.players = {p["id"]: dict(p) for p in room.get("players", [])}
        for player in room.get("players", []):
            if player.get("progress"):
                self.progress[player["id"]] = player["progress"]
        if you.get("role"):
            self.role = you["role"]
        self.view = you.get("game")
        self.last_seq = int(you.get("last_seq") or 0)

    def phase_at(self, server_now_ms: int) -> str:
        """The phase at a server time: ``countdown`` turns into ``racing`` at ``start_at``
        by itself (the server sends no event for that moment)."""
        if (
            self.phase == "countdown"
            and self.start_at is not None
            and server_now_ms >= self.start_at
        ):
            return "racing"
        return self.phase

    def apply_event(self, ver: int, kind: str, data: dict[str, Any]) -> EventOutcome:
        """Apply one versioned event; ``gap`` means events were missed: ``sync``."""
        if ver <= self.ver:
            return "stale"
        if ver > self.ver + 1:
            return "gap"
        self.ver = ver
        if kind == "joined":
            player = dict(data["player"])
            player.setdefault("ready", False)
            player.setdefault("connected", True)
            self.players[player["id"]] = player
        elif kind == "left":
            self.players.pop(data["player"], None)
        elif kind == "ready":
            if data["player"] in self.players:
                self.players[data["player"]]["ready"] = data["ready"]
        elif kind == "connected":
            if data["player"] in self.players:
                self.players[data["player"]]["connected"] = data["connected"]
        elif kind == "countdown":
            self.phase = "countdown"
            self.start_at = data.get("start_at")
            self.deadline = data.get("deadline")
            self.new_round(int(data.get("round", self.round)))
        elif kind == "finished":
            self.phase = "finished"
            self.results = data.get("results")
            self.deal = data.get("deal")
        elif kind == "rematch":
            self.phase = data.get("phase", "waiting")
            self.new_round(int(data.get("round", self.round + 1)))
            self.start_at = self.deadline = None
            self.results = None
            self.deal = None
            for player in self.players.values():
                player["ready"] = False
        elif kind == "host":
            self.host = data["player"]
        # Unknown kinds still advance the version: forward compatibility.
        return "applied"

    def new_round(self, round_: int) -> None:
        """A new round starts a new game: sequence numbers start again at 1."""
        if round_ != self.round:
            self.round = round_
            self.view = None
            self.last_seq = 0
            self.progress = {}

    def apply_progress(self, round_: int, racers: list[dict[str, Any]] | tuple[Any, ...]) -> None:
        if round_ != self.round:
            return
        for racer in racers:
            self.progress[racer["player"]] = racer
