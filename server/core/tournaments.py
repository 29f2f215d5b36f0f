"""Tournaments in the core (docs/tournaments.md): requests, rounds run in race rooms,
results recorded once, throttled pushes to subscribers on every process.

- A tournament is a value (:mod:`server.tournament`) stored with compare-and-set by
  version in the ``TournamentStorage`` port; each committed change is announced on the
  tournament's bus channel (its code), so every process with subscribers pushes it.
- Group commit: a process runs one committer per tournament; every transition asked
  for meanwhile (200 players registering at once) is applied in order to one loaded
  copy and stored in one compare-and-set, so requests do not race each other, only
  the processes' committers do. A committer that loses re-runs its batch (the server's
  retry, bounded, counted in ``crescent_cas_retries_total{record="tournament"}``).
- A round is a race room (``Room.create_round``: every active player seated, counting
  down, deal secret) run by the usual room and game machinery. Its end — deadline, all
  done, or the host's ``end`` — is recorded into the tournament once (the record's
  version and ``current`` make a second recording a no-change), by the process that
  finished the room (``on_room_finished``) or, if that one died, by any process that
  sweeps the tournament (every tick, for the tournaments it has subscribers of).
- Pushes: ``tournament`` snapshots coalesced to at most one per tournament per
  ``push_interval_s`` (a round's start and end at once); during a round, ``t_live``
  (top 10, you, counts) once per tick, its shared part packed once.
"""

from __future__ import annotations

import asyncio
import csv
import io
import logging
import random
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Final

from crescent_wire import protocol as p
from crescent_wire.errors import ConflictError, InternalError, ServerError, TournamentError
from server.core import messages, wire_server
from server.core.games import Games
from server.core.ports import Bus, Clock, Connection, CpuBusy, Storage, TournamentStorage
from server.core.room_codes import is_room_code, new_room_code
from server.core.rooms import MAX_CAS_ATTEMPTS, Rooms
from server.core.session import player_of
from server.game import DealCode, InvalidDealCode
from server.lobby import Member, Room, initial_progress, race_over
from server.metrics import Metrics
from server.tasks import cancel_and_wait
from server.tournament import CODE_PREFIX, Change, Tournament, live_rows

log = logging.getLogger("server.tournaments")

TOURNAMENT_REQUESTS: Final = (
    p.TCreate,
    p.TJoin,
    p.TWithdraw,
    p.THost,
    p.TGet,
    p.TUnwatch,
    p.TGetResults,
    p.TGetStandings,
)
DealSource = Callable[[str], Awaitable[str]]

UNFINISHED_TTL_S: Final = 7 * 86_400  # a tournament never finished: 7 days after a change
FINISHED_TTL_S: Final = 30 * 86_400  # a finished one stays viewable and exportable
MAX_HOSTED: Final = 3  # unfinished tournaments per host
MAX_SPECTATORS: Final = 1000  # per tournament
MAX_SUBSCRIPTIONS: Final = 4  # tournaments one connection watches
PUSH_INTERVAL_S: Final = 1.0  # tournament snapshots and t_live: at most this often
CERTIFY_WAIT_S: Final = 2.0  # start_round waits this long for a certified deal
CERTIFY_BUDGET_S: Final = 5.0  # the solver's budget per deal drawn (server/core/daily.py)
LIVE_TOP: Final = p.T_LIVE_TOP
# A committer whose compare-and-set lost to another process's runs its batch again, at
# most this many times, after a random pause of up to RETRY_PAUSE_S per attempt so far
# (capped at 4): two processes' committers then stop colliding.
MAX_COMMIT_ATTEMPTS: Final = 16
RETRY_PAUSE_S: Final = 0.002
STANDINGS_MEMO_SIZE: Final = 256  # tournaments whose standings (spectators) are kept


def is_tournament_code(code: str) -> bool:
    return code.startswith(CODE_PREFIX) and is_room_code(code[len(CODE_PREFIX) :])


def new_tournament_code() -> str:
    return CODE_PREFIX + new_room_code()


def ttl_of(t: Tournament) -> int:
    return FINISHED_TTL_S if t.finished else UNFINISHED_TTL_S


@dataclass
class Queued:
    """A transition waiting for this process's committer of its tournament."""

    change: Callable[[Tournament, int], Change]
    done: asyncio.Future[Tournament]


@dataclass
class LocalTournament:
    """A tournament with subscribers on this process."""

    code: str
    tournament: Tournament
    subs: dict[Connection, bool] = field(default_factory=dict)  # conn -> as spectator
    known_ver: int = 0  # the newest version announced on the bus
    pushed_ver: int = -1
    last_push: float = -1e9  # loop time of the last snapshot push
    push_timer: asyncio.TimerHandle | None = None
    entrants: tuple[tuple[str, str], ...] = ()  # the running round's racers
    entrants_room: str | None = None
    live_key: Any = None  # what the last t_live showed (nothing new: no push)


class Tournaments:
    def __init__(
        self,
        storage: TournamentStorage,
        room_storage: Storage,
        bus: Bus,
        rooms: Rooms,
        games: Games,
        clock: Clock,
        *,
        spawn: Callable[[Coroutine[Any, Any, Any]], None],
        deals: DealSource,
        countdown_ms: int,
        metrics: Metrics | None = None,
        push_interval_s: float = PUSH_INTERVAL_S,
        tick_s: float = PUSH_INTERVAL_S,
        certify_wait_s: float = CERTIFY_WAIT_S,
    ) -> None:
        self.storage = storage
        self.room_storage = room_storage
        self.bus = bus
        self.rooms = rooms
        self.games = games
        self.clock = clock
        self.spawn = spawn
        self.deals = deals
        self.countdown_ms = countdown_ms
        self.push_interval_s = push_interval_s
        self.tick_s = tick_s
        self.certify_wait_s = certify_wait_s
        self.metrics = metrics if metrics is not None else Metrics()
        self.local: dict[str, LocalTournament] = {}
        # Tournaments with a committer running here -> the transitions waiting for it.
        self.queued: dict[str, list[Queued]] = {}
        self.standings_memo: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        self.spectator_counts: dict[str, tuple[float, int]] = {}  # code -> (loop time, n)
        self.watching: dict[Connection, set[str]] = {}  # conn -> codes it subscribed to
        self.preparing: set[str] = set()  # tournaments drawing a deal ahead here
        self.recording: set[str] = set()  # rounds (room codes) being recorded here
        # Told of every tournament this process finished (the archive, hub.py).
        self.on_finished: Callable[[Tournament], None] = lambda t: None
        self._loop_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self._loop_task = asyncio.get_running_loop().create_task(self.run(), name="tournament-tick")

    async def stop(self) -> None:
        if self._loop_task is not None:
            await cancel_and_wait(self._loop_task)
        for local in self.local.values():
            if local.push_timer is not None:
                local.push_timer.cancel()

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.tick_s)
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except InternalError:
                log.debug("tournament tick failed")
            except Exception:
                log.exception("tournament tick failed")

    # ------------------------------------------------------------------ storage

    async def load_or_none(self, code: str) -> Tournament | None:
        if not is_tournament_code(code):
            return None
        record = await self.storage.load_tournament(code)
        return Tournament.from_record(record) if record is not None else None

    async def load(self, code: str) -> Tournament:
        t = await self.load_or_none(code)
        if t is None:
            raise TournamentError("tournament_not_found")
        return t

    async def transition(
        self, code: str, change: Callable[[Tournament, int], Change]
    ) -> Tournament:
        """Run a pure transition against the stored tournament: queued for this
        process's committer of the tournament, which stores it with every transition
        queued meanwhile in one compare-and-set. Returns the tournament as committed
        (this change and those batched with it), or raises the change's own error."""
        done: asyncio.Future[Tournament] = asyncio.get_running_loop().create_future()
        queue = self.queued.get(code)
        if queue is None:
            queue = self.queued[code] = []
            self.spawn(self._run_committer(code, queue))
        queue.append(Queued(change, done))
        return await done

    async def _run_committer(self, code: str, queue: list[Queued]) -> None:
        """Commit the queued transitions in batches until none is left."""
        try:
            while queue:
                batch = queue[:]
                del queue[:]
                queue[:0] = await self._commit_batch(code, batch)
        finally:
            if self.queued.get(code) is queue:
                del self.queued[code]
            for entry in queue:  # only if cancelled (the server stops)
                if not entry.done.done():
                    entry.done.set_exception(InternalError("The server is stopping; retry"))

    async def _commit_batch(self, code: str, batch: list[Queued]) -> list[Queued]:
        """Apply ``batch`` in order to the stored tournament and store the outcome with
        one compare-and-set; resolve each entry (the committed tournament, or the error
        its change raised). Returns the entries left for the next batch: those after a
        second change that records a round's rows (one round's rows per write)."""
        try:
            for attempt in range(MAX_COMMIT_ATTEMPTS):
                if attempt:
                    self.metrics.cas_retries.labels(record="tournament").inc()
                    await asyncio.sleep(random.uniform(0, RETRY_PAUSE_S * min(attempt, 4)))
                batch = [entry for entry in batch if not entry.done.done()]  # cancelled
                if not batch:
                    return []
                cached = self._cached(code) if attempt == 0 else None
                t = cached if cached is not None else await self.load(code)
                now = self.clock()
                new, urgent = t, False
                rows: tuple[int, list[dict[str, Any]]] | None = None
                errors: dict[int, BaseException] = {}
                taken, rest = batch, []
                for index, entry in enumerate(batch):
                    try:
                        outcome = entry.change(new, now)
                    except Exception as exc:  # this request's error: the others go on
                        errors[index] = exc
                        continue
                    if not outcome.changed:
                        continue
                    after = outcome.tournament
                    if outcome.rows or after.finished_rounds != new.finished_rounds:
                        if rows is not None:
                            taken, rest = batch[:index], batch[index:]
                            break
                        rows = (after.finished_rounds[-1].round, list(outcome.rows))
                    new, urgent = after, urgent or outcome.urgent
                if new is not t:
                    try:
                        await self.storage.cas_tournament(
                            code, t.ver, new.to_record(), ttl_s=ttl_of(new), round_rows=rows
                        )
                    except ConflictError:
                        continue
                for index, entry in enumerate(taken):
                    if entry.done.done():
                        continue
                    if index in errors:
                        entry.done.set_exception(errors[index])
                    else:
                        entry.done.set_result(new)
                if new is t:
                    self._remember(t)
                else:
                    self._committed(new, urgent=urgent)
                    if new.finished and not t.finished:
                        self.on_finished(new)
                return rest
            log.warning(
                "tournament commit kept losing",
                extra={"tournament": code, "attempts": MAX_COMMIT_ATTEMPTS},
            )
            raise InternalError("The tournament kept changing; retry")
        except BaseException as exc:
            failure = exc if isinstance(exc, Exception) else InternalError()
            for entry in batch:
                if not entry.done.done():
                    entry.done.set_exception(failure)
            if not isinstance(exc, Exception):
                raise
            return []

    def _cached(self, code: str) -> Tournament | None:
        """This process's copy of the tournament if no newer version was announced on
        the bus (a committer's first attempt starts from it, saving a read; if it is
        stale after all, the compare-and-set fails and the next attempt reads)."""
        local = self.local.get(code)
        if local is None or local.tournament.ver < local.known_ver:
            return None
        return local.tournament

    def _committed(self, t: Tournament, *, urgent: bool) -> None:
        """A change was stored: push it here, announce it to the other processes (in
        the background: the committer's next batch need not wait for it; an
        announcement overtaken by a newer one is ignored by version)."""
        self._remember(t)
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

    def _remember(self, t: Tournament) -> None:
        local = self.local.get(t.code)
        if local is not None and t.ver > local.tournament.ver:
            local.tournament = t

    # ------------------------------------------------------------------ requests

    async def handle(self, conn: Connection, msg: p.ClientMessage) -> p.ServerMessage | bytes:
        if isinstance(msg, p.TCreate):
            return await self.create(conn, msg)
        if isinstance(msg, p.TJoin):
            return await self.join(conn, msg)
        if isinstance(msg, p.TWithdraw):
            await self.withdraw(conn, msg.tournament)
            return p.Ok(id=msg.id)
        if isinstance(msg, p.THost):
            await self.host(conn, msg)
            return p.Ok(id=msg.id)
        if isinstance(msg, p.TGet):
            t = await self.load(msg.tournament)
            t = await self._catch_up(t)
            return await self.snapshot(conn, t, msg.id)
        if isinstance(msg, p.TUnwatch):
            await self.unwatch(conn, msg.tournament)
            return p.Ok(id=msg.id)
        if isinstance(msg, p.TGetResults):
            return await self.results(msg)
        if isinstance(msg, p.TGetStandings):
            t = await self.load(msg.tournament)
            return p.TStandings(
                tournament=t.code, final=t.finished, rows=tuple(self.standings_of(t)), id=msg.id
            )
        raise InternalError(f"no handler for {type(msg).__name__}")

    async def create(self, conn: Connection, msg: p.TCreate) -> bytes:
        player = player_of(conn)
        deals: tuple[str, ...] | None = None
        if msg.deals is not None:
            parsed = []
            for text in msg.deals:
                try:
                    deal = DealCode.parse(text)
                except InvalidDealCode as err:
                    raise TournamentError("bad_deal_code", err.message) from None
                if str(deal.variant) != msg.variant:
                    raise TournamentError(
                        "bad_deal_code", f"Deal {text} is not of variant {msg.variant}"
                    )
                parsed.append(str(deal))
            deals = tuple(parsed)
        hosted = await self._hosted(player.id)
        self._check_subscription_room(conn, None)
        now = self.clock()
        for _ in range(MAX_CAS_ATTEMPTS):
            t = Tournament.create(
                new_tournament_code(),
                name=msg.name,
                host=(player.id, player.name),
                variant=msg.variant,
                rounds=msg.rounds,
                time_limit=msg.time_limit,
                max_players=msg.max_players,
                scoring=msg.scoring,
                deals=deals,
                now=now,
            )
            try:
                await self.storage.cas_tournament(t.code, -1, t.to_record(), ttl_s=ttl_of(t))
            except ConflictError:
                continue
            break
        else:
            raise InternalError("Could not find a free tournament code")
        await self.storage.set_host_tournaments(player.id, [*hosted, t.code], FINISHED_TTL_S)
        log.info(
            "tournament created",
            extra={"tournament": t.code, "player": player.id, "rounds": t.rounds},
        )
        await self._subscribe(conn, t, spectator=False)
        self._prepare_soon(t)
        return await self.snapshot(conn, t, msg.id)

    async def _hosted(self, host: str) -> list[str]:
        """The host's unfinished tournaments; ``too_many_tournaments`` at the quota."""
        codes = await self.storage.host_tournaments(host)
        still = []
        for code in codes:
            t = await self.load_or_none(code)
            if t is not None and not t.finished:
                still.append(code)
        if len(still) >= MAX_HOSTED:
            raise TournamentError(
                "too_many_tournaments",
                f"You host {len(still)} unfinished tournaments (at most {MAX_HOSTED}); "
                "end one first",
            )
        return still

    async def join(self, conn: Connection, msg: p.TJoin) -> bytes:
        player = player_of(conn)
        self._check_subscription_room(conn, msg.tournament)
        spectator = msg.as_ == "spectator"
        if spectator:
            t = await self.load(msg.tournament)
            if player.id != t.host and t.player(player.id) is None:
                added = await self.storage.add_spectator(
                    t.code, player.id, MAX_SPECTATORS, ttl_of(t)
                )
                self.spectator_counts.pop(t.code, None)
                if not added:
                    raise TournamentError(
                        "tournament_full", "This tournament has as many spectators as it allows"
                    )
        else:  # no read first: a crowd's joins are batched by the committer
            if not is_tournament_code(msg.tournament):
                raise TournamentError("tournament_not_found")
            t = await self.transition(
                msg.tournament,
                # a token naming a session is an account's (hello checked it is live)
                lambda t, now: t.join(
                    player.id, player.name, now=now, account=player.session is not None
                ),
            )
        await self._subscribe(conn, t, spectator=spectator)
        t = await self._catch_up(t)
        return await self.snapshot(conn, t, msg.id)

    async def withdraw(self, conn: Connection, code: str) -> None:
        player = player_of(conn)
        t = await self.transition(code, lambda t, now: t.withdraw(player.id, now=now))
        await self._resign_in_round(t, player.id)

    async def host(self, conn: Connection, msg: p.THost) -> None:
        player = player_of(conn)
        code, op = msg.tournament, msg.op
        if op == "start_round":
            await self.start_round(code, player.id)
        elif op in ("open_registration", "close_registration"):
            open_ = op == "open_registration"
            await self.transition(
                code, lambda t, now: t.set_registration(player.id, open_, now=now)
            )
        elif op in ("pause", "resume"):
            paused = op == "pause"
            await self.transition(code, lambda t, now: t.set_paused(player.id, paused, now=now))
        elif op == "remove":
            target = msg.player or ""
            t = await self.transition(code, lambda t, now: t.remove(player.id, target, now=now))
            await self._resign_in_round(t, target)
        elif op == "end":
            await self.end(code, player.id)
        elif op == "accounts_only":
            await self.transition(code, lambda t, now: t.set_accounts_only(player.id, now=now))
        else:  # the codec only lets T_HOST_OPS through
            raise InternalError(f"unknown host op {op}")

    async def unwatch(self, conn: Connection, code: str) -> None:
        player = player_of(conn)
        self._unsubscribe(conn, code)
        t = await self.load_or_none(code)
        if t is None:
            raise TournamentError("tournament_not_found")
        if t.player(player.id) is None:
            await self.storage.remove_spectator(code, player.id)
            self.spectator_counts.pop(code, None)

    async def results(self, msg: p.TGetResults) -> p.TResults:
        t = await self.load(msg.tournament)
        summary = next((s for s in t.finished_rounds if s.round == msg.round), None)
        rows = await self.storage.round_results(t.code, msg.round) if summary else None
        if summary is None or rows is None:
            raise TournamentError("round_not_finished")
        return p.TResults(
            tournament=t.code, round=msg.round, deal=summary.deal, rows=tuple(rows), id=msg.id
        )

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

    # ------------------------------------------------------------------ rounds

    async def start_round(self, code: str, host_id: str) -> None:
        t = await self.load(code)
        t.check_can_start(host_id)
        deal = t.next_deal() or await self._draw_now(t.variant)
        racers = tuple(Member(pl.id, pl.name) for pl in t.active)
        for _ in range(MAX_CAS_ATTEMPTS):
            room = Room.create_round(
                new_room_code(),
                tournament=code,
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
            break
        else:
            raise InternalError("Could not find a free room code")
        assert room.start_at is not None
        start_at = room.start_at
        new = await self.transition(
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
        self._prepare_soon(new)

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

    def _prepare_soon(self, t: Tournament) -> None:
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
                await self.transition(t.code, lambda t, now: t.add_prepared(deal, now=now))
            except CpuBusy:
                log.debug("solver busy: the deal is drawn when the round starts")
            except Exception as exc:
                log.info("preparing a deal failed", extra={"error": repr(exc)})
            finally:
                self.preparing.discard(t.code)

        self.spawn(prepare())

    async def end(self, code: str, host_id: str) -> None:
        """The host ends the tournament; a running round is ended and scored first. If
        that was the last round, scoring it ended the tournament: that is the end
        asked for (``ok``, not ``tournament_over``)."""
        t = await self.load(code)
        t.check_host(host_id)
        if t.current is not None:
            await self.rooms.finish(t.current.room, "tournament ended", force=True)
            if (await self.record(code, t.current.room)).finished:
                log.info("tournament ended", extra={"tournament": code})
                return
        await self.transition(code, lambda t, now: t.end(host_id, now=now))
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
            return await self.load(code)
        results = list(room.results or ()) if room is not None else []
        deal = room.deal if room is not None else ""
        t = await self.transition(
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

    async def _resign_in_round(self, t: Tournament, player_id: str) -> None:
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

    async def _catch_up(self, t: Tournament) -> Tournament:
        """Finish and record a round whose room is over (its process may have died);
        returns the tournament, reloaded if it changed."""
        current = t.current
        if current is None:
            return t
        room = await self.rooms.load_or_none(current.room)
        if room is None or room.phase == "finished":
            await self.record(t.code, current.room)
            return await self.load(t.code)
        now = self.clock()
        if room.deadline_passed(now):
            await self.rooms.finish(current.room, "tournament sweep")
            await self.record(t.code, current.room)
            return await self.load(t.code)
        return t

    # ------------------------------------------------------------------ subscriptions

    def _check_subscription_room(self, conn: Connection, code: str | None) -> None:
        codes = self.watching.get(conn, set())
        if code not in codes and len(codes) >= MAX_SUBSCRIPTIONS:
            raise TournamentError("too_many_subscriptions")

    async def _subscribe(self, conn: Connection, t: Tournament, *, spectator: bool) -> None:
        local = self.local.get(t.code)
        if local is None:
            local = self.local[t.code] = LocalTournament(t.code, t, known_ver=t.ver)
            local.pushed_ver = t.ver  # the reply carries this version
            await self.bus.subscribe(t.code)
        else:
            self._remember(t)
        local.subs[conn] = spectator
        self.watching.setdefault(conn, set()).add(t.code)

    def _unsubscribe(self, conn: Connection, code: str) -> None:
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
            self._unsubscribe(conn, code)
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
        if local.tournament.ver < local.known_ver:
            fresh = await self.load_or_none(code)
            if fresh is not None:
                self._remember(fresh)
        t = local.tournament
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

    async def tick(self) -> None:
        """Once per tick: each local tournament's running round is swept (finished and
        recorded when over, whichever process ran it) and summarised in ``t_live``."""
        for code in list(self.local):
            local = self.local.get(code)
            if local is None:
                continue
            try:
                await self._tick_one(local)
            except InternalError:
                log.debug("tournament tick failed", extra={"tournament": code})

    async def _tick_one(self, local: LocalTournament) -> None:
        t = local.tournament
        if t.ver < local.known_ver:
            fresh = await self.load_or_none(t.code)
            if fresh is not None:
                self._remember(fresh)
                t = local.tournament
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
            await self._catch_up(t)
            return
        if now < current.start_at:
            return
        progress = (await self.room_storage.read_progress([(current.room, 1)]))[0]
        entrant_progress = [progress.get(pid) or initial_progress(pid) for pid, _ in local.entrants]
        if race_over(entrant_progress):
            await self.rooms.finish(current.room, "all done")
            await self.record(t.code, current.room)
            return
        rows = live_rows(local.entrants, progress, start_at=current.start_at, now=now)
        racing = sum(1 for pr in entrant_progress if pr["status"] == "playing")
        finished = sum(1 for pr in entrant_progress if pr["status"] == "won")
        key = (
            current.round,
            tuple((r["id"], r["foundation"], r["moves"], r["finished"]) for r in rows),
        )
        if key == local.live_key:
            return
        local.live_key = key
        shared = wire_server.t_live_shared(
            t.code, current.round, tuple(rows[:LIVE_TOP]), racing, finished
        )
        by_id = {r["id"]: r for r in rows}
        for conn in list(local.subs):
            viewer = conn.player.id if conn.player is not None else None
            conn.send(wire_server.encode_t_live(shared, by_id.get(viewer) if viewer else None))

    # ------------------------------------------------------------------ export

    async def export(self, code: str) -> dict[str, Any]:
        """Everything about a tournament (``/api/tournaments/{code}.json``): settings,
        players, every finished round's rows and deal, the standings."""
        t = await self.load(code)
        results = await self.storage.all_results(code)
        data = t.public_dict(self.clock(), spectators=await self.storage.spectator_count(code))
        data.pop("standings")
        return {
            "tournament": data,
            "players": [
                {
                    "id": pl.id,
                    "name": pl.name,
                    "status": pl.status,
                    "joined_at": pl.joined_at,
                    "first_round": pl.first_round,
                }
                for pl in t.players
            ],
            "rounds": [
                {**s.to_wire(), "rows": results.get(s.round, [])} for s in t.finished_rounds
            ],
            "standings": {"final": t.finished, "rows": t.standings()},
        }

    async def export_csv(self, code: str) -> str:
        """One line per player per finished round, then the standings."""
        data = await self.export(code)
        out = io.StringIO()
        writer = SafeCsvWriter(out)
        writer.writerow(
            [
                "round",
                "place",
                "id",
                "name",
                "finished",
                "time_ms",
                "moves",
                "foundation",
                "points",
                "time_charged_ms",
            ]
        )
        for rnd in data["rounds"]:
            for r in rnd["rows"]:
                writer.writerow(
                    [
                        rnd["round"],
                        r["place"],
                        r["id"],
                        r["name"],
                        int(r["finished"]),
                        _blank(r["time_ms"]),
                        r["moves"],
                        r["foundation"],
                        _blank(r["points"]),
                        _blank(r["time_charged_ms"]),
                    ]
                )
        writer.writerow([])
        score = "points" if data["tournament"]["scoring"] == "placement" else "total_ms"
        writer.writerow(
            ["rank", "id", "name", "status", score, "rounds_won", "best_place", "rounds_played"]
        )
        for row in data["standings"]["rows"]:
            writer.writerow(
                [
                    _blank(row["rank"]),
                    row["id"],
                    row["name"],
                    row["status"],
                    row[score],
                    row["rounds_won"],
                    _blank(row["best_place"]),
                    row["rounds_played"],
                ]
            )
        return out.getvalue()


def _blank(value: Any) -> Any:
    return "" if value is None else value


# A text cell starting with one of these is read as a formula by spreadsheets (CSV
# injection); OWASP's advice: prefix it with a single quote, and quote cells as usual.
FORMULA_STARTS: Final = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text, never runs (numbers are left alone).

    >>> neutralise_cell("=1+1"), neutralise_cell("Ada"), neutralise_cell(-5)
    ("'=1+1", 'Ada', -5)
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class SafeCsvWriter:
    """csv.writer (its quoting kept) with every text cell neutralised."""

    def __init__(self, out: io.StringIO) -> None:
        self.writer = csv.writer(out, lineterminator="\n")

    def writerow(self, row: list[Any]) -> None:
        self.writer.writerow([neutralise_cell(value) for value in row])


__all__ = [
    "TOURNAMENT_REQUESTS",
    "Tournaments",
    "is_tournament_code",
    "new_tournament_code",
]
