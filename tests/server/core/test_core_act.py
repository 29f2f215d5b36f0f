"""The one act path (server.core.games + server.core.act) over in-memory storage: no
sockets, no Redis, an injected clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from crescent_wire import protocol as p
from server.core.games import untimed
from server.game import Game
from server.lobby import RacerGame
from server.storage.memory import MemoryStorage
from tests.server.core_support import (
    DEAL,
    ManualClock,
    RecordingConnection,
    SettlingHub,
    connect,
    racing_room,
    reply_of,
    start_hub,
)


def bare(log: list[str]) -> list[str]:
    """A stored log's actions without their times ("p3-ad@5120": server.core.games.timed)."""
    return [untimed(entry)[0] for entry in log]


class FlakyStorage(MemoryStorage):
    """Memory storage whose next append fails: in its callback, or while being queued."""

    fail_stored: BaseException | None = None
    fail_queued: BaseException | None = None

    def append_action_then(self, *args: Any, **kwargs: Any) -> None:
        if self.fail_queued is not None:
            exc, self.fail_queued = self.fail_queued, None
            raise exc
        if self.fail_stored is not None:
            exc, self.fail_stored = self.fail_stored, None
            asyncio.get_running_loop().call_soon(kwargs["then"], exc)
            return
        super().append_action_then(*args, **kwargs)


@pytest.fixture
def storage() -> FlakyStorage:
    return FlakyStorage()


def legal_moves(actions: list[str] = []) -> list[str]:  # noqa: B006 (read only)
    game = Game.from_code(DEAL)
    for action in actions:
        game.apply(action)
    return [str(m) for m in game.legal_moves()]


async def act_fast(
    hub: SettlingHub, conn: RecordingConnection, code: str, seq: int, action: str
) -> Any:
    """Act through the fast path and wait for its one reply."""
    replies: list[bytes] = []
    answered = asyncio.Event()

    def respond(frame: bytes) -> None:
        replies.append(frame)
        answered.set()

    assert hub.act_now(conn, p.Act(room=code, seq=seq, action=action, id=seq), respond)
    await asyncio.wait_for(answered.wait(), 5)
    await hub.settle()
    return reply_of(replies)


async def act_slow(
    hub: SettlingHub, conn: RecordingConnection, code: str, seq: int, action: str
) -> Any:
    reply = await hub.handle(conn, p.Act(room=code, seq=seq, action=action, id=seq))
    assert isinstance(reply, bytes)
    return p.decode_server(reply)


async def test_ack_after_storing_then_the_fast_path(
    hub: SettlingHub, storage: FlakyStorage, clock: ManualClock
) -> None:
    ada = await connect(hub, "Ada")
    code = await racing_room(hub, clock, [ada])
    first, second = legal_moves()[0], None
    ack = await act_slow(hub, ada, code, 1, first)  # loads the game: the slow path
    assert isinstance(ack, p.Ack) and ack.seq == 1 and not ack.duplicate
    second = legal_moves([first])[0]
    ack = await act_fast(hub, ada, code, 2, second)  # the game is in memory now
    assert isinstance(ack, p.Ack) and ack.seq == 2 and ack.id == 2
    stored = await storage.load_game(code, 1, ada.player_id)
    assert bare(stored.actions) == [first, second] and stored.last_seq == 2
    assert (
        ack.view
        == RacerGame.from_log(DEAL, bare(stored.actions), last_seq=2, finished_ms=None)
        .view()
        .to_wire()
    )
    assert hub.metrics.acked == 2


async def test_refusal_stores_nothing(
    hub: SettlingHub, storage: FlakyStorage, clock: ManualClock
) -> None:
    ada = await connect(hub, "Ada")
    code = await racing_room(hub, clock, [ada])
    await act_slow(hub, ada, code, 1, legal_moves()[0])
    appends = storage.appends
    refused = await act_fast(hub, ada, code, 2, "p1-p1")
    assert isinstance(refused, p.Refused) and refused.seq == 2 and refused.code
    assert storage.appends == appends


async def test_a_stored_seq_is_acked_again_as_duplicate(
    hub: SettlingHub, storage: FlakyStorage, clock: ManualClock
) -> None:
    ada = await connect(hub, "Ada")
    code = await racing_room(hub, clock, [ada])
    move = legal_moves()[0]
    first = await act_slow(hub, ada, code, 1, move)
    appends = storage.appends
    again = await act_fast(hub, ada, code, 1, move)
    assert isinstance(again, p.Ack) and again.duplicate and again.view == first.view
    assert storage.appends == appends


async def test_act_outside_the_race_is_an_error(hub: SettlingHub, clock: ManualClock) -> None:
    ada, bob = await connect(hub, "Ada"), await connect(hub, "Bob")
    snapshot = await hub.handle(ada, p.CreateRoom(deal=DEAL, seats=2))
    assert isinstance(snapshot, p.RoomSnapshot)
    code = str(snapshot.room["code"])
    await hub.handle(bob, p.Join(room=code))
    error = await act_slow(hub, ada, code, 1, legal_moves()[0])
    assert isinstance(error, p.Error) and error.code == "not_started"


async def test_conflict_reloads_and_validates_again(
    storage: FlakyStorage, clock: ManualClock
) -> None:
    """Two processes, one racer: the second's game is stale, its append conflicts, it
    reloads the stored log and applies the action on top of it."""
    one, two = await start_hub(storage, clock), await start_hub(storage, clock)
    try:
        ada = await connect(one, "Ada")
        code = await racing_room(one, clock, [ada])
        ada_two = RecordingConnection()  # a second socket of the same player
        ada_two.player = ada.player
        await two.handle(ada_two, p.Join(room=code))
        await two.handle(ada_two, p.Sync(room=code))
        room = two.rooms.local[code].room
        await two.games.view(room, ada.player_id)
        first = legal_moves()[0]
        second = next(m for m in legal_moves([first]) if m in legal_moves() and m != first)
        assert isinstance(await act_slow(one, ada, code, 1, first), p.Ack)
        ack = await act_fast(two, ada_two, code, 2, second)  # stale: log length 0
        assert isinstance(ack, p.Ack) and ack.seq == 2
        assert two.metrics.registry.get_sample_value("crescent_append_conflicts_total") == 1
        stored = await storage.load_game(code, 1, ada.player_id)
        assert bare(stored.actions) == [first, second]
    finally:
        await one.stop()
        await two.stop()


async def test_failed_append_answers_internal_error_and_rebuilds(
    hub: SettlingHub, storage: FlakyStorage, clock: ManualClock
) -> None:
    ada = await connect(hub, "Ada")
    code = await racing_room(hub, clock, [ada])
    first = legal_moves()[0]
    await act_slow(hub, ada, code, 1, first)
    storage.fail_stored = ConnectionError("redis went away")
    second = legal_moves([first])[0]
    error = await act_fast(hub, ada, code, 2, second)
    assert isinstance(error, p.Error) and error.code == "internal_error"
    slot = hub.games.find(code, 1, ada.player_id)
    assert slot is not None and slot.racer is None and not slot.storing  # rebuilt next
    ack = await act_slow(hub, ada, code, 2, second)  # the retry starts from the stored log
    assert isinstance(ack, p.Ack)
    assert bare((await storage.load_game(code, 1, ada.player_id)).actions) == [
        first,
        second,
    ]


@pytest.mark.parametrize("path", ["fast", "slow"])
async def test_queuing_that_raises_clears_the_in_flight_flag(
    hub: SettlingHub, storage: FlakyStorage, clock: ManualClock, path: str
) -> None:
    ada = await connect(hub, "Ada")
    code = await racing_room(hub, clock, [ada])
    first = legal_moves()[0]
    await act_slow(hub, ada, code, 1, first)
    storage.fail_queued = RuntimeError("bug while queuing")
    second = legal_moves([first])[0]
    act = act_fast if path == "fast" else act_slow
    error = await act(hub, ada, code, 2, second)
    assert isinstance(error, p.Error) and error.code == "internal_error"
    slot = hub.games.find(code, 1, ada.player_id)
    assert slot is not None and not slot.storing and slot.racer is None
    ack = await asyncio.wait_for(act_slow(hub, ada, code, 2, second), 5)  # not stuck
    assert isinstance(ack, p.Ack)


async def test_leaving_a_race_resigns_on_the_server(
    hub: SettlingHub, storage: FlakyStorage, clock: ManualClock
) -> None:
    ada, bob = await connect(hub, "Ada"), await connect(hub, "Bob")
    code = await racing_room(hub, clock, [ada, bob])
    move = legal_moves()[0]
    await act_slow(hub, ada, code, 1, move)
    await hub.handle(ada, p.Leave(room=code))
    stored = await storage.load_game(code, 1, ada.player_id)
    assert bare(stored.actions) == [move, "resign"] and stored.last_seq == 1
    assert stored.progress is not None and stored.progress.status == "resigned"
    assert code not in ada.rooms
