"""CPU per action of the server's own Python on the act path, without sockets or Redis.

A hub over the in-memory storage (as in tests/server/core), rooms of 4 racers playing
recorded greedy games through ``Hub.act_now`` (the act fast path: decode, decide,
apply, queue the append, ack with the VIEW once stored) and the progress flush every
``--flush-every`` rounds of acts (progress frames to the 4 racers). Prints the process
CPU time per acknowledged action, the median and the minimum of ``--repeat`` runs (on
a busy machine the minimum is the steadier figure: other work only adds to it). It
leaves out what ``bench/load.py`` measures besides: sockets, aiohttp's frame parsing,
Redis and its pipelines, the event loop. It A/Bs changes to the Python on the act path
(e.g. ``CRESCENT_COMPILED``) in seconds:

    .venv/bin/python bench/act_cpu.py
    CRESCENT_COMPILED=off .venv/bin/python bench/act_cpu.py

The garbage collector is tuned as the server tunes it (``server.__main__.tune_gc``:
start-up objects frozen, thresholds ``GC_THRESHOLDS``); ``--gc default`` keeps Python's
defaults, under which the collector took about half of ``Hub.act_now``'s samples here
and made a change that allocates fewer objects look 30 % faster than it is in the
server (docs/performance.md, "CPU per action: levers").
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

# Run as a script: the repository's root on the path, for bench._support.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._support import ManualClock, connect, racing_room, start_hub
from crescent_client.strategy import GreedyStrategy
from crescent_wire import protocol as p
from server import compiled
from server.__main__ import tune_gc
from server.core import wire_server
from server.lobby import RacerGame
from server.storage.memory import MemoryStorage


def recorded_game(deal: str) -> list[str]:
    """The accepted actions of the greedy strategy's game of ``deal``."""
    racer, strategy, actions = RacerGame.new(deal), GreedyStrategy(), []
    while (action := strategy.next_action(racer.view().to_wire())) is not None:
        if racer.apply(action, elapsed_ms=0) is None:
            actions.append(action)
    return actions


async def run(rooms: int, flush_every: int, deal: str, actions: list[str]) -> tuple[float, int]:
    clock = ManualClock()
    hub = await start_hub(MemoryStorage(), clock)
    try:
        seats = []
        for r in range(rooms):
            conns = [await connect(hub, f"r{r}p{i}") for i in range(4)]
            code = await racing_room(hub, clock, conns, deal=deal)
            seats += [(conn, code) for conn in conns]
        acks = 0

        def respond(frame: bytes) -> None:
            nonlocal acks
            acks += 1

        # The clients' frames, encoded before the clock starts (the server's part only).
        frames = [
            [
                p.encode_client(p.Act(room=code, seq=step + 1, action=action, id=step + 1))
                for _, code in seats
            ]
            for step, action in enumerate(actions)
        ]
        for (conn, _), data in zip(seats, frames[0], strict=True):
            # the first act loads each game into memory (the slow path), unmeasured
            msg = wire_server.decode_act(data)
            assert msg is not None
            await hub.handle(conn, msg)
        started = time.process_time()
        for step, row in enumerate(frames[1:], start=1):
            for (conn, _), data in zip(seats, row, strict=True):
                msg = wire_server.decode_act(data)
                assert msg is not None and hub.act_now(conn, msg, respond)
            await asyncio.sleep(0)  # the appends are stored, the acks go out
            clock.advance(30)
            if step % flush_every == flush_every - 1:
                await hub.progress.flush()
        spent = time.process_time() - started
        return spent, acks
    finally:
        await hub.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rooms", type=int, default=25)
    parser.add_argument("--flush-every", type=int, default=6, help="rounds of acts per flush")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--deal", default="CR1-N-AAAAAAB")
    parser.add_argument(
        "--gc",
        choices=("server", "default"),
        default="server",
        help="the collector as the server tunes it, or Python's defaults",
    )
    args = parser.parse_args()
    actions = recorded_game(args.deal)
    if args.gc == "server":
        tune_gc()
    per_action = []
    for _ in range(args.repeat):
        spent, acks = asyncio.run(run(args.rooms, args.flush_every, args.deal, actions))
        assert acks == (len(actions) - 1) * 4 * args.rooms, acks
        per_action.append(spent / acks * 1e6)
    print(
        f"compiled={'on' if compiled.active() else 'off'}  gc={args.gc}  {acks} acks per run  "
        f"CPU per acked action: median {statistics.median(per_action):.2f} µs, "
        f"min {min(per_action):.2f} µs  "
        f"(runs {', '.join(f'{x:.2f}' for x in per_action)})"
    )


if __name__ == "__main__":
    main()
