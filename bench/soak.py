"""Soak: minutes of human-paced play on a Redis Cluster while processes die (issue #24).

    .venv/bin/python bench/soak.py                      # 10 min, 1,000 racers (the full soak)
    .venv/bin/python bench/soak.py --duration 180       # the same, 3 minutes
    .venv/bin/python bench/soak.py --smoke              # 60 s, 100 racers (as the test)
    .venv/bin/python bench/soak.py --json soak.json --plot soak.svg

What runs (everything started here is stopped when the soak ends or fails):

- a local Redis Cluster of 3 masters with a replica each (``redis-server`` binaries,
  bench/devtools.py ``start_local_cluster``), or ``--cluster-url`` of a running one;
- two ``python3 -m server`` processes on it with ``--redis-wait-replicas 1`` (an ack
  waits for a replica to have the write: WAIT);
- ``--workers`` generator processes (this file run as ``worker``) of
  ``crescent_client`` clients, which reconnect as docs/protocol.md says (hello with the
  token, join again, resend the actions still waiting): ``--racers`` racers in rooms of
  4 (rematching when a race ends), a ``--tournament-players`` tournament whose host
  starts round after round, and ``--daily-players`` playing the daily challenge (the
  ranked attempt, then practice). Each thinks a random while (``--rate`` actions/s on
  average, uniform within ±``--think-spread``) before each action, greedy strategy.

Faults (from the moment play starts): every ``--server-kill-every`` s a kill -9 of a
random server process, restarted at once on the same port (as a supervisor would);
every ``--master-kill-every`` s a kill -9 of a random Redis master: its replica is
promoted (Redis Cluster failover), then the killed node is started again and rejoins
as a replica (until then, WAIT 1 acknowledges nothing on the promoted master).

Afterwards, with the cluster healthy again, the checks (bench/soak_checks.py):

- every acknowledged action is in storage exactly once: each generator recorded every
  ack it got (room, round, player, seq, action, when its seq was first sent and when
  the ack came); each racer's log ``P:{CODE}:r<round>:log:<player>`` is read from the
  cluster and its entry ``seq`` must be the acked action, stored by a send of that seq
  (its time mark between the first send and the ack), for every ack, and the log holds
  nothing beyond the acked actions except an action whose answer never came (sent, then
  the connection or the reply was lost: stored or not, both are right);
- every log replays (``RacerGame.from_log`` of the round's deal) into a valid game whose
  view is the view of the racer's last ack;
- every finished game archived once: the servers archive into a fresh PostgreSQL
  schema (``--database-url``, else the local test database, else an embedded
  PostgreSQL); once the outbox has drained, every game a client saw finish is in the
  archive exactly once, with the start the clients saw and each racer's log as Redis
  has it; the outbox must be empty.

Figures (printed, and ``--json``): reconnect time p50/p99 (client ``Disconnected`` →
``Reconnected``), actions answered ``internal_error``, time to recover after each master
kill (from the kill to the first ack, of an act sent after the kill, in a room whose
slot the killed master served), acks per second over time (a CSV, an SVG plot by
matplotlib with the kills marked, and a sparkline in the output), the archive's counts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import random
import secrets
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: the project's packages next to it
    sys.path.insert(0, str(REPO))

from bench._workers import Worker, percentile  # noqa: E402
from bench.soak_checks import archive_database, check_problems, verify  # noqa: E402

ROOM_SIZE = 4
# One random token secret per soak: every server process (and its restarts) shares it,
# so a reconnecting client's token stays valid; never a secret printed in the repository.
SECRET = secrets.token_urlsafe(32)


# ----------------------------------------------------------------------------- worker


@dataclass
class Record:
    """What one generator process saw (written as JSON for the driver)."""

    # t_sent (this attempt), t_ack, room, round, player, seq, action, dup, t_first_sent
    # (the first attempt of this seq: a resent action may be stored by an earlier one)
    acks: list[list[Any]] = field(default_factory=list)
    # room, round, player, seq, action, t_first_sent
    unanswered: list[list[Any]] = field(default_factory=list)
    last_views: dict[str, list[Any]] = field(
        default_factory=dict
    )  # "room|round|player" -> [seq, view]
    deals: dict[str, str] = field(default_factory=dict)  # "room|round" -> deal
    starts: dict[str, int] = field(default_factory=dict)  # "room|round" -> start_at (ms)
    finished: set[str] = field(default_factory=set)  # "room|round" of games seen finished
    reconnect_s: list[float] = field(default_factory=list)
    internal_errors: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    refused: int = 0
    games: int = 0
    failures: list[str] = field(default_factory=list)


def make_client_class(record: Record) -> type[Any]:
    """``CrescentClient`` that times its reconnects (``Disconnected`` → ``Reconnected``)
    and queues no pushes (nobody reads its event stream here: the room state is kept
    current by the session all the same)."""
    from crescent_client import CrescentClient, Disconnected, Reconnected

    class SoakClient(CrescentClient):
        down_at: float | None = None

        def _push(self, event: Any) -> None:
            if isinstance(event, Disconnected):
                self.down_at = time.monotonic()
            elif isinstance(event, Reconnected) and self.down_at is not None:
                record.reconnect_s.append(time.monotonic() - self.down_at)
                self.down_at = None

    return SoakClient


def round_past(state: Any, round_: int) -> bool:
    return bool(state.round > round_)


def seated_past(tournament: Any, played: int) -> bool:
    """A tournament round after round ``played`` has its room."""
    seated = tournament.seated_room()
    return seated is not None and seated[1] > played


def moved_on(tournament: Any, room: str) -> bool:
    seated = tournament.seated_room()
    return seated is None or seated[0] != room


def finished(client: Any, code: str) -> bool:
    return bool(client.room(code).phase == "finished")


class Play:
    """The playing side of one generator process."""

    def __init__(self, args: argparse.Namespace, record: Record) -> None:
        self.args = args
        self.urls: list[str] = args.urls.split(",")
        self.record = record
        self.stop = asyncio.Event()
        self.rng = random.Random(args.seed)
        self.client_class = make_client_class(record)
        self.opening = asyncio.Semaphore(20)

    async def open_client(self, index: int, name: str) -> Any:
        async with self.opening:
            client = self.client_class(
                self.urls[index % len(self.urls)], name=name, pace=0.9, request_timeout=20
            )
            await client.open()
            return client

    def failed(self, what: str, exc: BaseException) -> None:
        if len(self.record.failures) < 20:
            self.record.failures.append(f"{what}: {type(exc).__name__}: {exc}"[:300])

    async def think(self) -> None:
        mean = 1.0 / self.args.rate
        spread = self.args.think_spread
        delay = self.rng.uniform(mean * (1 - spread), mean * (1 + spread))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stop.wait(), delay)

    async def patiently(self, call: Callable[[], Awaitable[Any]], what: str) -> Any:
        """A request other than an act, sent again after a lost connection, a timeout or
        ``internal_error`` (up to a minute); another error is returned as its code, and
        ``stopped`` when the soak ends meanwhile."""
        from crescent_client import ConnectionLost, RequestFailed, RequestTimeout

        deadline = time.monotonic() + 60
        while True:
            try:
                return await call()
            except RequestFailed as err:
                if err.code != "internal_error":
                    return err.code
                self.record.errors[f"{what}:internal_error"] += 1
            except (ConnectionLost, RequestTimeout) as exc:
                self.record.errors[f"{what}:{type(exc).__name__}"] += 1
            if self.stop.is_set():
                return "stopped"  # the soak is over: not a failure of the server's
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: no answer for a minute")
            await asyncio.sleep(0.2)

    async def act(self, client: Any, code: str, action: str) -> str:
        """Send ``action`` until it is answered: ``ack``, ``refused`` or an error other
        than ``internal_error``; its ``seq`` stays the same throughout, so the server
        stores it at most once. Returns ``ack``, ``refused``, ``stored`` (stored, the
        ack lost) or the error's code."""
        from crescent_client import Ack, ConnectionLost, RequestFailed, RequestTimeout

        state = client.room(code)
        seq = state.last_seq + 1
        round_ = state.round
        pid = client.player["id"]
        first = time.time()
        for _ in range(200):
            if state.last_seq >= seq:  # a rejoin's snapshot says it was stored
                return "stored"
            sent = time.time()
            try:
                reply = await client.act(action, code, timeout=30)
            except RequestFailed as err:
                if err.code != "internal_error":
                    self.record.errors[f"act:{err.code}"] += 1
                    return err.code
                self.record.internal_errors += 1
                self.record.unanswered.append([code, round_, pid, seq, action, first])
                await asyncio.sleep(self.rng.uniform(0.05, 0.25))
                continue
            except (ConnectionLost, RequestTimeout) as exc:
                self.record.errors[f"act:{type(exc).__name__}"] += 1
                self.record.unanswered.append([code, round_, pid, seq, action, first])
                await asyncio.sleep(0.2)
                continue
            if isinstance(reply, Ack):
                if reply.seq != seq:
                    self.failed("act", AssertionError(f"ack of seq {reply.seq}, sent {seq}"))
                self.record.acks.append(
                    [
                        sent,
                        time.time(),
                        code,
                        round_,
                        pid,
                        reply.seq,
                        action,
                        reply.duplicate,
                        first,
                    ]
                )
                self.record.last_views[f"{code}|{round_}|{pid}"] = [reply.seq, reply.view]
                return "ack"
            self.record.refused += 1
            return "refused"
        raise TimeoutError(f"act {action} seq {seq} in {code}: never answered")

    def note_deal(self, client: Any, code: str) -> None:
        state = client.room(code)
        if state.deal:
            self.record.deals[f"{code}|{state.round}"] = state.deal
        if state.start_at is not None:  # the origin of the stored actions' time marks
            self.record.starts[f"{code}|{state.round}"] = state.start_at

    async def play_game(self, client: Any, code: str) -> None:
        """From the start to the end of one game at human pace."""
        from crescent_client.strategy import GreedyStrategy

        state = await self.patiently(
            functools.partial(client.wait_for_start, code, timeout=120), "start"
        )
        if isinstance(state, str):
            return  # the room is gone or the race over (error code)
        self.note_deal(client, code)
        strategy = GreedyStrategy()
        while not self.stop.is_set():
            view = state.view
            if view is None or view.get("status") != "playing" or state.phase == "finished":
                break
            action = strategy.next_action(view)
            if action is None:
                break
            await self.think()
            if self.stop.is_set():
                break
            outcome = await self.act(client, code, action)
            if outcome not in ("ack", "refused", "stored"):
                break  # race_over, not_racer…: the race is over for this racer
        self.record.games += 1

    async def wait(self, client: Any, predicate: Callable[[], bool], timeout: float) -> bool:
        from crescent_client import RequestTimeout

        try:
            await client.wait_until(lambda: predicate() or self.stop.is_set(), timeout)
        except RequestTimeout:
            return False
        return predicate()

    # --- rooms of 4 that rematch

    async def room_racer(self, client: Any, code: str, host: bool) -> None:
        state = client.room(code)
        while not self.stop.is_set():
            phase = state.phase_at(client.server_now())
            if phase == "waiting":
                await self.patiently(lambda: client.ready(code), "ready")
                await self.wait(client, lambda: state.phase != "waiting", 10)
            elif phase in ("countdown", "racing"):
                await self.play_game(client, code)
                await self.wait(client, lambda: state.phase == "finished", 30)
            else:  # finished: the host asks for a rematch
                self.note_deal(client, code)
                self.record.finished.add(f"{code}|{state.round}")
                round_ = state.round
                if host:
                    await self.patiently(lambda: client.rematch(code), "rematch")
                await self.wait(client, functools.partial(round_past, state, round_), 10)

    async def setup_rooms(self) -> list[Callable[[], Awaitable[None]]]:
        racers = [
            await self.open_client(self.args.offset + i, f"S{self.args.offset + i}")
            for i in range(self.args.racers)
        ]
        self.clients.extend(racers)
        plays: list[Callable[[], Awaitable[None]]] = []
        for start in range(0, len(racers), ROOM_SIZE):
            group = racers[start : start + ROOM_SIZE]
            room = await group[0].create_room(seats=len(group), time_limit=600)
            for client in group[1:]:
                await client.join(room.code, as_="racer")
            for n, client in enumerate(group):
                plays.append(self.bind(self.room_racer, client, room.code, n == 0))
        return plays

    @staticmethod
    def bind(func: Callable[..., Awaitable[None]], *args: Any) -> Callable[[], Awaitable[None]]:
        return lambda: func(*args)

    # --- the tournament

    async def tournament_host(self, host: Any, code: str) -> None:
        state = host.tournament_state(code)
        while not self.stop.is_set() and not state.finished:
            if state.current is None:
                await self.patiently(lambda: host.host(code, "start_round"), "start_round")
                await self.wait(host, lambda: state.current is not None, 30)
            await self.wait(host, lambda: state.current is None or state.finished, 60)

    async def tournament_player(self, client: Any, code: str) -> None:
        state = client.tournament_state(code)
        played = 0
        while not self.stop.is_set() and not state.finished:
            seated = state.seated_room()
            if seated is None or seated[1] <= played:
                await self.wait(client, functools.partial(seated_past, state, played), 30)
                continue
            room, played = seated
            reply = await self.patiently(functools.partial(client.join, room, as_="racer"), "join")
            if isinstance(reply, str):
                continue  # the round is over already
            await self.play_game(client, room)
            if not await self.wait(client, functools.partial(finished, client, room), 60):
                continue  # stopping (a leave now would resign the racer)
            self.note_deal(client, room)
            self.record.finished.add(f"{room}|{client.room(room).round}")
            await self.wait(client, functools.partial(moved_on, state, room), 60)
            await self.patiently(functools.partial(client.leave, room), "leave")
            client.forget_room(room)

    async def setup_tournament(self) -> list[Callable[[], Awaitable[None]]]:
        count = self.args.tournament_players
        if count <= 0:
            return []
        host = await self.open_client(1, "SoakHost")
        self.clients.append(host)
        tour = await host.create_tournament(
            "Soak", rounds=20, time_limit=self.args.tournament_time_limit, max_players=count
        )
        players = [await self.open_client(i, f"T{i}") for i in range(count)]
        self.clients.extend(players)
        for player in players:
            await player.join_tournament(tour.code)
        return [self.bind(self.tournament_host, host, tour.code)] + [
            self.bind(self.tournament_player, p, tour.code) for p in players
        ]

    # --- daily players

    async def daily_player(self, client: Any) -> None:
        practice = False
        while not self.stop.is_set():
            reply = await self.patiently(
                functools.partial(client.daily_start, practice=practice), "daily"
            )
            if reply == "already_played":
                practice = True
                continue
            if isinstance(reply, str):
                self.failed("daily_start", RuntimeError(reply))
                return
            practice = True
            code = reply.code
            await self.play_game(client, code)
            if not await self.wait(client, functools.partial(finished, client, code), 30):
                continue  # stopping (a leave now would resign the racer)
            self.note_deal(client, code)
            self.record.finished.add(f"{code}|{client.room(code).round}")
            await self.patiently(functools.partial(client.leave, code), "leave")
            client.forget_room(code)

    async def setup_daily(self) -> list[Callable[[], Awaitable[None]]]:
        players = [await self.open_client(i, f"D{i}") for i in range(self.args.daily_players)]
        self.clients.extend(players)
        return [self.bind(self.daily_player, p) for p in players]

    async def guarded(self, play: Callable[[], Awaitable[None]]) -> None:
        try:
            await play()
        except Exception as exc:  # one player's end is reported, the rest play on
            self.failed("player", exc)

    async def run(self) -> None:
        self.clients: list[Any] = []
        try:
            plays = await self.setup_rooms()
            plays += await self.setup_tournament()
            plays += await self.setup_daily()
            print(f"READY {len(self.clients)}", flush=True)
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line.startswith("GO"):
                return
            tasks = [asyncio.create_task(self.guarded(play)) for play in plays]
            await asyncio.to_thread(sys.stdin.readline)  # STOP (or EOF)
            self.stop.set()
            _, pending = await asyncio.wait(tasks, timeout=60)
            for task in pending:
                task.cancel()
            if pending:
                self.failed("stop", TimeoutError(f"{len(pending)} players still busy after 60 s"))
            await asyncio.gather(*pending, return_exceptions=True)
        finally:
            await asyncio.gather(*(c.close() for c in self.clients), return_exceptions=True)


def worker_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--urls", required=True)
    parser.add_argument("--racers", type=int, default=0)
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--tournament-players", type=int, default=0)
    parser.add_argument("--tournament-time-limit", type=int, default=300)
    parser.add_argument("--daily-players", type=int, default=0)
    parser.add_argument("--rate", type=float, default=1.0)
    parser.add_argument("--think-spread", type=float, default=0.75)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    record = Record()
    play = Play(args, record)
    import uvloop

    try:
        uvloop.run(play.run())
    finally:
        data = {
            "acks": record.acks,
            "unanswered": record.unanswered,
            "last_views": record.last_views,
            "deals": record.deals,
            "starts": record.starts,
            "finished": sorted(record.finished),
            "reconnect_s": record.reconnect_s,
            "internal_errors": record.internal_errors,
            "errors": dict(record.errors),
            "refused": record.refused,
            "games": record.games,
            "failures": record.failures,
        }
        Path(args.out).write_text(json.dumps(data))
        print("DONE", flush=True)


# ----------------------------------------------------------------------------- driver


@dataclass
class Fault:
    kind: str  # "server" or "master"
    at: float  # time.time() of the kill
    target: str  # server port or master port
    back_s: float | None = None  # until the server is healthy again / the cluster is ok
    promoted_s: float | None = None  # master: until its replica is a master
    slots: list[tuple[int, int]] = field(default_factory=list)  # master: its slot ranges
    recover_s: float | None = None  # master: until the first ack on its slots
    failed_restarts: list[str] = field(default_factory=list)  # server: not healthy in time


def descendants(pid: int) -> list[psutil.Process]:
    with contextlib.suppress(psutil.Error):
        return list(psutil.Process(pid).children(recursive=True))
    return []


def running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def master_slots(cluster: Any, port: int) -> list[tuple[int, int]]:
    """The slot ranges the master on ``port`` serves (its own CLUSTER NODES line)."""
    for line in cluster.cli(port, "cluster", "nodes").splitlines():
        fields = line.split()
        if "myself" in fields[2]:
            ranges = []
            for part in fields[8:]:
                if part.startswith("["):
                    continue
                low, _, high = part.partition("-")
                ranges.append((int(low), int(high or low)))
            return ranges
    return []


class Soak:
    """The driver: cluster, servers, generators, faults, checks."""

    def __init__(
        self, args: argparse.Namespace, cluster: Any, prefix: str, database_url: str | None
    ) -> None:
        self.args = args
        self.cluster = cluster
        self.prefix = prefix
        self.database_url = database_url  # the archive's (None: --archive off)
        self.rng = random.Random(args.seed)
        self.servers: list[Any] = []
        self.server_logs: list[Path] = []
        self.faults: list[Fault] = []
        self.workers: list[Worker] = []
        self.killed_children: list[psutil.Process] = []
        self.loads: list[float] = []

    def launch_server(self, port: int | None = None, health_timeout: float = 60) -> Any:
        from bench.devtools import launch_server_process

        env = {
            "CRESCENT_MAX_CONNECTIONS_PER_ADDRESS": "0",
            "CRESCENT_NEW_PLAYERS_PER_ADDRESS_PER_MIN": "0",
            "CRESCENT_COMPILED": os.environ.get("CRESCENT_COMPILED", "auto"),
            "CRESCENT_ARCHIVE": "off",
        }
        if self.database_url is not None:
            env.update(CRESCENT_ARCHIVE="on", CRESCENT_DATABASE_URL=self.database_url)
        server = launch_server_process(
            self.prefix,
            port,
            env,
            redis_url=self.cluster.url,
            countdown_ms=self.args.countdown_ms,
            secret=SECRET,
            extra_args=["--log-level", "WARNING", "--redis-wait-replicas", "1"],
            health_timeout=health_timeout,
        )
        self.server_logs.append(server.log_path)
        return server

    async def kill_server(self) -> None:
        index = self.rng.randrange(len(self.servers))
        server = self.servers[index]
        fault = Fault("server", time.time(), str(server.port))
        self.faults.append(fault)
        # Its children (the solver's fork server and worker, the resource tracker) must
        # not outlive it: remembered here, looked for after the soak.
        self.killed_children.extend(descendants(server.proc.pid))
        server.kill()
        self.servers[index] = await self.restart(server.port, fault)
        fault.back_s = time.time() - fault.at

    async def restart(self, port: int, fault: Fault) -> Any:
        """A server process on ``port`` again, as a supervisor would start it: healthy
        (every master answering its PING) within ``--restart-timeout``, else started
        anew, three times at most. On a saturated machine, right after a master kill, a
        new process may serve its clients for a minute before its /healthz says 200."""
        for attempt in range(3):
            try:
                return await asyncio.to_thread(self.launch_server, port, self.args.restart_timeout)
            except RuntimeError as exc:  # not healthy in time: stopped by the launcher
                fault.failed_restarts.append(str(exc).splitlines()[0][:200])
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def kill_master(self) -> None:
        roles = await asyncio.to_thread(self.cluster.roles)
        masters = sorted(port for port, role in roles.items() if role == "master")
        port = self.rng.choice(masters)
        replica = await asyncio.to_thread(self.cluster.replica_of, port)
        slots = await asyncio.to_thread(master_slots, self.cluster, port)
        fault = Fault("master", time.time(), str(port), slots=slots)
        self.faults.append(fault)
        self.cluster.node(port).kill()
        while (await asyncio.to_thread(self.cluster.roles)).get(replica) != "master":
            if time.time() - fault.at > 60:
                raise TimeoutError(f"replica {replica} of {port} not promoted in 60 s")
            await asyncio.sleep(0.1)
        fault.promoted_s = time.time() - fault.at
        # Started again (as a supervisor would): it rejoins as the new master's replica.
        await asyncio.to_thread(self.cluster.restart, port)
        await asyncio.to_thread(self.cluster.wait_ok, 60)
        fault.back_s = time.time() - fault.at

    async def faults_loop(
        self, every: float, first: float, kill: Callable[[], Awaitable[None]]
    ) -> None:
        start = time.monotonic()
        at = first
        while at < self.args.duration - 5:
            await asyncio.sleep(max(0.0, start + at - time.monotonic()))
            await kill()
            at += every

    def start_workers(self, tmp: Path) -> list[Path]:
        args = self.args
        urls = ",".join(s.ws_url for s in self.servers)
        outs = []
        shares = [args.racers // ROOM_SIZE * ROOM_SIZE // args.workers for _ in range(args.workers)]
        shares = [s // ROOM_SIZE * ROOM_SIZE for s in shares]
        shares[0] += args.racers // ROOM_SIZE * ROOM_SIZE - sum(shares)
        offset = 0
        for n, share in enumerate(shares):
            out = tmp / f"worker-{n}.json"
            outs.append(out)
            extra = []
            if n == len(shares) - 1:  # the tournament and the daily players on the last
                extra = [
                    "--tournament-players", str(args.tournament_players),
                    "--tournament-time-limit", str(args.tournament_time_limit),
                    "--daily-players", str(args.daily_players),
                ]  # fmt: skip
            self.workers.append(
                Worker.start(
                    Path(__file__),
                    "--urls",
                    urls,
                    "--racers",
                    str(share),
                    "--offset",
                    str(offset),
                    "--rate",
                    str(args.rate),
                    "--think-spread",
                    str(args.think_spread),
                    "--seed",
                    str(self.rng.randrange(1 << 30)),
                    "--out",
                    str(out),
                    *extra,
                )
            )
            offset += share
        return outs

    async def run(self, tmp: Path) -> dict[str, Any]:
        args = self.args
        self.servers = [await asyncio.to_thread(self.launch_server) for _ in range(args.servers)]
        outs = self.start_workers(tmp)
        setup_t0 = time.time()
        for worker in self.workers:
            await asyncio.to_thread(worker.wait_line, "READY", 120 + args.racers)
        setup_s = time.time() - setup_t0
        load0 = os.getloadavg()[0]
        for worker in self.workers:
            worker.send("GO")
        started = time.time()
        loads = asyncio.create_task(self.sample_load())
        chaos = [
            asyncio.create_task(
                self.faults_loop(args.server_kill_every, args.server_kill_first, self.kill_server)
            ),
            asyncio.create_task(
                self.faults_loop(args.master_kill_every, args.master_kill_first, self.kill_master)
            ),
        ]
        # A fault that could not be made (a restart never healthy, a replica never
        # promoted) stops that fault loop; the soak plays on and checks all the same.
        failed = await asyncio.gather(*chaos, return_exceptions=True)
        fault_failures = [f"{type(e).__name__}: {str(e)[:300]}" for e in failed if e]
        await asyncio.sleep(max(0.0, started + args.duration - time.time()))
        ended = time.time()
        load1 = os.getloadavg()[0]
        loads.cancel()
        for worker in self.workers:
            worker.send("STOP")
        for worker in self.workers:
            await asyncio.to_thread(worker.wait_line, "DONE", 120)
        results = [json.loads(out.read_text()) for out in outs]
        outliving = [p for p in self.killed_children if running(p)]
        await asyncio.to_thread(self.cluster.wait_ok, 60)
        checks = await asyncio.to_thread(
            verify, self.cluster.url, self.prefix, results, self.database_url
        )
        figures = summarise(results, self.faults, started, ended)
        figures.update(
            setup_s=round(setup_s, 1),
            loadavg_1m_start=round(load0, 2),
            loadavg_1m_end=round(load1, 2),
            fault_failures=fault_failures,
            # the 1-min load average every 10 s of play: min, median, max
            loadavg_1m_play=[
                round(min(self.loads), 2),
                round(sorted(self.loads)[len(self.loads) // 2], 2),
                round(max(self.loads), 2),
            ]
            if self.loads
            else [],
            server_logs=server_log_summary(self.server_logs),
            # Processes of a server killed with kill -9 still running at the end (the
            # soak stops them): "no process outlives the server" broken by a crash.
            outliving_killed_servers=[" ".join(p.cmdline())[:120] for p in outliving],
        )
        return {
            "checks": checks,
            "figures": figures,
            "faults": [f.__dict__ for f in self.faults],
            "started_at": started,
            "acks_per_s": acks_per_second(results, started, ended),
        }

    async def sample_load(self) -> None:
        """The machine's 1-min load average every 10 s while the soak plays (it is
        shared: the figures depend on it)."""
        while True:
            await asyncio.sleep(10)
            self.loads.append(os.getloadavg()[0])

    def stop(self) -> None:
        for worker in self.workers:
            worker.kill()
        for server in self.servers:
            self.killed_children.extend(descendants(server.proc.pid))
            server.terminate()
        for child in self.killed_children:  # whatever outlived its server: stopped here
            with contextlib.suppress(psutil.Error):
                if running(child):
                    child.kill()
        keep = Path(self.args.keep_logs) if self.args.keep_logs else None
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
        for n, log in enumerate(self.server_logs):
            with contextlib.suppress(OSError):
                if keep is not None:  # one file per server process launched, in order
                    shutil.copy(log, keep / f"server-{n:02d}-{log.name}")
                log.unlink()


def server_log_summary(logs: list[Path]) -> dict[str, Any]:
    """What the servers logged (every process launched; JSON lines): error lines, those
    with a traceback, warnings, and the most frequent errors (logger, message and the
    exception's last line)."""
    levels: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    warned: Counter[str] = Counter()
    tracebacks = 0
    for log in logs:
        with contextlib.suppress(OSError):
            for line in log.read_text(errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(entry, dict):
                    continue
                level = str(entry.get("level", "")).lower()
                levels[level] += 1
                exc = str(entry.get("exc") or "").strip()
                tracebacks += bool(exc)
                if level in ("error", "critical"):
                    last = exc.splitlines()[-1][:100] if exc else ""
                    kinds[f"{entry.get('logger')}: {entry.get('msg')}: {last}"] += 1
                elif level == "warning":
                    warned[f"{entry.get('logger')}: {entry.get('msg')}"] += 1
    return {
        "errors": levels["error"] + levels["critical"],
        "with_traceback": tracebacks,
        "warnings": levels["warning"],
        "top_errors": kinds.most_common(6),
        "top_warnings": warned.most_common(6),
    }


# ----------------------------------------------------------------------------- checks


# ----------------------------------------------------------------------------- figures


def acks_per_second(results: list[dict[str, Any]], started: float, ended: float) -> list[int]:
    per_s = [0] * max(1, int(ended - started))  # whole seconds only
    for result in results:
        for ack in result["acks"]:
            second = int(ack[1] - started)
            if 0 <= second < len(per_s):
                per_s[second] += 1
    return per_s


def slot_of_room(room: str) -> int:
    from redis.crc import key_slot

    return int(key_slot(room.encode()))


def summarise(
    results: list[dict[str, Any]], faults: list[Fault], started: float, ended: float
) -> dict[str, Any]:
    reconnects = [x for r in results for x in r["reconnect_s"]]
    acks = [a for r in results for a in r["acks"]]
    latencies = [a[1] - a[0] for a in acks if started <= a[0]]
    errors: Counter[str] = Counter()
    for r in results:
        errors.update(r["errors"])
    slots: dict[str, int] = {}
    for fault in faults:
        if fault.kind != "master":
            continue
        firsts = []
        for sent, at, room, *_ in acks:
            if sent < fault.at:
                continue
            slot = slots.get(room)
            if slot is None:
                slot = slots[room] = slot_of_room(room)
            if any(low <= slot <= high for low, high in fault.slots):
                firsts.append(at)
        if firsts:
            fault.recover_s = round(min(firsts) - fault.at, 2)
    recover = [f.recover_s for f in faults if f.kind == "master"]

    def ms(value: float | None) -> float | None:
        return None if value is None else round(value * 1000, 1)

    return {
        "window_s": round(ended - started, 1),
        "acks": len(acks),
        "acks_per_s": round(len(acks) / max(1e-9, ended - started), 1),
        "ack_p50_ms": ms(percentile(latencies, 0.5)),
        "ack_p99_ms": ms(percentile(latencies, 0.99)),
        "reconnects": len(reconnects),
        "reconnect_p50_ms": ms(percentile(reconnects, 0.5)),
        "reconnect_p99_ms": ms(percentile(reconnects, 0.99)),
        "internal_error_acts": sum(r["internal_errors"] for r in results),
        "refused": sum(r["refused"] for r in results),
        "errors": dict(errors),
        "games": sum(r["games"] for r in results),
        "server_kills": sum(f.kind == "server" for f in faults),
        "master_kills": sum(f.kind == "master" for f in faults),
        "master_recover_s": recover,
        "failures": [x for r in results for x in r["failures"]][:20],
    }


SPARK = " ▁▂▃▄▅▆▇█"


def sparkline(values: list[int], bucket: int = 10) -> str:
    sums = [sum(values[i : i + bucket]) / bucket for i in range(0, len(values), bucket)]
    top = max(sums, default=0) or 1
    return "".join(SPARK[round(v / top * (len(SPARK) - 1))] for v in sums)


def write_csv(path: Path, per_s: list[int], faults: list[dict[str, Any]], started: float) -> None:
    marks = defaultdict(list)
    for f in faults:
        marks[int(f["at"] - started)].append(f"{f['kind']}:{f['target']}")
    lines = ["second,acks,fault"] + [
        f"{s},{n},{' '.join(marks.get(s, []))}" for s, n in enumerate(per_s)
    ]
    path.write_text("\n".join(lines) + "\n")


def write_svg(
    path: Path, per_s: list[int], faults: list[dict[str, Any]], started: float, title: str = ""
) -> None:
    """Acks per second over time (each second, and its 10-s moving mean), server kills
    as dashed grey lines, Redis master kills as red ones; an SVG by matplotlib (a bench
    dependency in the lock: a plot's axes, ticks and legend for free)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"  # text stays text: a smaller file
    plt.rcParams["svg.hashsalt"] = "crescent-soak"  # the same run, the same file
    seconds = list(range(len(per_s)))
    window = 10
    mean = [sum(per_s[max(0, s - window + 1) : s + 1]) / min(window, s + 1) for s in seconds]
    fig, ax = plt.subplots(figsize=(10, 3.6), dpi=100)
    ax.plot(seconds, per_s, color="#9ecae1", linewidth=0.7, label="acks/s")
    ax.plot(seconds, mean, color="#08519c", linewidth=1.6, label=f"{window}-s mean")
    marked: set[str] = set()
    for fault in faults:
        master = fault["kind"] == "master"
        label = "Redis master kill -9" if master else "server process kill -9"
        ax.axvline(
            fault["at"] - started,
            color="#d62728" if master else "#777777",
            linestyle="-" if master else "--",
            linewidth=1.4 if master else 0.9,
            label=None if label in marked else label,
        )
        marked.add(label)
    ax.set_xlim(0, max(1, len(per_s) - 1))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("seconds since play started")
    ax.set_ylabel("acks per second")
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(axis="y", color="#dddddd", linewidth=0.6)
    ax.legend(loc="lower left", fontsize=8, ncol=4, framealpha=0.9)
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)


def report(outcome: dict[str, Any], args: argparse.Namespace) -> str:
    f, c = outcome["figures"], outcome["checks"]
    lines = [
        f"soak: {f['window_s']} s, {args.racers} racers in rooms of 4, a "
        f"{args.tournament_players}-player tournament, {args.daily_players} daily players, "
        f"~{args.rate:g} action/s each; {args.servers} servers, 3 masters + 3 replicas, WAIT 1",
        f"  faults: {f['server_kills']} server kill -9 (restarted at once), "
        f"{f['master_kills']} master kill -9 (replica promoted, old master back as replica)",
        restart_line(outcome["faults"], f["fault_failures"]),
        f"  load average 1 min: {f['loadavg_1m_start']} at the start, "
        f"{f['loadavg_1m_end']} at the end, every 10 s of play min/median/max "
        f"{f['loadavg_1m_play']}; setup {f['setup_s']} s",
        f"  acks {f['acks']:,} ({f['acks_per_s']}/s), ack p50 {f['ack_p50_ms']} ms "
        f"p99 {f['ack_p99_ms']} ms, games {f['games']}, refused {f['refused']}",
        f"  reconnects {f['reconnects']}: p50 {f['reconnect_p50_ms']} ms, "
        f"p99 {f['reconnect_p99_ms']} ms",
        f"  acts answered internal_error: {f['internal_error_acts']}; other errors: {f['errors']}",
        f"  time to recover after each master kill (s): {f['master_recover_s']}",
        f"  processes of killed servers still running at the end (stopped by the soak): "
        f"{len(f['outliving_killed_servers'])} {f['outliving_killed_servers'][:3]}",
        f"  server logs: {f['server_logs']['errors']} errors "
        f"({f['server_logs']['with_traceback']} lines with a traceback), "
        f"{f['server_logs']['warnings']} warnings",
        *(f"    {n} x {kind}" for kind, n in f["server_logs"]["top_errors"]),
        *(f"    {n} x WARNING {kind}" for kind, n in f["server_logs"]["top_warnings"]),
        f"  acks/s, 10 s buckets: |{sparkline(outcome['acks_per_s'])}|",
        "checks:",
        f"  acks {c['acks']:,} ({c['duplicate_acks']} duplicate acks) in {c['logs_read']:,} logs "
        f"of {c['log_entries']:,} entries",
        f"  acked but missing: {c['missing_count']}; stored twice or never acked: "
        f"{c['stored_twice_or_unacked_count']}; stored outside its seq's send..ack "
        f"(time mark): {c['stored_out_of_time_count']}; one seq acked for two actions: "
        f"{len(c['acked_twice_differently'])}",
        f"  replays failed: {c['replay_failures_count']}; replay != last acked view: "
        f"{c['view_mismatches_count']}; logs without a known deal: {c['logs_without_deal']}",
        f"  racers resigned by the server (left or offline, last log entry): "
        f"{c['resigned_by_the_server']}",
        archive_line(c),
    ]
    problems = check_problems(c)
    lines.append(
        "  RESULT: " + ("FAILED: " + "; ".join(problems) if problems else "all invariants held")
    )
    for failure in f["failures"]:
        lines.append(f"  player failure: {failure}")
    samples = c["missing"][:5] + c["stored_twice_or_unacked"][:5] + c["stored_out_of_time"][:5]
    samples += c["replay_failures"][:5]
    if isinstance(c["archive"], dict):
        samples += c["archive"]["problems"][:5]
    lines += [f"  e.g. {sample}" for sample in samples]
    return "\n".join(lines)


def restart_line(faults: list[dict[str, Any]], failures: list[str]) -> str:
    backs = sorted(f["back_s"] for f in faults if f["kind"] == "server" and f["back_s"])
    promoted = [
        round(f["promoted_s"], 1) for f in faults if f["kind"] == "master" and f["promoted_s"]
    ]
    failed = [r for f in faults for r in f.get("failed_restarts", [])]
    spread = (
        f"{backs[0]:.1f} / {backs[len(backs) // 2]:.1f} / {backs[-1]:.1f} s" if backs else "none"
    )
    return (
        f"  server restart (kill -> healthy) min/median/max {spread}; restarts not healthy "
        f"in time (started anew): {len(failed)}; replica promoted after (s) {promoted}; "
        f"faults that could not be made: {failures or 'none'}"
    )


def plot_title(outcome: dict[str, Any], args: argparse.Namespace) -> str:
    f = outcome["figures"]
    return (
        f"soak: {args.racers} racers, {args.tournament_players}-player tournament, "
        f"{args.daily_players} daily players; {f['server_kills']} server and "
        f"{f['master_kills']} Redis master kills; load average {f['loadavg_1m_start']}"
        f"→{f['loadavg_1m_end']}"
    )


def archive_line(checks: dict[str, Any]) -> str:
    a = checks["archive"]
    if not isinstance(a, dict):
        return f"  finished games seen by the clients: {checks['games_finished']}; archive: {a}"
    return (
        f"  archive: {a['games_finished']} games seen finished, {a['archived']} archived, "
        f"{a['missing']} missing, {a['doubled']} doubled, {a['start_differs']} with another "
        f"start, {a['logs_differ']} racer logs differing from Redis; outbox pending "
        f"{a['outbox_pending']} games + {a['outbox_notes']} notes (after {a['drain_wait_s']} s); "
        f"{a['archived_total']} games in the archive {a['kinds']}, "
        f"{a['archived_not_seen_finished']} of them not seen finished by a client"
    )


@contextlib.contextmanager
def local_cluster(args: argparse.Namespace) -> Iterator[Any]:
    from bench.devtools import start_local_cluster

    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if server is None or cli is None:
        raise SystemExit("soak: redis-server and redis-cli are needed (apt install redis-server)")
    with tempfile.TemporaryDirectory(prefix="crescent-soak-cluster-") as folder:
        cluster = start_local_cluster(Path(folder), redis_server=server, redis_cli=cli)
        try:
            yield cluster
        finally:
            cluster.stop()


def run_soak(args: argparse.Namespace, cluster: Any, prefix: str) -> dict[str, Any]:
    """One soak on ``cluster`` (a ``LocalCluster``), its archive in a fresh schema
    (bench/soak_checks.py ``archive_database``) unless ``--archive off``; every process
    it starts is stopped, and the schema dropped, before it returns or raises."""
    with contextlib.ExitStack() as stack:
        database_url = None
        if args.archive == "on":
            database_url = stack.enter_context(archive_database(args.database_url))
        soak = Soak(args, cluster, prefix, database_url)
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="crescent-soak-"))
        try:
            outcome: dict[str, Any] = asyncio.run(soak.run(Path(tmp)))
        finally:
            soak.stop()
    return outcome


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of play")
    parser.add_argument("--racers", type=int, default=1000, help="in rooms of 4")
    parser.add_argument("--tournament-players", type=int, default=100)
    parser.add_argument("--tournament-time-limit", type=int, default=240, help="s per round")
    parser.add_argument("--daily-players", type=int, default=20)
    parser.add_argument("--rate", type=float, default=1.0, help="actions/s per player (mean)")
    parser.add_argument("--think-spread", type=float, default=0.75)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4, help="generator processes")
    parser.add_argument("--server-kill-every", type=float, default=30.0)
    parser.add_argument("--server-kill-first", type=float, default=30.0)
    parser.add_argument("--master-kill-every", type=float, default=120.0)
    parser.add_argument("--master-kill-first", type=float, default=45.0)
    parser.add_argument(
        "--restart-timeout",
        type=float,
        default=180.0,
        help="s for a restarted server process to be healthy before it is started anew",
    )
    parser.add_argument("--countdown-ms", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--archive", choices=("on", "off"), default="on", help="archive and check finished games"
    )
    parser.add_argument(
        "--database-url",
        default=None,
        help="the PostgreSQL for the archive (a fresh schema in it; default: "
        "CRESCENT_TEST_DATABASE_URL, else postgresql://postgres@127.0.0.1:5432/test, "
        "else an embedded one)",
    )
    parser.add_argument("--json", default=None, help="write the outcome here")
    parser.add_argument(
        "--keep-logs", default=None, help="copy every server process's log into this folder"
    )
    parser.add_argument("--plot", default=None, help="acks/s SVG here (and a .csv next to it)")
    parser.add_argument(
        "--smoke", action="store_true", help="60 s, 100 racers, 1 server and 1 master kill"
    )
    return parser


SMOKE = {
    "duration": 60.0,
    "racers": 100,
    "tournament_players": 12,
    "daily_players": 4,
    "workers": 1,
    "rate": 2.0,
    "tournament_time_limit": 60,
    "server_kill_first": 15.0,
    "server_kill_every": 1000.0,
    "master_kill_first": 30.0,
    "master_kill_every": 1000.0,
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        worker_main(argv[1:])
        return 0
    args = parser().parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    from bench.devtools import raise_nofile_limit, random_prefix

    raise_nofile_limit()
    with local_cluster(args) as cluster:
        outcome = run_soak(args, cluster, random_prefix("soak"))
    if args.json:  # first: the outcome is kept whatever the report and plot do
        Path(args.json).write_text(json.dumps(outcome, indent=1, default=str))
    print(report(outcome, args))
    if args.plot:
        plot = Path(args.plot)
        started = outcome["started_at"]
        write_svg(
            plot, outcome["acks_per_s"], outcome["faults"], started, plot_title(outcome, args)
        )
        write_csv(plot.with_suffix(".csv"), outcome["acks_per_s"], outcome["faults"], started)
    return 1 if check_problems(outcome["checks"]) else 0


if __name__ == "__main__":
    sys.exit(main())
