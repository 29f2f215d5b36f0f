"""Racers' games in this process's memory, and the one act pipeline.

A racer's game lives in a :class:`GameSlot` while the racer has a socket here (rebuilt
from the stored log when first needed). Every action — the fast path's (no task, no
await), the slow path's, a retry after another writer stored first, a server-side
resign — goes through :meth:`Games.run`: the pure decision (:func:`server.core.act.decide`),
then, for an :class:`~server.core.act.Append`, the append and the ack once storage has
it. The slot's ``storing`` flag is set and cleared there only.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from crescent_wire import protocol as p
from crescent_wire.errors import InternalError, ServerError
from server.core import wire_server
from server.core.act import Append, Duplicate, NeedsLoad, Refuse, Reject, decide
from server.core.ports import AppendResult, Clock, Storage
from server.core.view_codec import ViewEncoder
from server.game import View
from server.lobby import RESIGN, RacerGame, RacerProgress, Room
from server.metrics import Metrics

log = logging.getLogger("server.games")

MAX_CONFLICTS = 3  # appends lost to another writer before the act gives up
GameKey = tuple[str, int, str]  # (room, round, player)
Reply = Callable[[bytes | None], None]  # an encoded reply; None: redo (game reloaded)


@dataclass(frozen=True, slots=True)
class ActRequest:
    """One action asked of a racer's game, threaded through the act path: the room (as
    the request found it), the racer, their seq, the action, the request's id (None for
    a server-side resign)."""

    room: Room
    player_id: str
    seq: int
    action: str
    msg_id: int | None


# A stored action carries the server time at which it was stored, as ms after the
# race's start: "p3-ad@5120" (the archive's replay needs the pace, docs/replay.md).
# A log written before this has bare actions: their time is unknown.
TIME_MARK = "@"


def timed(action: str, elapsed_ms: int) -> str:
    """The stored form of ``action`` taken ``elapsed_ms`` after the start.

    >>> timed("p3-ad", 5120), untimed("p3-ad@5120"), untimed("undo")
    ('p3-ad@5120', ('p3-ad', 5120), ('undo', None))
    """
    return f"{action}{TIME_MARK}{max(0, elapsed_ms)}"


def untimed(entry: str) -> tuple[str, int | None]:
    """A stored action and its offset (None: stored without one)."""
    action, mark, offset = entry.partition(TIME_MARK)
    return (action, int(offset)) if mark and offset.isdigit() else (action, None)


@dataclass
class GameSlot:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    racer: RacerGame | None = None
    # An action is being stored: no other action of this game is decided meanwhile
    # (the fast path declines, the slow path waits for ``idle``).
    storing: bool = False
    idle: asyncio.Future[None] | None = None
    progress: RacerProgress | None = None  # the last PROGRESS this process stored
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


def error_frame(metrics: Metrics, exc: BaseException, msg_id: int | None) -> bytes:
    """The ``error`` reply to a request that raised ``exc``, counted by its code.
    Anything but a ServerError is a bug: logged, and answered ``internal_error``."""
    if not isinstance(exc, ServerError):
        log.error("request failed", exc_info=exc, extra={"msg_id": msg_id})
        exc = InternalError()
    metrics.errors.labels(exc.code).inc()
    return p.encode(p.Error(code=exc.code, message=exc.message, id=msg_id))


class Games:
    def __init__(
        self,
        storage: Storage,
        metrics: Metrics,
        clock: Clock,
        *,
        on_acked: Callable[[str], None],
        on_race_over: Callable[[str], None],
        spawn: Callable[[Coroutine[Any, Any, Any]], None],
    ) -> None:
        self.storage = storage
        self.metrics = metrics
        self.clock = clock
        self.on_acked = on_acked  # (room code): its progress changed
        self.on_race_over = on_race_over  # (room code): an act came after the deadline
        self.spawn = spawn
        self.slots: dict[GameKey, GameSlot] = {}

    # ------------------------------------------------------------------ slots

    def slot(self, room: Room, player_id: str) -> GameSlot:
        key = (room.code, room.round, player_id)
        slot = self.slots.get(key)
        if slot is None:
            slot = self.slots[key] = GameSlot()
        return slot

    def find(self, code: str, round_: int, player_id: str) -> GameSlot | None:
        return self.slots.get((code, round_, player_id))

    def forget_other_rounds(self, code: str, round_: int) -> None:
        for key in [k for k in self.slots if k[0] == code and k[1] != round_]:
            del self.slots[key]

    def forget_player(self, code: str, player_id: str) -> None:
        for key in [k for k in self.slots if k[0] == code and k[2] == player_id]:
            del self.slots[key]

    async def load(self, slot: GameSlot, room: Room, player_id: str) -> RacerGame:
        if slot.racer is None:
            stored = await self.storage.load_game(room.code, room.round, player_id)
            finished_ms = stored.progress.finished_ms if stored.progress else None
            slot.racer = RacerGame.from_log(
                room.deal,
                [untimed(entry)[0] for entry in stored.actions],
                last_seq=stored.last_seq,
                finished_ms=finished_ms,
                seq_actions={seq: untimed(a)[0] for seq, a in stored.seq_actions.items()},
            )
        return slot.racer

    async def view(self, room: Room, player_id: str) -> tuple[View, int]:
        """The racer's VIEW and last stored seq, once no action of theirs is in flight."""
        slot = self.slot(room, player_id)
        async with slot.lock:
            await slot.wait_idle()
            racer = await self.load(slot, room, player_id)
            return racer.view(), racer.last_seq

    def progress_here(self, room: Room) -> dict[str, RacerProgress] | None:
        """Every entrant's progress from this process's memory (their games are here and
        stored), or None if any is not: then the room's progress is read from storage."""
        by_player = {}
        for pid, _ in room.entrants:
            slot = self.slots.get((room.code, room.round, pid))
            if slot is None:
                return None
            progress = slot.progress
            if progress is None:
                if slot.racer is None or slot.storing:
                    return None
                progress = slot.racer.progress(pid, 0)
            by_player[pid] = progress
        return by_player

    # ------------------------------------------------------------------ the act path

    def act_now(self, req: ActRequest, respond: Callable[[bytes], None]) -> bool:
        """The fast path: with no task and no await, for a game in memory with no action
        being stored. True: ``respond`` gets (or already got) the reply; False: nothing
        was done, call :meth:`act`."""
        slot = self.slots.get((req.room.code, req.room.round, req.player_id))
        if slot is None or slot.storing or slot.racer is None or slot.lock.locked():
            return False

        def reply(frame: bytes | None) -> None:
            if frame is not None:
                respond(frame)
            else:  # another writer stored first: the slow path reloads and decides again
                self.spawn(self._act_later(req, respond))

        return self.run(slot, req, self.clock(), reply)

    async def act(self, req: ActRequest, *, now: int, server_side: bool = False) -> bytes:
        """The slow path: loads the game if needed, waits for an action in flight, and
        decides again after an append lost to another writer. The encoded reply."""
        slot = self.slot(req.room, req.player_id)
        loop = asyncio.get_running_loop()
        async with slot.lock:
            for _ in range(MAX_CONFLICTS):
                await slot.wait_idle()
                await self.load(slot, req.room, req.player_id)
                outcome: asyncio.Future[bytes | None] = loop.create_future()

                def reply(
                    frame: bytes | None, outcome: asyncio.Future[bytes | None] = outcome
                ) -> None:
                    if not outcome.done():
                        outcome.set_result(frame)

                self.run(slot, req, now, reply, server_side=server_side)
                frame = await outcome
                if frame is not None:
                    return frame
        raise InternalError("The game kept changing under this action; retry")

    async def resign(self, room: Room, player_id: str) -> None:
        """Resign for the racer (leaving a race); nothing if their game is already over."""
        resign = ActRequest(room, player_id, 0, RESIGN, None)
        await self.act(resign, now=self.clock(), server_side=True)

    async def _act_later(self, req: ActRequest, respond: Callable[[bytes], None]) -> None:
        try:
            frame = await self.act(req, now=self.clock())
        except Exception as exc:
            frame = error_frame(self.metrics, exc, req.msg_id)
        respond(frame)

    def run(
        self,
        slot: GameSlot,
        req: ActRequest,
        now: int,
        reply: Reply,
        *,
        server_side: bool = False,
    ) -> bool:
        """Decide and do what the decision asks; False (nothing done) if the game must be
        loaded first. ``reply`` gets the encoded reply exactly once — at once, or when
        storage answers — or None after an append lost to another writer (the game was
        forgotten: load it and run again)."""
        started = time.perf_counter()
        room, seq, msg_id = req.room, req.seq, req.msg_id
        decision = decide(
            room, slot.racer, req.player_id, seq, req.action, now, server_side=server_side
        )
        if type(decision) is Append:
            start_at = room.start_at if room.start_at is not None else now
            self._store(slot, req, now - start_at, decision, started, reply)
        elif type(decision) is Refuse:
            refusal = decision.refusal
            self.metrics.actions_refused.labels(refusal.code).inc()
            reply(
                p.encode(
                    p.Refused(
                        room=room.code,
                        seq=seq,
                        code=refusal.code,
                        message=refusal.message,
                        message_sv=refusal.message_sv,
                        id=msg_id,
                    )
                )
            )
        elif type(decision) is Duplicate:
            racer = slot.racer
            assert racer is not None
            self.metrics.actions_duplicate.inc()
            reply(
                wire_server.encode_ack(
                    room.code, seq, slot.encoder.encode(racer), duplicate=True, msg_id=msg_id
                )
            )
        elif type(decision) is Reject:
            if decision.error.code == "race_over" and room.underway:
                self.on_race_over(room.code)
            reply(error_frame(self.metrics, decision.error, msg_id))
        else:
            assert type(decision) is NeedsLoad
            return False
        return True

    def _store(
        self,
        slot: GameSlot,
        req: ActRequest,
        elapsed_ms: int,
        append: Append,
        started: float,
        reply: Reply,
    ) -> None:
        racer = slot.racer
        assert racer is not None
        room, seq, action, msg_id = req.room, req.seq, req.action, req.msg_id

        def stored(result: AppendResult | BaseException) -> None:
            slot.stored()
            if isinstance(result, BaseException):
                failed(result)
            elif result.stored:
                racer.last_seq = result.last_seq
                if append.seq > append.expected_last_seq:  # a client's seq, not a resign
                    racer.stored_seq(append.seq, action)
                slot.progress = append.progress
                self.metrics.acked += 1
                self.on_acked(room.code)
                reply(
                    wire_server.encode_ack(
                        room.code, seq, slot.encoder.encode(racer), msg_id=msg_id
                    )
                )
                self.metrics.ack_latency.observe(time.perf_counter() - started)
            else:
                self.metrics.append_conflicts.inc()
                slot.forget()
                reply(None)

        def failed(exc: BaseException) -> None:
            slot.forget()  # the in-memory game may be ahead of storage: rebuild
            # Storage unavailable (InternalError): the adapter logs the outage once.
            (log.debug if isinstance(exc, InternalError) else log.warning)(
                "append failed", extra={"room": room.code, "error": repr(exc)}
            )
            reply(error_frame(self.metrics, InternalError(), msg_id))

        slot.storing = True
        try:
            self.storage.append_action_then(
                room.code,
                room.round,
                req.player_id,
                expected_len=append.expected_len,
                expected_last_seq=append.expected_last_seq,
                seq=append.seq,
                action=timed(action, elapsed_ms),
                progress=append.progress,
                then=stored,
            )
        except Exception as exc:  # nothing was queued: the callback will never come
            slot.stored()
            failed(exc)
