"""What a tournament is: :class:`TournamentState`, the fields of
:class:`~server.tournament.model.Tournament`, its record codec (what the tournament port
keeps) and its queries (players, phases, standings, the snapshot and a viewer's Y), with
the values it holds (:class:`Current`, :class:`RoundSummary`). Pure: no I/O; time comes in
as ``now``. The transitions are :class:`~server.tournament.model.Tournament`'s own
(:mod:`server.tournament.model`): every tournament is a ``Tournament``; this base only
keeps what it is apart from how it changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from server.tournament.player import TPlayer
from server.tournament.scoring import standings

STANDINGS_SHOWN = 10  # rows of the standings in a snapshot (t_standings has them all)


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
class TournamentState:
    """A tournament's fields, record and queries; :class:`~server.tournament.model.Tournament`
    adds the transitions."""

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

    # --- serialisation

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
    def from_record(cls, r: dict[str, Any]) -> Self:
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
