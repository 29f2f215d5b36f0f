"""A tournament's subscribers on this process and what they are pushed: ``tournament``
snapshots coalesced to at most one per tournament per ``push_interval_s`` (a round's
start and end at once), and during a round ``t_live`` (top 10, you, counts) once per
tick, its shared part packed once. Changes committed elsewhere arrive on the bus."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from crescent_wire.errors import InternalError, ServerError, TournamentError
from server.core import messages, wire_server
from server.core.ports import Bus, Clock, Connection, Storage, TournamentStorage
from server.core.session import player_of
from server.core.tournaments.base import (
    LIVE_TOP,
    MAX_SUBSCRIPTIONS,
    STANDINGS_MEMO_SIZE,
    LocalTournament,
    load_or_none,
)
from server.lobby import RacerProgress
from server.tournament import Current, Tournament, live_rows

log = logging.getLogger("server.tournaments")


class Live:
    def __init__(
        self,
        storage: TournamentStorage,
        room_storage: Storage,
        bus: Bus,
        clock: Clock,
        *,
        spawn: Callable[[Coroutine[Any, Any, Any]], None],
        push_interval_s: float,
    ) -> None:
        self.storage = storage
        self.room_storage = room_storage
        self.bus = bus
        self.clock = clock
        self.spawn = spawn
        self.push_interval_s = push_interval_s
        self.local: dict[str, LocalTournament] = {}
        self.standings_memo: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        self.spectator_counts: dict[str, tuple[float, int]] = {}  # code -> (loop time, n)
        self.watching: dict[Connection, set[str]] = {}  # conn -> codes it subscribed to

    def stop(self) -> None:
        for local in self.local.values():
            if local.push_timer is not None:
                local.push_timer.cancel()

    # ------------------------------------------------------------------ local copies

    def cached(self, code: str) -> Tournament | None:
        """This process's copy of the tournament if no newer version was announced on
        the bus (a committer's first attempt starts from it, saving a read; if it is
        stale after all, the compare-and-set fails and the next attempt reads)."""
        local = self.local.get(code)
        if local is None or local.tournament.ver < local.known_ver:
            return None
        return local.tournament

    def committed(self, t: Tournament, *, urgent: bool) -> None:
        """A change was stored: push it here, announce it to the other processes (in
        the background: the committer's next batch need not wait for it; an
        announcement overtaken by a newer one is ignored by version)."""
        self.remember(t)
        local = self.local.get(t.code)
        if local is not None:
            local.known_ver = max(local.known_ver, t.ver)
            self._schedule_push(local, urgent=urgent)
        self.spawn(self._announce(t, urgent=urgent))

    async def _announce(self, t: Tournament, *, urgent: bool) -> None:
        payload = messages.encode(messages.TournamentChanged(ver=t.ver, urgent=urgent))
        try:
            await self.room_storage.publish_many([(t.code, payload)])
        except InternalError:  # the other processes catch up at the next change or tick
            log.debug("tournament publish failed", extra={"tournament": t.code})

    def remember(self, t: Tournament) -> None:
        local = self.local.get(t.code)
        if local is not None and t.ver > local.tournament.ver:
            local.tournament = t

    async def refresh(self, local: LocalTournament) -> Tournament:
        """The local copy, read again first if a newer version was announced."""
        if local.tournament.ver < local.known_ver:
            fresh = await load_or_none(self.storage, local.code)
            if fresh is not None:
                self.remember(fresh)
        return local.tournament

    # ------------------------------------------------------------------ subscriptions

    def check_subscription_room(self, conn: Connection, code: str | None) -> None:
        codes = self.watching.get(conn, set())
        if code not in codes and len(codes) >= MAX_SUBSCRIPTIONS:
            raise TournamentError("too_many_subscriptions")

    async def subscribe(self, conn: Connection, t: Tournament, *, spectator: bool) -> None:
        local = self.local.get(t.code)
        if local is None:
            local = self.local[t.code] = LocalTournament(t.code, t, known_ver=t.ver)
            local.pushed_ver = t.ver  # the reply carries this version
            await self.bus.subscribe(t.code)
        else:
            self.remember(t)
        local.subs[conn] = spectator
        self.watching.setdefault(conn, set()).add(t.code)

    def unsubscribe(self, conn: Connection, code: str) -> None:
        codes = self.watching.get(conn)
        if codes is not None:
            codes.discard(code)
            if not codes:
                del self.watching[conn]
        local = self.local.get(code)
        if local is None:
            return
        local.subs.pop(conn, None)
        if not local.subs:
            if local.push_timer is not None:
                local.push_timer.cancel()
            del self.local[code]
            self.spawn(self.bus.unsubscribe(code))

    def forget(self, conn: Connection) -> None:
        """The socket closed: drop its subscriptions, and its spectator seats unless the
        same player still watches from another socket here (so a spectator who just
        closes the page does not hold one of the bounded seats until the TTL)."""
        for code in list(self.watching.get(conn, ())):
            viewer = player_of(conn).id  # only a player who said hello can subscribe
            local = self.local.get(code)
            spectator = local is not None and local.subs.get(conn, False)
            self.unsubscribe(conn, code)
            local = self.local.get(code)
            still_here = local is not None and any(
                other_spectator and player_of(other).id == viewer
                for other, other_spectator in local.subs.items()
            )
            if spectator and not still_here:
                self.spawn(self._release_seat(code, viewer))

    async def _release_seat(self, code: str, player_id: str) -> None:
        try:
            await self.storage.remove_spectator(code, player_id)
            self.spectator_counts.pop(code, None)
        except ServerError:  # storage down: the seat lapses with the tournament's TTL
            log.debug("spectator seat not released", extra={"tournament": code})

    # ------------------------------------------------------------------ pushes

    def on_bus(self, code: str, message: messages.TournamentChanged) -> None:
        local = self.local.get(code)
        if local is None or message.ver <= local.known_ver:
            return
        local.known_ver = message.ver
        self._schedule_push(local, urgent=message.urgent)

    def _schedule_push(self, local: LocalTournament, *, urgent: bool) -> None:
        loop = asyncio.get_running_loop()
        if urgent:
            if local.push_timer is not None:
                local.push_timer.cancel()
                local.push_timer = None
            self.spawn(self.push(local.code))
            return
        if local.push_timer is not None:
            return
        delay = max(0.0, local.last_push + self.push_interval_s - loop.time())
        local.push_timer = loop.call_later(delay, lambda: self.spawn(self.push(local.code)))

    async def push(self, code: str) -> None:
        """Send the newest snapshot to this process's subscribers (one packing of the
        tournament for all; ``you`` per subscriber)."""
        local = self.local.get(code)
        if local is None:
            return
        local.push_timer = None
        local.last_push = asyncio.get_running_loop().time()
        t = await self.refresh(local)
        if t.ver <= local.pushed_ver:
            return
        local.pushed_ver = t.ver
        spectators = await self.spectators(code)
        standings = self.standings_of(t)
        data = t.public_dict(self.clock(), spectators=spectators, standings=standings)
        shared = wire_server.pack_value(data)
        rows = {r["id"]: r for r in standings}
        for conn, spectator in list(local.subs.items()):
            viewer = conn.player.id if conn.player is not None else None
            conn.send(
                wire_server.encode_tournament(shared, t.you(viewer, spectator=spectator, rows=rows))
            )

    def push_live(
        self,
        local: LocalTournament,
        current: Current,
        progress: dict[str, RacerProgress],
        entrant_progress: list[RacerProgress],
        now: int,
    ) -> None:
        """Send the running round's ``t_live`` to the subscribers, unless it shows
        nothing new since the last one."""
        rows = live_rows(local.entrants, progress, start_at=current.start_at, now=now)
        racing = sum(1 for pr in entrant_progress if pr.status == "playing")
        finished = sum(1 for pr in entrant_progress if pr.status == "won")
        key = (current.round, tuple((r.id, r.foundation, r.moves, r.finished) for r in rows))
        if key == local.live_key:
            return
        local.live_key = key
        top = tuple([r.to_record() for r in rows[:LIVE_TOP]])
        shared = wire_server.t_live_shared(local.code, current.round, top, racing, finished)
        by_id = {r.id: r for r in rows}
        for conn in list(local.subs):
            viewer = conn.player.id if conn.player is not None else None
            row = by_id.get(viewer) if viewer else None
            you = row.to_record() if row is not None else None
            conn.send(wire_server.encode_t_live(shared, you))

    # ------------------------------------------------------------------ snapshots

    async def snapshot(self, conn: Connection, t: Tournament, msg_id: int | None) -> bytes:
        player = player_of(conn)
        local = self.local.get(t.code)
        spectator = bool(local is not None and local.subs.get(conn, False))
        standings = self.standings_of(t)
        data = t.public_dict(
            self.clock(),
            spectators=await self.spectators(t.code),
            standings=standings,
        )
        rows = {r["id"]: r for r in standings}
        return wire_server.encode_tournament(
            wire_server.pack_value(data), t.you(player.id, spectator=spectator, rows=rows), msg_id
        )

    async def spectators(self, code: str) -> int:
        """The tournament's spectator count, read at most once per push interval (a
        crowd's 200 replies need not ask Redis 200 times; pushes are that fresh too).
        This process's own spectator changes are seen at once."""
        now = asyncio.get_running_loop().time()
        cached = self.spectator_counts.get(code)
        if cached is not None and now - cached[0] < self.push_interval_s:
            return cached[1]
        count = await self.storage.spectator_count(code)
        if len(self.spectator_counts) >= STANDINGS_MEMO_SIZE:
            self.spectator_counts.clear()
        self.spectator_counts[code] = (now, count)
        return count

    def standings_of(self, t: Tournament) -> list[dict[str, Any]]:
        """``t.standings()``, computed once per stored version (a crowd's 200 replies
        show a handful of versions). The rows are shared: callers do not change them."""
        memo = self.standings_memo.get(t.code)
        if memo is not None and memo[0] == t.ver:
            return memo[1]
        if len(self.standings_memo) >= STANDINGS_MEMO_SIZE:
            self.standings_memo.clear()
        rows = t.standings()
        self.standings_memo[t.code] = (t.ver, rows)
        return rows
