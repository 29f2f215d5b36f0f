"""A room as a value, and its transitions (its fields, record and queries:
:mod:`server.lobby.room_state`). Pure: no I/O; time comes in as ``now`` (ms).

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
from server.lobby.room_state import DEFAULT_COUNTDOWN_MS, Member, RoomState

__all__ = ["DEFAULT_COUNTDOWN_MS", "Member", "Room", "RoomState", "Transition"]

MAX_SPECTATORS = 200
MAX_TOURNAMENT_SEATS = 200  # a tournament round's room (a room a player creates: 8)


@dataclass(frozen=True, slots=True)
class Room(RoomState):
    """A room: :class:`RoomState` (its fields, record and queries) and its transitions."""

    # --- construction

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
