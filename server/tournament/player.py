"""A registered tournament player and their totals: the value both the tournament
(:mod:`server.tournament.model`) and its scoring (:mod:`server.tournament.scoring`) use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TPlayer:
    """A registered player and their totals over the recorded rounds."""

    id: str
    name: str
    joined_at: int
    seq: int  # join order (the last tie-break after joined_at)
    first_round: int  # the first round they could play
    status: str = "active"  # active | withdrawn | removed
    points: int = 0  # placement scoring
    charged_ms: int = 0  # time scoring: the charges of the rounds played
    rounds_played: int = 0
    rounds_won: int = 0
    best_place: int | None = None

    def to_record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "joined_at": self.joined_at,
            "seq": self.seq,
            "first_round": self.first_round,
            "status": self.status,
            "points": self.points,
            "charged_ms": self.charged_ms,
            "rounds_played": self.rounds_played,
            "rounds_won": self.rounds_won,
            "best_place": self.best_place,
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> TPlayer:
        return cls(**r)
