"""The race hub: one per process. Ties the pure lobby to the store and to local sockets.

It knows neither aiohttp nor redis: sockets are :class:`Connection` objects (the web
layer implements them) and Redis is :class:`server.store.Store`.

- Room transitions: load the room, run the pure transition, compare-and-set it into
  Redis (history + bus publish in the same script); on a lost race, reload and rerun.
- Local rooms: for every room with local sockets the hub keeps the latest room, the
  local sockets, a deadline timer and is subscribed to the room's bus. Bus messages
  (events and progress, already encoded) are forwarded as they are.
- Games: racers' games live in memory here while they have a socket here (rebuilt
  from the action log when first needed). An action is applied, appended through the
  write batcher and acknowledged only after Redis stored it.
- Progress: rooms with new progress are flushed every ~100 ms: one pipeline reads
  their progress hashes, one publishes the frames; the same flush ends races whose
  racers are all done.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from crescent_wire import protocol as p
from crescent_wire.errors import AuthError, ConflictError, InternalError, RoomError, ServerError
from server.auth import Player, TokenSigner, clean_name
from server.game import DealCode, InvalidDealCode
from server.lobby import (
    RESIGN,
    TERMINAL,
    Member,
    RacerGame,
    Refusal,
    Room,
    Transition,
    initial_progress,
    race_over,
    rank,
    wire_progress,
)
from server.core.room_codes import is_room_code, new_room_code
from server.core.view_codec import ViewEncoder
from server.metrics import Metrics
from server.store import AppendResult, Bus, Store, pack, unpack

log = logging.getLogger("server.hub")

PROGRESS_INTERVAL_S = 0.2  # progress frames: at most 5 per second per room
MAX_CAS_ATTEMPTS = 10


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class Connection(Protocol):
    """A client socket as the hub sees it (implemented by the web layer)."""

    player: Player | None
    rooms: set[str]

    def send(self, frame: bytes) -> None:
        """Queue an encoded frame; never blocks."""

    def send_progress(self, frame: bytes) -> None:
        """Queue a ``progress`` frame: it may wait a moment to go out with the next reply
        (progress is state: the connection may coalesce it); never blocks."""


@dataclass
class HubSettings:
    countdown_ms: int = 3000
    rate_per_s: int = p.RATE_PER_S
    rate_burst: int = p.RATE_BURST
    room_ttl_s: int = 24 * 3600


@dataclass
class LocalRoom:
    room: Room
    conns: set[Connection] = field(default_factory=set)
    entrant_ids: frozenset[str] = frozenset()  # this round's racers (fast act check)
    sent_ver: int = 0  # the highest event version already forwarded to the local sockets
    player_conns: dict[str, int] = field(default_factory=dict)
    deadline_timer: asyncio.TimerHandle | None = None
    # Serialises this process's transitions of the room: four racers readying at once
    # then commit one after the other on the fresh cached room instead of losing the
    # compare-and-set to each other and reloading from Redis (1 + 2 + 3 + 4 attempts).
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass
class GameSlot:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    racer: RacerGame | None = None
    # An action of the fast path (Hub.act_now) is being stored: the slow path waits for
    # it (``idle``) so the two never interleave on one game.
    storing: bool = False
    idle: asyncio.Future[None] | None = None
    progress: dict[str, Any] | None = None  # the last PROGRESS record this process stored
    encoder: ViewEncoder = field(default_factory=ViewEncoder)

    def forget(self) -> None:
        """Drop the in-memory game (rebuilt from the stored log when next needed)."""
        self.racer = None
        self.progress = None

    def stored(self) -> None:
        self.storing = False
        if self.idle is not None:
            if not self.idle.done():
                self.idle.set_result(None)
            self.idle = None

    async def wait_idle(self) -> None:
        while self.storing:
            if self.idle is None:
                self.idle = asyncio.get_running_loop().create_future()
            await asyncio.shield(self.idle)


class Hub:
    def __init__(self, store: Store, signer: TokenSigner, settings: HubSettings,
                 metrics: Metrics, clock: Callable[[], int] = wall_clock_ms) -> None:
        self.store = store
        self.signer = signer
        self.settings = settings
        self.metrics = metrics
        self.clock = clock
        self.bus = Bus(store, self._on_bus)
        self.rooms: dict[str, LocalRoom] = {}
        self.games: dict[tuple[str, int, str], GameSlot] = {}
        self._dirty: set[str] = set()
        self._flusher: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.closing = False  # graceful shutdown: sockets go, players are not marked offline
        # Tags this process's progress messages on the bus: local sockets get them
        # directly, so the copy that comes back through Redis is skipped.
        self.origin = secrets.token_bytes(8)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        await self.bus.start()
        self._flusher = asyncio.get_running_loop().create_task(self._flush_loop(),
                                                               name="progress-flush")

    async def stop(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
        for local in self.rooms.values():
            if local.deadline_timer is not None:
                local.deadline_timer.cancel()
        for task in list(self._tasks):
            task.cancel()
        await self.bus.stop()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())

    # ------------------------------------------------------------------ session

    async def hello(self, msg: p.Hello) -> tuple[Player, p.Welcome]:
        common = set(msg.versions) & set(p.PROTOCOL_VERSIONS)
        if not common:
            raise AuthError("unsupported_version",
                            f"This server speaks protocol versions {list(p.PROTOCOL_VERSIONS)}")
        if msg.token is not None:
            player = self.signer.verify(msg.token)
            if msg.name is not None:
                player = Player(player.id, clean_name(msg.name))
        else:
            player = Player.new(msg.name)
        now = self.clock()
        await self.store.save_player(player.id, player.name, now)
        welcome = p.Welcome(
            version=max(common), player={"id": player.id, "name": player.name},
            token=self.signer.sign(player), server_time=now,
            limits={"max_frame": p.MAX_FRAME, "rate_per_s": self.settings.rate_per_s,
                    "burst": self.settings.rate_burst},
            id=msg.id)
        return player, welcome

    async def handle(self, conn: Connection, msg: p.ClientMessage
                     ) -> p.ServerMessage | bytes:
        """Answer one request of an authenticated connection (raises ServerError); an
        ``ack`` comes already encoded (bytes), any other reply as its message."""
        if isinstance(msg, p.Act):
            return await self.act(conn, msg)
        if isinstance(msg, p.Ping):
            return p.Pong(server_time=self.clock(), id=msg.id)
        if isinstance(msg, p.Join):
            return await self.join(conn, msg)
        if isinstance(msg, p.CreateRoom):
            return await self.create_room(conn, msg)
        if isinstance(msg, p.Ready):
            await self._transition(msg.room, lambda room, now: room.set_ready(
                self._player(conn).id, msg.ready, now=now), conn=conn)
            return p.Ok(id=msg.id)
        if isinstance(msg, p.Start):
            await self._transition(msg.room, lambda room, now: room.start(
                self._player(conn).id, now=now), conn=conn)
            return p.Ok(id=msg.id)
        if isinstance(msg, p.Leave):
            await self.leave(conn, msg.room)
            return p.Ok(id=msg.id)
        if isinstance(msg, p.Sync):
            return await self.sync(conn, msg)
        if isinstance(msg, p.Rematch):
            new_deal = None

            def rematch(room: Room, now: int) -> Transition:
                nonlocal new_deal
                new_deal = new_deal or str(DealCode.random(room.variant))
                return room.rematch(self._player(conn).id, new_deal, now=now)

            await self._transition(msg.room, rematch, conn=conn)
            return p.Ok(id=msg.id)
        raise InternalError(f"no handler for {type(msg).__name__}")

    @staticmethod
    def _player(conn: Connection) -> Player:
        if conn.player is None:
            raise AuthError("not_authenticated")
        return conn.player

    # ------------------------------------------------------------------ rooms

    async def create_room(self, conn: Connection, msg: p.CreateRoom) -> p.RoomSnapshot:
        player = self._player(conn)
        if msg.deal is not None:
            try:
                deal = DealCode.parse(msg.deal)
            except InvalidDealCode as err:
                raise RoomError("bad_deal_code", err.message) from None
            deal_public = True
        else:
            deal = DealCode.random(msg.variant)
            deal_public = False
        now = self.clock()
        for _ in range(MAX_CAS_ATTEMPTS):
            room = Room.create(new_room_code(), host=Member(player.id, player.name),
                               variant=str(deal.variant), deal=str(deal),
                               deal_public=deal_public, seats=msg.seats,
                               time_limit=msg.time_limit, now=now,
                               countdown_ms=self.settings.countdown_ms)
            try:
                await self.store.cas_room(room.code, -1, room.to_record(), (), None)
            except ConflictError:
                continue  # that code is taken: draw another
            break
        else:
            raise InternalError("Could not find a free room code")
        log.info("room created", extra={"room": room.code, "player": player.id,
                                        "variant": room.variant, "seats": room.seats})
        await self._attach(conn, room)
        return await self.snapshot(conn, room, msg.id)

    async def join(self, conn: Connection, msg: p.Join) -> p.RoomSnapshot:
        player = self._player(conn)
        local = self.rooms.get(msg.room)
        if msg.room in conn.rooms and local is not None:
            # Joining again (e.g. for a fresh snapshot): the cached room is kept current
            # by the bus, and the transition below compare-and-sets against Redis anyway.
            room = local.room
        else:
            room = await self._load_room(msg.room)
        # Subscribe first, so this process sees every event from this version on.
        await self._attach(conn, room)
        try:
            room = await self._transition(
                msg.room, lambda room, now: room.join(
                    Member(player.id, player.name), as_spectator=msg.as_ == "spectator",
                    now=now))
        except BaseException:
            await self._detach(conn, msg.room, update_presence=True)
            raise
        log.info("joined", extra={"room": room.code, "player": player.id, "as": msg.as_})
        return await self.snapshot(conn, room, msg.id)

    async def leave(self, conn: Connection, code: str) -> None:
        player = self._player(conn)
        if code not in conn.rooms:
            raise RoomError("not_in_room")
        room = self._local_room(code)
        if room.is_entrant(player.id) and room.phase == "countdown":
            await self._resign(room, player.id)
        await self._transition(code, lambda room, now: room.leave(player.id, now=now))
        await self._detach(conn, code, update_presence=False)

    async def disconnect(self, conn: Connection) -> None:
        """The socket closed: detach it from every room (presence, subscriptions)."""
        for code in list(conn.rooms):
            try:
                await self._detach(conn, code, update_presence=True)
            except Exception:
                log.exception("detach failed", extra={"room": code})

    async def sync(self, conn: Connection, msg: p.Sync) -> p.Events | p.RoomSnapshot:
        if msg.room not in conn.rooms:
            raise RoomError("not_in_room")
        frames = await self.store.read_events(msg.room)
        events = [p.decode_server(f) for f in frames]
        oldest = events[0].ver if events else None  # type: ignore[union-attr]
        if oldest is None or oldest > msg.since + 1:
            room = await self._load_room(msg.room)
            return await self.snapshot(conn, room, msg.id)
        newer = tuple(e for e in events if isinstance(e, p.Event) and e.ver > msg.since)
        return p.Events(room=msg.room, events=newer, id=msg.id)

    async def snapshot(self, conn: Connection, room: Room, msg_id: int | None
                       ) -> p.RoomSnapshot:
        player = self._player(conn)
        now = self.clock()
        data = room.public_dict(player.id, now)
        if room.phase != "waiting":
            progress = (await self.store.read_progress([(room.code, room.round)]))[0]
            entrants = {pid for pid, _ in room.entrants}
            for entry in data["players"]:
                if entry["id"] in entrants:
                    stored = progress.get(entry["id"]) or initial_progress(entry["id"])
                    entry["progress"] = wire_progress(stored, entry["connected"])
                else:
                    entry["progress"] = None
        else:
            for entry in data["players"]:
                entry["progress"] = None
        member = room.member(player.id)
        you: dict[str, Any] = {"role": member.role if member else None, "game": None,
                               "last_seq": 0}
        if (room.is_entrant(player.id) and room.start_at is not None
                and now >= room.start_at):
            slot = self._slot(room, player.id)
            async with slot.lock:
                await slot.wait_idle()
                racer = await self._racer(slot, room, player.id)
                you["game"] = racer.view()
                you["last_seq"] = racer.last_seq
        return p.RoomSnapshot(room=data, you=you, id=msg_id)

    # ------------------------------------------------------------------ the race

    async def act(self, conn: Connection, msg: p.Act) -> bytes | p.Refused:
        """An ``ack`` frame (already encoded: see ``p.encode_ack``) or a ``refused``."""
        player = self._player(conn)
        started = time.perf_counter()
        if msg.room not in conn.rooms:
            raise RoomError("not_in_room")
        local = self.rooms[msg.room]
        room = local.room
        now = self.clock()
        if not self._racing(local, player.id, now):  # the slow path names the reason
            try:
                room.check_can_act(player.id, now)
            except RoomError as err:
                if err.code == "race_over" and room.phase == "countdown":
                    self._spawn(self._finish(room.code, "deadline"))
                raise
        reply = await self._apply(room, player.id, msg.seq, msg.action, now, msg.id)
        if type(reply) is bytes:  # an ack
            self.metrics.ack_latency.observe(time.perf_counter() - started)
        return reply

    @staticmethod
    def _racing(local: LocalRoom, player_id: str, now: int) -> bool:
        """The common case, checked first: an entrant of a race that has started and
        whose deadline has not passed (``Room.check_can_act`` names any other case)."""
        room = local.room
        return (room.phase == "countdown" and player_id in local.entrant_ids
                and room.start_at is not None and room.start_at <= now
                and (room.deadline is None or now < room.deadline))

    def _refused(self, room: Room, seq: int, refusal: Refusal,
                 msg_id: int | None) -> p.Refused:
        self.metrics.actions_refused.labels(refusal.code).inc()
        return p.Refused(room=room.code, seq=seq, code=refusal.code, message=refusal.message,
                         message_sv=refusal.message_sv, id=msg_id)

    def _acked(self, slot: GameSlot, racer: RacerGame, room: Room, seq: int,
               progress: dict[str, Any], last_seq: int, msg_id: int | None) -> bytes:
        """Book an action Redis has stored; its ``ack`` frame."""
        racer.last_seq = last_seq
        slot.progress = progress
        self.metrics.acked += 1
        self._dirty.add(room.code)
        return p.encode_ack(room.code, seq, slot.encoder.encode(racer), msg_id=msg_id)

    def error_frame(self, exc: BaseException, msg_id: int | None) -> bytes:
        """The ``error`` reply to a request that raised ``exc``, counted by its code.
        Anything but a ServerError is a bug: logged, and answered ``internal_error``."""
        if not isinstance(exc, ServerError):
            log.error("request failed", exc_info=exc, extra={"msg_id": msg_id})
            exc = InternalError()
        self.metrics.errors.labels(exc.code).inc()
        return p.encode(p.Error(code=exc.code, message=exc.message, id=msg_id))

    def act_now(self, conn: Connection, msg: p.Act,
                respond: Callable[[bytes], None]) -> bool:
        """The fast path of ``act``, with no task and no await: for a racer racing in a
        room and game already in this process's memory, with no other action of that
        game being stored. Applies the action, queues its append and returns True;
        ``respond`` later gets the encoded reply (the ack once Redis stored the action,
        or the refusal / error). False: nothing was done, ``act`` must handle it (it
        also names every reason for a refusal or an error).

        Replies are the same bytes as ``act``'s; an append that met another writer (a
        second connection or process of this racer) is redone by the slow path."""
        player = conn.player
        if player is None or msg.room not in conn.rooms:
            return False
        local = self.rooms.get(msg.room)
        if local is None:
            return False
        room = local.room
        now = self.clock()
        start_at = room.start_at
        if start_at is None or not self._racing(local, player.id, now):
            return False
        slot = self.games.get((room.code, room.round, player.id))
        if slot is None or slot.storing or slot.lock.locked():
            return False
        racer = slot.racer
        if racer is None or msg.seq <= racer.last_seq:
            return False
        started = time.perf_counter()
        expected_len, expected_seq = racer.log_len, racer.last_seq
        refusal = racer.apply(msg.action, elapsed_ms=now - start_at)
        if refusal is not None:
            respond(p.encode(self._refused(room, msg.seq, refusal, msg.id)))
            return True
        slot.storing = True

        def done(result: AppendResult | BaseException) -> None:
            slot.stored()
            if isinstance(result, BaseException):
                slot.forget()  # the in-memory game may be ahead of Redis: rebuild
                log.warning("append failed", extra={"room": room.code, "error": repr(result)})
                respond(self.error_frame(InternalError(), msg.id))
            elif result.stored:
                respond(self._acked(slot, racer, room, msg.seq, progress, result.last_seq,
                                    msg.id))
                self.metrics.ack_latency.observe(time.perf_counter() - started)
            else:  # another writer stored first: reload and re-validate on the slow path
                self.metrics.append_conflicts.inc()
                slot.forget()
                self._spawn(self._act_later(conn, msg, respond))

        progress = racer.progress(player.id, now)
        self.store.append_action_then(
            room.code, room.round, player.id, expected_len=expected_len,
            expected_last_seq=expected_seq, seq=max(msg.seq, expected_seq),
            action=msg.action, progress=progress, then=done)
        return True

    async def _act_later(self, conn: Connection, msg: p.Act,
                         respond: Callable[[bytes], None]) -> None:
        try:
            reply = await self.act(conn, msg)
        except Exception as exc:
            respond(self.error_frame(exc, msg.id))
            return
        respond(reply if type(reply) is bytes else p.encode(reply))

    async def _apply(self, room: Room, player_id: str, seq: int, action: str, now: int,
                     msg_id: int | None, *, server_side: bool = False) -> bytes | p.Refused:
        slot = self._slot(room, player_id)
        assert room.start_at is not None
        async with slot.lock:
            await slot.wait_idle()
            racer = await self._racer(slot, room, player_id)
            for _ in range(3):
                if not server_side and seq <= racer.last_seq:
                    self.metrics.actions_duplicate.inc()
                    return p.encode_ack(room.code, seq, slot.encoder.encode(racer),
                                        duplicate=True, msg_id=msg_id)
                expected_len, expected_seq = racer.log_len, racer.last_seq
                refusal = racer.apply(action, elapsed_ms=max(0, now - room.start_at))
                if refusal is not None:
                    return self._refused(room, seq, refusal, msg_id)
                progress = racer.progress(player_id, now)
                try:
                    result = await self.store.append_action(
                        room.code, room.round, player_id, expected_len=expected_len,
                        expected_last_seq=expected_seq, seq=max(seq, expected_seq),
                        action=action, progress=progress)
                except Exception as exc:
                    slot.forget()  # the in-memory game may be ahead of Redis: rebuild
                    log.warning("append failed", extra={"room": room.code, "error": repr(exc)})
                    raise InternalError() from exc
                if result.stored:
                    return self._acked(slot, racer, room, seq, progress, result.last_seq,
                                       msg_id)
                # Another connection or process wrote this game first: reload, re-validate.
                self.metrics.append_conflicts.inc()
                slot.forget()
                racer = await self._racer(slot, room, player_id)
            raise InternalError("The game kept changing under this action; retry")

    async def _resign(self, room: Room, player_id: str) -> None:
        slot = self._slot(room, player_id)
        async with slot.lock:
            await slot.wait_idle()
            racer = await self._racer(slot, room, player_id)
            if racer.status in TERMINAL:
                return
            last_seq = racer.last_seq
        await self._apply(room, player_id, last_seq, RESIGN, self.clock(), None,
                          server_side=True)

    def _slot(self, room: Room, player_id: str) -> GameSlot:
        key = (room.code, room.round, player_id)
        slot = self.games.get(key)
        if slot is None:
            slot = self.games[key] = GameSlot()
        return slot

    async def _racer(self, slot: GameSlot, room: Room, player_id: str) -> RacerGame:
        if slot.racer is None:
            stored = await self.store.load_game(room.code, room.round, player_id)
            finished_ms = stored.progress["finished_ms"] if stored.progress else None
            slot.racer = RacerGame.from_log(room.deal, stored.actions, last_seq=stored.last_seq,
                                            finished_ms=finished_ms)
        return slot.racer

    async def _finish(self, code: str, reason: str) -> None:
        """End the race if it is over (all racers done, or the deadline passed)."""
        for _ in range(MAX_CAS_ATTEMPTS):
            room = await self._load_room_or_none(code)
            if room is None or room.phase != "countdown" or room.start_at is None:
                return
            now = self.clock()
            progress = (await self.store.read_progress([(code, room.round)]))[0]
            entrant_progress = [progress.get(pid) or initial_progress(pid)
                                for pid, _ in room.entrants]
            if not (room.deadline_passed(now) or race_over(entrant_progress)):
                return
            # A race nobody watched may be finished late: it still ended at its deadline.
            ended = min(now, room.deadline) if room.deadline is not None else now
            results = rank(room.entrants, progress, start_at=room.start_at, now=ended)
            transition = room.finish(results, now=ended)
            try:
                await self._commit(room, transition)
            except ConflictError:
                continue
            log.info("race finished", extra={"room": code, "round": room.round,
                                             "reason": reason})
            return

    # ------------------------------------------------------------------ transitions

    async def _load_room_or_none(self, code: str) -> Room | None:
        if not is_room_code(code):
            return None
        record = await self.store.load_room(code)
        return Room.from_record(record) if record is not None else None

    async def _load_room(self, code: str) -> Room:
        room = await self._load_room_or_none(code)
        if room is None:
            raise RoomError("room_not_found")
        return room

    def _local_room(self, code: str) -> Room:
        local = self.rooms.get(code)
        if local is None:
            raise RoomError("not_in_room")
        return local.room

    async def _transition(self, code: str, change: Callable[[Room, int], Transition],
                          conn: Connection | None = None) -> Room:
        """Run a pure transition against the stored room with compare-and-set, retrying."""
        if conn is not None and code not in conn.rooms:
            # Requests about a room need the socket to be in it (join first).
            if await self._load_room_or_none(code) is None:
                raise RoomError("room_not_found")
            raise RoomError("not_in_room")
        local = self.rooms.get(code)
        if local is None:
            return await self._transition_cas(code, change)
        async with local.lock:
            return await self._transition_cas(code, change)

    async def _transition_cas(self, code: str, change: Callable[[Room, int], Transition]
                              ) -> Room:
        for attempt in range(MAX_CAS_ATTEMPTS):
            local = self.rooms.get(code)
            if attempt == 0 and local is not None:
                # The cached room is kept current by the bus; if it is stale after all,
                # the compare-and-set fails and the next attempt reads Redis.
                room = local.room
            else:
                room = await self._load_room(code)
            transition = change(room, self.clock())
            if not transition.changed:
                self._remember(room)
                return room
            try:
                await self._commit(room, transition)
            except ConflictError:
                continue
            return transition.room
        raise InternalError("The room kept changing; retry")

    async def _commit(self, before: Room, transition: Transition) -> None:
        room = transition.room
        frames = [p.encode(p.Event(room=room.code, ver=e.ver, kind=e.kind, data=e.data))
                  for e in transition.events]
        record = room.to_record()
        first_ver = transition.events[0].ver
        await self.store.cas_room(room.code, before.ver, record, frames,
                                  pack(["e", record, frames, first_ver]))
        # This process's sockets get the events at once (before the request's reply), not
        # after a trip through Redis; the bus copy is skipped by version. Only if they
        # follow the last forwarded version: else an event from another process is still
        # on its way, and the bus delivers all of them in order.
        local = self.rooms.get(room.code)
        if local is not None and first_ver == local.sent_ver + 1:
            self._forward_events(room.code, frames, first_ver)
        for event in transition.events:  # debug: one line per event is too many under load
            log.debug("room event", extra={"room": room.code, "ver": event.ver,
                                          "kind": event.kind, "round": room.round})
        self._remember(room)

    def _remember(self, room: Room) -> None:
        """Keep the newest version of a local room and react to its changes."""
        local = self.rooms.get(room.code)
        if local is None or room.ver < local.room.ver:
            return
        old = local.room
        local.room = room
        local.entrant_ids = frozenset(pid for pid, _ in room.entrants)
        if old.round != room.round:
            for key in [k for k in self.games if k[0] == room.code and k[1] != room.round]:
                del self.games[key]
        if room.phase != old.phase or room.deadline != old.deadline:
            self._arm_deadline(local)
        if room.phase == "countdown" and any(
                m.connected != o.connected for m, o in zip(room.members, old.members,
                                                           strict=False)):
            self._dirty.add(room.code)

    def _arm_deadline(self, local: LocalRoom) -> None:
        if local.deadline_timer is not None:
            local.deadline_timer.cancel()
            local.deadline_timer = None
        room = local.room
        if room.phase == "countdown" and room.deadline is not None:
            loop = asyncio.get_running_loop()
            delay_s = max(0.0, (room.deadline - self.clock()) / 1000) + 0.005
            local.deadline_timer = loop.call_later(
                delay_s, lambda: self._spawn(self._finish(room.code, "deadline")))

    # ------------------------------------------------------------------ local sockets

    async def _attach(self, conn: Connection, room: Room) -> None:
        player = self._player(conn)
        if room.code in conn.rooms:
            self._remember(room)
            return
        local = self.rooms.get(room.code)
        if local is None:
            local = self.rooms[room.code] = LocalRoom(
                room, entrant_ids=frozenset(pid for pid, _ in room.entrants), sent_ver=room.ver)
            self.metrics.rooms_local.set(len(self.rooms))
            await self.bus.subscribe(room.code)
            self._arm_deadline(local)
        else:
            self._remember(room)
        local.conns.add(conn)
        conn.rooms.add(room.code)
        local.player_conns[player.id] = local.player_conns.get(player.id, 0) + 1
        await self.store.presence_change(room.code, player.id, +1)

    async def _detach(self, conn: Connection, code: str, *, update_presence: bool) -> None:
        player = self._player(conn)
        if code not in conn.rooms:
            return
        conn.rooms.discard(code)
        local = self.rooms.get(code)
        if local is None:
            return
        local.conns.discard(conn)
        left = local.player_conns.get(player.id, 1) - 1
        if left > 0:
            local.player_conns[player.id] = left
        else:
            local.player_conns.pop(player.id, None)
            for key in [k for k in self.games if k[0] == code and k[2] == player.id]:
                del self.games[key]
        remaining = await self.store.presence_change(code, player.id, -1)
        # On a graceful shutdown clients reconnect at once (close 1001): no offline flicker
        # for every player of every room, and no burst of room writes during a deploy.
        if update_presence and remaining <= 0 and not self.closing:
            with contextlib.suppress(RoomError):
                await self._transition(code, lambda room, now: room.set_connected(
                    player.id, False))
        if not local.conns and self.rooms.get(code) is local:
            if local.deadline_timer is not None:
                local.deadline_timer.cancel()
            del self.rooms[code]
            self.metrics.rooms_local.set(len(self.rooms))
            await self.bus.unsubscribe(code)

    # ------------------------------------------------------------------ bus and progress

    def _on_bus(self, code: str, payload: bytes) -> None:
        local = self.rooms.get(code)
        if local is None:
            return
        message = unpack(payload)
        if message[0] == "e":
            self._remember(Room.from_record(message[1]))
            self._forward_events(code, message[2], message[3])
            return
        if len(message) > 2 and message[2] == self.origin:
            return  # our own progress, already sent to the local sockets
        for conn in list(local.conns):
            conn.send_progress(message[1])

    def _forward_events(self, code: str, frames: list[bytes], first_ver: int) -> None:
        """Send event frames to the room's local sockets, each version once, in order."""
        local = self.rooms.get(code)
        if local is None:
            return
        skip = max(0, local.sent_ver - first_ver + 1)
        fresh = frames[skip:]
        if not fresh:
            return
        local.sent_ver = first_ver + len(frames) - 1
        for conn in list(local.conns):
            for frame in fresh:
                conn.send(frame)

    def _sweep_deadlines(self) -> None:
        """Finish local races whose deadline passed (backs up the timers, e.g. if the
        clock jumped or a timer was lost)."""
        now = self.clock()
        for code, local in self.rooms.items():
            if local.room.phase == "countdown" and local.room.deadline_passed(now):
                self._spawn(self._finish(code, "deadline"))

    async def _flush_loop(self) -> None:
        ticks = 0
        while True:
            await asyncio.sleep(PROGRESS_INTERVAL_S)
            ticks += 1
            if ticks % 5 == 0:  # about once a second
                self._sweep_deadlines()
            if not self._dirty:
                continue
            dirty = [self.rooms[c].room for c in self._dirty if c in self.rooms]
            self._dirty.clear()
            try:
                await self._flush(dirty)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("progress flush failed")

    def _local_progress(self, room: Room) -> dict[str, dict[str, Any]] | None:
        """Every entrant's progress from this process's memory (their games are here and
        stored), or None if any is not: then the room's progress is read from Redis."""
        by_player = {}
        for pid, _ in room.entrants:
            slot = self.games.get((room.code, room.round, pid))
            if slot is None:
                return None
            progress = slot.progress
            if progress is None:
                if slot.racer is None or slot.storing:
                    return None
                progress = slot.racer.progress(pid, 0)
            by_player[pid] = progress
        return by_player

    async def _flush(self, rooms: list[Room]) -> None:
        rooms = [r for r in rooms if r.phase != "waiting"]
        known = [self._local_progress(room) for room in rooms]
        unknown = [room for room, by_player in zip(rooms, known, strict=True)
                   if by_player is None]
        if unknown:
            stored = iter(await self.store.read_progress([(r.code, r.round)
                                                          for r in unknown]))
            known = [by_player if by_player is not None else next(stored)
                     for by_player in known]
        messages = []
        for room, by_player in zip(rooms, known, strict=True):
            assert by_player is not None
            connected = {m.id: m.connected for m in room.members}
            racers = tuple(
                wire_progress(by_player.get(pid) or initial_progress(pid),
                              connected.get(pid, False))
                for pid, _ in room.entrants)
            frame = p.encode(p.Progress(room=room.code, round=room.round, racers=racers))
            local = self.rooms.get(room.code)
            if local is not None:
                for conn in list(local.conns):
                    conn.send_progress(frame)
            messages.append((room.code, pack(["p", frame, self.origin])))
            if room.phase == "countdown" and race_over(
                    [by_player.get(pid) or initial_progress(pid) for pid, _ in room.entrants]):
                self._spawn(self._finish(room.code, "all done"))
        await self.store.publish_many(messages)
