"""A room as a value, and its transitions. Pure: no I/O; time comes in as ``now`` (ms).

Every transition returns a :class:`Transition`: the new room and the versioned events
to publish (each one version above the one before). The caller stores the new room
only if the stored version is still ``room.ver`` (compare-and-set), so two processes
never overwrite each other; on a lost race it reloads and runs the transition again.

>>> room = Room.create("K7PQ2X", host=Member("p1", "Ada"), variant="N",
...                    deal="CR1-N-AAAAAAB", deal_public=True, seats=2, time_limit=None,
...                    now=1000)
>>> t = room.join(Member("p2", "Bo"), as_spectator=False, now=1100)
>>> [e.kind for e in t.events], t.room.ver
(['joined'], 1)
>>> t = t.room.set_ready("p1", True, now=1200).room.set_ready("p2", True, now=1300)
>>> [e.kind for e in t.events], t.room.phase, t.room.start_at
(['ready', 'countdown'], 'countdown', 4300)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from crescent_wire.errors import RoomError
from server.lobby.events import (
    Connected,
    Countdown,
    Finished,
    HostChanged,
    Joined,
    Left,
    Ready,
    Rematch,
    RoomEvent,
    RoomEventData,
)
from server.lobby.race import ResultRow

DEFAULT_COUNTDOWN_MS = 3000
MAX_SPECTATORS = 200
MAX_TOURNAMENT_SEATS = 200  # a tournament round's room (a room a player creates: 8)


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
class Room:
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

    # --- construction and serialisation

    @classmethod
    def create(
        cls,
        code: str,
        *,
        host: Member,
        variant: str,
        deal: str,
        deal_public: bool,
        seats: int,
        time_limit: int | None,
        now: int,
        countdown_ms: int = DEFAULT_COUNTDOWN_MS,
    ) -> Room:
        """A new room in phase ``waiting`` (version 0) with its creator seated as host."""
        return cls(
            code=code,
            host=host.id,
            variant=variant,
            deal=deal,
            deal_public=deal_public,
            seats=seats,
            time_limit=time_limit,
            countdown_ms=countdown_ms,
            members=(replace(host, role="racer", ready=False, connected=True),),
            created_at=now,
        )

    @classmethod
    def create_round(
        cls,
        code: str,
        *,
        tournament: str,
        racers: tuple[Member, ...],
        variant: str,
        deal: str,
        time_limit: int,
        now: int,
        countdown_ms: int = DEFAULT_COUNTDOWN_MS,
    ) -> Room:
        """A tournament round's room, already counting down: every racer seated, no
        host (the tournament's host controls it through the tournament), deal secret.

        >>> room = Room.create_round("K7PQ2X", tournament="TK7PQ2X",
        ...     racers=(Member("a", "A"), Member("b", "B")), variant="N",
        ...     deal="CR1-N-AAAAAAB", time_limit=60, now=0, countdown_ms=3000)
        >>> room.phase_at(0), room.phase_at(3000), room.deadline, room.entrants
        ('countdown', 'racing', 63000, (('a', 'A'), ('b', 'B')))
        """
        if not 0 < len(racers) <= MAX_TOURNAMENT_SEATS:
            raise ValueError("a tournament round seats 1 to 200 racers")
        start_at = now + countdown_ms
        return cls(
            code=code,
            host=None,
            variant=variant,
            deal=deal,
            deal_public=False,
            seats=len(racers),
            time_limit=time_limit,
            countdown_ms=countdown_ms,
            phase="countdown",
            start_at=start_at,
            deadline=start_at + time_limit * 1000,
            members=tuple(replace(m, role="racer", ready=True, connected=True) for m in racers),
            entrants=tuple((m.id, m.name) for m in racers),
            created_at=now,
            tournament=tournament,
        )

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
    def from_record(cls, r: dict[str, Any]) -> Room:
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

    # --- transitions

    def _emit(self, room: Room, said: list[RoomEventData]) -> Transition:
        events = []
        ver = self.ver
        for data in said:
            ver += 1
            events.append(RoomEvent(ver, data))
        return Transition(replace(room, ver=ver), tuple(events))

    def _with_member(self, member: Member) -> Room:
        return replace(
            self, members=tuple(member if m.id == member.id else m for m in self.members)
        )

    def join(self, who: Member, *, as_spectator: bool, now: int) -> Transition:
        """Seat ``who`` as racer (or spectator). A member joining again changes nothing."""
        existing = self.member(who.id)
        if existing is not None:
            if existing.connected:
                return Transition(self, ())
            return self.set_connected(who.id, True)
        if self.tournament is not None:
            raise RoomError(
                "already_started",
                "A tournament round seats its players only; watch the tournament instead",
            )
        if as_spectator:
            if sum(1 for m in self.members if m.role == "spectator") >= MAX_SPECTATORS:
                raise RoomError("room_full", "This room has too many spectators")
            role = "spectator"
        else:
            if self.phase != "waiting":
                raise RoomError("already_started")
            if len(self.racers) >= self.seats:
                raise RoomError("room_full")
            role = "racer"
        member = replace(who, role=role, ready=False, connected=True)
        room = replace(self, members=(*self.members, member))
        return self._emit(room, [Joined(member.id, member.name, role)])

    def leave(self, player_id: str, *, now: int) -> Transition:
        """Remove a member; a new host is picked if the host left.

        A racer leaving a race in progress resigns: the caller applies the resignation to
        the game (this only updates the room; the entrant stays in this round's results).
        """
        member = self.member(player_id)
        if member is None:
            raise RoomError("not_in_room")
        if self.tournament is not None:
            return Transition(self, ())  # seated for the round: leaving only stops watching
        remaining = tuple(m for m in self.members if m.id != player_id)
        room = replace(self, members=remaining)
        said: list[RoomEventData] = [Left(player_id)]
        if self.host == player_id:
            successor = next(
                (m for m in remaining if m.role == "racer"), remaining[0] if remaining else None
            )
            room = replace(room, host=successor.id if successor else None)
            if successor is not None:
                said.append(HostChanged(successor.id))
        transition = self._emit(room, said)
        return transition.then(transition.room.autostart_if_ready(now))

    def set_ready(self, player_id: str, ready: bool, *, now: int) -> Transition:
        member = self.member(player_id)
        if member is None:
            raise RoomError("not_in_room")
        if self.tournament is not None:  # as start, rematch and end_race in a round room
            raise RoomError("not_host", "The tournament's host starts and ends its rounds")
        if member.role != "racer":
            raise RoomError("not_racer")
        if self.phase != "waiting":
            raise RoomError("wrong_phase", "Ready only counts before the race starts")
        if member.ready == ready:
            return self.autostart_if_ready(now)
        transition = self._emit(
            self._with_member(replace(member, ready=ready)),
            [Ready(player_id, ready)],
        )
        return transition.then(transition.room.autostart_if_ready(now))

    def set_connected(
        self, player_id: str, connected: bool, *, now: int | None = None
    ) -> Transition:
        """Mark a member online or offline (``now``: when they went offline)."""
        member = self.member(player_id)
        if member is None or member.connected == connected or self.tournament is not None:
            # A tournament round does not track who is online: no event to 200 racers
            # per reconnect, and nobody is resigned for being offline.
            return Transition(self, ())
        changed = replace(member, connected=connected, disconnected_at=None if connected else now)
        return self._emit(
            self._with_member(changed),
            [Connected(player_id, connected)],
        )

    def offline_racers(self, now: int, after_ms: int) -> list[str]:
        """This round's racers marked offline for at least ``after_ms`` during the race.

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

    def start(self, player_id: str, *, now: int) -> Transition:
        """The host starts the countdown (at least one racer seated)."""
        if self.member(player_id) is None:
            raise RoomError("not_in_room")
        if self.host != player_id:
            raise RoomError("not_host")
        if self.phase != "waiting":
            raise RoomError("wrong_phase", "The race has already started")
        if not self.racers:
            raise RoomError("wrong_phase", "A race needs at least one racer")
        return self._countdown(now)

    def autostart_if_ready(self, now: int) -> Transition:
        """Start the countdown if every seat is taken by a ready racer (else no change)."""
        racers = self.racers
        if self.phase == "waiting" and len(racers) == self.seats and all(m.ready for m in racers):
            return self._countdown(now)
        return Transition(self, ())

    def _countdown(self, now: int) -> Transition:
        start_at = now + self.countdown_ms
        deadline = start_at + self.time_limit * 1000 if self.time_limit else None
        room = replace(
            self,
            phase="countdown",
            start_at=start_at,
            deadline=deadline,
            entrants=tuple((m.id, m.name) for m in self.racers),
            results=None,
            finished_at=None,
        )
        return self._emit(room, [Countdown(start_at, deadline, self.round)])

    def finish(self, results: list[ResultRow], *, now: int) -> Transition:
        """End the race with its results table (see :func:`server.lobby.race.rank`)."""
        if self.phase != "countdown":
            raise RoomError("wrong_phase", "Only a race in progress can finish")
        room = replace(self, phase="finished", results=tuple(results), finished_at=now)
        deal = self.deal if self.deal_unsealed(now) else None
        return self._emit(room, [Finished(tuple(results), deal)])

    def rematch(self, player_id: str, new_deal: str, *, now: int) -> Transition:
        """Host only, after the race: same players, a new deal, round + 1, ready cleared."""
        if self.member(player_id) is None:
            raise RoomError("not_in_room")
        if self.host != player_id:
            raise RoomError("not_host")
        if self.phase != "finished":
            raise RoomError("wrong_phase", "A rematch is offered once the race is finished")
        room = replace(
            self,
            phase="waiting",
            round=self.round + 1,
            deal=new_deal,
            deal_public=False,
            start_at=None,
            deadline=None,
            finished_at=None,
            results=None,
            entrants=(),
            members=tuple(replace(m, ready=False) for m in self.members),
        )
        return self._emit(room, [Rematch(self.round + 1, "waiting", False)])


@dataclass(frozen=True, slots=True)
class Transition:
    """A new room and the events that lead to it (empty: nothing changed)."""

    room: Room
    events: tuple[RoomEvent, ...] = field(default=())

    def then(self, other: Transition) -> Transition:
        """Chain a follow-up transition computed from ``self.room``."""
        return Transition(other.room, self.events + other.events)

    @property
    def changed(self) -> bool:
        return bool(self.events)
