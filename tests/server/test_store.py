"""The Redis store against the real Redis: keys, TTLs, compare-and-set, the write batcher."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

import pytest
import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from bench.devclient import open_client
from crescent_wire.errors import ConflictError, InternalError
from server.config import fast_paths_from_env
from server.core.ports import AppendResult
from server.lobby import Member, RacerProgress, Room, initial_progress
from server.storage.memory import MemoryStorage
from server.storage.records import unpack_record
from server.storage.redis import ROOM_TTL_S, RedisStorage
from server.storage.redis_base import PlainPipe, server_address
from tests.server.store_support import ProbedWriter, append_action
from tests.support import REPO_ROOT, free_port, wait_for_health

REDIS_FAST = "redis" in fast_paths_from_env()  # CRESCENT_FAST_PATHS: both paths are tested
needs_redis_fast_path = pytest.mark.skipif(not REDIS_FAST, reason="the redis fast path is off")


def room_at(code: str, *, ver: int) -> Room:
    host = Member("pl", "Ada")
    room = Room.create(
        code,
        host=host,
        variant="N",
        deal="CR1-N-AAAAAAB",
        deal_public=False,
        seats=4,
        time_limit=None,
        now=1_700_000_000_000,
    )
    return replace(room, ver=ver)


def progress_of(player_id: str, *, moves: int) -> RacerProgress:
    return initial_progress(player_id)._replace(moves=moves)


@pytest.fixture
async def store(prefix: str, redis_url: str) -> AsyncIterator[RedisStorage]:
    s = RedisStorage(redis_url, prefix, fast=REDIS_FAST)
    await s.start()
    yield s
    await s.close()


async def test_room_cas_history_and_ttl(
    store: RedisStorage, sync_redis: redis.Redis, prefix: str
) -> None:
    room = room_at("K7PQ2X", ver=0)
    await store.cas_room("K7PQ2X", -1, room, [], None)
    with pytest.raises(ConflictError):
        await store.cas_room("K7PQ2X", -1, room, [], None)  # exists already
    await store.cas_room("K7PQ2X", 0, room_at("K7PQ2X", ver=1), [b"e1"], b"bus")
    with pytest.raises(ConflictError):
        await store.cas_room("K7PQ2X", 0, room_at("K7PQ2X", ver=1), [b"e1"], b"bus")
    assert await store.load_room("K7PQ2X") == room_at("K7PQ2X", ver=1)
    for i in range(2, 260):
        await store.cas_room("K7PQ2X", i - 1, room_at("K7PQ2X", ver=i), [b"e%d" % i], None)
    events = await store.read_events("K7PQ2X")
    assert len(events) == 200 and events[-1] == b"e259"  # capped history
    room_key = f"{prefix}:{{K7PQ2X}}:room"  # the room code is the cluster hash tag
    assert 0 < sync_redis.ttl(room_key) <= ROOM_TTL_S
    assert 0 < sync_redis.ttl(f"{prefix}:{{K7PQ2X}}:events") <= ROOM_TTL_S


async def test_append_checks_length_and_seq(
    store: RedisStorage, sync_redis: redis.Redis, prefix: str
) -> None:
    def append(
        expected_len: int, expected_seq: int, seq: int, action: str
    ) -> asyncio.Future[AppendResult]:
        return append_action(
            store,
            "ROOM22",
            1,
            "pl",
            expected_len=expected_len,
            expected_last_seq=expected_seq,
            seq=seq,
            action=action,
            progress=progress_of("pl", moves=expected_len + 1),
        )

    first = await append(0, 0, 1, "p1-p2")
    assert (first.stored, first.log_len, first.last_seq) == (True, 1, 1)
    stale = await append(0, 0, 1, "p1-p3")  # another writer expected the old length
    assert not stale.stored
    wrong_seq = await append(1, 0, 2, "p1-p3")
    assert not wrong_seq.stored
    assert (await append(1, 1, 5, "undo")).last_seq == 5
    game = await store.load_game("ROOM22", 1, "pl")
    assert game.actions == ["p1-p2", "undo"] and game.last_seq == 5
    assert game.progress == progress_of("pl", moves=2)
    for key in (
        f"{prefix}:{{ROOM22}}:r1:log:pl",
        f"{prefix}:{{ROOM22}}:r1:seq",
        f"{prefix}:{{ROOM22}}:r1:progress",
    ):
        assert 0 < sync_redis.ttl(key) <= ROOM_TTL_S


async def test_batcher_pipelines_many_games(store: RedisStorage) -> None:
    sizes: list[int] = []
    store.on_batch = lambda size, _s: sizes.append(size)
    games = 300
    rooms = ["BATCH2", "BATCH3", "BATCH4"]
    results = await asyncio.gather(
        *(
            append_action(
                store,
                rooms[i % 3],
                1,
                f"pl{i}",
                expected_len=0,
                expected_last_seq=0,
                seq=1,
                action="redeal",
                progress=progress_of(f"pl{i}", moves=i),
            )
            for i in range(games)
        )
    )
    assert all(r.stored and r.log_len == 1 and r.last_seq == 1 for r in results)
    assert sum(sizes) == games
    assert max(sizes) > 1 or not REDIS_FAST  # fast: several actions per round trip
    progress = await store.read_progress([(room, 1) for room in rooms])
    assert [len(room) for room in progress] == [100, 100, 100]
    assert progress[1]["pl4"] == progress_of("pl4", moves=4)
    # In one batch: a stale append among good ones is refused alone.
    mixed = await asyncio.gather(
        append_action(
            store,
            "BATCH2",
            1,
            "pl0",
            expected_len=0,
            expected_last_seq=0,
            seq=2,
            action="undo",
            progress=initial_progress("pl"),
        ),
        append_action(
            store,
            "BATCH2",
            1,
            "pl3",
            expected_len=1,
            expected_last_seq=1,
            seq=2,
            action="undo",
            progress=initial_progress("pl"),
        ),
        append_action(
            store,
            "BATCH3",
            1,
            "pl1",
            expected_len=1,
            expected_last_seq=1,
            seq=7,
            action="undo",
            progress=initial_progress("pl"),
        ),
    )
    assert [(r.stored, r.log_len, r.last_seq) for r in mixed] == [
        (False, -1, -1),
        (True, 2, 2),
        (True, 2, 7),
    ]


@needs_redis_fast_path
async def test_writer_pipelines_overlap_and_survive_a_lost_connection(
    prefix: str, redis_url: str
) -> None:
    """Batches go out without waiting for earlier replies (several in flight); when the
    connection breaks, what was in flight fails with an error (never a false ack) and
    the next appends reconnect and are stored."""
    store = RedisStorage(redis_url, prefix, fast=True)
    assert store.fast_paths is not None
    store.fast_paths.writer = writer = ProbedWriter(store)
    await store.start()
    try:
        await overlap_and_lose_the_connection(store, writer)
    finally:
        await store.close()


async def overlap_and_lose_the_connection(store: RedisStorage, writer: ProbedWriter) -> None:

    def append(i: int, seq: int) -> asyncio.Future[object]:
        return asyncio.ensure_future(
            append_action(
                store,
                "LOST22",
                1,
                f"pl{i}",
                expected_len=seq - 1,
                expected_last_seq=seq - 1,
                seq=seq,
                action="redeal",
                progress=progress_of(f"pl{i}", moves=i),
            )
        )

    await append_action(
        store,
        "LOST22",
        1,
        "warm",
        expected_len=0,
        expected_last_seq=0,
        seq=1,
        action="redeal",
        progress=initial_progress("pl"),
    )  # connected
    assert writer.connected
    writer.pause_replies()  # hold the replies back
    first = []
    for turn in range(3):
        first += [append(i, 1) for i in range(turn * 100, turn * 100 + 100)]
        for _ in range(3):
            await asyncio.sleep(0)  # the appends queue, then go out at the turn's end
    assert writer.in_flight == 3  # three pipelines sent, none answered yet
    writer.resume_replies()
    assert all(r.stored for r in await asyncio.gather(*first))  # type: ignore[attr-defined]
    pending = [append(i, 2) for i in range(100)]
    await asyncio.sleep(0)  # sent, not answered yet
    await writer.break_connection()
    outcomes = await asyncio.gather(*pending, return_exceptions=True)
    failed = [o for o in outcomes if isinstance(o, Exception)]
    stored = [o for o in outcomes if not isinstance(o, Exception)]
    assert all(o.stored for o in stored)  # type: ignore[attr-defined]
    assert failed  # the batch in flight failed, as an error
    log_lens = await asyncio.gather(
        *(store.redis.llen(store.keys.log("LOST22", 1, f"pl{i}")) for i in range(100))
    )
    for outcome, log_len in zip(outcomes, log_lens, strict=True):
        # an append that failed may or may not have been stored; one acked always was
        assert log_len == 2 or isinstance(outcome, Exception)
    again = await append_action(
        store,
        "LOST22",
        1,
        "fresh",
        expected_len=0,
        expected_last_seq=0,
        seq=1,
        action="redeal",
        progress=initial_progress("pl"),
    )
    assert again.stored  # a new connection


async def test_scripts_reload_after_flush(prefix: str, redis_url: str) -> None:
    """NOSCRIPT (e.g. Redis restarted) makes the store load its scripts again."""
    s = RedisStorage(redis_url, prefix, fast=REDIS_FAST)
    await s.start()
    try:
        s.append_sha = "0" * 40  # a SHA Redis does not know: same path as after a flush
        s.cas_sha = "0" * 40
        result = await append_action(
            s,
            "NOSCR2",
            1,
            "pl",
            expected_len=0,
            expected_last_seq=0,
            seq=1,
            action="redeal",
            progress=initial_progress("pl"),
        )
        assert result.stored
        await s.cas_room("NOSCR2", -1, room_at("NOSCR2", ver=0), [], None)
        assert unpack_record(await s.redis.hget(s.keys.room("NOSCR2"), "blob"))["ver"] == 0
    finally:
        await s.close()


@pytest.fixture(params=["redis", "memory"])
async def presence_store(
    request: pytest.FixtureRequest, prefix: str, redis_url: str
) -> AsyncIterator[RedisStorage | MemoryStorage]:
    """Both adapters: their presence must behave the same."""
    if request.param == "memory":
        yield MemoryStorage()
        return
    s = RedisStorage(redis_url, prefix, fast=REDIS_FAST)
    await s.start()
    yield s
    await s.close()


async def test_presence_counts_sockets_of_live_processes(
    presence_store: RedisStorage | MemoryStorage,
) -> None:
    store = presence_store
    stale = 30_000

    async def change(process: str, player: str, delta: int, now: int) -> int:
        return await store.presence_change(
            "PRES22", player, delta, process=process, now=now, stale_ms=stale
        )

    assert await change("p1", "a", 1, 0) == 1
    assert await change("p1", "a", 1, 0) == 2
    assert await change("p2", "a", 1, 1000) == 3  # a socket on another process
    assert await change("p2", "b", 1, 1000) == 1
    assert await store.presence_lapsed(["PRES22"], 1000, stale, 10 * stale) == [[]]
    # p1 goes silent; p2 refreshes: only p2's sockets count, and a's are still there
    await store.presence_refresh("p2", ["PRES22"], 31_000)
    assert await store.presence_lapsed(["PRES22"], 31_000, stale, 10 * stale) == [[]]
    assert await change("p2", "a", -1, 31_000) == 0  # p1's two sockets no longer count
    # a's only sockets are now on the silent p1: lapsed; b is on p2, alive
    assert await store.presence_lapsed(["PRES22"], 31_000, stale, 10 * stale) == [["a"]]
    # p1 comes back (it was only paused): its sockets count again
    await store.presence_refresh("p1", ["PRES22"], 32_000)
    assert await store.presence_lapsed(["PRES22"], 32_000, stale, 10 * stale) == [[]]
    assert await change("p1", "a", -1, 32_000) == 1
    # silent for longer than forget_ms: dropped, no longer reported (p2 first)
    later = 32_000 + 10 * stale + 1
    assert await store.presence_lapsed(["PRES22"], later - 1, stale, 10 * stale) == [["a"]]
    assert await store.presence_lapsed(["PRES22"], later, stale, 10 * stale) == [[]]
    assert await change("p3", "a", 1, later) == 1


async def test_embedded_redis_when_none_configured(tmp_path: object) -> None:
    """``python3 -m server`` with no Redis URL starts its own real redis-server."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "CRESCENT_REDIS_URL"}
    data_dir = f"{tmp_path}/redis"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "server",
            "--port",
            str(port),
            "--data-dir",
            data_dir,
            "--countdown-ms",
            "100",
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        await asyncio.to_thread(wait_for_health, f"http://127.0.0.1:{port}", 30.0, proc)
        import aiohttp

        async with aiohttp.ClientSession() as session:
            c = await open_client(session, f"ws://127.0.0.1:{port}/ws", name="Solo")
            snap = await c.create()
            assert snap.room["phase"] == "waiting"
            await c.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.to_thread(proc.communicate, None, 20)
    assert proc.returncode == 0, out.decode()
    text = out.decode()
    assert "embedded redis started" in text and "embedded redis stopped" in text
    assert os.path.isdir(data_dir)


async def test_bus_delivers_and_recovers_a_lost_connection(
    store: RedisStorage, sync_redis: redis.Redis
) -> None:
    """Published frames reach the handler; after its connection is killed the bus
    reconnects and subscribes again (it keeps no stale subscription either)."""
    got: list[tuple[str, bytes]] = []
    bus = store.bus(lambda code, payload: got.append((code, payload)))
    await bus.start()
    try:
        await bus.subscribe("BUSAAA")
        await bus.subscribe("BUSBBB")
        await bus.unsubscribe("BUSBBB")

        async def publish_until(code: str, payload: bytes) -> None:
            for _ in range(100):
                sync_redis.publish(store.keys.bus(code), payload)
                await asyncio.sleep(0.05)
                if (code, payload) in got:
                    return
            raise AssertionError(f"{payload!r} never arrived")

        await publish_until("BUSAAA", b"one")
        name = f"{store.keys.prefix}:bus"
        ids = [c["id"] for c in sync_redis.client_list() if c.get("name") == name]
        assert len(ids) == 1
        sync_redis.client_kill_filter(_id=ids[0])
        await publish_until("BUSAAA", b"two")  # reconnected, subscribed again
        sync_redis.publish(store.keys.bus("BUSBBB"), b"gone")
        await asyncio.sleep(0.2)
        assert all(code == "BUSAAA" for code, _ in got)
    finally:
        await bus.stop()


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "plain"])
async def test_bus_subscribed_to_nothing_waits_quietly(
    prefix: str, redis_url: str, sync_redis: redis.Redis, fast: bool
) -> None:
    """A bus starts with no channel at all (no placeholder subscription): its reader
    neither fails nor reconnects meanwhile, and the first channel delivers."""
    store = RedisStorage(redis_url, prefix, fast=fast)
    await store.start()
    got: list[tuple[str, bytes]] = []
    bus = store.bus(lambda code, payload: got.append((code, payload)))
    await bus.start()
    try:
        for _ in range(20):
            await asyncio.sleep(0)  # the reader runs with nothing to read
        assert store.health.up
        await bus.subscribe("BUSCCC")
        for _ in range(100):
            sync_redis.publish(store.keys.bus("BUSCCC"), b"first")
            await asyncio.sleep(0.05)
            if got:
                break
        assert got[0] == ("BUSCCC", b"first")
        assert store.health.up
        name = f"{prefix}:bus"
        assert len([c for c in sync_redis.client_list() if c.get("name") == name]) == 1
    finally:
        await bus.stop()
        await store.close()


class LostReplyPipe:
    """What a Redis Cluster pipeline (``raise_on_error=False``) answers for the commands
    of a master killed under it: the lost connection in place of each reply, or uvloop
    refusing to write on a connection the outage closed (seen in the soak)."""

    def __init__(self, lost: Callable[[], Exception]) -> None:
        self.lost = lost

    async def run(self, *commands: object) -> list[object]:
        return [self.lost() for _ in commands]


@pytest.mark.parametrize(
    "lost",
    [
        lambda: RedisConnectionError("Connection closed by server"),
        lambda: RuntimeError(
            "unable to perform operation on <TCPTransport closed=True reading=False "
            "0x5640e54307d0>; the handler is closed"
        ),
    ],
    ids=["connection-error", "uvloop-handler-closed"],
)
async def test_a_lost_connection_in_place_of_a_reply_is_internal_error(
    store: RedisStorage,
    redis_url: str,
    caplog: pytest.LogCaptureFixture,
    lost: Callable[[], Exception],
) -> None:
    caplog.set_level(logging.INFO, "server.storage.redis")
    room = room_at("K7PQ2X", ver=0)
    await store.cas_room("K7PQ2X", -1, room, [], None)
    store.pipe = LostReplyPipe(lost)  # not unpacked as the room's blob (a TypeError)
    for _ in range(3):
        with pytest.raises(InternalError):
            await store.load_room("K7PQ2X")
        with pytest.raises(InternalError):
            await store.read_progress([("K7PQ2X", 1)])
    master = server_address(redis_url) if not store.cluster else store.health.down[0]
    assert not store.health.up and store.health.down == [master]
    store.pipe = PlainPipe(store)
    assert (await store.load_room("K7PQ2X")) == room
    assert store.health.up
    said = [r.getMessage() for r in caplog.records if r.name == "server.storage.redis"]
    assert said == [
        "redis is not answering; requests get internal_error until it is back",
        "redis is back",
    ]


async def test_an_error_reply_is_raised_not_unpacked(
    store: RedisStorage, sync_redis: redis.Redis, prefix: str
) -> None:
    sync_redis.set(f"{prefix}:{{K7PQ2X}}:room", "not a hash")
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        await store.load_room("K7PQ2X")
