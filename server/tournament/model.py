"""A tournament as a value, and its transitions. Pure: no I/O; time comes in as ``now``.

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
from server.tournament.scoring import RoundRow, round_rows, standings

CODE_PREFIX = "T"
STANDINGS_SHOWN = 10  # rows of the standings in a snapshot (t_standings has them all)
# Players listed at most, removed and withdrawn included: re-registrations after a
# withdrawal or a removal cannot grow the list without bound.
LIST_FACTOR = 2


@dataclass(frozen=True, slots=True)
class Current:
    """The round under way: its race room and times."""

    round: int
    room: str
    start_at: int
    deadline: int

    def to_record(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "room": self.room,
            "start_at": self.start_at,
            "deadline": self.deadline,
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> Current:
        return cls(**r)


@dataclass(frozen=True, slots=True)
class RoundSummary:
    round: int
    room: str
    deal: str
    winner: tuple[str, str] | None  # (id, name) of place 1
    racers: int

    def to_record(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "room": self.room,
            "deal": self.deal,
            "winner": list(self.winner) if self.winner else None,
            "racers": self.racers,
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> RoundSummary:
        winner = r["winner"]
        return cls(
            round=r["round"],
            room=r["room"],
            deal=r["deal"],
            winner=(winner[0], winner[1]) if winner else None,
            racers=r["racers"],
        )

    def to_wire(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "deal": self.deal,
            "winner": {"id": self.winner[0], "name": self.winner[1]} if self.winner else None,
            "racers": self.racers,
        }


@dataclass(frozen=True, slots=True)
class Change:
    """A transition's outcome: the new value; ``changed``: store it; ``urgent``: push it
    at once (not within the throttle); ``rows``: a recorded round's rows (stored apart)."""

    tournament: Tournament
    changed: bool = True
    urgent: bool = False
    rows: tuple[RoundRow, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Tournament:
    code: str
    name: str
    host: str
    host_name: str
    variant: str
    rounds: int
    time_limit: int  # seconds per round
    max_players: int
    scoring: str  # placement | time
    # The deal of each round: chosen by the host, or None (a random deal, drawn and
    # certified when the round starts or prepared ahead in ``prepared``). Secret until
    # the round has ended: only ``finished_rounds`` shows deals.
    deals: tuple[str | None, ...]
    prepared: tuple[str, ...] = ()  # certified deals ready for the next random rounds
    ver: int = 0
    phase: str = "registration"  # registration | between | round | finished
    registration_open: bool = True
    paused: bool = False
    created_at: int = 0
    updated_at: int = 0
    finished_at: int | None = None
    players: tuple[TPlayer, ...] = ()
    next_seq: int = 0
    round: int = 0  # rounds started so far
    current: Current | None = None
    finished_rounds: tuple[RoundSummary, ...] = ()
    accounts_only: bool = False  # only signed-in players may register (t_host)

    # --- construction and serialisation

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

    def to_record(self) -> dict[str, Any]:
        """Everything, for storage (not for clients: it holds the deals to come)."""
        return {
            "code": self.code,
            "name": self.name,
            "host": self.host,
            "host_name": self.host_name,
            "variant": self.variant,
            "rounds": self.rounds,
            "time_limit": self.time_limit,
            "max_players": self.max_players,
            "scoring": self.scoring,
            "deals": list(self.deals),
            "prepared": list(self.prepared),
            "ver": self.ver,
            "phase": self.phase,
            "registration_open": self.registration_open,
            "paused": self.paused,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "finished_at": self.finished_at,
            "players": [pl.to_record() for pl in self.players],
            "next_seq": self.next_seq,
            "round": self.round,
            "current": self.current.to_record() if self.current else None,
            "finished_rounds": [r.to_record() for r in self.finished_rounds],
            "accounts_only": self.accounts_only,
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> Tournament:
        return cls(
            code=r["code"],
            name=r["name"],
            host=r["host"],
            host_name=r["host_name"],
            variant=r["variant"],
            rounds=r["rounds"],
            time_limit=r["time_limit"],
            max_players=r["max_players"],
            scoring=r["scoring"],
            deals=tuple(r["deals"]),
            prepared=tuple(r["prepared"]),
            ver=r["ver"],
            phase=r["phase"],
            registration_open=r["registration_open"],
            paused=r["paused"],
            created_at=r["created_at"],
            updated_at=r["updated_at"],
            finished_at=r["finished_at"],
            players=tuple(TPlayer.from_record(p) for p in r["players"]),
            next_seq=r["next_seq"],
            round=r["round"],
            current=Current.from_record(r["current"]) if r["current"] else None,
            finished_rounds=tuple(RoundSummary.from_record(s) for s in r["finished_rounds"]),
            accounts_only=r.get("accounts_only", False),  # absent in records made before it
        )

    # --- queries

    def player(self, player_id: str) -> TPlayer | None:
        for pl in self.players:
            if pl.id == player_id:
                return pl
        return None

    @property
    def registered(self) -> int:
        """Players registered and not removed (``players`` on the wire)."""
        return sum(1 for pl in self.players if pl.status != "removed")

    @property
    def active(self) -> tuple[TPlayer, ...]:
        return tuple(pl for pl in self.players if pl.status == "active")

    @property
    def running(self) -> bool:
        """A round is under way (its countdown or its race)."""
        return self.current is not None

    @property
    def finished(self) -> bool:
        return self.phase == "finished"

    def phase_at(self, now: int) -> str:
        """The phase clients see: ``countdown`` and ``racing`` split a running round."""
        if self.current is not None:
            return "countdown" if now < self.current.start_at else "racing"
        return self.phase

    def next_deal(self) -> str | None:
        """The next round's chosen or prepared deal; None: one must be drawn."""
        if self.round >= self.rounds:
            return None
        chosen = self.deals[self.round]
        if chosen is not None:
            return chosen
        return self.prepared[0] if self.prepared else None

    def random_rounds_left(self) -> int:
        """Rounds still to start whose deal is not chosen (prepared ones included)."""
        return sum(1 for d in self.deals[self.round :] if d is None)

    def standings(self) -> list[dict[str, Any]]:
        return standings(
            self.players,
            scoring=self.scoring,
            finished_rounds=len(self.finished_rounds),
            time_limit_s=self.time_limit,
        )

    def public_dict(
        self, now: int, *, spectators: int = 0, standings: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The tournament as docs/protocol.md's snapshot shows it (the same to everyone);
        ``standings``: :meth:`standings`, if already computed."""
        if standings is None:
            standings = self.standings()
        ended = {s.round: s.deal for s in self.finished_rounds}
        return {
            "code": self.code,
            "link": f"/t/{self.code}",
            "name": self.name,
            "host": {"id": self.host, "name": self.host_name},
            "variant": self.variant,
            "rounds": self.rounds,
            "time_limit": self.time_limit,
            "max_players": self.max_players,
            "scoring": self.scoring,
            "phase": self.phase_at(now),
            "registration_open": self.registration_open,
            "accounts_only": self.accounts_only,
            "paused": self.paused,
            "ver": self.ver,
            "created_at": self.created_at,
            "finished_at": self.finished_at,
            "players": self.registered,
            "spectators": spectators,
            "round": self.round,
            "current": self.current.to_record() if self.current else None,
            "deals": [ended.get(n) for n in range(1, self.rounds + 1)],
            "standings": standings[:STANDINGS_SHOWN],
            "finished_rounds": [s.to_wire() for s in self.finished_rounds],
        }

    def you(
        self,
        viewer: str | None,
        *,
        spectator: bool = False,
        rows: dict[str, dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """docs/protocol.md's Y for ``viewer``; ``rows``: the standings by player id, if
        already computed (one push to 200 players computes them once)."""
        pl = self.player(viewer) if viewer is not None else None
        if viewer is not None and viewer == self.host:
            role = "host"
        elif pl is not None:
            role = "player"
        elif spectator:
            role = "spectator"
        else:
            role = "none"
        row = None
        if pl is not None:
            if rows is None:
                rows = {r["id"]: r for r in self.standings()}
            row = rows.get(pl.id)
        return {
            "role": role,
            "also_player": role == "host" and pl is not None,
            "row": row,
            "status": pl.status if pl is not None else None,
        }

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


__all__ = ["CODE_PREFIX", "Change", "Current", "RoundSummary", "TPlayer", "Tournament"]
