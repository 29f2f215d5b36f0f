"""The soak's checks (bench/soak.py): what the generators were acknowledged against what
the cluster stores, and every finished game against the archive.

Exactly once, in the racers' logs (``P:{CODE}:r<round>:log:<player>``): every acked
action is its log's entry at its ``seq``; the log holds nothing beyond the acked actions
but an action whose answer never came or a ``resign`` the server wrote last itself; and
each entry was stored by a send of its own ``seq``: its time mark (``p3-ad@5120``, ms
after the race's start, server/core/games.py ``timed``) falls between the first send of
that ``seq`` and its ack. Without the marks, a copy of an earlier action stored again
at the next ``seq`` (a resent request stored twice) would pass whenever the racer's
next action was the same one (a draw from the stock, say).

Archived once (docs/archive.md): once the outbox has drained, every game the clients
saw finish is in the archive exactly once (game ids ``<room>-<round>-<start_at>``),
with the start they saw, and each racer's archived actions and offsets are their log in
Redis, entry for entry.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.core.games import untimed

RESIGN = "resign"  # server/lobby/race.py RESIGN: the server may write it itself
# Server and clients read the same clock (one machine); the slack covers whole ms and
# the order of the client's time.time() around its send.
TIME_SLACK_MS = 50
# The PostgreSQL the soak's archive goes to unless --database-url names one (as the
# tests' fixture: CRESCENT_TEST_DATABASE_URL, else this, else an embedded one).
LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
DRAIN_TIMEOUT_S = 150.0  # a killed server's claimed entries wait out their 60 s lease

GameKey = tuple[str, int, str]  # room, round, player


def cluster_client(url: str) -> Any:
    import redis

    nodes = [n.rsplit(":", 1) for n in url.split("://", 1)[1].split("/")[0].split(",")]
    return redis.RedisCluster(
        startup_nodes=[redis.cluster.ClusterNode(h, int(p)) for h, p in nodes]  # type: ignore[no-untyped-call]
    )


# ----------------------------------------------------------------------------- acks


@dataclass
class Seen:
    """What the generators saw, gathered from their results."""

    acked: dict[GameKey, dict[int, tuple[str, float, float]]] = field(
        default_factory=lambda: defaultdict(dict)
    )  # seq -> (action, first sent, acked at)
    unanswered: dict[GameKey, dict[int, tuple[str, float]]] = field(
        default_factory=lambda: defaultdict(dict)
    )  # seq -> (action, first sent)
    acked_twice_differently: list[str] = field(default_factory=list)
    duplicate_acks: int = 0
    deals: dict[str, str] = field(default_factory=dict)  # "room|round" -> deal
    starts: dict[str, int] = field(default_factory=dict)  # "room|round" -> start_at (ms)
    last_views: dict[str, list[Any]] = field(default_factory=dict)
    finished: set[tuple[str, int]] = field(default_factory=set)

    @classmethod
    def of(cls, results: list[dict[str, Any]]) -> Seen:
        seen = cls()
        for result in results:
            seen.deals.update(result["deals"])
            seen.starts.update(result.get("starts", {}))
            seen.last_views.update(result["last_views"])
            for game in result["finished"]:
                room, _, round_ = game.partition("|")
                seen.finished.add((room, int(round_)))
            for ack in result["acks"]:
                seen.add_ack(ack)
            for room, round_, player, seq, action, *first in result["unanswered"]:
                sent = first[0] if first else 0.0
                known = seen.unanswered[(room, round_, player)].get(seq)
                if known is None or known[0] != action or sent < known[1]:
                    seen.unanswered[(room, round_, player)][seq] = (action, sent)
        return seen

    def add_ack(self, ack: list[Any]) -> None:
        # t_sent, t_ack, room, round, player, seq, action, duplicate[, first sent]
        sent, at, room, round_, player, seq, action, dup, *first = ack
        key = (room, round_, player)
        self.duplicate_acks += bool(dup)
        known = self.acked[key].get(seq)
        if known is not None and known[0] != action:
            self.acked_twice_differently.append(f"{key} seq {seq}: {known[0]} and {action}")
        self.acked[key][seq] = (action, first[0] if first else sent, at)


def misplaced(mark: int | None, start: int | None, first_sent: float, acked: float | None) -> str:
    """Why a stored entry was not stored by a send of its own seq ("" if it was, or if
    the race's start is unknown): no time mark, stored before the seq was first sent
    (an earlier copy), or after its ack came."""
    if mark is None:
        return "no time mark"
    if start is None or first_sent <= 0:
        return ""
    at = start + mark
    early = first_sent * 1000 - at
    if early > TIME_SLACK_MS:
        return f"stored {early:.0f} ms before its seq was first sent"
    if acked is not None and at - acked * 1000 > TIME_SLACK_MS:
        return f"stored {at - acked * 1000:.0f} ms after its ack"
    return ""


class LogCheck:
    """Reads the racers' logs (kept for the archive check) and checks them."""

    def __init__(self, client: Any, prefix: str, seen: Seen) -> None:
        self.client = client
        self.prefix = prefix
        self.seen = seen
        self.logs: dict[GameKey, list[tuple[str, int | None]]] = {}
        self.records: dict[str, Any] = {}
        self.missing: list[str] = []
        self.extra: list[str] = []
        self.out_of_time: list[str] = []
        self.replay_failures: list[str] = []
        self.view_mismatches: list[str] = []
        self.no_deal: list[str] = []
        self.entries = self.server_resigns = 0

    def log(self, key: GameKey) -> list[tuple[str, int | None]]:
        """The racer's log: (action, time mark) per entry."""
        log = self.logs.get(key)
        if log is None:
            room, round_, player = key
            raw = self.client.lrange(f"{self.prefix}:{{{room}}}:r{round_}:log:{player}", 0, -1)
            log = self.logs[key] = [untimed(e.decode()) for e in raw]
        return log

    def check(self, key: GameKey) -> None:
        room, round_, _ = key
        log = self.log(key)
        self.entries += len(log)
        start = self.seen.starts.get(f"{room}|{round_}")
        acks = self.seen.acked.get(key, {})
        for seq, (action, first_sent, at) in sorted(acks.items()):
            found = log[seq - 1] if seq <= len(log) else None
            if found is None or found[0] != action:
                self.missing.append(f"{key} seq {seq} {action!r}: stored {found!r}")
            elif why := misplaced(found[1], start, first_sent, at):
                self.out_of_time.append(f"{key} seq {seq} {action!r}: {why}")
        maybe = self.seen.unanswered.get(key, {})
        for seq in range(max(acks, default=0) + 1, len(log) + 1):
            action, mark = log[seq - 1]
            if seq == len(log) and action == RESIGN and maybe.get(seq, ("",))[0] != RESIGN:
                # The server resigns a racer who left mid-race or stayed offline
                # (docs/protocol.md): its own entry, last, no act of the client's.
                self.server_resigns += 1
                continue
            sent = maybe.get(seq)
            if sent is None or sent[0] != action:  # not an act whose answer was lost
                self.extra.append(f"{key} seq {seq} {action!r}: stored, never acked")
            elif why := misplaced(mark, start, sent[1], None):
                self.out_of_time.append(f"{key} seq {seq} {action!r} (answer lost): {why}")
        self.replay(key, [action for action, _ in log], max(acks, default=0))

    def deal(self, room: str, round_: int) -> str | None:
        deal = self.seen.deals.get(f"{room}|{round_}")
        if deal is None:
            from server.storage.records import unpack_record

            if room not in self.records:
                blob = self.client.hget(f"{self.prefix}:{{{room}}}:room", "blob")
                self.records[room] = unpack_record(blob) if blob else None
            record = self.records[room]
            if record is not None and record.get("round") == round_:
                deal = record.get("deal")
        return deal

    def replay(self, key: GameKey, log: list[str], top: int) -> None:
        """As a server process rebuilds a racer's game from its log; the acked part
        must give the view of the racer's last ack."""
        from server.lobby.race import RacerGame

        room, round_, player = key
        deal = self.deal(room, round_)
        if deal is None:
            self.no_deal.append(str(key))
            return
        try:
            RacerGame.from_log(deal, log, last_seq=len(log), finished_ms=None)
            game = RacerGame.from_log(deal, log[:top], last_seq=top, finished_ms=None)
        except Exception as exc:
            self.replay_failures.append(f"{key}: {exc}")
            return
        last = self.seen.last_views.get(f"{room}|{round_}|{player}")
        if (
            last is not None
            and last[0] == top
            and last[1] is not None
            and json.loads(json.dumps(game.view().to_wire())) != last[1]
        ):
            self.view_mismatches.append(f"{key}: replay of {top} actions != last acked view")


def verify(
    url: str, prefix: str, results: list[dict[str, Any]], archive_url: str | None = None
) -> dict[str, Any]:
    """Compare what the generators were acknowledged with what the cluster stores, and
    (``archive_url``: the servers' database) the finished games with the archive."""
    seen = Seen.of(results)
    client = cluster_client(url)
    try:
        logs = LogCheck(client, prefix, seen)
        for key in sorted(set(seen.acked) | set(seen.unanswered)):
            logs.check(key)
        logs_read = len(logs.logs)  # the archive check reads more (racers who never acted)
        archive: dict[str, Any] | str = "not checked (--archive off)"
        if archive_url is not None:
            archive = check_archive(archive_url, client, prefix, seen, logs)
    finally:
        client.close()
    return {
        "acks": sum(len(a) for a in seen.acked.values()),
        "duplicate_acks": seen.duplicate_acks,
        "logs_read": logs_read,
        "log_entries": logs.entries,
        "missing": logs.missing[:20],
        "missing_count": len(logs.missing),
        "stored_twice_or_unacked": logs.extra[:20],
        "stored_twice_or_unacked_count": len(logs.extra),
        "stored_out_of_time": logs.out_of_time[:20],
        "stored_out_of_time_count": len(logs.out_of_time),
        "acked_twice_differently": seen.acked_twice_differently[:20],
        "replay_failures": logs.replay_failures[:20],
        "replay_failures_count": len(logs.replay_failures),
        "view_mismatches": logs.view_mismatches[:20],
        "view_mismatches_count": len(logs.view_mismatches),
        "logs_without_deal": len(logs.no_deal),
        "resigned_by_the_server": logs.server_resigns,
        "games_finished": len(seen.finished),
        "archive": archive,
    }


COUNTED = ("missing_count", "stored_twice_or_unacked_count", "stored_out_of_time_count",
           "replay_failures_count", "view_mismatches_count", "logs_without_deal")  # fmt: skip
ARCHIVE_COUNTED = ("missing", "doubled", "start_differs", "logs_differ", "outbox_pending",
                   "outbox_notes")  # fmt: skip


def check_problems(checks: dict[str, Any]) -> list[str]:
    """The invariants that failed (empty: all held)."""
    problems = [f"{key}: {checks[key]}" for key in COUNTED if checks.get(key)]
    if checks["acked_twice_differently"]:
        problems.append(f"acked_twice_differently: {len(checks['acked_twice_differently'])}")
    archive = checks["archive"]
    if isinstance(archive, dict):
        problems += [f"archive {key}: {archive[key]}" for key in ARCHIVE_COUNTED if archive[key]]
    return problems


# ----------------------------------------------------------------------------- archive


@contextlib.contextmanager
def archive_database(dsn: str | None) -> Iterator[str]:
    """A fresh schema for one soak's archive, on ``dsn``, else CRESCENT_TEST_DATABASE_URL
    or the local PostgreSQL (127.0.0.1:5432, database ``test``), else an embedded one in
    a temporary folder when that does not answer; yields the servers'
    CRESCENT_DATABASE_URL (the schema as its ``search_path``), dropped afterwards."""
    base = dsn or os.environ.get("CRESCENT_TEST_DATABASE_URL", LOCAL_POSTGRES)
    problem = asyncio.run(_answers(base))
    if problem is None:
        with _schema(base) as url:
            yield url
        return
    if dsn is not None:
        raise SystemExit(f"soak: the database {dsn} does not answer: {problem}")
    from server.embedded_postgres import EmbeddedPostgres

    folder = Path(tempfile.mkdtemp(prefix="crescent-soak-pg-"))
    folder.chmod(0o755)  # as root it runs as nobody, who must reach it
    embedded = EmbeddedPostgres(folder / "data")
    try:
        embedded.start()
        with _schema(embedded.url) as url:
            yield url
    finally:
        embedded.stop()
        shutil.rmtree(folder, ignore_errors=True)


async def _answers(dsn: str) -> str | None:
    import asyncpg

    try:
        conn = await asyncpg.connect(dsn, timeout=5)
    except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
        return f"{type(exc).__name__}: {exc}"
    await conn.close()
    return None


async def _execute(dsn: str, sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@contextlib.contextmanager
def _schema(dsn: str) -> Iterator[str]:
    schema = f"soak_{secrets.token_hex(6)}"
    asyncio.run(_execute(dsn, f"create schema {schema}"))
    try:
        yield f"{dsn}{'&' if '?' in dsn else '?'}search_path={schema}"
    finally:
        asyncio.run(_execute(dsn, f"drop schema {schema} cascade"))


def wait_for_drain(client: Any, prefix: str, timeout: float = DRAIN_TIMEOUT_S) -> dict[str, Any]:
    """Wait until the outbox (games and notes of ends, docs/archive.md) is empty; what
    is left then, and how long the wait took."""
    started = time.monotonic()
    key = f"{prefix}:{{archive}}:outbox"
    while True:
        ids = [i.decode() for i in client.hkeys(key)]
        if not ids or time.monotonic() - started > timeout:
            break
        time.sleep(0.5)
    notes = sum(i.startswith("ending:") for i in ids)
    return {
        "outbox_pending": len(ids) - notes,
        "outbox_notes": notes,
        "drain_wait_s": round(time.monotonic() - started, 1),
    }


async def _archived(url: str) -> tuple[list[Any], list[Any]]:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        games = await conn.fetch("select id, kind, start_at from archive_games")
        racers = await conn.fetch("select game_id, player, actions, offsets from archive_racers")
    finally:
        await conn.close()
    return list(games), list(racers)


def check_archive(url: str, client: Any, prefix: str, seen: Seen, logs: LogCheck) -> dict[str, Any]:
    """Every game the clients saw finish archived exactly once, as its logs stand."""
    drained = wait_for_drain(client, prefix)
    games, racers = asyncio.run(_archived(url))
    by_game: dict[tuple[str, int], list[Any]] = defaultdict(list)
    for game in games:
        room, round_, _ = game["id"].rsplit("-", 2)
        by_game[(room, int(round_))].append(game)
    racers_of: dict[str, list[Any]] = defaultdict(list)
    for racer in racers:
        racers_of[racer["game_id"]].append(racer)
    problems: list[str] = []
    counts: Counter[str] = Counter()
    for room, round_ in sorted(seen.finished):
        found = by_game.get((room, round_), [])
        if not found:
            counts["missing"] += 1
            problems.append(f"{room}|{round_}: finished, not archived")
            continue
        counts["archived"] += 1
        if len(found) > 1:
            counts["doubled"] += 1
            problems.append(f"{room}|{round_}: archived {len(found)} times")
        game = found[0]
        start = seen.starts.get(f"{room}|{round_}")
        if start is not None and game["start_at"] != start:
            counts["start_differs"] += 1
            problems.append(f"{game['id']}: start {game['start_at']}, clients saw {start}")
        for racer in racers_of[game["id"]]:
            log = logs.log((room, round_, racer["player"]))
            if racer["actions"].split() != [a for a, _ in log] or list(racer["offsets"]) != [
                t for _, t in log
            ]:
                counts["logs_differ"] += 1
                problems.append(f"{game['id']} {racer['player']}: archived log != Redis log")
    return {
        "games_finished": len(seen.finished),
        "archived": counts["archived"],
        "missing": counts["missing"],
        "doubled": counts["doubled"],
        "start_differs": counts["start_differs"],
        "logs_differ": counts["logs_differ"],
        **drained,
        # games that ended without a client seeing it (a round's time limit after the
        # soak stopped, a room whose racers were all gone): archived all the same
        "archived_not_seen_finished": len(set(by_game) - seen.finished),
        "archived_total": len(games),
        "kinds": dict(Counter(g["kind"] for g in games)),
        "problems": problems[:20],
    }
