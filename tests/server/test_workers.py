"""``crescent-server --workers N`` with real processes: a supervisor, its workers on one
port (SO_REUSEPORT), a real Redis; kill -9 of a worker, SIGHUP, SIGTERM, kill -9 of the
supervisor (docs/server.md, "Workers")."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import psutil
import pytest

from bench.devclient import WsClient, open_client
from bench.devtools import ServerProcess, wait_for_log
from crescent_wire import protocol as p
from server.config import parse_args
from server.supervisor import Backoff, _remove_orphaned_metrics_dirs
from tests.server.test_processes import alive
from tests.support import REPO_ROOT, launch_server_process

WINNING = json.loads(
    (Path(__file__).parents[1] / "game" / "data" / "winning_line.json").read_text()
)
LONG_DEAL = WINNING["code"]
LONG_LINE: list[str] = WINNING["actions"][:110]  # 110 moves, not yet won: still racing
FAST_RESTART = ["--worker-backoff-s", "0.2"]


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


def worker_pids(server: ServerProcess) -> set[int]:
    """The supervisor's children: its workers (the solver's processes are theirs)."""
    return {
        child.pid
        for child in psutil.Process(server.proc.pid).children()
        if child.status() != psutil.STATUS_ZOMBIE
    }


def serving(server: ServerProcess, clients: list[WsClient]) -> dict[int, list[WsClient]]:
    """Worker pid -> the clients whose connection it holds (matched by the client's
    local port in the worker's established TCP connections)."""
    by_port = {c.ws.get_extra_info("sockname")[1]: c for c in clients}
    found: dict[int, list[WsClient]] = {}
    for pid in worker_pids(server):
        for conn in psutil.Process(pid).net_connections(kind="tcp"):
            if (
                conn.status == psutil.CONN_ESTABLISHED
                and conn.laddr.port == server.port
                and conn.raddr
                and conn.raddr.port in by_port
            ):
                found.setdefault(pid, []).append(by_port[conn.raddr.port])
    return found


def scrape(server: ServerProcess) -> dict[str, float]:
    """/metrics as {sample with labels: value} (one worker answers, for all)."""
    with urllib.request.urlopen(f"{server.http_url}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    return {
        name: float(value)
        for name, _, value in (line.rpartition(" ") for line in text.splitlines())
        if name and not name.startswith("#")
    }


async def until(check: object, timeout: float, what: str) -> None:
    """Poll ``check()`` (another process's state: nothing to await) until it is true."""
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.05)


async def reconnect(session: aiohttp.ClientSession, url: str, token: str) -> WsClient:
    """As a client does after a close: try again until a worker takes the connection
    (one in a stopping worker's accept queue is reset)."""
    deadline = time.monotonic() + 15
    while True:
        try:
            return await open_client(session, url, token=token)
        except (aiohttp.ClientError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)  # a client's reconnect backoff


async def test_two_workers_share_the_port_and_a_killed_one_comes_back(
    prefix: str, session: aiohttp.ClientSession
) -> None:
    server = await asyncio.to_thread(
        launch_server_process, prefix, workers=2, extra_args=FAST_RESTART
    )
    try:
        pids = worker_pids(server)
        assert len(pids) == 2
        clients = [await open_client(session, server.ws_url, name=f"P{i}") for i in range(24)]
        by_worker = serving(server, clients)
        assert set(by_worker) == pids, "both workers hold connections"
        assert sum(len(c) for c in by_worker.values()) == 24
        answered = set()
        for _ in range(20):
            with urllib.request.urlopen(f"{server.http_url}/healthz", timeout=5) as resp:
                answered.add(json.load(resp)["pid"])
        assert answered <= pids and answered
        assert scrape(server)["crescent_connections"] == 24  # summed over the workers

        victim, survivor = sorted(pids)
        host, mate = by_worker[victim][0], by_worker[survivor][0]
        code = await race_room_on(host, mate)
        line = LONG_LINE
        for seq in range(1, 4):
            assert isinstance(await host.act(code, seq, line[seq - 1]), p.Ack)
            assert isinstance(await mate.act(code, seq, line[seq - 1]), p.Ack)
        await until(
            lambda: scrape(server)["crescent_actions_acked_total"] == 6,
            5,
            "both workers' acks counted in /metrics",
        )

        os.kill(victim, signal.SIGKILL)
        await asyncio.wait_for(host.closed.wait(), 5)
        assert host.close_code != 1001  # no goodbye from a killed worker
        await until(
            lambda: len(worker_pids(server)) == 2 and victim not in worker_pids(server),
            20,
            "the supervisor started a new worker",
        )
        log_text = server.log_text()
        assert "worker died: restarting it" in log_text
        assert '"worker": 0' in log_text and '"worker": 1' in log_text  # who said what
        again = await reconnect(session, server.ws_url, host.token)
        snap = await again.join(code)
        assert snap.you["last_seq"] == 3
        assert isinstance(await again.act(code, 4, line[3]), p.Ack)
        assert not mate.closed.is_set()  # the other worker's clients never noticed
        assert isinstance(await mate.act(code, 4, line[3]), p.Ack)
        # The dead worker's counts stay in the sum; its connections do not.
        await until(
            lambda: scrape(server)["crescent_actions_acked_total"] == 8,
            5,
            "the dead worker's acks still counted",
        )
        metrics = scrape(server)
        assert metrics["crescent_ack_latency_seconds_count"] == 8
        # The survivor's clients and `again`; the dead worker's clients were cut off.
        assert metrics["crescent_connections"] == len(by_worker[survivor]) + 1
    finally:
        await asyncio.to_thread(server.terminate)


@dataclass
class Racer:
    client: WsClient
    code: str
    acked: int = 0
    closes: list[int | None] = field(default_factory=list)
    acked_after_close: int = 0


async def keep_racing(
    session: aiohttp.ClientSession, url: str, racer: Racer, stop: asyncio.Event
) -> None:
    """Act about 5 times a second; after a close, reconnect (token), join and go on
    from the last stored seq, as docs/protocol.md tells clients to."""
    client = racer.client
    seq = racer.acked
    while not stop.is_set():
        if client.closed.is_set():
            racer.closes.append(client.close_code)
            client = await reconnect(session, url, racer.client.token)
            snap = await client.join(racer.code)
            assert snap.you["last_seq"] >= racer.acked, "an acknowledged action was lost"
            seq = snap.you["last_seq"]
            continue
        if seq < len(LONG_LINE):
            try:
                reply = await client.act(racer.code, seq + 1, LONG_LINE[seq])
            except ConnectionError:
                continue  # closed before the ack: the join above tells what was stored
            assert isinstance(reply, p.Ack), reply
            seq = racer.acked = seq + 1
            if racer.closes:
                racer.acked_after_close += 1
        await asyncio.sleep(0.2)  # a human's pace, not synchronisation
    await client.close()


async def test_sighup_replaces_every_worker_and_loses_no_acknowledged_action(
    prefix: str, session: aiohttp.ClientSession
) -> None:
    server = await asyncio.to_thread(launch_server_process, prefix, workers=2)
    stop = asyncio.Event()
    try:
        old = worker_pids(server)
        racers = []
        for room in range(4):
            host = await open_client(session, server.ws_url, name=f"H{room}")
            mate = await open_client(session, server.ws_url, name=f"M{room}")
            code = await race_room_on(host, mate)
            racers += [Racer(host, code), Racer(mate, code)]
        assert set(serving(server, [r.client for r in racers])) == old
        tasks = [asyncio.create_task(keep_racing(session, server.ws_url, r, stop)) for r in racers]
        await until(lambda: all(r.acked >= 2 for r in racers), 10, "every racer acting")
        server.proc.send_signal(signal.SIGHUP)
        await asyncio.to_thread(wait_for_log, server, "rolling restart done", 60)
        new = worker_pids(server)
        assert len(new) == 2 and not new & old, (old, new)
        await until(
            lambda: all(r.acked_after_close >= 2 for r in racers), 15, "everyone racing again"
        )
        stop.set()
        await asyncio.gather(*tasks)
        for r in racers:
            assert r.closes and set(r.closes) == {1001}, r.closes  # going away: reconnect
            check = await open_client(session, server.ws_url, token=r.client.token)
            snap = await check.join(r.code)
            assert snap.you["last_seq"] == r.acked == snap.you["game"]["moves"]
            await check.close()
    finally:
        stop.set()
        await asyncio.to_thread(server.terminate)


async def race_room_on(host: WsClient, mate: WsClient) -> str:
    code: str = (await host.create(deal=LONG_DEAL, seats=2)).room["code"]
    await mate.join(code)
    assert isinstance(await host.call(p.Start(room=code)), p.Ok)
    from tests.server.test_race_e2e import wait_until_started

    await wait_until_started(host, code)
    await wait_until_started(mate, code)
    return code


async def test_sigterm_stops_every_worker_gracefully(
    prefix: str, session: aiohttp.ClientSession
) -> None:
    server = await asyncio.to_thread(launch_server_process, prefix, workers=2)
    try:
        processes = [psutil.Process(server.proc.pid)]
        processes += processes[0].children(recursive=True)
        clients = [await open_client(session, server.ws_url, name=f"P{i}") for i in range(8)]
        assert len(serving(server, clients)) == 2
        assert await asyncio.to_thread(server.terminate) == 0
        for c in clients:
            await asyncio.wait_for(c.closed.wait(), 5)
            assert c.close_code == 1001
        assert alive(processes) == []
    finally:
        server.kill()


async def test_a_killed_supervisor_takes_its_workers_within_two_seconds(
    prefix: str, session: aiohttp.ClientSession
) -> None:
    server = await asyncio.to_thread(launch_server_process, prefix, workers=2)
    workers: list[psutil.Process] = []
    try:
        workers = [psutil.Process(pid) for pid in worker_pids(server)]
        clients = [await open_client(session, server.ws_url, name=f"P{i}") for i in range(8)]
        assert len(serving(server, clients)) == 2
        server.kill()
        await until(lambda: alive(workers) == [], 2, "every worker gone")
        for c in clients:  # a graceful stop (SIGTERM from the kernel): reconnect
            await asyncio.wait_for(c.closed.wait(), 1)
            assert c.close_code == 1001
        # Its metrics folder stayed (nobody to remove it); the next supervisor does.
        left = list(Path(tempfile.gettempdir()).glob(f"crescent-metrics-{server.proc.pid}-*"))
        assert len(left) == 1
        _remove_orphaned_metrics_dirs()
        assert not left[0].exists()
    finally:
        server.kill()
        for proc in alive(workers):  # a failed run cleans up after itself
            proc.kill()


async def test_a_worker_that_cannot_start_stops_the_supervisor(prefix: str) -> None:
    """A start-up failure (here: Redis unreachable, so no worker is ever ready) is not
    retried for ever: the supervisor says so and exits 1, leaving nothing behind."""
    with pytest.raises(RuntimeError, match="start-up failed") as failed:
        await asyncio.to_thread(
            launch_server_process,
            prefix,
            redis_url="redis://127.0.0.1:1/0",
            workers=2,
            extra_args=["--worker-ready-timeout-s", "3"],
        )
    assert "did not become ready" in str(failed.value)


def test_workers_settings() -> None:
    cores = os.cpu_count() or 1
    assert parse_args([]).workers == cores
    assert parse_args(["--workers", "3"]).workers == 3
    assert parse_args(["--storage", "memory"]).workers == 1
    assert parse_args(["--workers", "0"]).workers == cores  # 0: one per core, as unset
    for bad in (
        ["--workers", "-1"],
        ["--storage", "memory", "--workers", "2"],
        ["--worker-backoff-s", "0"],
        ["--worker-backoff-s", "5", "--worker-backoff-max-s", "1"],
    ):
        with pytest.raises(SystemExit):
            parse_args(bad)


def test_backoff_doubles_up_to_the_cap_and_resets_after_a_stable_run() -> None:
    backoff = Backoff(first=0.5, cap=4.0, stable=60.0)
    assert [backoff.after_death(1.0) for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert backoff.after_death(60.0) == 0.5
    assert backoff.after_death(0.1) == 1.0


HARNESS = """
import sys, time
from bench.devtools import launch_server_process
server = launch_server_process(sys.argv[1], workers=2)
print(server.proc.pid, server.log_path, flush=True)
time.sleep(120)
"""


async def test_a_supervisor_stops_when_its_harness_is_killed(prefix: str) -> None:
    """CRESCENT_EXIT_WITH_PARENT (server/devtools.py) is the supervisor's to watch: a
    killed test run leaves neither it nor its workers behind."""
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, prefix], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True
    )
    tree: list[psutil.Process] = []
    try:
        assert harness.stdout is not None
        pid, log_name = (await asyncio.to_thread(harness.stdout.readline)).split()
        supervisor = psutil.Process(int(pid))
        tree = [supervisor, *supervisor.children()]
        assert len(tree) == 3
        harness.kill()
        harness.wait(5)
        await until(lambda: alive(tree) == [], 15, "the supervisor and its workers gone")
        assert "the process that started this server is gone" in Path(log_name).read_text()
        Path(log_name).unlink()
    finally:
        harness.kill()
        harness.wait(5)
        if harness.stdout is not None:
            harness.stdout.close()
        for proc in alive(tree):
            proc.kill()
