"""Practice games and the solver: ``hint`` for the racer of a solo room, ``winnable``
for any member once a race is finished (docs/protocol.md, "Practice games and
solver").

The solver runs through the :class:`~server.core.ports.CpuRunner` port (a process
pool in the server), never in the event loop; the finishing check and the heuristic
are cheap and bounded, and run here. A runner that is full makes ``hint`` answer with
the heuristic at once and ``winnable`` answer ``busy``.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any, Final

from crescent_wire import protocol as p
from crescent_wire.errors import BusyError, RoomError
from server.core.games import Games
from server.core.ports import Clock, Connection, CpuBusy, CpuRunner
from server.core.rooms import Rooms
from server.game import Game
from server.solver import hint as solver_hint
from server.solver import was_winnable
from server.solver.finishing import finishing_line, progress_move

log = logging.getLogger("server.practice")

HINT_SECONDS: Final = 1.0
WINNABLE_SECONDS: Final = 10.0
WINNABLE_CACHE: Final = 256  # answers kept per process, per (room, round)

RoundKey = tuple[str, int]


def hint_job(position: dict[str, Any], max_seconds: float) -> str | None:
    """In the worker: the first action of a winning line from ``position``, or None."""
    return solver_hint(Game.from_position(position), max_seconds=max_seconds)


def winnable_job(code: str, max_seconds: float) -> dict[str, Any]:
    """In the worker: ``was_winnable``'s answer as ``Solution.to_json``."""
    return was_winnable(code, max_seconds=max_seconds).to_json()


class Practice:
    def __init__(
        self,
        rooms: Rooms,
        games: Games,
        cpu: CpuRunner,
        clock: Clock,
        *,
        hint_seconds: float = HINT_SECONDS,
        winnable_seconds: float = WINNABLE_SECONDS,
    ) -> None:
        self.rooms = rooms
        self.games = games
        self.cpu = cpu
        self.clock = clock
        self.hint_seconds = hint_seconds
        self.winnable_seconds = winnable_seconds
        self._answers: OrderedDict[RoundKey, dict[str, Any]] = OrderedDict()
        self._solving: dict[RoundKey, asyncio.Future[dict[str, Any]]] = {}

    async def hint(self, conn: Connection, player_id: str, msg: p.Hint) -> p.HintReply:
        room = self.rooms.joined(conn, msg.room)
        # A sealed room is a daily challenge: the solver must not play the day's deal.
        if room.seats != 1 or not room.deal_unsealed(self.clock()):
            raise RoomError("not_practice")
        room.check_can_act(player_id, self.clock())  # not_racer, not_started, race_over

        def reply(
            action: str | None, *, finishing: bool = False, source: str = "heuristic"
        ) -> p.HintReply:
            return p.HintReply(
                room=room.code, action=action, finishing=finishing, source=source, id=msg.id
            )

        slot = self.games.slot(room, player_id)
        async with slot.lock:
            await slot.wait_idle()
            racer = await self.games.load(slot, room, player_id)
            game = racer.game.copy()
            resigned = racer.resigned
        if resigned or game.status != "playing":
            return reply(None)
        line = finishing_line(game)
        if line:
            return reply(line[0], finishing=True, source="solver")
        try:
            action = await self.cpu.run(hint_job, game.position(), self.hint_seconds)
        except CpuBusy:
            action = None  # the heuristic answers at once
        if action is not None:
            return reply(action, source="solver")
        return reply(progress_move(game))

    async def winnable(self, conn: Connection, msg: p.Winnable) -> p.WinnableReply:
        room = self.rooms.joined(conn, msg.room)
        if room.phase != "finished":
            raise RoomError(
                "wrong_phase", "The deal is revealed only once the race is finished; ask then"
            )
        if not room.deal_unsealed(self.clock()):
            raise RoomError("wrong_phase", "The daily deal is revealed after the day; ask then")
        key = (room.code, room.round)
        answer = self._answers.get(key)
        if answer is None:
            solving = self._solving.get(key)
            if solving is None:
                try:
                    job = self.cpu.run(winnable_job, room.deal, self.winnable_seconds)
                except CpuBusy:
                    raise BusyError() from None
                solving = self._solving[key] = asyncio.ensure_future(job)
                solving.add_done_callback(lambda _: self._solving.pop(key, None))
            # Shielded: one asker going away does not cancel the others' answer.
            answer = await asyncio.shield(solving)
            self._remember(key, answer)
        return p.WinnableReply(
            room=room.code,
            code=answer["code"],
            result=answer["result"],
            line=tuple(answer["line"]) if answer["line"] is not None else None,
            nodes=answer["nodes"],
            seconds=float(answer["seconds"]),
            id=msg.id,
        )

    def _remember(self, key: RoundKey, answer: dict[str, Any]) -> None:
        self._answers[key] = answer
        self._answers.move_to_end(key)
        while len(self._answers) > WINNABLE_CACHE:
            self._answers.popitem(last=False)
