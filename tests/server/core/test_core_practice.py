"""Practice games through the hub over in-memory storage, the solver run inline:
hint in a solo room, not_practice in a race, winnable before and after the end."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from crescent_wire import protocol as p
from server.core.ports import InlineCpu
from server.game import replay
from server.solver.finishing import finishing_line, progress_move
from server.storage.memory import MemoryStorage
from tests.server.core_support import (
    ManualClock,
    RecordingConnection,
    SettlingHub,
    connect,
    racing_room,
    start_hub,
)

WIN = json.loads((Path(__file__).parents[2] / "game" / "data" / "winning_line.json").read_text())
CODE, LINE = WIN["code"], list(WIN["actions"])


@pytest.fixture
async def hub(clock: ManualClock) -> AsyncIterator[SettlingHub]:
    hub = await start_hub(MemoryStorage(), clock)
    hub.practice.hint_seconds = 0.5  # the inline solver runs in the test itself
    hub.practice.winnable_seconds = 5.0
    yield hub
    await hub.stop()


async def ask(hub: SettlingHub, conn: RecordingConnection, msg: p.ClientMessage) -> Any:
    try:
        reply = await hub.handle(conn, msg)
    except Exception as exc:
        return p.decode_server(hub.error_frame(exc, None))
    return p.decode_server(reply) if isinstance(reply, bytes) else reply


async def play(
    hub: SettlingHub, conn: RecordingConnection, code: str, actions: list[str], first_seq: int = 1
) -> int:
    seq = first_seq
    for action in actions:
        reply = await ask(hub, conn, p.Act(room=code, seq=seq, action=action))
        assert isinstance(reply, p.Ack), (action, reply)
        seq += 1
    return seq


async def test_a_hint_in_a_solo_room_is_a_move_that_plays(
    hub: SettlingHub, clock: ManualClock
) -> None:
    ada = await connect(hub, "Ada")
    code = await racing_room(hub, clock, [ada], deal=CODE)
    hint = await ask(hub, ada, p.Hint(room=code, id=3))
    assert isinstance(hint, p.HintReply) and hint.id == 3
    assert hint.action is not None and not hint.finishing
    assert hint.source in ("solver", "heuristic")
    await play(hub, ada, code, [hint.action])


async def test_near_the_end_the_hint_says_finishing_and_auto_finish_wins(
    hub: SettlingHub, clock: ManualClock
) -> None:
    ada = await connect(hub, "Ada")
    code = await racing_room(hub, clock, [ada], deal=CODE)
    played = next(k for k in range(len(LINE)) if finishing_line(replay(CODE, LINE[:k])))
    seq = await play(hub, ada, code, LINE[:played])
    for _ in range(len(LINE)):
        hint = await ask(hub, ada, p.Hint(room=code))
        assert isinstance(hint, p.HintReply)
        assert hint.finishing and hint.source == "solver" and hint.action is not None
        reply = await ask(hub, ada, p.Act(room=code, seq=seq, action=hint.action))
        assert isinstance(reply, p.Ack)
        seq += 1
        if reply.view is not None and reply.view["status"] == "won":
            break
    else:
        pytest.fail("the finishing hints never won")
    done = await ask(hub, ada, p.Hint(room=code))
    assert isinstance(done, p.HintReply) and done.action is None and not done.finishing


async def test_a_full_solver_answers_with_the_heuristic(
    hub: SettlingHub, clock: ManualClock
) -> None:
    ada = await connect(hub, "Ada")
    code = await racing_room(hub, clock, [ada], deal=CODE)
    await play(hub, ada, code, LINE[:10])
    hub.practice.cpu = InlineCpu(max_jobs=0)
    hint = await ask(hub, ada, p.Hint(room=code))
    assert isinstance(hint, p.HintReply) and hint.source == "heuristic"
    assert hint.action == progress_move(replay(CODE, LINE[:10]))


async def test_hints_only_in_a_solo_room_while_racing(hub: SettlingHub, clock: ManualClock) -> None:
    ada, bob = await connect(hub, "Ada"), await connect(hub, "Bob")
    code = await racing_room(hub, clock, [ada, bob], deal=CODE)
    refused = await ask(hub, ada, p.Hint(room=code))
    assert isinstance(refused, p.Error) and refused.code == "not_practice"

    cy = await connect(hub, "Cy")
    snapshot = await ask(hub, cy, p.CreateRoom(deal=CODE, seats=1))
    solo = snapshot.room["code"]
    early = await ask(hub, cy, p.Hint(room=solo))
    assert isinstance(early, p.Error) and early.code == "not_started"
    stranger = await ask(hub, ada, p.Hint(room=solo))
    assert isinstance(stranger, p.Error) and stranger.code == "not_in_room"


async def test_winnable_only_once_finished_then_cached(
    hub: SettlingHub, clock: ManualClock
) -> None:
    ada = await connect(hub, "Ada")
    code = await racing_room(hub, clock, [ada], deal=CODE)
    early = await ask(hub, ada, p.Winnable(room=code))
    assert isinstance(early, p.Error) and early.code == "wrong_phase"
    await play(hub, ada, code, ["resign"])
    await hub.progress.flush()  # the only racer resigned: the flush ends the race
    await hub.settle()
    assert hub.rooms.local[code].room.phase == "finished"
    cpu = InlineCpu()
    hub.practice.cpu = cpu
    answer = await ask(hub, ada, p.Winnable(room=code, id=8))
    assert isinstance(answer, p.WinnableReply) and answer.id == 8
    assert answer.code == CODE and answer.result in ("won", "impossible", "unknown")
    if answer.result == "won":
        assert answer.line is not None and replay(CODE, answer.line).status == "won"
    again = await ask(hub, ada, p.Winnable(room=code))
    assert again.line == answer.line and cpu.ran == 1  # the cached answer


async def test_winnable_with_a_full_solver_is_busy(hub: SettlingHub, clock: ManualClock) -> None:
    ada = await connect(hub, "Ada")
    code = await racing_room(hub, clock, [ada], deal=CODE)
    await play(hub, ada, code, ["resign"])
    await hub.progress.flush()
    await hub.settle()
    hub.practice.cpu = InlineCpu(max_jobs=0)
    busy = await ask(hub, ada, p.Winnable(room=code))
    assert isinstance(busy, p.Error) and busy.code == "busy"
