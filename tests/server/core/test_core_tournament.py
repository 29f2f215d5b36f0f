"""Tournaments through the hub over in-memory storage (no sockets, no Redis): a whole
3-round tournament with a late join, a removal and a withdrawal; host-only operations
refused for others; each round's results recorded exactly once; two hubs sharing one
storage stand for two server processes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import msgpack
import pytest

from crescent_wire import protocol as p
from crescent_wire.errors import ConflictError
from server.config import Settings
from server.core.daily import fixed_deal_source
from server.core.tournaments import MAX_COMMIT_ATTEMPTS
from server.game import Game
from server.metrics import Metrics
from server.storage.memory import MemoryStorage
from server.storage.memory_tournament import MemoryTournamentStorage
from tests.server.core_support import (
    COUNTDOWN_MS,
    ManualClock,
    RecordingConnection,
    SettlingHub,
    connect,
    memory_parts,
)

DEALS = ("CR1-N-AAAAAAB", "CR1-N-AAAAAAC", "CR1-N-AAAAAAD")


@pytest.fixture
def tstorage() -> MemoryTournamentStorage:
    return MemoryTournamentStorage()


async def make_hub(
    storage: MemoryStorage, tstorage: MemoryTournamentStorage, clock: ManualClock
) -> SettlingHub:
    drawn = iter(DEALS * 10)

    async def deals(variant: str) -> str:
        return next(drawn)

    hub = SettlingHub(
        memory_parts(
            storage,
            # not the solver: it would run inline, for seconds
            daily_deals=fixed_deal_source(DEALS[0]),
            tournament_storage=tstorage,
            tournament_deals=deals,
        ),
        Settings(
            countdown_ms=COUNTDOWN_MS,
            progress_interval_s=3600.0,
            daily_push_interval_s=3600.0,
            daily_check_interval_s=3600.0,
        ),
        Metrics(),
        clock,
        tournament_tick_s=3600.0,  # the tests call tick()
    )
    hub.tournaments.push_interval_s = 0.0
    await hub.start()
    return hub


@pytest.fixture
async def hub(
    storage: MemoryStorage, tstorage: MemoryTournamentStorage, clock: ManualClock
) -> AsyncIterator[SettlingHub]:
    hub = await make_hub(storage, tstorage, clock)
    yield hub
    await hub.stop()


async def settle(*hubs: SettlingHub) -> None:
    for _ in range(4):
        await asyncio.sleep(0)
        for h in hubs:
            await h.settle()


def decoded(reply: p.ServerMessage | bytes) -> p.ServerMessage:
    return p.decode_server(reply) if isinstance(reply, bytes) else reply


async def ask(hub: SettlingHub, conn: RecordingConnection, msg: p.ClientMessage) -> Any:
    return decoded(await hub.handle(conn, msg))


async def error_of(hub: SettlingHub, conn: RecordingConnection, msg: p.ClientMessage) -> str:
    with pytest.raises(Exception) as info:
        await hub.handle(conn, msg)
    return str(getattr(info.value, "code", info.value))


def pushes(conn: RecordingConnection, kind: str) -> list[dict[str, Any]]:
    return [m for m in (msgpack.unpackb(f) for f in conn.frames) if m["t"] == kind]


async def create(hub: SettlingHub, host: RecordingConnection, **kw: Any) -> str:
    args: dict[str, Any] = dict(name="Cup", rounds=3, time_limit=60, max_players=10)
    args.update(kw)
    snap = await ask(hub, host, p.TCreate(**args))
    assert isinstance(snap, p.TournamentSnapshot)
    assert snap.you["role"] == "host" and snap.tournament["phase"] == "registration"
    return str(snap.tournament["code"])


async def start(hub: SettlingHub, host: RecordingConnection, code: str) -> dict[str, Any]:
    assert isinstance(await ask(hub, host, p.THost(tournament=code, op="start_round")), p.Ok)
    snap = await ask(hub, host, p.TGet(tournament=code))
    current: dict[str, Any] = snap.tournament["current"]
    assert current is not None
    return current


async def test_three_rounds_with_late_join_removal_and_withdrawal(
    hub: SettlingHub, clock: ManualClock, tstorage: MemoryTournamentStorage
) -> None:
    host, ada, bob, cy = [await connect(hub, n) for n in ("Host", "Ada", "Bob", "Cy")]
    spectator = await connect(hub, "Sam")
    code = await create(hub, host, deals=list(DEALS))
    for conn in (ada, bob):
        snap = await ask(hub, conn, p.TJoin(tournament=code))
        assert snap.you["role"] == "player" and snap.you["status"] == "active"
    watch = await ask(hub, spectator, p.TJoin(tournament=code, as_="spectator"))
    assert watch.you["role"] == "spectator" and watch.tournament["spectators"] == 1
    assert (await ask(hub, ada, p.TJoin(tournament=code))).you["role"] == "player"  # resume

    # Round 1: Ada and Bob. Nobody sees the deal; the room sends no progress frames.
    current = await start(hub, host, code)
    await settle(hub)
    assert pushes(ada, "tournament")[-1]["tournament"]["current"]["room"] == current["room"]
    room = await ask(hub, ada, p.Join(room=current["room"]))
    assert isinstance(room, p.RoomSnapshot) and room.room["tournament"] == code
    assert [pl["id"] for pl in room.room["players"]] == [ada.player_id]
    assert room.room["deal"] is None
    await ask(hub, bob, p.Join(room=current["room"]))
    clock.advance(COUNTDOWN_MS)
    move = str(next(Game.from_code(DEALS[0]).legal_moves()))
    ack = decoded(await hub.act(ada, p.Act(room=current["room"], seq=1, action=move)))
    assert isinstance(ack, p.Ack)
    await hub.tournaments.tick()
    live = pushes(bob, "t_live")[-1]
    assert live["round"] == 1 and live["racing"] == 2 and live["you"]["id"] == bob.player_id
    top = {r["id"]: r for r in live["top"]}
    assert top[ada.player_id]["moves"] == 1 and top[bob.player_id]["moves"] == 0
    await hub.progress.flush()
    assert not ada.progress and not bob.progress
    for conn in (ada, bob):
        await ask(hub, conn, p.Act(room=current["room"], seq=2, action="resign"))
    await hub.tournaments.tick()  # every racer done: the round ends and is recorded
    await settle(hub)
    snap = await ask(hub, host, p.TGet(tournament=code))
    assert snap.tournament["phase"] == "between" and snap.tournament["deals"][0] == DEALS[0]
    # Both resigned with 8 cards home: fewer moves places first (Bob: none before resigning).
    assert [r["id"] for r in snap.tournament["standings"]] == [bob.player_id, ada.player_id]
    assert [r["points"] for r in snap.tournament["standings"]] == [2, 1]
    finished = [e for e in ada.events("finished")]
    assert len(finished) == 1 and finished[0].data["deal"] == DEALS[0]

    # Cy joins late (between rounds): from round 2 on. Round 2: the host removes Bob.
    late = await ask(hub, cy, p.TJoin(tournament=code))
    assert late.you["row"]["rounds_played"] == 0
    current = await start(hub, host, code)
    clock.advance(COUNTDOWN_MS)
    ok = await ask(hub, host, p.THost(tournament=code, op="remove", player=bob.player_id))
    assert isinstance(ok, p.Ok)
    assert await error_of(hub, bob, p.TJoin(tournament=code)) == "removed_from_tournament"
    clock.advance(60_000)  # the deadline: Ada and Cy still playing
    await hub.tournaments.tick()
    await settle(hub)
    rows = (await ask(hub, host, p.TGetResults(tournament=code, round=2))).rows
    assert {r["id"] for r in rows} == {ada.player_id, bob.player_id, cy.player_id}
    assert [r["points"] for r in rows] == [3, 2, 1]

    # Round 3: Ada withdraws before it; Cy plays alone and resigns.
    assert isinstance(await ask(hub, ada, p.TWithdraw(tournament=code)), p.Ok)
    current = await start(hub, host, code)
    clock.advance(COUNTDOWN_MS)
    await ask(hub, cy, p.Join(room=current["room"]))
    await ask(hub, cy, p.Act(room=current["room"], seq=1, action="resign"))
    await hub.tournaments.tick()
    await settle(hub)
    final = await ask(hub, spectator, p.TGetStandings(tournament=code))
    assert final.final is True
    by_id = {r["id"]: r for r in final.rows}
    assert by_id[ada.player_id]["status"] == "withdrawn"
    assert by_id[bob.player_id]["rank"] is None and final.rows[-1]["id"] == bob.player_id
    assert by_id[cy.player_id]["rounds_played"] == 2
    assert await error_of(hub, host, p.THost(tournament=code, op="start_round")) == (
        "tournament_over"
    )
    assert len(await tstorage.all_results(code)) == 3
    csv_text = await hub.tournaments.export_csv(code)
    assert csv_text.count(f",{cy.player_id},") == 3  # 2 rounds + standings


async def test_host_only_operations_are_refused_for_others(hub: SettlingHub) -> None:
    host, ada = await connect(hub, "Host"), await connect(hub, "Ada")
    code = await create(hub, host)
    await ask(hub, ada, p.TJoin(tournament=code))
    for op in ("open_registration", "close_registration", "start_round", "pause", "end"):
        assert await error_of(hub, ada, p.THost(tournament=code, op=op)) == "not_host"
    assert (
        await error_of(hub, ada, p.THost(tournament=code, op="remove", player=host.player_id))
        == "not_host"
    )
    await ask(hub, host, p.THost(tournament=code, op="close_registration"))
    late = await connect(hub, "Late")
    assert await error_of(hub, late, p.TJoin(tournament=code)) == "registration_closed"
    await ask(hub, host, p.THost(tournament=code, op="pause"))
    assert await error_of(hub, host, p.THost(tournament=code, op="start_round")) == (
        "tournament_paused"
    )
    assert await error_of(hub, ada, p.TGet(tournament="TZZZZZZ")) == "tournament_not_found"


async def test_results_are_recorded_once(
    hub: SettlingHub, clock: ManualClock, tstorage: MemoryTournamentStorage
) -> None:
    host, ada = await connect(hub, "Host"), await connect(hub, "Ada")
    code = await create(hub, host, rounds=2)
    await ask(hub, ada, p.TJoin(tournament=code))
    current = await start(hub, host, code)
    clock.advance(COUNTDOWN_MS + 60_000)
    await settle(hub)  # the next round's deal, prepared in the background, is stored
    writes = tstorage.writes
    await asyncio.gather(
        hub.tournaments.tick(),
        hub.tournaments.record(code, current["room"]),
        hub.rooms.finish(current["room"], "deadline"),
    )
    await settle(hub)
    for _ in range(2):  # the room finishing again, a second sweep: no change
        await hub.tournaments.record(code, current["room"])
        await hub.tournaments.tick()
    t = await hub.tournaments.load(code)
    assert len(t.finished_rounds) == 1 and t.player(ada.player_id).rounds_played == 1  # type: ignore[union-attr]
    assert tstorage.writes == writes + 1


async def test_pushes_and_the_sweep_reach_another_process(
    hub: SettlingHub, storage: MemoryStorage, tstorage: MemoryTournamentStorage, clock: ManualClock
) -> None:
    other = await make_hub(storage, tstorage, clock)  # a second server process
    try:
        host, ada = await connect(hub, "Host"), await connect(other, "Ada")
        code = await create(hub, host, rounds=1)
        await ask(other, ada, p.TJoin(tournament=code))
        await settle(hub, other)
        assert pushes(host, "tournament")[-1]["tournament"]["players"] == 1  # via the bus
        current = await start(hub, host, code)
        await settle(hub, other)
        pushed = pushes(ada, "tournament")[-1]["tournament"]
        assert pushed["current"]["room"] == current["room"] and pushed["phase"] == "countdown"
        # The process that started the round is gone; the deadline passes; the other
        # process's sweep finishes the room and records the round.
        await hub.stop()
        clock.advance(COUNTDOWN_MS + 60_000)
        await other.tournaments.tick()
        await settle(other)
        final = pushes(ada, "tournament")[-1]["tournament"]
        assert final["phase"] == "finished" and final["finished_rounds"][0]["racers"] == 1
    finally:
        await other.stop()


async def test_a_spectator_who_closes_the_page_frees_the_seat(hub: SettlingHub) -> None:
    """Spectator seats are bounded (1,000): one held by a closed socket is given back,
    but not while the same player still watches from another socket."""
    host = await connect(hub, "Host")
    code = await create(hub, host)
    sam = await connect(hub, "Sam")
    other = await connect(hub, "Tess")
    for conn in (sam, other):
        await ask(hub, conn, p.TJoin(tournament=code, as_="spectator"))
    assert (await ask(hub, host, p.TGet(tournament=code))).tournament["spectators"] == 2
    twin = await connect(hub, "Sam")
    twin.player = sam.player  # Sam's second tab on this process
    await ask(hub, twin, p.TJoin(tournament=code, as_="spectator"))
    await hub.disconnect(sam)
    await settle(hub)
    assert (await ask(hub, host, p.TGet(tournament=code))).tournament["spectators"] == 2
    await hub.disconnect(twin)
    await settle(hub)
    assert (await ask(hub, host, p.TGet(tournament=code))).tournament["spectators"] == 1


def cas_retries(hub: SettlingHub, record: str) -> float:
    value = hub.metrics.registry.get_sample_value("crescent_cas_retries_total", {"record": record})
    return value or 0.0


async def test_a_crowd_registers_at_once_across_two_processes(
    hub: SettlingHub, storage: MemoryStorage, tstorage: MemoryTournamentStorage, clock: ManualClock
) -> None:
    """200 players send t_join at once, half to each of two processes sharing the
    storage (which yields between a read and a write, as Redis does), while the host
    pauses and resumes: every join and host operation succeeds on its first try, and
    the processes' lost compare-and-sets are the server's retries, counted."""
    other = await make_hub(storage, tstorage, clock)
    try:
        host = await connect(hub, "Host")
        code = await create(hub, host, max_players=200)
        hubs = [hub, other]
        players = [await connect(hubs[i % 2], f"P{i}") for i in range(200)]
        replies = await asyncio.gather(
            *(ask(hubs[i % 2], conn, p.TJoin(tournament=code)) for i, conn in enumerate(players)),
            ask(hub, host, p.THost(tournament=code, op="pause")),
            ask(hub, host, p.THost(tournament=code, op="resume")),
        )
        assert all(isinstance(r, p.TournamentSnapshot) for r in replies[:200])
        assert all(r.you["role"] == "player" for r in replies[:200])
        assert all(isinstance(r, p.Ok) for r in replies[200:])
        standings = await ask(hub, host, p.TGetStandings(tournament=code))
        assert {row["id"] for row in standings.rows} == {c.player_id for c in players}
        t = await hub.tournaments.load(code)
        assert t.registered == 200 and not t.paused
        # Requests on one process share its committer, so only the two processes'
        # committers race: a few writes for 202 requests.
        assert tstorage.writes <= 20
    finally:
        await other.stop()


async def test_the_crowd_cannot_overfill_a_tournament(
    hub: SettlingHub, storage: MemoryStorage, tstorage: MemoryTournamentStorage, clock: ManualClock
) -> None:
    other = await make_hub(storage, tstorage, clock)
    try:
        host = await connect(hub, "Host")
        code = await create(hub, host, max_players=150)
        hubs = [hub, other]
        players = [await connect(hubs[i % 2], f"P{i}") for i in range(200)]
        outcomes = await asyncio.gather(
            *(ask(hubs[i % 2], conn, p.TJoin(tournament=code)) for i, conn in enumerate(players)),
            return_exceptions=True,
        )
        joined = [o for o in outcomes if isinstance(o, p.TournamentSnapshot)]
        refused = [getattr(o, "code", repr(o)) for o in outcomes if isinstance(o, Exception)]
        assert len(joined) == 150 and refused == ["tournament_full"] * 50
        assert (await hub.tournaments.load(code)).registered == 150
    finally:
        await other.stop()


def a_move_home(deal: str) -> str:
    """A legal first move of ``deal`` that puts a card on a foundation."""
    game = Game.from_code(deal)
    before = game.foundation_count
    for move in game.legal_moves():
        trial = Game.from_code(deal)
        trial.play(str(move))
        if trial.foundation_count > before:
            return str(move)
    raise AssertionError(f"no move home in {deal}")


async def test_round_room_controls_are_the_hosts_and_end_in_the_last_round_is_ok(
    hub: SettlingHub, clock: ManualClock
) -> None:
    """docs/protocol.md: in a round's room start, ready, rematch and end_race are
    ``not_host`` (ready too, though the room counts down); ``end`` during the last
    round ends and scores it and answers ``ok``; the host cannot remove themself; a
    racer placed first who resigned does not win the round."""
    host, ada, bob = [await connect(hub, n) for n in ("Host", "Ada", "Bob")]
    code = await create(hub, host, rounds=1, deals=[DEALS[0]])
    for conn in (host, ada, bob):
        await ask(hub, conn, p.TJoin(tournament=code))
    removal = p.THost(tournament=code, op="remove", player=host.player_id)
    assert await error_of(hub, host, removal) == "cannot_remove_host"
    current = await start(hub, host, code)
    room = current["room"]
    await ask(hub, ada, p.Join(room=room))
    for msg in (
        p.Ready(room=room, ready=True),
        p.Ready(room=room, ready=False),
        p.Start(room=room),
        p.Rematch(room=room),
        p.EndRace(room=room),
    ):
        assert await error_of(hub, ada, msg) == "not_host", msg
    clock.advance(COUNTDOWN_MS)
    # Ada puts a card home, then resigns: placed first (most cards home), not the winner.
    await ask(hub, ada, p.Act(room=room, seq=1, action=a_move_home(DEALS[0])))
    await ask(hub, ada, p.Act(room=room, seq=2, action="resign"))
    assert isinstance(await ask(hub, host, p.THost(tournament=code, op="end")), p.Ok)
    snap = await ask(hub, host, p.TGet(tournament=code))
    assert snap.tournament["phase"] == "finished"
    assert snap.tournament["finished_rounds"][0]["winner"] is None
    rows = (await ask(hub, host, p.TGetResults(tournament=code, round=1))).rows
    assert rows[0]["id"] == ada.player_id and rows[0]["points"] == 3
    standings = {r["id"]: r for r in (await ask(hub, host, p.TGetStandings(tournament=code))).rows}
    assert standings[ada.player_id]["rounds_won"] == 0
    assert sum(r["rounds_won"] for r in standings.values()) == 0
    # After the end, end is tournament_over as documented.
    assert await error_of(hub, host, p.THost(tournament=code, op="end")) == "tournament_over"


class LosingStorage(MemoryTournamentStorage):
    """Another writer wins the next ``losses`` compare-and-sets after the tournament
    is created (None: every one)."""

    def __init__(self, losses: int | None) -> None:
        super().__init__()
        self.losses = losses

    async def cas_tournament(self, code: str, expected_ver: int, *args: Any, **kw: Any) -> None:
        if expected_ver >= 0 and (self.losses is None or self.losses > 0):
            if self.losses is not None:
                self.losses -= 1
            raise ConflictError("another process wrote first")
        await super().cas_tournament(code, expected_ver, *args, **kw)


async def test_lost_compare_and_sets_are_retried_unseen_and_counted(
    storage: MemoryStorage, clock: ManualClock
) -> None:
    hub = await make_hub(storage, LosingStorage(5), clock)
    try:
        host = await connect(hub, "Host")
        code = await create(hub, host)
        players = [await connect(hub, f"P{i}") for i in range(10)]
        replies = await asyncio.gather(*(ask(hub, c, p.TJoin(tournament=code)) for c in players))
        assert all(r.you["status"] == "active" for r in replies)
        assert cas_retries(hub, "tournament") == 5
        assert (await hub.tournaments.load(code)).registered == 10
    finally:
        await hub.stop()


async def test_a_commit_that_keeps_losing_is_bounded_and_counted(
    storage: MemoryStorage, clock: ManualClock
) -> None:
    hub = await make_hub(storage, LosingStorage(None), clock)
    try:
        host, ada = await connect(hub, "Host"), await connect(hub, "Ada")
        code = await create(hub, host)
        assert await error_of(hub, ada, p.TJoin(tournament=code)) == "internal_error"
        assert cas_retries(hub, "tournament") == MAX_COMMIT_ATTEMPTS - 1
        # The committer is gone: the next request gets a fresh one (and the same answer).
        assert await error_of(hub, ada, p.TJoin(tournament=code)) == "internal_error"
        assert cas_retries(hub, "tournament") == 2 * (MAX_COMMIT_ATTEMPTS - 1)
    finally:
        await hub.stop()
