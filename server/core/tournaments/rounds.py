"""A tournament's rounds. A round is a race room (``Room.create_round``: every active
player seated, counting down, deal secret) run by the usual room and game machinery.
Its end — deadline, all done, or the host's ``end`` — is recorded into the tournament
once (the record's version and ``current`` make a second recording a no-change), by the
process that finished the room (``on_room_finished``) or, if that one died, by any
process that sweeps the tournament (every tick, for the tournaments it has subscribers
of)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from crescent_wire.errors import ConflictError, InternalError
from server.core.games import Games
from server.core.ports import Clock, CpuBusy, Storage
from server.core.room_codes import new_room_code
from server.core.rooms import MAX_CAS_ATTEMPTS, Rooms
from server.core.tournaments.base import DealSource, LocalTournament
from server.core.tournaments.committer import Committer
from server.core.tournaments.live import Live
from server.game import DealCode
from server.lobby import Member, Room, initial_progress, race_over
from server.tournament import Tournament

log = logging.getLogger("server.tournaments")


class Rounds:
    def __init__(
        self,
        committer: Committer,
        live: Live,
        room_storage: Storage,
        rooms: Rooms,
        games: Games,
        clock: Clock,
        *,
        spawn: Callable[[Coroutine[Any, Any, Any]], None],
        deals: DealSource,
        countdown_ms: int,
        certify_wait_s: float,
    ) -> None:
        self.committer = committer
        self.live = live
        self.room_storage = room_storage
        self.rooms = rooms
        self.games = games
        self.clock = clock
        self.spawn = spawn
        self.deals = deals
        self.countdown_ms = countdown_ms
        self.certify_wait_s = certify_wait_s
        self.preparing: set[str] = set()  # tournaments drawing a deal ahead here

    # ------------------------------------------------------------------ start

    async def start_round(self, code: str, host_id: str) -> None:
        t = await self.committer.load(code)
        t.check_can_start(host_id)
        deal = t.next_deal() or await self._draw_now(t.variant)
        racers = tuple(Member(pl.id, pl.name) for pl in t.active)
        room = await self._create_room(t, deal, racers)
        assert room.start_at is not None
        start_at = room.start_at
        new = await self.committer.transition(
            code,
            lambda t, now: t.start_round(
                host_id,
                room=room.code,
                deal=deal,
                now=now,
                start_at=start_at,
                seated=frozenset(m.id for m in racers),
            ),
        )
        log.info(
            "tournament round started",
            extra={"tournament": code, "round": new.round, "room": room.code},
        )
        self.prepare_soon(new)

    async def _create_room(self, t: Tournament, deal: str, racers: tuple[Member, ...]) -> Room:
        """The round's race room, stored under a free code."""
        for _ in range(MAX_CAS_ATTEMPTS):
            room = Room.create_round(
                new_room_code(),
                tournament=t.code,
                racers=racers,
                variant=t.variant,
                deal=deal,
                time_limit=t.time_limit,
                now=self.clock(),
                countdown_ms=self.countdown_ms,
            )
            try:
                await self.rooms.create(room)
            except ConflictError:
                continue
            return room
        raise InternalError("Could not find a free room code")

    async def _draw_now(self, variant: str) -> str:
        """A certified deal within ``certify_wait_s``, else a random one (logged)."""
        try:
            return await asyncio.wait_for(self.deals(variant), self.certify_wait_s)
        except (TimeoutError, CpuBusy) as exc:
            reason = repr(exc)
        except Exception as exc:  # the solver failed: a random deal all the same
            reason = repr(exc)
        log.info("tournament deal not certified in time", extra={"error": reason})
        return str(DealCode.random(variant))

    def prepare_soon(self, t: Tournament) -> None:
        """Draw the next random round's certified deal in the background (one at a
        time per tournament and process), so start_round rarely waits."""
        if (
            t.finished
            or t.code in self.preparing
            or len(t.prepared) >= min(1, t.random_rounds_left())
        ):
            return
        self.preparing.add(t.code)

        async def prepare() -> None:
            try:
                deal = await self.deals(t.variant)
                await self.committer.transition(
                    t.code, lambda t, now: t.add_prepared(deal, now=now)
                )
            except CpuBusy:
                log.debug("solver busy: the deal is drawn when the round starts")
            except Exception as exc:
                log.info("preparing a deal failed", extra={"error": repr(exc)})
            finally:
                self.preparing.discard(t.code)

        self.spawn(prepare())

    # ------------------------------------------------------------------ end

    async def end(self, code: str, host_id: str) -> None:
        """The host ends the tournament; a running round is ended and scored first. If
        that was the last round, scoring it ended the tournament: that is the end
        asked for (``ok``, not ``tournament_over``)."""
        t = await self.committer.load(code)
        t.check_host(host_id)
        if t.current is not None:
            await self.rooms.finish(t.current.room, "tournament ended", force=True)
            if (await self.record(code, t.current.room)).finished:
                log.info("tournament ended", extra={"tournament": code})
                return
        await self.committer.transition(code, lambda t, now: t.end(host_id, now=now))
        log.info("tournament ended", extra={"tournament": code})

    def on_room_finished(self, room: Room) -> None:
        """Told of every race this process finished: record a tournament round's."""
        if room.tournament is not None:
            self.spawn(self.record(room.tournament, room.code))

    async def record(self, code: str, room_code: str) -> Tournament:
        """Record the finished round that ran in ``room_code`` (once; a round already
        recorded, or a room still racing, is no change). A room gone from storage
        records an empty round, so the tournament is never stuck. Returns the
        tournament after it."""
        room = await self.rooms.load_or_none(room_code)
        if room is not None and room.phase != "finished":
            return await self.committer.load(code)
        results = list(room.results or ()) if room is not None else []
        deal = room.deal if room is not None else ""
        t = await self.committer.transition(
            code,
            lambda t, now: t.record_round(
                t.current.round if t.current and t.current.room == room_code else -1,
                room_code,
                results,
                deal=deal,
                now=now,
            ),
        )
        if t.current is None:
            log.info("tournament round recorded", extra={"tournament": code, "room": room_code})
        return t

    async def resign_in_round(self, t: Tournament, player_id: str) -> None:
        """A withdrawn or removed player is resigned in the running round."""
        if t.current is None:
            return
        room = await self.rooms.load_or_none(t.current.room)
        if room is None or not room.underway or not room.is_entrant(player_id):
            return
        await self.games.resign(room, player_id)
        local = self.rooms.local.get(room.code)
        if local is None or player_id not in local.player_conns:
            self.games.forget_player(room.code, player_id)

    async def catch_up(self, t: Tournament) -> Tournament:
        """Finish and record a round whose room is over (its process may have died);
        returns the tournament, reloaded if it changed."""
        current = t.current
        if current is None:
            return t
        room = await self.rooms.load_or_none(current.room)
        if room is None or room.phase == "finished":
            await self.record(t.code, current.room)
            return await self.committer.load(t.code)
        now = self.clock()
        if room.deadline_passed(now):
            await self.rooms.finish(current.room, "tournament sweep")
            await self.record(t.code, current.room)
            return await self.committer.load(t.code)
        return t

    # ------------------------------------------------------------------ tick

    async def tick(self) -> None:
        """Once per tick: each local tournament's running round is swept (finished and
        recorded when over, whichever process ran it) and summarised in ``t_live``."""
        for code in list(self.live.local):
            local = self.live.local.get(code)
            if local is None:
                continue
            try:
                await self._tick_one(local)
            except InternalError:
                log.debug("tournament tick failed", extra={"tournament": code})

    async def _tick_one(self, local: LocalTournament) -> None:
        t = await self.live.refresh(local)
        current = t.current
        if current is None:
            return
        now = self.clock()
        if local.entrants_room != current.room:
            room = await self.rooms.load_or_none(current.room)
            if room is None:
                await self.record(t.code, current.room)
                return
            local.entrants, local.entrants_room = room.entrants, room.code
        if now >= current.deadline:
            await self.catch_up(t)
            return
        if now < current.start_at:
            return
        progress = (await self.room_storage.read_progress([(current.room, 1)]))[0]
        entrant_progress = [progress.get(pid) or initial_progress(pid) for pid, _ in local.entrants]
        if race_over(entrant_progress):
            await self.rooms.finish(current.room, "all done")
            await self.record(t.code, current.room)
            return
        self.live.push_live(local, current, progress, entrant_progress, now)
