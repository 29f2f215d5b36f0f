"""Power cuts mid-race: is any acknowledged action lost?

Starts ``python3 -m server`` with its embedded Redis on a fresh data folder, races
``--racers`` racers (random legal moves, as fast as acknowledgements come back),
and ``--cuts`` times kills the server and its redis-server together with SIGKILL
at a random moment mid-race, restarts the server on the same folder, rejoins,
and compares what each racer had acknowledged with what the server has stored
(``you.last_seq`` and the game view after replaying the acknowledged actions).
The race then goes on, to the next cut.

    .venv/bin/python bench/power_cut.py --cuts 5

A SIGKILL of both processes loses what they held in memory; what the kernel
had already received survives (its page cache outlives the processes). A real
power cut also loses unsynced pages: that is what ``appendfsync always`` covers
(Redis fsyncs before it answers; docs/server.md, "Durability").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

# Run as a script: the repository's root on the path, for bench.devtools.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from bench.devclient import WsClient, open_client
from bench.devtools import DEV_SECRET, free_port, wait_for_health
from crescent_wire import protocol as p
from server.config import REPO_ROOT
from server.embedded_redis import serves_folder
from server.game import Game, replay
from server.supervised import pid_running

DEAL = "CR1-N-AAAAAAB"
SECRET = DEV_SECRET  # random per run: the restarted server takes the same one


class EmbeddedServer:
    """``python3 -m server`` with its embedded Redis on ``data_dir`` (no --redis-url)."""

    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.log_path = data_dir.parent / f"server-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def start(self) -> None:
        env = {**os.environ, "CRESCENT_SECRET": SECRET, "PYTHONUNBUFFERED": "1"}
        env["CRESCENT_EXIT_WITH_PARENT"] = str(os.getpid())  # none left if we are killed
        env.pop("CRESCENT_REDIS_URL", None)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "server",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--data-dir",
                    str(self.data_dir),
                    # What is cut is the server and its Redis; an embedded PostgreSQL
                    # for the archive would put its data in the checkout's var/.
                    "--archive",
                    "off",
                    "--countdown-ms",
                    "300",
                    "--workers",  # one process: the cut is of the server and its Redis
                    "1",
                ],
                cwd=REPO_ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_for_health(self.http_url, timeout=60, proc=self.proc)

    def redis_pid(self) -> int:
        return int((self.data_dir / "redis-server.pid").read_text().strip())

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def power_cut(self) -> None:
        """SIGKILL redis-server and the server back to back: nobody says goodbye."""
        assert self.proc is not None
        first = self.redis_pid()
        os.kill(first, signal.SIGKILL)
        self.proc.kill()
        self.proc.wait(10)
        # On a loaded machine the server's supervisor may have restarted redis-server
        # between the two kills: a power cut takes that one too (else it runs on).
        pids = {first, *redis_servers_on(self.data_dir)}
        for pid in pids - {first}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        while any(pid_running(pid) for pid in pids):  # not our children: poll until
            time.sleep(0.01)  # they are gone (or zombies)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def redis_servers_on(data_dir: Path) -> list[int]:
    """The pids of the redis-servers running on ``data_dir`` (Linux's /proc)."""
    folder = data_dir.resolve()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"redis-server" in cmdline and serves_folder(int(entry.name), cmdline, folder):
                found.append(int(entry.name))
    return found


@dataclass
class Racer:
    """What one racer knows: every action the server acknowledged, in order."""

    name: str
    token: str = ""
    acked: list[str] = field(default_factory=list)
    pending: str | None = None  # sent, no reply yet
    game: Game = field(default_factory=lambda: Game.from_code(DEAL))
    rng: random.Random = field(default_factory=random.Random)

    def next_action(self) -> str | None:
        moves = list(self.game.legal_moves())
        if moves:
            return str(self.rng.choice(moves))
        if self.game.redeals_left > 0:
            return "redeal"
        return None

    def apply(self, action: str) -> None:
        if action == "redeal":
            self.game.redeal()
        else:
            self.game.play(action)


async def race_until_cancelled(client: WsClient, code: str, racer: Racer) -> None:
    """Act as fast as acknowledgements come; record each acknowledged action."""
    while (action := racer.next_action()) is not None:
        seq = len(racer.acked) + 1
        racer.pending = action
        reply = await client.act(code, seq, action)
        if isinstance(reply, p.Ack) and reply.seq == seq:
            racer.acked.append(action)
            racer.pending = None
            racer.apply(action)
        elif isinstance(reply, p.Error) and reply.code == "internal_error":
            continue  # Redis is away: the same seq again (idempotent)
        elif isinstance(reply, p.Error) and reply.code == "rate_limited":
            await asyncio.sleep(0.1)  # dropped (the error carries the act's id): again
        else:
            raise AssertionError(f"unexpected reply {reply}")


class RoomLost(Exception):
    """The restarted server does not know the room: every acknowledged action is lost."""

    def __init__(self, acked: int) -> None:
        super().__init__(f"the room is gone: {acked} acknowledged actions lost")
        self.acked = acked


@dataclass
class CutResult:
    acked_before: int  # acknowledged actions of all racers, cumulative, at the cut
    acked_this_round: int
    lost: int  # acknowledged but not stored after the restart
    unacked_stored: int  # in flight at the cut, stored although never acknowledged
    view_mismatches: int


async def check_after_restart(
    session: aiohttp.ClientSession, url: str, code: str, racers: list[Racer]
) -> tuple[list[WsClient], int, int, int]:
    """Rejoin every racer; count lost acks, stored in-flight actions, view mismatches."""
    clients, lost, unacked_stored, mismatches = [], 0, 0, 0
    for racer in racers:
        client = await open_client(session, url, token=racer.token)
        clients.append(client)
        snap = await client.call(p.Join(room=code, as_="racer"))
        if isinstance(snap, p.Error) and snap.code == "room_not_found":
            raise RoomLost(sum(len(r.acked) for r in racers))
        assert isinstance(snap, p.RoomSnapshot), snap
        stored = snap.you["last_seq"]
        if stored < len(racer.acked):
            lost += len(racer.acked) - stored
            del racer.acked[stored:]
            racer.game = replay(DEAL, racer.acked)
        elif stored == len(racer.acked) + 1 and racer.pending is not None:
            unacked_stored += 1
            racer.acked.append(racer.pending)
            racer.apply(racer.pending)
        elif stored != len(racer.acked):
            raise AssertionError(f"{racer.name}: stored {stored}, acked {len(racer.acked)}")
        racer.pending = None
        if snap.you["game"] != racer.game.view().to_wire():
            mismatches += 1
    return clients, lost, unacked_stored, mismatches


async def new_race(clients: list[WsClient], racers: list[Racer]) -> str:
    """A new room of DEAL with every racer seated, started; each racer's game afresh."""
    code: str = (await clients[0].create(deal=DEAL, seats=len(clients))).room["code"]
    for client in clients[1:]:
        await client.join(code)
    assert isinstance(await clients[0].call(p.Start(room=code)), p.Ok)
    await clients[0].event("countdown")
    while (await clients[0].join(code)).room["phase"] != "racing":
        await asyncio.sleep(0.05)
    for racer in racers:
        racer.acked, racer.pending, racer.game = [], None, Game.from_code(DEAL)
    return code


async def run(
    cuts: int,
    racer_count: int,
    data_dir: Path,
    seed: int | None,
    min_s: float = 0.3,
    max_s: float = 1.5,
) -> list[CutResult]:
    rng = random.Random(seed)
    server = EmbeddedServer(data_dir)
    server.start()
    results: list[CutResult] = []
    try:
        async with aiohttp.ClientSession() as session:
            racers = [Racer(f"R{i}", rng=random.Random(rng.random())) for i in range(racer_count)]
            clients = [await open_client(session, server.ws_url, name=r.name) for r in racers]
            for racer, client in zip(racers, clients, strict=True):
                racer.token = client.token
            code = await new_race(clients, racers)
            total_before = 0
            for _ in range(cuts):
                if any(r.next_action() is None for r in racers):  # a game is over
                    total_before += sum(len(r.acked) for r in racers)
                    code = await new_race(clients, racers)
                before = sum(len(r.acked) for r in racers)
                tasks = [
                    asyncio.create_task(race_until_cancelled(c, code, r))
                    for c, r in zip(clients, racers, strict=True)
                ]
                await asyncio.sleep(rng.uniform(min_s, max_s))  # a random moment mid-race
                acked = sum(len(r.acked) for r in racers)
                server.power_cut()
                for outcome in await asyncio.gather(*tasks, return_exceptions=True):
                    if not isinstance(outcome, (type(None), ConnectionError, TimeoutError)):
                        raise outcome  # a refusal the harness did not expect
                acked = max(acked, sum(len(r.acked) for r in racers))
                for client in clients:
                    await client.close()
                server.start()
                try:
                    clients, lost, unacked, mismatches = await check_after_restart(
                        session, server.ws_url, code, racers
                    )
                except RoomLost as gone:
                    results.append(
                        CutResult(total_before + acked, acked - before, gone.acked, 0, 0)
                    )
                    return results
                results.append(
                    CutResult(total_before + acked, acked - before, lost, unacked, mismatches)
                )
            for client in clients:
                await client.close()
    finally:
        server.stop()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cuts", type=int, default=5)
    parser.add_argument("--racers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--data-dir", default=None, help="default: a fresh temporary folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crescent-power-cut-") as tmp:
        data_dir = Path(args.data_dir or Path(tmp) / "redis")
        results = asyncio.run(run(args.cuts, args.racers, data_dir, args.seed))
    print(
        f"power cuts (SIGKILL of server and embedded redis-server together), "
        f"{args.racers} racers, embedded Redis with appendfsync always"
    )
    print(
        f"{'cut':>3} {'acked (total)':>14} {'acked (round)':>14} {'lost':>5} "
        f"{'in flight, kept':>16} {'view mismatch':>14}"
    )
    for i, r in enumerate(results, 1):
        print(
            f"{i:>3} {r.acked_before:>14} {r.acked_this_round:>14} {r.lost:>5} "
            f"{r.unacked_stored:>16} {r.view_mismatches:>14}"
        )
    lost = sum(r.lost for r in results)
    print(f"acknowledged actions lost: {lost} of {results[-1].acked_before if results else 0}")
    return 1 if lost or any(r.view_mismatches for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
