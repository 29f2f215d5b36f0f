"""The client's side of the protocol without I/O (sans-I/O, as h11 and websockets do it).

:class:`ClientSession` holds everything a connection's conversation needs to remember
and nothing that waits: the request ids, the requests still waiting for their reply,
the actions still waiting for their ack (``seq`` numbering per room), the token and
the player, the rooms and tournaments kept current by the pushes, and which rooms need
a ``sync``. Requests go out as bytes (:meth:`ClientSession.send`) and frames come in as
bytes (:meth:`ClientSession.receive`), which answers with :data:`SessionEvent` values
for the I/O layer (``crescent_client.connection``) to act on: resolve a waiting call,
queue a push, start a ``sync``. No asyncio, no sockets: tests drive it with plain bytes.

>>> from crescent_wire.protocol import Ping, Pong, encode
>>> session = ClientSession(name="Ada")
>>> frame = session.send(Ping(id=session.next_id()))
>>> session.receive(encode(Pong(server_time=5, id=1)))
[Reply(id=1, message=Pong(server_time=5, id=1))]
>>> session.receive(encode(Pong(server_time=6, id=1)))  # nobody waits for it any more
[]
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from typing import Any

from crescent_client.errors import NotInRoom, RequestFailed
from crescent_client.rooms import RoomState
from crescent_client.tournaments import TournamentState
from crescent_wire.errors import ServerError
from crescent_wire.protocol import (
    Ack,
    Act,
    ClientMessage,
    Error,
    Event,
    Events,
    Hello,
    Progress,
    Refused,
    RoomSnapshot,
    ServerMessage,
    TLive,
    TournamentSnapshot,
    Welcome,
    decode_server,
    encode_client,
)

MAX_ID = 2**31  # ids wrap below the protocol's bound (docs/protocol.md)


@dataclass(frozen=True, slots=True)
class Disconnected:
    """Client-side event: the connection dropped (``reconnecting`` says what happens next)."""

    close_code: int | None
    reconnecting: bool


@dataclass(frozen=True, slots=True)
class Reconnected:
    """Client-side event: a new connection is up, rooms joined again, actions resent,
    tournaments subscribed again."""

    rooms: tuple[str, ...]
    resent: int
    tournaments: tuple[str, ...] = ()


Push = Event | Progress | RoomSnapshot | TournamentSnapshot | TLive | Error
ClientEvent = Push | Disconnected | Reconnected
_PUSHED = (Event, Progress, RoomSnapshot, TournamentSnapshot, TLive, Error)


@dataclass(frozen=True, slots=True)
class PendingAct:
    """An action sent and not yet answered; it is resent as is after a reconnect."""

    room: str
    seq: int
    action: str
    id: int

    def frame(self) -> bytes:
        return encode_client(Act(room=self.room, seq=self.seq, action=self.action, id=self.id))


# ------------------------------------------------------------------ what receive() returns


@dataclass(frozen=True, slots=True)
class Reply:
    """The reply to the waiting request ``id`` (an ``error`` too)."""

    id: int
    message: ServerMessage

    def result(self) -> ServerMessage:
        """The reply, or the server's ``error`` raised as :class:`RequestFailed`."""
        return reply_or_raise(self.message)


@dataclass(frozen=True, slots=True)
class ActReply:
    """The ``ack`` or ``refused`` of a waiting action."""

    act: PendingAct
    message: Ack | Refused


@dataclass(frozen=True, slots=True)
class Pushed:
    """A server push (already applied to the room or tournament state) for the stream."""

    message: Push


@dataclass(frozen=True, slots=True)
class GapFound:
    """A room's events skipped a version: ``sync`` it (then :meth:`ClientSession.synced`)."""

    room: str


SessionEvent = Reply | ActReply | Pushed | GapFound


def reply_or_raise(message: ServerMessage) -> ServerMessage:
    """``message`` unless it is an ``error``, which is raised as :class:`RequestFailed`."""
    if isinstance(message, Error):
        raise RequestFailed(message.code, message.message)
    return message


class ClientSession:
    """One client's protocol state across its connections (see the module's docstring).

    ``token``: an earlier session's token (same player); ``name``: display name.
    """

    def __init__(self, *, token: str | None = None, name: str | None = None) -> None:
        self.token = token
        self.name = name
        self.player: dict[str, Any] = {}
        self.server_version = 0
        self.clock_offset_ms = 0
        self.rooms: dict[str, RoomState] = {}
        self.tournaments: dict[str, TournamentState] = {}
        # Every frame the server sent on every connection (bytes are the WebSocket
        # payloads): what the benchmark counts as the server's output.
        self.frames_received = 0
        self.bytes_received = 0
        self.received_types: Counter[str] = Counter()  # frames by message class
        self._ids = itertools.count(1)
        self._waiting: dict[int, str] = {}  # request id -> message type
        self._acts: dict[tuple[str, int], PendingAct] = {}
        self._syncing: set[str] = set()
        self._gap_seen: dict[str, int] = {}  # room -> highest event version seen past a gap

    # ------------------------------------------------------------------ sending

    def next_id(self) -> int:
        return next(self._ids) % MAX_ID

    def send(self, msg: ClientMessage) -> bytes:
        """The frame of a request; one carrying an ``id`` now waits for its reply."""
        if msg.id is not None:
            self._waiting[msg.id] = msg.TYPE
        return encode_client(msg)

    def forget(self, msg_id: int) -> None:
        """Stop waiting for a reply (answered elsewhere, timed out or failed)."""
        self._waiting.pop(msg_id, None)

    def hello(self) -> Hello:
        """The ``hello`` that opens every connection (with the token once there is one)."""
        return Hello(token=self.token, name=self.name, id=self.next_id())

    def welcome(self, reply: ServerMessage, now_ms: int) -> dict[str, int]:
        """Adopt the ``welcome``: player, token, server version and clock; returns the
        server's rate limits."""
        assert isinstance(reply, Welcome), reply
        self.player = dict(reply.player)
        self.token = reply.token
        self.server_version = reply.version
        self.clock_offset_ms = reply.server_time - now_ms
        return dict(reply.limits or {})

    def pong(self, server_time: int, sent_ms: int, received_ms: int) -> None:
        """Refine the clock offset from a ping's round trip (the middle of it)."""
        self.clock_offset_ms = server_time - (sent_ms + received_ms) // 2

    # ------------------------------------------------------------------ actions

    def begin_act(self, code: str, action: str) -> tuple[PendingAct, bytes]:
        """The next action of a room: its ``seq`` follows the highest acknowledged one
        (a refused action leaves it free for the next)."""
        state = self.room(code)
        pending = PendingAct(state.code, state.last_seq + 1, action, self.next_id())
        self._acts[(pending.room, pending.seq)] = pending
        return pending, self.send(
            Act(room=pending.room, seq=pending.seq, action=action, id=pending.id)
        )

    def end_act(self, pending: PendingAct) -> None:
        self._acts.pop((pending.room, pending.seq), None)
        self.forget(pending.id)

    def act_result(self, pending: PendingAct, reply: ServerMessage) -> Ack | Refused:
        """Apply an action's reply to its room: an ``ack`` moves ``last_seq`` and the VIEW
        on, ``refused`` changes nothing, an ``error`` raises :class:`RequestFailed`."""
        reply = reply_or_raise(reply)
        assert isinstance(reply, Ack | Refused), reply
        state = self.rooms.get(pending.room)
        if isinstance(reply, Ack) and state is not None:
            state.last_seq = max(state.last_seq, reply.seq)
            if reply.view is not None:
                state.view = reply.view
        return reply

    def acts_to_resend(self) -> list[PendingAct]:
        """The actions still waiting, in room and ``seq`` order, for a new connection:
        the server never applies a ``seq`` twice (a copy earns a duplicate ack)."""
        return sorted(self._acts.values(), key=lambda p: (p.room, p.seq))

    def act_ids(self) -> set[int]:
        """The request ids of the actions still waiting (a drop does not fail them)."""
        return {p.id for p in self._acts.values()}

    # ------------------------------------------------------------------ receiving

    def receive(self, frame: bytes | str) -> list[SessionEvent]:
        """Take in one frame from the server; what it means for the waiting calls and
        the event stream. Text frames and unknown message types are ignored."""
        self.frames_received += 1
        self.bytes_received += len(frame)
        if isinstance(frame, str):
            return []  # the protocol has binary frames only
        try:
            msg = decode_server(frame)
        except ServerError:
            return []  # a message type of a newer version: ignored (forward compatibility)
        self.received_types[type(msg).__name__] += 1
        return self.dispatch(msg)

    def dispatch(self, msg: ServerMessage) -> list[SessionEvent]:
        if isinstance(msg, Ack | Refused):
            pending = self._acts.pop((msg.room.upper(), msg.seq), None)
            if pending is None:
                return []
            self.forget(pending.id)
            return [ActReply(pending, msg)]
        msg_id = getattr(msg, "id", None)
        if msg_id is not None and self._waiting.pop(msg_id, None) is not None:
            return [Reply(msg_id, msg)]  # an error for an action is its reply too
        events: list[SessionEvent] = []
        if isinstance(msg, Event):
            events += self._apply_event(msg)
        elif isinstance(msg, Progress):
            state = self.rooms.get(msg.room.upper())
            if state is not None:
                state.apply_progress(msg.round, msg.racers)
        elif isinstance(msg, TournamentSnapshot):
            self.adopt_tournament(msg)
        elif isinstance(msg, TLive):
            tournament = self.tournaments.get(msg.tournament.upper())
            if tournament is not None:
                tournament.apply_live(msg)
        if isinstance(msg, _PUSHED):
            events.append(Pushed(msg))
        return events

    def _apply_event(self, msg: Event) -> list[SessionEvent]:
        state = self.rooms.get(msg.room.upper())
        if state is None or state.apply_event(msg.ver, msg.kind, msg.data) != "gap":
            return []
        # Remember how far the room has got: a sync already under way may have been
        # answered before this event, and must then go again.
        self._gap_seen[state.code] = max(msg.ver, self._gap_seen.get(state.code, 0))
        if state.code in self._syncing:
            return []
        self._syncing.add(state.code)
        return [GapFound(state.code)]

    def gap_filled(self, code: str) -> bool:
        """Whether every event seen past a gap is applied now."""
        return self.room(code).ver >= self._gap_seen.get(code, 0)

    def synced(self, code: str) -> None:
        """The ``sync`` after :class:`GapFound` is over (done or failed): the next gap
        starts another."""
        self._syncing.discard(code)

    # ------------------------------------------------------------------ rooms

    def room(self, code: str | None = None) -> RoomState:
        """The state of a joined room (the only one when ``code`` is omitted)."""
        if code is None:
            if len(self.rooms) != 1:
                raise NotInRoom(f"name the room: this client is in {len(self.rooms)} rooms")
            return next(iter(self.rooms.values()))
        state = self.rooms.get(code.upper())
        if state is None:
            raise NotInRoom(f"this client has not joined room {code}")
        return state

    def adopt_snapshot(self, reply: ServerMessage) -> RoomState:
        """A room snapshot (join, create, resume): the room's state from now on."""
        assert isinstance(reply, RoomSnapshot), reply
        code = reply.room["code"].upper()
        state = self.rooms.get(code)
        if state is None:
            state = RoomState.from_snapshot(reply.room, reply.you)
            self.rooms[code] = state
        else:
            state.load_snapshot(reply.room, reply.you)
        return state

    def adopt_sync(self, state: RoomState, reply: ServerMessage) -> RoomState:
        """A ``sync`` reply: the missed events, or a fresh snapshot when too many."""
        if isinstance(reply, RoomSnapshot):
            return self.adopt_snapshot(reply)
        if isinstance(reply, Events):
            for event in reply.events:
                state.apply_event(event.ver, event.kind, event.data)
        return state

    def forget_room(self, code: str) -> None:
        self.rooms.pop(code.upper(), None)

    # ------------------------------------------------------------------ tournaments

    def tournament_state(self, code: str | None = None) -> TournamentState:
        """A tournament this client created, joined or fetched (the only one when
        ``code`` is omitted)."""
        if code is None:
            if len(self.tournaments) != 1:
                raise NotInRoom(
                    f"name the tournament: this client knows {len(self.tournaments)} tournaments"
                )
            return next(iter(self.tournaments.values()))
        state = self.tournaments.get(code.upper())
        if state is None:
            raise NotInRoom(f"this client has not joined tournament {code}")
        return state

    def tournament_code(self, code: str | None) -> str:
        return code.upper() if code is not None else self.tournament_state().code

    def adopt_tournament(self, reply: ServerMessage) -> TournamentState:
        """A tournament snapshot (reply or push), unless older than the one held."""
        assert isinstance(reply, TournamentSnapshot), reply
        code = str(reply.tournament["code"]).upper()
        state = self.tournaments.get(code)
        if state is None:
            state = TournamentState.from_snapshot(reply.tournament, reply.you)
            self.tournaments[code] = state
        else:
            state.load_snapshot(reply.tournament, reply.you)
        return state

    def subscriptions(self) -> list[tuple[str, str]]:
        """``(code, as)`` of every tournament to subscribe to again after a reconnect: the
        host who is not a player as a spectator, which the server answers with the host's
        role (docs/protocol.md)."""
        return [
            (t.code, "player" if t.subscribed_as == "player" else "spectator")
            for t in self.tournaments.values()
            if t.subscribed_as is not None
        ]
