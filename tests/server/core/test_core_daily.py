"""The daily challenge in the core: in-memory storage, a manual clock around midnight."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from crescent_wire import protocol as p
from crescent_wire.errors import DailyError, ProtocolError, RoomError
from server.config import Settings
from server.core.daily import DealSource
from server.daily import DAY_MS, Day
from server.metrics import Metrics
from server.solver import solve
from server.storage.memory import MemoryStorage
from server.storage.memory_daily import MemoryDailyStorage
from tests.server.core_support import (
    COUNTDOWN_MS,
    DEAL,
    ManualClock,
    RecordingConnection,
    SettlingHub,
    connect,
    memory_parts,
    start_hub,
)

MIDNIGHT = Day.parse("2025-11-30").starts_at
LINE = solve(DEAL, max_seconds=30).line


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(MIDNIGHT - 3_600_000)  # 29 Nov, 23:00 UTC


@pytest.fixture
async def hub(storage: MemoryStorage, clock: ManualClock) -> AsyncIterator[SettlingHub]:
    """A started hub whose coming days are prepared (the background check's first run,
    awaited here so the tests start from stored days)."""
    hub = await start_hub(storage, clock)
    assert await hub.daily.prepare()
    yield hub
    await hub.stop()


class GatedDeals:
    """A deal source that holds every draw until the test opens the gate: a solver
    that takes as long as the test wants. Counts the draws."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.draws = 0

    async def __call__(self, variant: str) -> str:
        self.draws += 1
        self.started.set()
        await self.gate.wait()
        return DEAL


async def start_hub_with(
    storage: MemoryStorage, daily: MemoryDailyStorage, clock: ManualClock, deals: DealSource
) -> SettlingHub:
    """A hub (one server process) over shared storage with its own deal source."""
    settings = Settings(
        countdown_ms=COUNTDOWN_MS,
        progress_interval_s=3600.0,
        daily_push_interval_s=3600.0,
        daily_check_interval_s=3600.0,
    )
    hub = SettlingHub(
        memory_parts(storage, daily_storage=daily, daily_deals=deals), settings, Metrics(), clock
    )
    await hub.start()
    return hub


async def settle(hub: SettlingHub) -> None:
    for _ in range(3):
        await asyncio.sleep(0)
        await hub.settle()


async def ask(hub: SettlingHub, conn: RecordingConnection, msg: p.ClientMessage) -> Any:
    reply = await hub.handle(conn, msg)
    return p.decode_server(reply) if isinstance(reply, bytes) else reply


async def play(
    hub: SettlingHub,
    clock: ManualClock,
    conn: RecordingConnection,
    actions: tuple[str, ...],
    *,
    ms_per_action: int = 0,
) -> str:
    snapshot = await ask(hub, conn, p.DailyStart())
    assert isinstance(snapshot, p.RoomSnapshot)
    code = str(snapshot.room["code"])
    assert snapshot.room["deal"] is None and snapshot.room["seats"] == 1
    clock.advance(COUNTDOWN_MS)
    for seq, action in enumerate(actions, 1):
        clock.advance(ms_per_action)
        reply = await ask(hub, conn, p.Act(room=code, seq=seq, action=action))
        assert isinstance(reply, p.Ack), reply
    await hub.progress.flush()
    await settle(hub)
    return code


async def test_commitments_ahead_and_reveal(hub: SettlingHub, clock: ManualClock) -> None:
    ada = await connect(hub, "Ada")
    info = await ask(hub, ada, p.DailyToday())
    assert info.kind == "daily"
    today, tomorrow = info.data["today"], info.data["tomorrow"]
    assert today["day"] == "2025-11-29" and tomorrow["day"] == "2025-11-30"
    assert today["code"] is None and today["salt"] is None
    # The day after tomorrow is committed already: more than 24 h before it starts.
    after = await hub.daily.record(Day.parse("2025-12-01"))
    assert after is not None and after.committed_at <= after.day.starts_at - DAY_MS
    assert after.commitment.digest != tomorrow["commitment"]
    clock.now = MIDNIGHT + 10  # the 29th is over, but attempts may still run: sealed
    days = await ask(hub, ada, p.DailyDays())
    assert [d["day"] for d in days.data["days"]] == ["2025-11-29"]
    assert days.data["days"][0]["code"] is None
    clock.now = days.data["days"][0]["reveal_at"]
    revealed = (await ask(hub, ada, p.DailyDays())).data["days"][0]
    assert revealed["code"] == DEAL
    check = hashlib.sha256(f"{revealed['code']}:{revealed['salt']}".encode()).hexdigest()
    assert check == revealed["commitment"] == today["commitment"]


async def test_one_ranked_attempt_then_practice(hub: SettlingHub, clock: ManualClock) -> None:
    clock.now = MIDNIGHT + 3_600_000
    old = await connect(hub, "Old")
    clock.now = MIDNIGHT + DAY_MS + 3_600_000  # the next day: "Old" predates it
    with pytest.raises(DailyError) as err:
        await hub.handle(old, p.DailyStart(practice=True))
    assert err.value.code == "wrong_phase"
    first = await ask(hub, old, p.DailyStart())
    assert isinstance(first, p.RoomSnapshot)
    with pytest.raises(DailyError) as err:
        await hub.handle(old, p.DailyStart())
    assert err.value.code == "already_played"
    with pytest.raises(DailyError) as err:
        await hub.handle(old, p.DailyStart(day="2025-11-30"))
    assert err.value.code == "day_over"
    practice = await ask(hub, old, p.DailyStart(practice=True))
    assert practice.room["code"] != first.room["code"]
    # The practice game is never ranked: resign both; only the first is on the board.
    for snap in (practice, first):
        clock.advance(COUNTDOWN_MS)
        await ask(hub, old, p.Act(room=snap.room["code"], seq=1, action="resign"))
    await hub.progress.flush()
    await settle(hub)
    board = await ask(hub, old, p.DailyBoard())
    assert board.data["count"] == 1 and board.data["top"][0]["status"] == "resigned"
    assert board.data["you"]["rank"] == 1


async def test_ranking_ties_and_late_identities(hub: SettlingHub, clock: ManualClock) -> None:
    assert LINE is not None
    players = [await connect(hub, name) for name in ("Slow", "Fast", "Quit", "Same")]
    clock.now = MIDNIGHT + 1000  # the 30th's deal goes live
    late = await connect(hub, "Late")
    await play(hub, clock, players[0], LINE, ms_per_action=20)
    await play(hub, clock, players[1], LINE, ms_per_action=10)
    await play(hub, clock, players[2], ("resign",))
    await play(hub, clock, players[3], LINE, ms_per_action=10)  # ties Fast: finished later
    await play(hub, clock, late, LINE, ms_per_action=1)  # fastest, but a new identity
    board = await ask(hub, players[0], p.DailyBoard(top=10, around=1))
    names = [row["name"] for row in board.data["top"]]
    assert names == ["Fast", "Same", "Slow", "Quit"]
    assert board.data["top"][0]["time_ms"] == board.data["top"][1]["time_ms"]
    assert [r["name"] for r in board.data["around"]] == ["Same", "Slow", "Quit"]
    assert board.data["you"]["rank"] == 3 and board.data["late_count"] == 1
    late_board = await ask(hub, late, p.DailyBoard(late=True))
    assert late_board.data["top"][0]["name"] == "Late"
    me = await ask(hub, players[1], p.DailyMe())
    assert me.data["streak_won"] == 1 and me.data["best_time_ms"] is not None


async def test_game_started_before_midnight_counts_for_its_day(
    hub: SettlingHub, clock: ManualClock
) -> None:
    assert LINE is not None
    clock.now = MIDNIGHT - 2 * DAY_MS  # an identity older than the day (else: "late")
    ada = await connect(hub, "Ada")
    clock.now = MIDNIGHT - 60_000
    snapshot = await ask(hub, ada, p.DailyStart())
    code = snapshot.room["code"]
    clock.advance(COUNTDOWN_MS)
    for seq, action in enumerate(LINE, 1):
        clock.advance(1000)  # three minutes: the day rolls over mid-game
        await ask(hub, ada, p.Act(room=code, seq=seq, action=action))
    assert Day.of(clock.now) == Day.parse("2025-11-30")
    await hub.progress.flush()
    await settle(hub)
    old = await ask(hub, ada, p.DailyBoard(day="2025-11-29"))
    assert old.data["top"][0]["status"] == "won" and old.data["count"] == 1
    assert (await ask(hub, ada, p.DailyBoard())).data["count"] == 0
    # A new day: a new ranked attempt, and the finished room still hides the deal.
    assert hub.rooms.local[code].room.public_dict(ada.player_id, clock.now)["deal"] is None
    assert isinstance(await ask(hub, ada, p.DailyStart()), p.RoomSnapshot)


async def test_live_board_push(hub: SettlingHub, clock: ManualClock) -> None:
    clock.now = MIDNIGHT - 2 * DAY_MS
    watcher = await connect(hub, "Watcher")
    racer = await connect(hub, "Racer")
    clock.now = MIDNIGHT - 3_600_000
    await ask(hub, watcher, p.DailyBoard(watch=True))
    await play(hub, clock, racer, ("resign",))
    await hub.daily.push()
    pushes = [
        f for f in (p.decode_server(x) for x in watcher.frames) if isinstance(f, p.DailyReply)
    ]
    assert pushes and pushes[-1].data["top"][0]["name"] == "Racer"
    await hub.disconnect(watcher)
    assert watcher not in hub.daily.watchers


async def test_no_solver_help_on_the_sealed_daily_deal(
    hub: SettlingHub, clock: ManualClock
) -> None:
    clock.now = MIDNIGHT - 2 * DAY_MS
    ada = await connect(hub, "Ada")
    clock.now = MIDNIGHT - 3_600_000
    snapshot = await ask(hub, ada, p.DailyStart())
    code = snapshot.room["code"]
    assert snapshot.room["sealed_until"] is not None
    clock.advance(COUNTDOWN_MS)
    with pytest.raises(RoomError) as err:
        await hub.handle(ada, p.Hint(room=code))
    assert err.value.code == "not_practice"
    await ask(hub, ada, p.Act(room=code, seq=1, action="resign"))
    await hub.progress.flush()
    await settle(hub)
    # Finished, but the day is not revealed: the solver would give away deal and line.
    with pytest.raises(RoomError) as err:
        await hub.handle(ada, p.Winnable(room=code))
    assert err.value.code == "wrong_phase"


async def test_an_abandoned_attempt_is_resigned_and_ranked(
    hub: SettlingHub, clock: ManualClock
) -> None:
    assert LINE is not None
    clock.now = MIDNIGHT - 2 * DAY_MS
    ada = await connect(hub, "Ada")
    watcher = await connect(hub, "Watcher")
    clock.now = MIDNIGHT - 3_600_000
    snapshot = await ask(hub, ada, p.DailyStart())
    code = snapshot.room["code"]
    clock.advance(COUNTDOWN_MS)
    assert isinstance(await ask(hub, ada, p.Act(room=code, seq=1, action=LINE[0])), p.Ack)
    await hub.disconnect(ada)  # the only socket: no process holds the room any more
    assert code not in hub.rooms.local
    await settle(hub)
    clock.advance(hub.daily.resign_offline_ms - 1)
    await hub.daily.resign_abandoned()
    await hub.progress.flush()
    await settle(hub)
    assert (await ask(hub, watcher, p.DailyBoard())).data["count"] == 0  # not yet
    clock.advance(1)
    await hub.daily.resign_abandoned()
    await hub.progress.flush()
    await settle(hub)
    board = await ask(hub, watcher, p.DailyBoard())
    assert board.data["count"] == 1
    row = board.data["top"][0]
    assert row["name"] == "Ada" and row["status"] == "resigned" and row["moves"] == 1
    assert not hub.daily.abandoned


async def test_certified_deals_wait_for_a_full_runner_only_when_asked() -> None:
    """The daily waits for a free solver slot; a tournament's draw is refused at once
    (it falls back to an uncertified deal). The deal drawn is one the solver won."""
    from server.core.daily import solver_deal_source
    from server.core.ports import CpuBusy, InlineCpu
    from server.game import DealCode

    busy = InlineCpu(max_jobs=0)
    with pytest.raises(CpuBusy):
        await solver_deal_source(busy, 2.0)("N")
    waiting = asyncio.ensure_future(solver_deal_source(busy, 2.0, wait_when_busy_s=0.01)("N"))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # still waiting for a slot
    busy.max_jobs = 1  # the jobs ahead finished
    code = await asyncio.wait_for(waiting, 60)
    assert busy.ran == 1 and DealCode.parse(code).variant == "N"


async def test_no_request_waits_for_certification(clock: ManualClock) -> None:
    """Days not certified yet: every daily request is answered at once (the day's
    requests with ``day_not_ready``), while the solver runs in the background; then
    the same requests are answered from the stored record."""
    storage = MemoryStorage()
    deals = GatedDeals()
    hub = await start_hub_with(storage, MemoryDailyStorage(storage.created.get), clock, deals)
    try:
        ada = await connect(hub, "Ada")
        await asyncio.wait_for(deals.started.wait(), 5)  # the check is certifying today
        for msg in (p.DailyToday(), p.DailyStart(), p.DailyBoard()):
            with pytest.raises(DailyError) as err:
                await asyncio.wait_for(hub.handle(ada, msg), 1)
            assert err.value.code == "day_not_ready", msg
        # Past days and one's own record need no certification.
        days = await ask(hub, ada, p.DailyDays())
        assert days.data["days"] == []
        me = await ask(hub, ada, p.DailyMe())
        assert me.data["streak_played"] == 0
        deals.gate.set()
        assert await hub.daily.prepare()
        info = await ask(hub, ada, p.DailyToday())
        assert info.data["today"]["day"] == "2025-11-29"
        assert info.data["tomorrow"]["day"] == "2025-11-30"
        assert deals.draws == 3  # today, tomorrow, the day after: once each
    finally:
        deals.gate.set()
        await hub.stop()


async def test_one_process_certifies_the_others_read_its_record(clock: ManualClock) -> None:
    """Two processes sharing storage start at once: each day is drawn by one of them
    (the lease), and both answer with the same stored commitment."""
    storage = MemoryStorage()
    daily = MemoryDailyStorage(storage.created.get)
    one_deals, two_deals = GatedDeals(), GatedDeals()
    one = await start_hub_with(storage, daily, clock, one_deals)
    two = await start_hub_with(storage, daily, clock, two_deals)
    try:
        await asyncio.wait_for(one_deals.started.wait(), 5)
        await asyncio.wait_for(two_deals.started.wait(), 5)
        # Each holds one day's lease; the other skipped it (no second draw of it).
        assert (one_deals.draws, two_deals.draws) == (1, 1)
        one_deals.gate.set()
        two_deals.gate.set()
        # A second check finds the day each one left to the other stored.
        for _ in range(2):
            done = await asyncio.gather(one.daily.prepare(), two.daily.prepare())
        assert all(done)
        assert one_deals.draws + two_deals.draws == 3
        assert len(daily.days) == 3 and not daily.leases
        ada, bob = await connect(one, "Ada"), await connect(two, "Bob")
        first = await ask(one, ada, p.DailyToday())
        second = await ask(two, bob, p.DailyToday())
        assert first.data["today"] == second.data["today"]
        assert first.data["tomorrow"] == second.data["tomorrow"]
    finally:
        one_deals.gate.set()
        two_deals.gate.set()
        await one.stop()
        await two.stop()


async def test_a_stopped_process_hands_its_lease_back(clock: ManualClock) -> None:
    storage = MemoryStorage()
    daily = MemoryDailyStorage(storage.created.get)
    deals = GatedDeals()
    one = await start_hub_with(storage, daily, clock, deals)
    await asyncio.wait_for(deals.started.wait(), 5)
    assert str(Day.of(clock.now)) in daily.leases
    await one.stop()  # shut down mid-certification: the lease is released
    assert not daily.leases
    two = await start_hub_with(storage, daily, clock, fixed_deal(DEAL))
    try:
        assert await two.daily.prepare()
    finally:
        await two.stop()


def fixed_deal(code: str) -> DealSource:
    async def draw(variant: str) -> str:
        return code

    return draw


async def test_server_time_is_stamped_when_the_reply_goes(
    hub: SettlingHub, clock: ManualClock
) -> None:
    """A slow storage read inside ``daily``: ``server_time`` is the time after it."""
    ada = await connect(hub, "Ada")
    storage = hub.daily.storage
    assert isinstance(storage, MemoryDailyStorage)
    read = storage.board_entry

    async def slow_board_entry(day: str, player_id: str) -> Any:
        clock.advance(5_000)
        return await read(day, player_id)

    storage.board_entry = slow_board_entry  # type: ignore[method-assign]
    asked_at = clock.now
    info = await ask(hub, ada, p.DailyToday())
    assert info.data["server_time"] == clock.now == asked_at + 5_000


@pytest.mark.parametrize("field", ["day", "before"])
@pytest.mark.parametrize("text", ["", "yesterday", "2025-02-30", "2025-W48-7", "not-a-day!"])
async def test_malformed_days_are_bad_field(hub: SettlingHub, text: str, field: str) -> None:
    """Built in the process (past the wire decoder, which refuses them too)."""
    ada = await connect(hub, "Ada")
    msgs: list[p.ClientMessage] = (
        [p.DailyBoard(day=text), p.DailyStart(day=text)]
        if field == "day"
        else [p.DailyDays(before=text)]
    )
    for msg in msgs:
        with pytest.raises(ProtocolError) as err:
            await hub.handle(ada, msg)
        assert err.value.code == "bad_field" and f"'{field}'" in err.value.message


async def test_days_before_the_first_day_of_the_calendar(hub: SettlingHub) -> None:
    ada = await connect(hub, "Ada")
    for before in ("0001-01-01", "0001-01-03"):
        reply = await ask(hub, ada, p.DailyDays(before=before, limit=30))
        assert reply.data == {"days": []}


async def test_daily_days_reply_as_documented(hub: SettlingHub, clock: ManualClock) -> None:
    """protocol.md's `daily_days`: one key, `days`, newest first, days without a record
    left out, at most `limit`; the nine DAY keys and the day's reviews, sealed until
    `reveal_at`."""
    ada = await connect(hub, "Ada")
    # 29 Nov 23:00: the 29th, 30th and 1 Dec are committed, nothing before.
    reply = await ask(hub, ada, p.DailyDays(before="2025-12-03", limit=30))
    assert set(reply.data) == {"days"}
    days = reply.data["days"]
    assert [d["day"] for d in days] == ["2025-12-01", "2025-11-30", "2025-11-29"]
    keys = ["day", "variant", "starts_at", "ends_at", "commitment", "committed_at"]
    keys += ["reveal_at", "code", "salt", "flagged", "disqualified"]
    for d in days:
        assert list(d) == keys and d["flagged"] == d["disqualified"] == []
        assert d["ends_at"] - d["starts_at"] == DAY_MS and len(d["commitment"]) == 64
        assert d["code"] is None and d["salt"] is None and d["reveal_at"] > clock.now
    assert [
        d["day"]
        for d in (await ask(hub, ada, p.DailyDays(before="2025-12-01", limit=1))).data["days"]
    ] == ["2025-11-30"]
    # Before today: past days only (none here); after the reveal, code and salt.
    assert (await ask(hub, ada, p.DailyDays())).data["days"] == []
    clock.now = days[-1]["reveal_at"]
    revealed = (await ask(hub, ada, p.DailyDays(before="2025-11-30"))).data["days"]
    assert revealed[0]["code"] == DEAL and len(revealed[0]["salt"]) == 32
