"""What a room is: :class:`RoomState`, the fields of :class:`~server.lobby.room.Room`, its
record codec (what the storage port keeps) and its queries (phases, who may act, the
snapshot a viewer sees), and :class:`Member`, one of its players. Pure: no I/O; time comes
in as ``now`` (ms). The transitions are :class:`~server.lobby.room.Room`'s own
(:mod:`server.lobby.room`): every room is a ``Room``; this base only keeps what it is
apart from how it changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from crescent_wire.errors import RoomError
from server.lobby.race import ResultRow

DEFAULT_COUNTDOWN_MS = 3000


@dataclass(frozen=True, slots=True)
class Member:
    """A player in a room: a racer (seated) or a spectator."""

    id: str
    name: str
    role: str = "racer"
    ready: bool = False
    connected: bool = True
    # Server time the member was marked offline (not on the wire): a racer offline for
    # longer than the server's setting is resigned by the server.
    disconnected_at: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """As clients see it."""
        return {
            "id": self.id,
            "name": self.name,
            "role": self.role,
            "ready": self.ready,
            "connected": self.connected,
        }

    def to_record(self) -> dict[str, Any]:
        """For storage: ``to_dict`` plus what only the server knows."""
        return {**self.to_dict(), "disconnected_at": self.disconnected_at}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Member:
        return cls(
            id=d["id"],
            name=d["name"],
            role=d["role"],
            ready=d["ready"],
            connected=d["connected"],
            disconnected_at=d.get("disconnected_at"),
        )


@dataclass(frozen=True, slots=True)
class RoomState:
    """A room's fields, record and queries; :class:`~server.lobby.room.Room` adds the
    transitions."""

    code: str
    host: str | None
    variant: str
    deal: str
    # Created with a chosen deal: a known-deal room, whose code every member sees
    # from the start (its chooser knows it, so nobody may be behind). A random
    # deal stays secret from everyone, host included, until the race is finished.
    deal_public: bool
    seats: int
    time_limit: int | None  # seconds
    countdown_ms: int = DEFAULT_COUNTDOWN_MS
    ver: int = 0
    phase: str = "waiting"
    round: int = 1
    start_at: int | None = None
    deadline: int | None = None
    finished_at: int | None = None
    members: tuple[Member, ...] = ()
    entrants: tuple[tuple[str, str], ...] = ()  # (id, name) of this round's racers
    results: tuple[ResultRow, ...] | None = None
    created_at: int = 0
    # A daily-challenge room: its deal stays hidden until this time (server ms), even
    # after the race is finished (docs/daily.md). None: the usual rules.
    deal_sealed_until: int | None = None
    # A tournament round's room (docs/tournaments.md): the tournament's code. Its racers
    # are seated by the server; it sends no progress frames and no per-member events
    # (joined, left, connected), and never resigns an offline racer. None: a usual room.
    tournament: str | None = None

    # --- serialisation

    def to_record(self) -> dict[str, Any]:
        """Everything, for storage (not for clients: it holds the deal code)."""
        return {
            "code": self.code,
            "host": self.host,
            "variant": self.variant,
            "deal": self.deal,
            "deal_public": self.deal_public,
            "seats": self.seats,
            "time_limit": self.time_limit,
            "countdown_ms": self.countdown_ms,
            "ver": self.ver,
            "phase": self.phase,
            "round": self.round,
            "start_at": self.start_at,
            "deadline": self.deadline,
            "finished_at": self.finished_at,
            "members": [m.to_record() for m in self.members],
            "entrants": [list(e) for e in self.entrants],
            "results": self._result_records(),
            "created_at": self.created_at,
            "deal_sealed_until": self.deal_sealed_until,
            "tournament": self.tournament,
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> Self:
        return cls(
            code=r["code"],
            host=r["host"],
            variant=r["variant"],
            deal=r["deal"],
            deal_public=r["deal_public"],
            seats=r["seats"],
            time_limit=r["time_limit"],
            countdown_ms=r["countdown_ms"],
            ver=r["ver"],
            phase=r["phase"],
            round=r["round"],
            start_at=r["start_at"],
            deadline=r["deadline"],
            finished_at=r["finished_at"],
            members=tuple(Member.from_dict(m) for m in r["members"]),
            entrants=tuple((e[0], e[1]) for e in r["entrants"]),
            results=(
                tuple(ResultRow.from_record(row) for row in r["results"])
                if r["results"] is not None
                else None
            ),
            created_at=r["created_at"],
            deal_sealed_until=r.get("deal_sealed_until"),
            tournament=r.get("tournament"),
        )

    def _result_records(self) -> list[dict[str, Any]] | None:
        return [row.to_record() for row in self.results] if self.results is not None else None

    # --- queries

    def deal_unsealed(self, now: int) -> bool:
        """False while a daily room's deal must stay hidden from everyone."""
        return self.deal_sealed_until is None or now >= self.deal_sealed_until

    def member(self, player_id: str) -> Member | None:
        for m in self.members:
            if m.id == player_id:
                return m
        return None

    @property
    def racers(self) -> tuple[Member, ...]:
        return tuple(m for m in self.members if m.role == "racer")

    @property
    def underway(self) -> bool:
        """The round has started and is not finished: the countdown or the race itself
        (stored as phase ``countdown`` for both; :meth:`phase_at` tells them apart)."""
        return self.phase == "countdown"

    def is_racing(self, now: int) -> bool:
        """The countdown has run out and the deadline (if any) has not passed.

        >>> from server.lobby.room import Room
        >>> room = Room.create("K7PQ2X", host=Member("a", "A"), variant="N",
        ...                    deal="CR1-N-AAAAAAB", deal_public=False, seats=1,
        ...                    time_limit=60, now=0, countdown_ms=3000)
        >>> room = room.set_ready("a", True, now=0).room
        >>> [room.is_racing(t) for t in (2999, 3000, 62999, 63000)]
        [False, True, True, False]
        """
        return (
            self.phase == "countdown"
            and self.start_at is not None
            and self.start_at <= now
            and not self.deadline_passed(now)
        )

    def phase_at(self, now: int) -> str:
        """The phase clients see: ``racing`` once the countdown has run out."""
        if self.underway and self.start_at is not None and now >= self.start_at:
            return "racing"
        return self.phase

    def race_ended(self, now: int) -> bool:
        """Finished, or its deadline passed (a racer still playing ran out of time)."""
        return self.phase == "finished" or (self.underway and self.deadline_passed(now))

    def deadline_passed(self, now: int) -> bool:
        return self.deadline is not None and now >= self.deadline

    def is_entrant(self, player_id: str) -> bool:
        return any(pid == player_id for pid, _ in self.entrants)

    def check_can_act(self, player_id: str, now: int) -> None:
        """Raise the error code for an action by ``player_id`` now, or return if it may act."""
        member = self.member(player_id)
        entrant = self.is_entrant(player_id)
        if member is None and not entrant:
            raise RoomError("not_in_room")
        if self.phase == "finished" or (self.underway and self.deadline_passed(now)):
            raise RoomError("race_over")
        if self.phase == "waiting" and member is not None and member.role == "racer":
            raise RoomError("not_started")  # a racer, just too early
        if not entrant:
            raise RoomError("not_racer")
        if not self.is_racing(now):
            raise RoomError("not_started")

    def public_dict(self, viewer: str | None, now: int) -> dict[str, Any]:
        """The room as protocol.md's snapshot shows it to ``viewer`` (progress added later)."""
        # Fairness: the deal code determines every card. ``viewer`` plays no part, so
        # a new host (the chooser left) learns nothing the others do not.
        deal = self.deal if self.phase == "finished" or self.deal_public else None
        if not self.deal_unsealed(now):
            deal = None
        return {
            "code": self.code,
            "link": f"/r/{self.code}",
            "ver": self.ver,
            "host": self.host,
            "variant": self.variant,
            "seats": self.seats,
            "time_limit": self.time_limit,
            "phase": self.phase_at(now),
            "round": self.round,
            "start_at": self.start_at,
            "deadline": self.deadline,
            "deal": deal,
            "deal_known": self.deal_public,
            "sealed_until": self.deal_sealed_until,
            # A tournament round lists the viewer alone (200 racers' rows in every
            # snapshot would cost O(n^2) bytes a round; t_live summarises the others).
            "players": [
                m.to_dict() for m in self.members if self.tournament is None or m.id == viewer
            ],
            "results": self._result_records(),
            "tournament": self.tournament,
        }

    def offline_racers(self, now: int, after_ms: int) -> list[str]:
        """This round's racers marked offline for at least ``after_ms`` during the race.

        >>> from server.lobby.room import Room
        >>> room = Room.create("K7PQ2X", host=Member("a", "A"), variant="N",
        ...                    deal="CR1-N-AAAAAAB", deal_public=False, seats=1,
        ...                    time_limit=None, now=0, countdown_ms=0)
        >>> room = room.set_ready("a", True, now=0).room.set_connected("a", False, now=10).room
        >>> room.offline_racers(100, 90), room.offline_racers(99, 90)
        (['a'], [])
        """
        if not self.is_racing(now):
            return []
        return [
            m.id
            for m in self.members
            if not m.connected
            and m.disconnected_at is not None
            and now - m.disconnected_at >= after_ms
            and self.is_entrant(m.id)
        ]

    def check_can_end(self, player_id: str) -> None:
        """Raise the error code if ``player_id`` may not end the race (``end_race``)."""
        if self.member(player_id) is None:
            raise RoomError("not_in_room")
        if self.host != player_id:
            raise RoomError("not_host")
        if not self.underway:
            raise RoomError("wrong_phase", "Only a race in progress can be ended")
