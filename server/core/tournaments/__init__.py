"""Tournaments in the core (docs/tournaments.md): requests, rounds run in race rooms,
results recorded once, throttled pushes to subscribers on every process. The facade
:class:`Tournaments` (:mod:`.service`) is what the hub and the web layer call."""

from __future__ import annotations

from server.core.tournaments.base import (
    CERTIFY_BUDGET_S,
    PUSH_INTERVAL_S,
    TOURNAMENT_REQUESTS,
    is_tournament_code,
    new_tournament_code,
)
from server.core.tournaments.committer import MAX_COMMIT_ATTEMPTS
from server.core.tournaments.export import neutralise_cell
from server.core.tournaments.service import Tournaments

__all__ = [
    "CERTIFY_BUDGET_S",
    "MAX_COMMIT_ATTEMPTS",
    "PUSH_INTERVAL_S",
    "TOURNAMENT_REQUESTS",
    "Tournaments",
    "is_tournament_code",
    "neutralise_cell",
    "new_tournament_code",
]
