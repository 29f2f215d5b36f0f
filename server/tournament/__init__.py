"""Tournaments (issue #13, docs/tournaments.md): pure logic, no I/O; time comes in as
``now`` (server ms).

- :mod:`server.tournament.model`: the ``Tournament`` value and its transitions
  (registration, host operations, rounds), each returning the new value;
  :mod:`server.tournament.state`: its fields, record and queries (``TournamentState``,
  its base) and the values it holds (``Current``, ``RoundSummary``).
- :mod:`server.tournament.scoring`: scoring a round's results, the standings and their
  tie-breaks, the live summary of a round.
"""

from __future__ import annotations

from server.tournament.model import (
    CODE_PREFIX,
    Change,
    Current,
    RoundSummary,
    Tournament,
    TPlayer,
)
from server.tournament.scoring import (
    ALL_CARDS,
    CARD_PENALTY_MS,
    MISSED_ROUND_EXTRA_MS,
    RoundRow,
    live_rows,
    round_rows,
    standings,
)

__all__ = [
    "ALL_CARDS",
    "CARD_PENALTY_MS",
    "CODE_PREFIX",
    "MISSED_ROUND_EXTRA_MS",
    "Change",
    "Current",
    "RoundRow",
    "RoundSummary",
    "TPlayer",
    "Tournament",
    "live_rows",
    "round_rows",
    "standings",
]
