"""Archive benchmark: a PostgreSQL archive filled with N games, then the figures of
issue #22 (docs/performance.md, "Archive"; docs/archive.md).

    nice -n 10 .venv/bin/python bench/archive.py                    # 1,000,000 games
    .venv/bin/python bench/archive.py --games 20000 --samples 200   # quick
    .venv/bin/python bench/archive.py --data /tmp/archive-1m        # keeps the fill: run
                                                                    # again to measure again

1. PostgreSQL: ``--dsn`` (a private schema is made there and dropped afterwards), else
   an embedded one (server/embedded_postgres.py, as the server starts it) in a temporary
   folder deleted afterwards; the archive's migrations applied (server/storage/
   postgres_archive.py).
2. Fill (not measured as the write path): ``--games`` games written with COPY
   (asyncpg's copy_records_to_table), the secondary indexes dropped during the copy and
   built again after it. The racers' logs are real: greedy games
   (crescent_client.strategy.GreedyStrategy) and the known winning line, cut from a pool
   of such logs; the mix per 10 games: 4 daily attempts (1 racer, every day's
   attempts on one deal), 4 room races (2-4 racers), 1 practice (1), 1 tournament round
   (4); over ``--players`` players, ending over the past year. Then VACUUM ANALYZE.
3. Write throughput: the real ``PostgresArchive.write`` (one transaction per batch) with
   batches of 1 and of 100 new games (real, valid games), one call at a time.
4. Reads, one at a time, client side (asyncpg round trip and the values built):
   a player's history (first page of 20, and the page after it) for random players;
   a deal's board (first page of 50) for random room deals and for daily deals (every
   attempt of a day on one deal); p50 and p99 over ``--samples`` each.
5. Bytes per game: pg_total_relation_size (heap, TOAST and indexes) of the games and
   racers tables over the count.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from server.core.archive import (  # noqa: E402
    DAY_MS,
    Action,
    ArchiveBatch,
    ArchivedGame,
    ArchivedRacer,
    GameKind,
    RacerResult,
)
from server.embedded_postgres import EmbeddedPostgres  # noqa: E402
from server.lobby.race import TERMINAL, RacerGame  # noqa: E402
from server.storage.postgres_archive import PostgresArchive, connect  # noqa: E402

NOW = 1_800_000_000_000
WINNING_DEAL = "CR1-N-IPGYBDG"


class Log:
    """One racer's real game: its actions (as stored) and result."""

    def __init__(self, deal: str, actions: tuple[Action, ...]) -> None:
        racer = RacerGame.new(deal)
        for t, a in actions:
            assert racer.apply(a, elapsed_ms=t) is None
        self.deal = deal
        self.actions = actions
        self.text = " ".join(a for _, a in actions)
        self.offsets = [t for t, _ in actions]
        status = racer.status if racer.status in TERMINAL else "timeout"
        self.status = status
        self.time_ms = racer.finished_ms if racer.finished_ms is not None else 600_000
        self.moves = racer.game.moves
        self.foundation = racer.game.foundation_count

    def result(self, rank: int) -> RacerResult:
        return RacerResult(rank, self.status, self.time_ms, self.moves, self.foundation)


def real_logs(count: int) -> list[Log]:
    """``count`` real racer logs: greedy games on random deals, and the winning line at
    several paces (so that boards have winners)."""
    import json

    from crescent_client.strategy import GreedyStrategy

    rng = random.Random(7)
    logs = []
    line = json.loads((ROOT / "tests/game/data/winning_line.json").read_text())["actions"]
    for pace in (600, 800, 1000, 1300):
        logs.append(Log(WINNING_DEAL, tuple(Action((i + 1) * pace, a) for i, a in enumerate(line))))
    while len(logs) < count:
        deal = f"CR1-{rng.choice('NFOR')}-{''.join(rng.choices('ABCDEFGHIJKLMNOPQRSTUVWXYZ', k=7))}"
        racer = RacerGame.new(deal)
        strategy = GreedyStrategy()
        actions = []
        t = 0
        while (action := strategy.next_action(racer.view().to_wire())) is not None:
            t += rng.randrange(400, 1400)
            if racer.apply(action, elapsed_ms=t) is None:
                actions.append(Action(t, action))
        logs.append(Log(deal, tuple(actions)))
    return logs


def game_shape(i: int, rng: random.Random) -> tuple[GameKind, int]:
    """(kind, racers) of game ``i``: per 10, 4 daily, 4 rooms, 1 practice, 1 tournament."""
    slot = i % 10
    if slot < 4:
        return GameKind.DAILY, 1
    if slot < 8:
        return GameKind.ROOM, rng.randint(2, 4)
    if slot == 8:
        return GameKind.PRACTICE, 1
    return GameKind.TOURNAMENT, 4


def deal_code(n: int) -> str:
    letters = []
    for _ in range(7):
        n, digit = divmod(n, 26)
        letters.append(chr(65 + digit))
    return "CR1-N-" + "".join(reversed(letters))


def synthetic_rows(
    games: int, players: int, logs: list[Log], rng: random.Random
) -> Iterator[tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]]:
    """Chunks of (archive_games rows, archive_racers rows) for COPY."""
    span = 365 * DAY_MS
    daily_per_day = max(1, games * 4 // 10 // 365)
    chunk_games: list[tuple[Any, ...]] = []
    chunk_racers: list[tuple[Any, ...]] = []
    for i in range(games):
        kind, count = game_shape(i, rng)
        ended_at = NOW - span + i * span // games
        if kind is GameKind.DAILY:
            day = (i // 10 * 4 + i % 10) // daily_per_day
            deal = deal_code(10_000_000 + day)  # a day's attempts share its deal
            origin = f"day-{day}"
        else:
            deal = deal_code(rng.randrange(200_000))  # rooms: 200,000 deals
            origin = f"R{i % 100_000}"
        game_id = f"g{i:08d}"
        picked = rng.sample(logs, count)
        order = sorted(
            range(count),
            key=lambda k: (
                (0, picked[k].time_ms, picked[k].moves)
                if picked[k].status == "won"
                else (1, -picked[k].foundation, picked[k].moves)
            ),
        )
        ranks = {k: r + 1 for r, k in enumerate(order)}
        chunk_games.append(
            (game_id, str(kind), deal, "N", origin, ended_at - 600_000, ended_at, ended_at, count)
        )
        for seat, (log, player) in enumerate(
            zip(picked, rng.sample(range(players), count), strict=True)
        ):
            chunk_racers.append(
                (
                    game_id,
                    seat,
                    f"p{player}",
                    f"Player {player}",
                    deal,
                    ended_at,
                    ended_at,
                    ranks[seat],
                    log.status,
                    log.time_ms,
                    log.moves,
                    log.foundation,
                    log.text,
                    log.offsets,
                )
            )
        if len(chunk_games) >= 20_000:
            yield chunk_games, chunk_racers
            chunk_games, chunk_racers = [], []
    if chunk_games:
        yield chunk_games, chunk_racers


GAME_COLUMNS = [
    "id",
    "kind",
    "deal",
    "variant",
    "origin",
    "start_at",
    "ended_at",
    "revealed_at",
    "racers",
]
RACER_COLUMNS = [
    "game_id",
    "seat",
    "player",
    "name",
    "deal",
    "ended_at",
    "revealed_at",
    "rank",
    "status",
    "time_ms",
    "moves",
    "foundation",
    "actions",
    "offsets",
]


async def fill(archive: PostgresArchive, games: int, players: int, logs: list[Log]) -> None:
    rng = random.Random(1)
    started = time.perf_counter()
    done = 0
    async with archive.pool.acquire() as conn:
        # the bulk path: the secondary indexes are dropped for the copy and built again
        # after it (a sort each, far faster than growing them row by row); commits wait
        # for no fsync (a crash would lose the fill, nothing else)
        await conn.execute("set synchronous_commit = off")
        await conn.execute("set maintenance_work_mem = '256MB'")
        indexes = await conn.fetch(
            "select indexname, indexdef from pg_indexes where schemaname = current_schema()"
            " and tablename in ('archive_games', 'archive_racers')"
            " and indexname not like '%_pkey'"
        )
        for index in indexes:
            await conn.execute(f"drop index {index['indexname']}")
        for game_rows, racer_rows in synthetic_rows(games, players, logs, rng):
            async with conn.transaction():
                await conn.copy_records_to_table(
                    "archive_games", records=game_rows, columns=GAME_COLUMNS
                )
                await conn.copy_records_to_table(
                    "archive_racers", records=racer_rows, columns=RACER_COLUMNS
                )
            done += len(game_rows)
            rate = done / (time.perf_counter() - started)
            print(f"\r  filled {done:,} games ({rate:,.0f}/s)", end="", flush=True)
        print()
        started = time.perf_counter()
        for index in indexes:
            await conn.execute(index["indexdef"])
        print(f"  indexes built again: {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        await conn.execute("vacuum analyze archive_games")
        await conn.execute("vacuum analyze archive_racers")
        print(f"  vacuum analyze: {time.perf_counter() - started:.1f} s")


def real_game(game_id: str, logs: list[Log], count: int, ended_at: int) -> ArchivedGame:
    """A valid game: ``count`` real logs of one deal (the winning line's paces)."""
    same_deal = [log for log in logs if log.deal == WINNING_DEAL][:count]
    return ArchivedGame(
        id=game_id,
        kind=GameKind.ROOM,
        deal=WINNING_DEAL,
        variant="N",
        origin="BENCH",
        start_at=ended_at - 600_000,
        ended_at=ended_at,
        revealed_at=ended_at,
        racers=tuple(
            ArchivedRacer(f"w{k}-{game_id}", f"W {k}", log.actions, log.result(k + 1))
            for k, log in enumerate(same_deal)
        ),
    )


async def write_throughput(
    archive: PostgresArchive, logs: list[Log], batch: int, games: int
) -> float:
    run = f"{random.randrange(1 << 32):08x}"  # new ids on every run (--data reuses a fill)
    batches = [
        ArchiveBatch(
            games=tuple(
                real_game(f"w{run}-{batch}-{b}-{k}", logs, 2, NOW + b) for k in range(batch)
            )
        )
        for b in range(games // batch)
    ]
    started = time.perf_counter()
    for item in batches:
        report = await archive.write(item)
        assert report.games == batch
    return (games // batch) * batch / (time.perf_counter() - started)


async def latencies(samples: int, call: Callable[[int], Awaitable[object]]) -> tuple[float, float]:
    times = []
    for i in range(samples):
        started = time.perf_counter()
        await call(i)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.99))]


async def measure(archive: PostgresArchive, args: argparse.Namespace, logs: list[Log]) -> None:
    rng = random.Random(3)
    now = NOW + DAY_MS
    for batch, count in ((1, args.writes // 10), (100, args.writes)):
        rate = await write_throughput(archive, logs, batch, count)
        print(f"write, batches of {batch:>3}: {rate:,.0f} games/s ({count:,} games)")

    players = [f"p{rng.randrange(args.players)}" for _ in range(args.samples)]
    sizes = []

    async def history(i: int) -> None:
        page = await archive.history(players[i], now=now, limit=20)
        sizes.append(len(page.entries))

    p50, p99 = await latencies(args.samples, history)
    print(
        f"history, first page of 20: p50 {p50:.2f} ms, p99 {p99:.2f} ms "
        f"(mean rows {statistics.mean(sizes):.1f})"
    )
    cursors = []
    for player in players[: args.samples]:
        page = await archive.history(player, now=now, limit=20)
        cursors.append((player, page.next))

    async def history_next(i: int) -> None:
        player, cursor = cursors[i]
        await archive.history(player, now=now, limit=20, after=cursor)

    p50, p99 = await latencies(len(cursors), history_next)
    print(f"history, second page:      p50 {p50:.2f} ms, p99 {p99:.2f} ms")

    room_deals = [deal_code(rng.randrange(200_000)) for _ in range(args.samples)]
    rows = []

    async def room_board(i: int) -> None:
        page = await archive.board(room_deals[i], now=now, limit=50)
        rows.append(len(page.entries))

    p50, p99 = await latencies(args.samples, room_board)
    print(
        f"board of a room deal, 50:  p50 {p50:.2f} ms, p99 {p99:.2f} ms "
        f"(mean rows {statistics.mean(rows):.1f})"
    )
    days = max(1, args.games * 4 // 10 // max(1, args.games * 4 // 10 // 365))
    daily_deals = [
        deal_code(10_000_000 + rng.randrange(min(days, 365))) for _ in range(args.samples)
    ]
    rows.clear()

    async def daily_board(i: int) -> None:
        page = await archive.board(daily_deals[i], now=now, limit=50)
        rows.append(len(page.entries))

    p50, p99 = await latencies(args.samples, daily_board)
    attempts = await archive.pool.fetchval(
        "select count(*) from archive_racers where deal = $1", daily_deals[0]
    )
    print(
        f"board of a daily deal, 50: p50 {p50:.2f} ms, p99 {p99:.2f} ms "
        f"(a day's attempts: {attempts:,})"
    )

    sizes_row = await archive.pool.fetchrow(
        "select pg_total_relation_size('archive_games') as games_bytes,"
        " pg_total_relation_size('archive_racers') as racers_bytes,"
        " pg_relation_size('archive_racers') as racers_heap,"
        " pg_indexes_size('archive_racers') as racers_indexes,"
        " (select count(*) from archive_games) as games,"
        " (select count(*) from archive_racers) as racers,"
        " (select avg(cardinality(offsets)) from archive_racers) as actions"
    )
    assert sizes_row is not None
    games = sizes_row["games"]
    total = sizes_row["games_bytes"] + sizes_row["racers_bytes"]
    print(
        f"bytes per game: {total / games:,.0f} (games table {sizes_row['games_bytes'] / games:,.0f}"
        f" a game, racers table {sizes_row['racers_bytes'] / sizes_row['racers']:,.0f} a racer:"
        f" heap {sizes_row['racers_heap'] / sizes_row['racers']:,.0f},"
        f" indexes {sizes_row['racers_indexes'] / sizes_row['racers']:,.0f});"
        f" {games:,} games, {sizes_row['racers'] / games:.2f} racers a game,"
        f" {float(sizes_row['actions']):.0f} actions a racer; total {total / 2**20:,.0f} MiB"
    )


async def run(args: argparse.Namespace, dsn: str, settings: dict[str, str]) -> None:
    archive = await connect(dsn, max_size=2, server_settings=settings)
    try:
        started = time.perf_counter()
        logs = real_logs(args.logs)
        mean = statistics.mean(len(log.actions) for log in logs)
        print(
            f"{len(logs)} real racer logs ({mean:.0f} actions on average) in "
            f"{time.perf_counter() - started:.1f} s"
        )
        stored = await archive.pool.fetchval("select count(*) from archive_games")
        if stored >= args.games:
            print(f"  {stored:,} games already stored: no fill")
        else:
            await fill(archive, args.games, args.players, logs)
        await measure(archive, args, logs)
    finally:
        await archive.close()


async def with_schema(args: argparse.Namespace) -> None:
    schema = f"archive_bench_{random.randrange(1 << 32):08x}"
    conn = await asyncpg.connect(args.dsn)
    await conn.execute(f"create schema {schema}")
    try:
        await run(args, args.dsn, {"search_path": schema})
    finally:
        await conn.execute(f"drop schema {schema} cascade")
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=50_000)
    parser.add_argument("--logs", type=int, default=200, help="real racer logs to draw from")
    parser.add_argument("--writes", type=int, default=5_000, help="games written, batches of 100")
    parser.add_argument("--samples", type=int, default=2_000, help="reads of each kind")
    parser.add_argument("--dsn", help="a PostgreSQL to use (default: an embedded one)")
    parser.add_argument(
        "--data",
        help="keep the embedded PostgreSQL's data in this folder (default: a temporary one,"
        " deleted afterwards); a folder already holding --games games is measured again"
        " without a new fill",
    )
    args = parser.parse_args()
    if args.dsn:
        asyncio.run(with_schema(args))
        return
    if args.data:
        folder = Path(args.data).resolve()
        folder.mkdir(parents=True, exist_ok=True)
    else:
        folder = Path(tempfile.mkdtemp(prefix="crescent-archive-bench-"))
    folder.chmod(0o755)  # reachable by the user PostgreSQL runs as under root
    embedded = EmbeddedPostgres(folder / "postgres")
    try:
        started = time.perf_counter()
        embedded.start()
        print(
            f"embedded PostgreSQL started in {time.perf_counter() - started:.1f} s "
            f"(initdb included) in {folder}"
        )
        asyncio.run(run(args, embedded.url, {}))
    finally:
        embedded.stop()
        if not args.data:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
