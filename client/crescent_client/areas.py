"""The client's requests, one mixin per area of the protocol (docs/protocol.md):
rooms and the race, the daily challenge, tournaments.

Each builds its typed message with the session's next id, sends it through the
connection (:class:`~crescent_client.connection.Connection`) and adopts the reply into
the session's state. :class:`~crescent_client.client.CrescentClient` is all three.
"""

from __future__ import annotations

import asyncio
from typing import Any

from crescent_client.connection import Connection, now_ms
from crescent_client.rooms import RoomState
from crescent_client.tournaments import TournamentState
from crescent_wire.protocol import (
    Ack,
    ClientMessage,
    CreateRoom,
    DailyBoard,
    DailyDays,
    DailyMe,
    DailyReply,
    DailyStart,
    DailyToday,
    Join,
    Leave,
    Ping,
    Pong,
    Ready,
    Refused,
    Rematch,
    Start,
    TCreate,
    TGet,
    TGetResults,
    TGetStandings,
    THost,
    TJoin,
    TResults,
    TStandings,
    TUnwatch,
    TWithdraw,
)


class RoomRequests(Connection):
    """Rooms and the race: create, join, ready, start, act, leave, rematch; the clock."""

    async def ping(self) -> int:
        """Round trip to the server; refines the clock offset. Returns the RTT in ms."""
        sent = now_ms()
        pong = await self._request(Ping(id=self.session.next_id()))
        assert isinstance(pong, Pong)
        received = now_ms()
        self.session.pong(pong.server_time, sent, received)
        return received - sent

    def room(self, code: str | None = None) -> RoomState:
        """The state of a joined room (the only one when ``code`` is omitted)."""
        return self.session.room(code)

    async def create_room(
        self,
        *,
        variant: str = "N",
        deal: str | None = None,
        seats: int = 4,
        time_limit: int | None = None,
    ) -> RoomState:
        """Create a room (this player becomes host and racer) and return its state."""
        msg_id = self.session.next_id()
        create = CreateRoom(
            variant=variant, deal=deal, seats=seats, time_limit=time_limit, id=msg_id
        )
        return self._adopt_snapshot(await self._request(create))

    async def join(self, code: str, *, as_: str = "racer") -> RoomState:
        """Join a room as ``racer`` or ``spectator`` (joining again resumes)."""
        reply = await self._request(Join(room=code.upper(), as_=as_, id=self.session.next_id()))
        return self._adopt_snapshot(reply)

    def forget_room(self, code: str) -> None:
        """Drop a room from this client's state without telling the server (e.g. a
        finished tournament round): it is not joined again after a reconnect."""
        self.session.forget_room(code)
        self._act_locks.pop(code.upper(), None)

    async def leave(self, code: str | None = None) -> None:
        state = self.room(code)
        await self._request(Leave(room=state.code, id=self.session.next_id()))
        self.session.rooms.pop(state.code, None)

    async def ready(self, code: str | None = None, ready: bool = True) -> None:
        await self._request(
            Ready(room=self.room(code).code, ready=ready, id=self.session.next_id())
        )

    async def start(self, code: str | None = None) -> None:
        """Start the countdown (host only)."""
        await self._request(Start(room=self.room(code).code, id=self.session.next_id()))

    async def rematch(self, code: str | None = None) -> None:
        """Back to ``waiting`` with a new deal (host only, after the race)."""
        await self._request(Rematch(room=self.room(code).code, id=self.session.next_id()))

    async def wait_for_start(self, code: str | None = None, timeout: float = 60.0) -> RoomState:
        """Wait for the countdown, then until the server's clock reaches ``start_at``;
        a racer then has its game's first view in ``room.view``."""
        state = self.room(code)
        await self.wait_until(
            lambda: state.phase in ("countdown", "racing") and state.start_at is not None,
            timeout,
        )
        assert state.start_at is not None
        delay_ms = state.start_at - self.server_now()
        if delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000)
        if state.role == "racer" and state.view is None:
            # The countdown event carries no cards; the snapshot after the start does.
            for _ in range(50):
                await self.join(state.code)
                if state.view is not None or state.phase == "finished":
                    break
                await asyncio.sleep(0.02)
        return state

    async def act(
        self, action: str, code: str | None = None, timeout: float | None = None
    ) -> Ack | Refused:
        """Send one action; return the server's ``Ack`` (with the new view) or ``Refused``.

        Sequence numbers are tracked here: one action at a time per room, a refused
        action does not use up its ``seq``. Across a reconnect the action is resent and
        this call still returns its reply. Errors (``not_started``, ``race_over``…) raise
        ``RequestFailed`` with the server's code.
        """
        state = self.room(code)
        lock = self._act_locks.setdefault(state.code, asyncio.Lock())
        async with lock:
            pending, data = self.session.begin_act(state.code, action)
            return await self._exchange_act(pending, data, timeout)


class DailyRequests(Connection):
    """The daily challenge (docs/protocol.md, "Daily challenge")."""

    async def daily(self) -> dict[str, Any]:
        """Today's challenge: ``today``, ``tomorrow`` (DAY maps) and ``you``."""
        return await self._daily(DailyToday(id=self.session.next_id()))

    async def daily_start(self, *, practice: bool = False) -> RoomState:
        """Start the day's ranked attempt (or, after it, a practice game)."""
        reply = await self._request(DailyStart(practice=practice, id=self.session.next_id()))
        return self._adopt_snapshot(reply)

    async def daily_board(
        self,
        *,
        day: str | None = None,
        top: int = 10,
        around: int = 5,
        late: bool = False,
        watch: bool = False,
    ) -> dict[str, Any]:
        return await self._daily(
            DailyBoard(
                day=day, top=top, around=around, late=late, watch=watch, id=self.session.next_id()
            )
        )

    async def daily_days(self, *, before: str | None = None, limit: int = 7) -> dict[str, Any]:
        return await self._daily(DailyDays(before=before, limit=limit, id=self.session.next_id()))

    async def daily_me(self) -> dict[str, Any]:
        return await self._daily(DailyMe(id=self.session.next_id()))

    async def _daily(self, msg: ClientMessage) -> dict[str, Any]:
        reply = await self._request(msg)
        assert isinstance(reply, DailyReply), reply
        return reply.data


class TournamentRequests(Connection):
    """Tournaments (docs/protocol.md, "Tournaments"; docs/client.md)."""

    def tournament_state(self, code: str | None = None) -> TournamentState:
        """The state of a tournament this client created, joined or fetched (the only
        one when ``code`` is omitted)."""
        return self.session.tournament_state(code)

    async def create_tournament(
        self,
        name: str,
        *,
        rounds: int,
        time_limit: int,
        max_players: int = 200,
        deals: list[str] | tuple[str, ...] | None = None,
        variant: str = "N",
        scoring: str = "placement",
    ) -> TournamentState:
        """Create a tournament (this player is its host, subscribed to its pushes; the
        host plays only after ``join_tournament``) and return its state."""
        create = TCreate(
            name=name,
            rounds=rounds,
            time_limit=time_limit,
            max_players=max_players,
            deals=tuple(deals) if deals is not None else None,
            variant=variant,
            scoring=scoring,
            id=self.session.next_id(),
        )
        state = self._adopt_tournament(await self._request(create))
        state.subscribed_as = "host"
        return state

    async def join_tournament(self, code: str, *, as_: str = "player") -> TournamentState:
        """Register as ``player`` (again: resumes) or watch as ``spectator``; either way
        this connection gets the tournament's pushes."""
        join = TJoin(tournament=code.upper(), as_=as_, id=self.session.next_id())
        state = self._adopt_tournament(await self._request(join))
        if state.subscribed_as != "player":
            state.subscribed_as = as_
        return state

    async def withdraw(self, code: str | None = None) -> None:
        """Withdraw from a tournament (points so far are kept, marked withdrawn)."""
        code = self.session.tournament_code(code)
        await self._request(TWithdraw(tournament=code, id=self.session.next_id()))

    async def host(self, code: str | None, op: str, player: str | None = None) -> None:
        """A host operation: ``open_registration``, ``close_registration``,
        ``start_round``, ``pause``, ``resume``, ``remove`` (with ``player``), ``end``."""
        code = self.session.tournament_code(code)
        await self._request(THost(tournament=code, op=op, player=player, id=self.session.next_id()))

    async def tournament(self, code: str) -> TournamentState:
        """The tournament's snapshot (``t_get``: no subscription)."""
        reply = await self._request(TGet(tournament=code.upper(), id=self.session.next_id()))
        return self._adopt_tournament(reply)

    async def unwatch(self, code: str | None = None) -> None:
        """Stop this connection's pushes of a tournament (``t_unwatch``)."""
        state_code = self.session.tournament_code(code)
        await self._request(TUnwatch(tournament=state_code, id=self.session.next_id()))
        state = self.session.tournaments.get(state_code)
        if state is not None:
            state.subscribed_as = None

    async def tournament_results(self, code: str | None, round_: int) -> TResults:
        """A finished round's full results (``round_not_finished`` before its end)."""
        code = self.session.tournament_code(code)
        msg_id = self.session.next_id()
        reply = await self._request(TGetResults(tournament=code, round=round_, id=msg_id))
        assert isinstance(reply, TResults), reply
        state = self.session.tournaments.get(reply.tournament.upper())
        if state is not None:
            state.results[reply.round] = reply
        return reply

    async def standings(self, code: str | None = None) -> TStandings:
        """Every standings row (the snapshot has the top 10 only)."""
        code = self.session.tournament_code(code)
        reply = await self._request(TGetStandings(tournament=code, id=self.session.next_id()))
        assert isinstance(reply, TStandings), reply
        return reply
