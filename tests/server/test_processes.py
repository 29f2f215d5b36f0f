"""Real server processes: restart mid-race, crash, two processes sharing one room, no
process left behind by a killed server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import psutil
import pytest

from bench.devclient import WsClient, open_client
from crescent_wire import protocol as p
from tests.server.test_race_e2e import DEAL, legal_line, wait_until_started
from tests.support import REPO_ROOT, free_port, launch_server_process, start_server_process, view_of


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


async def connect(
    session: aiohttp.ClientSession, url: str, *, name: str | None = None, token: str | None = None
) -> WsClient:
    return await open_client(session, url, name=name, token=token)


async def race_room(host: WsClient, others: list[WsClient]) -> str:
    code = str((await host.create(deal=DEAL, seats=max(2, len(others) + 1))).room["code"])
    for c in others:
        await c.join(code)
    assert isinstance(await host.call(p.Start(room=code)), p.Ok)
    await wait_until_started(host, code)
    return code


async def test_graceful_restart_mid_race_loses_nothing(
    prefix: str, session: aiohttp.ClientSession
) -> None:
    port = free_port()
    line = legal_line(DEAL, 5)
    server = await asyncio.to_thread(launch_server_process, prefix, port)
    try:
        ada = await connect(session, server.ws_url, name="Ada")
        bo = await connect(session, server.ws_url, name="Bo")
        code = await race_room(ada, [bo])
        for seq, move in enumerate(line[:3], 1):
            assert isinstance(await ada.act(code, seq, move), p.Ack)
        before = (await ada.join(code)).you
        await asyncio.to_thread(server.terminate)
        assert server.proc.returncode == 0
        await asyncio.wait_for(ada.closed.wait(), 5)
        assert ada.close_code == 1001  # going away: reconnect
        log_text = server.log_text()
        assert '"msg": "shutting down' in log_text
        # A deploy does not mark every player offline (they reconnect at once).
        assert '"kind": "connected"' not in log_text.split('"msg": "shutting down')[1]
    finally:
        server.kill()
    server = await asyncio.to_thread(launch_server_process, prefix, port)
    try:
        again = await connect(session, server.ws_url, token=ada.token)
        snap = await again.join(code)
        assert snap.room["phase"] == "racing"
        assert snap.you == before and snap.you["last_seq"] == 3
        dup = await again.act(code, 3, line[2])
        assert isinstance(dup, p.Ack) and dup.duplicate
        ack = await again.act(code, 4, line[3])
        assert isinstance(ack, p.Ack) and view_of(ack)["moves"] == 4
    finally:
        await asyncio.to_thread(server.terminate)


async def test_crash_keeps_every_acknowledged_action(
    prefix: str, session: aiohttp.ClientSession
) -> None:
    port = free_port()
    line = legal_line(DEAL, 8)
    server = await asyncio.to_thread(launch_server_process, prefix, port)
    try:
        ada = await connect(session, server.ws_url, name="Ada")
        code = await race_room(ada, [])
        acked = 0
        for seq, move in enumerate(line, 1):
            reply = await ada.act(code, seq, move)
            assert isinstance(reply, p.Ack)
            acked = seq
        server.kill()  # SIGKILL: no graceful anything
    finally:
        server.kill()
    with start_server_process(prefix, port) as server:
        again = await connect(session, server.ws_url, token=ada.token)
        snap = await again.join(code)
        assert snap.you["last_seq"] == acked and snap.you["game"]["moves"] == acked


async def test_two_processes_share_one_room(prefix: str, session: aiohttp.ClientSession) -> None:
    one = await asyncio.to_thread(launch_server_process, prefix)
    two = await asyncio.to_thread(launch_server_process, prefix)
    try:
        ada = await connect(session, one.ws_url, name="Ada")
        bo = await connect(session, two.ws_url, name="Bo")
        watcher = await connect(session, two.ws_url, name="Watcher")
        code = (await ada.create(deal=DEAL, seats=2)).room["code"]
        await watcher.join(code, as_="spectator")
        await bo.join(code)
        # Published by process two, seen on process one:
        joined = await ada.wait_for(
            lambda m: (
                isinstance(m, p.Event)
                and m.kind == "joined"
                and m.data["player"]["role"] == "racer"
            )
        )
        assert isinstance(joined, p.Event) and joined.data["player"]["id"] == bo.player["id"]
        # Ready on both processes: the room starts by itself.
        assert isinstance(await ada.call(p.Ready(room=code)), p.Ok)
        assert isinstance(await bo.call(p.Ready(room=code)), p.Ok)
        start_a = (await ada.event("countdown")).data["start_at"]
        start_b = (await bo.event("countdown")).data["start_at"]
        assert start_a == start_b
        await wait_until_started(ada, code)
        await wait_until_started(bo, code)
        line = legal_line(DEAL, 2)
        for seq, move in enumerate(line, 1):
            assert isinstance(await ada.act(code, seq, move), p.Ack)
        progress = await watcher.wait_for(
            lambda m: (
                isinstance(m, p.Progress)
                and any(r["player"] == ada.player["id"] and r["moves"] == 2 for r in m.racers)
            )
        )
        assert isinstance(progress, p.Progress)
        # A token signed by one process is accepted by the other (shared secret).
        twin = await connect(session, two.ws_url, token=ada.token)
        assert twin.player == ada.player
        assert (await twin.join(code)).you["last_seq"] == 2
        # The same player on both processes sends the same seq: applied once.
        third = legal_line(DEAL, 3)[2]
        replies = await asyncio.gather(ada.act(code, 3, third), twin.act(code, 3, third))
        assert sorted(r.duplicate for r in replies) == [False, True]  # type: ignore[union-attr]
        assert isinstance(await bo.act(code, 1, "resign"), p.Ack)
        assert isinstance(await twin.act(code, 4, "resign"), p.Ack)
        finished = await ada.event("finished")
        assert [r["player"] for r in finished.data["results"]] == [
            ada.player["id"],
            bo.player["id"],
        ]
        assert (await watcher.event("finished")).ver == finished.ver
    finally:
        await asyncio.to_thread(one.terminate)
        await asyncio.to_thread(two.terminate)


async def test_secret_shared_through_redis(
    prefix: str, session: aiohttp.ClientSession, sync_redis: object
) -> None:
    one = await asyncio.to_thread(launch_server_process, prefix, None, None, secret=None)
    two = await asyncio.to_thread(launch_server_process, prefix, None, None, secret=None)
    try:
        ada = await connect(session, one.ws_url, name="Ada")
        again = await connect(session, two.ws_url, token=ada.token)
        assert again.player == ada.player
        assert sync_redis.exists(f"{prefix}:secret")  # type: ignore[attr-defined]
    finally:
        await asyncio.to_thread(one.terminate)
        await asyncio.to_thread(two.terminate)


async def test_players_of_a_killed_process_go_offline(
    prefix: str, session: aiohttp.ClientSession
) -> None:
    """kill -9 one of two processes sharing a race: within the presence timeout (3 s
    here) the survivor's clients see the dead process's player go ``connected: false``
    (its progress ``disconnected``), while the survivor's own player stays connected."""
    env = {"CRESCENT_PRESENCE_TIMEOUT_S": "3"}
    one = await asyncio.to_thread(launch_server_process, prefix, None, env)
    two = await asyncio.to_thread(launch_server_process, prefix, None, env)
    try:
        ada = await connect(session, one.ws_url, name="Ada")
        bo = await connect(session, two.ws_url, name="Bo")
        code = await race_room(ada, [bo])
        await wait_until_started(bo, code)
        assert isinstance(await bo.act(code, 1, legal_line(DEAL, 1)[0]), p.Ack)
        two.kill()  # SIGKILL: Bo's socket is never closed by the server
        offline = await ada.wait_for(
            lambda m: isinstance(m, p.Event) and m.kind == "connected", timeout=30
        )
        assert isinstance(offline, p.Event)
        assert offline.data == {"player": bo.player["id"], "connected": False}
        progress = await ada.wait_for(
            lambda m: (
                isinstance(m, p.Progress)
                and any(
                    r["player"] == bo.player["id"] and r["status"] == "disconnected"
                    for r in m.racers
                )
            ),
            timeout=10,
        )
        assert isinstance(progress, p.Progress)
        snap = await ada.join(code)
        connected = {m["id"]: m["connected"] for m in snap.room["players"]}
        assert connected == {ada.player["id"]: True, bo.player["id"]: False}
        # Bo comes back on the live process: connected again.
        again = await connect(session, one.ws_url, token=bo.token)
        assert (await again.join(code)).you["last_seq"] == 1
        back = await ada.wait_for(
            lambda m: isinstance(m, p.Event) and m.kind == "connected", timeout=10
        )
        assert isinstance(back, p.Event)
        assert back.data == {"player": bo.player["id"], "connected": True}
    finally:
        two.kill()
        await asyncio.to_thread(one.terminate)


SOLVABLE = json.loads(
    (Path(__file__).parents[1] / "game" / "data" / "winning_line.json").read_text()
)["code"]


def alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    """Those still running (a zombie waiting for its new parent to reap it is gone)."""
    running = []
    for proc in processes:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                running.append(proc)
        except psutil.NoSuchProcess:
            pass
    return running


async def test_a_killed_server_leaves_no_process_behind(
    prefix: str, session: aiohttp.ClientSession
) -> None:
    """kill -9 the server once its solver processes run (a practice hint starts them):
    the fork server, its worker and multiprocessing's resource tracker all exit within
    5 s (server/lifeline.py: within a moment on Linux)."""
    server = await asyncio.to_thread(launch_server_process, prefix)
    descendants: list[psutil.Process] = []
    try:
        ada = await connect(session, server.ws_url, name="Ada")
        code = (await ada.create(deal=SOLVABLE, seats=1)).room["code"]
        assert isinstance(await ada.call(p.Ready(room=code)), p.Ok)
        await wait_until_started(ada, code)
        hint = await ada.call(p.Hint(room=code), timeout=60)
        assert isinstance(hint, p.HintReply)  # from the solver or, past its budget, not
        descendants = psutil.Process(server.proc.pid).children(recursive=True)
        commands = [" ".join(proc.cmdline()) for proc in descendants]
        assert sum("multiprocessing.forkserver" in c for c in commands) >= 2, commands
        server.kill()
        deadline = time.monotonic() + 5
        while alive(descendants) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)  # other processes' deaths: nothing to await
        assert alive(descendants) == []
    finally:
        server.kill()
        for proc in alive(descendants):  # a failed run cleans up after itself
            proc.kill()


HARNESS = """
import sys, time
from bench.devtools import launch_server_process
server = launch_server_process(sys.argv[1])
print(server.proc.pid, server.log_path, flush=True)
time.sleep(120)
"""


async def test_a_test_server_stops_when_its_harness_is_killed(prefix: str) -> None:
    """A test run killed with -9 leaves no server behind: the servers it started see
    their parent go and shut down gracefully (CRESCENT_EXIT_WITH_PARENT, set by
    bench/devtools.py)."""
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, prefix], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True
    )
    server: psutil.Process | None = None
    try:
        assert harness.stdout is not None
        pid, log_name = (await asyncio.to_thread(harness.stdout.readline)).split()
        server = psutil.Process(int(pid))
        harness.kill()
        harness.wait(5)
        deadline = time.monotonic() + 10  # a graceful shutdown: up to 5 s for sockets
        while alive([server]) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)  # another process's death: nothing to await
        assert alive([server]) == []
        assert "the process that started this server is gone" in Path(log_name).read_text()
        Path(log_name).unlink()
    finally:
        harness.kill()
        harness.wait(5)
        if harness.stdout is not None:
            harness.stdout.close()
        if server is not None and alive([server]):
            server.kill()
