"""A tournament as a value, and its transitions (its fields, record and queries:
:mod:`server.tournament.state`). Pure: no I/O; time comes in as ``now``.

Every transition returns a :class:`Change`: the new tournament (version one higher when
something changed) and whether clients must hear of it at once (``urgent``: a round
started or ended, the tournament finished) rather than within the push throttle. The
caller stores the new value only if the stored version is still ``ver``
(compare-and-set), like rooms.

>>> t = Tournament.create("TK7PQ2X", name="Cup", host=("h", "Host"), variant="N",
...                       rounds=2, time_limit=60, max_players=4, scoring="placement",
...                       deals=None, now=0)
>>> t = t.join("a", "Ada", now=1).tournament.join("b", "Bo", now=2).tournament
>>> c = t.start_round("h", room="K7PQ2X", deal="CR1-N-AAAAAAB", start_at=3010, now=10)
>>> c.tournament.phase_at(10), c.tournament.phase_at(3010), c.urgent
('countdown', 'racing', True)
>>> results = [ResultRow(1, "b", "Bo", "won", 50_000, 300, 104),
...            ResultRow(2, "a", "Ada", "timeout", 60_000, 90, 70)]
>>> c = c.tournament.record_round(1, "K7PQ2X", results, deal="CR1-N-AAAAAAB", now=63_010)
>>> [(r["id"], r["points"]) for r in c.tournament.standings()]
[('b', 2), ('a', 1)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from crescent_wire.errors import TournamentError
from server.lobby.race import ResultRow
from server.tournament.player import TPlayer
from server.tournament.scoring import RoundRow, round_rows
from server.tournament.state import Current, RoundSummary, TournamentState

CODE_PREFIX = "T"
# Players listed at most, removed and withdrawn included: re-registrations after a
# withdrawal or a removal cannot grow the list without bound.
LIST_FACTOR = 2


@dataclass(frozen=True, slots=True)
class Change:
    """A transition's outcome: the new value; ``changed``: store it; ``urgent``: push it
    at once (not within the throttle); ``rows``: a recorded round's rows (stored apart)."""

    tournament: Tournament
    changed: bool = True
    urgent: bool = False
    rows: tuple[RoundRow, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Tournament(TournamentState):
    """A tournament: :class:`TournamentState` (its fields, record and queries) and its
    transitions."""

    # --- construction

    @classmethod
    def create(
        cls,
        code: str,
        *,
        name: str,
        host: tuple[str, str],
        variant: str,
        rounds: int,
        time_limit: int,
        max_players: int,
        scoring: str,
        deals: tuple[str, ...] | None,
        now: int,
    ) -> Tournament:
        if deals is not None and len(deals) != rounds:
            raise ValueError("one deal per round")
        return cls(
            code=code,
            name=name,
            host=host[0],
            host_name=host[1],
            variant=variant,
            rounds=rounds,
            time_limit=time_limit,
            max_players=max_players,
            scoring=scoring,
            deals=tuple(deals) if deals is not None else (None,) * rounds,
            created_at=now,
            updated_at=now,
        )

    # --- transitions

    def _next(self, now: int, *, urgent: bool = False, **changes: Any) -> Change:
        return Change(replace(self, ver=self.ver + 1, updated_at=now, **changes), urgent=urgent)

    def _same(self) -> Change:
        return Change(self, changed=False)

    def join(self, player_id: str, name: str, *, now: int, account: bool = False) -> Change:
        """Register a player (or resume one already registered: no change); ``account``:
        the player is signed in to an account (an accounts-only tournament needs it)."""
        pl = self.player(player_id)
        if pl is not None and pl.status == "active":
            return self._same()
        if self.accounts_only and not account:
            raise TournamentError("accounts_only")
        if pl is not None and pl.status == "removed":
            raise TournamentError("removed_from_tournament")
        if self.finished:
            raise TournamentError("tournament_over")
        if not self.registration_open:
            raise TournamentError("registration_closed")
        if len(self.active) >= self.max_players or (
            pl is None and len(self.players) >= LIST_FACTOR * self.max_players
        ):
            raise TournamentError("tournament_full")
        if pl is not None:  # withdrawn: back in from the next round on
            back = replace(pl, status="active", name=name, first_round=self.round + 1)
            players = tuple(back if p.id == player_id else p for p in self.players)
            return self._next(now, players=players)
        new = TPlayer(
            id=player_id, name=name, joined_at=now, seq=self.next_seq, first_round=self.round + 1
        )
        return self._next(now, players=(*self.players, new), next_seq=self.next_seq + 1)

    def _with_status(self, player_id: str, status: str, now: int) -> Change:
        pl = self.player(player_id)
        if pl is None or pl.status == "removed":
            raise TournamentError("not_registered")
        if pl.status == status:
            return self._same()
        changed = replace(pl, status=status)
        return self._next(
            now, players=tuple(changed if p.id == player_id else p for p in self.players)
        )

    def withdraw(self, player_id: str, *, now: int) -> Change:
        """The player withdraws (keeps their points; resigned in a running round)."""
        if self.finished:
            raise TournamentError("tournament_over")
        return self._with_status(player_id, "withdrawn", now)

    def check_host(self, player_id: str) -> None:
        if player_id != self.host:
            raise TournamentError("not_host")
        if self.finished:
            raise TournamentError("tournament_over")

    def set_registration(self, player_id: str, open_: bool, *, now: int) -> Change:
        self.check_host(player_id)
        if self.registration_open == open_:
            return self._same()
        return self._next(now, registration_open=open_)

    def set_accounts_only(self, player_id: str, *, now: int) -> Change:
        """From now on only signed-in players register (those registered stay)."""
        self.check_host(player_id)
        if self.finished:
            raise TournamentError("tournament_over")
        if self.accounts_only:
            return self._same()
        return self._next(now, accounts_only=True)

    def set_paused(self, player_id: str, paused: bool, *, now: int) -> Change:
        self.check_host(player_id)
        if paused and self.running:
            raise TournamentError("round_running")
        if self.paused == paused:
            return self._same()
        return self._next(now, paused=paused)

    def remove(self, host_id: str, player_id: str, *, now: int) -> Change:
        """The host removes a player (cannot rejoin; listed after everyone). Not the
        host themself: a host who plays withdraws instead."""
        self.check_host(host_id)
        if player_id == host_id:
            raise TournamentError("cannot_remove_host")
        return self._with_status(player_id, "removed", now)

    def check_can_start(self, player_id: str) -> None:
        self.check_host(player_id)
        if self.running:
            raise TournamentError("round_running")
        if self.paused:
            raise TournamentError("tournament_paused")
        if self.round >= self.rounds:
            raise TournamentError("no_more_rounds")
        if not self.active:
            raise TournamentError("no_players")

    def start_round(
        self,
        player_id: str,
        *,
        room: str,
        deal: str,
        start_at: int,
        now: int,
        seated: frozenset[str] | None = None,
    ) -> Change:
        """The host starts the next round in race room ``room`` (created by the caller,
        seating ``seated``: the active players it read, racing from ``start_at``) dealing
        ``deal``. A player who registered after that read is not seated: they play from
        the round after this one."""
        self.check_can_start(player_id)
        players = self.players
        if seated is not None:
            this_round = self.round + 1
            players = tuple(
                replace(pl, first_round=this_round + 1)
                if pl.status == "active" and pl.id not in seated and pl.first_round <= this_round
                else pl
                for pl in players
            )
        current = Current(
            round=self.round + 1,
            room=room,
            start_at=start_at,
            deadline=start_at + self.time_limit * 1000,
        )
        prepared = self.prepared
        if self.deals[self.round] is None and prepared and prepared[0] == deal:
            prepared = prepared[1:]
        return self._next(
            now,
            urgent=True,
            phase="round",
            round=self.round + 1,
            current=current,
            prepared=prepared,
            players=players,
        )

    def add_prepared(self, deal: str, *, now: int) -> Change:
        """A certified deal for a random round to come (kept secret)."""
        if self.finished or len(self.prepared) >= self.random_rounds_left():
            return self._same()
        return self._next(now, prepared=(*self.prepared, deal))

    def record_round(
        self, round_: int, room: str, results: Sequence[ResultRow], *, deal: str, now: int
    ) -> Change:
        """Score the round that ran in ``room`` from its results table (once: a round
        already recorded is no change). The last round ends the tournament."""
        current = self.current
        if current is None or current.round != round_ or current.room != room:
            return self._same()
        rows = round_rows(results, scoring=self.scoring, time_limit_s=self.time_limit)
        by_id = {r.id: r for r in rows}
        # Place 1 wins the round, unless they resigned (then nobody does: the racers
        # behind them were placed lower, so none of them won it either).
        resigned = {r.player for r in results if r.status == "resigned"}
        winner_row = rows[0] if rows and rows[0].id not in resigned else None
        players = []
        for pl in self.players:
            row = by_id.get(pl.id)
            if row is None:
                players.append(pl)
                continue
            place = row.place
            players.append(
                replace(
                    pl,
                    points=pl.points + (row.points or 0),
                    charged_ms=pl.charged_ms + (row.time_charged_ms or 0),
                    rounds_played=pl.rounds_played + 1,
                    rounds_won=pl.rounds_won + (1 if row is winner_row else 0),
                    best_place=place if pl.best_place is None else min(pl.best_place, place),
                )
            )
        winner = (winner_row.id, winner_row.name) if winner_row else None
        summary = RoundSummary(round=round_, room=room, deal=deal, winner=winner, racers=len(rows))
        last = round_ >= self.rounds
        change = self._next(
            now,
            urgent=True,
            players=tuple(players),
            current=None,
            phase="finished" if last else "between",
            finished_at=now if last else None,
            finished_rounds=(*self.finished_rounds, summary),
        )
        return replace(change, rows=tuple(rows))

    def end(self, player_id: str, *, now: int) -> Change:
        """The host ends the tournament now (a running round is recorded first, by the
        caller: ``round_running`` if it is not)."""
        self.check_host(player_id)
        if self.running:
            raise TournamentError("round_running")
        return self._next(now, urgent=True, phase="finished", finished_at=now, prepared=())


__all__ = [
    "CODE_PREFIX",
    "Change",
    "Current",
    "RoundSummary",
    "TPlayer",
    "Tournament",
    "TournamentState",
]
