"""CPU of the archive's record path per finished game, without Redis or PostgreSQL
(docs/archive.md, "The cost on the act path"): the put side (a 4-racer game's record
made from its stored logs and encoded for the outbox, as at each race's end) and the
drain side (the entry decoded to the ArchivedGame the archive writes). Process CPU
time, the minimum and the median of ``--repeat`` runs of ``--games`` games each (on a
busy machine the minimum is the steadier figure).

    .venv/bin/python bench/archive_record_cpu.py

It also runs from a checkout before the record path moved to
server/core/archive_records.py (the names were in server/core/outbox.py then), for an
A/B of the two: ``PYTHONPATH=<old>:<old>/wire:<old>/client python bench/archive_record_cpu.py``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from server.lobby import Room
from server.lobby.race import ResultRow
from tests.archive.games import greedy_actions

Put = Callable[[Room, Sequence[Sequence[str]]], bytes]


def record_path() -> tuple[str, Put, Callable[[bytes], Any]]:
    try:
        from server.core.archive_records import decode_record, encode_game, game_fields

        def put(room: Room, logs: Sequence[Sequence[str]]) -> bytes:
            return encode_game(game_fields(room, logs))

        return "archive_records", put, decode_record
    except ImportError:  # a checkout before archive_records.py
        from server.core import outbox as old

        def put_old(room: Room, logs: Sequence[Sequence[str]]) -> bytes:
            data: bytes = old.encode_record(old.archived_game(room, logs))  # type: ignore[attr-defined]
            return data

        return "outbox (before)", put_old, old.decode_record  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--deal", default="CR1-N-AAAAAAB")
    args = parser.parse_args()
    version, put, decode = record_path()
    players = [(f"player{i}", f"Racer {i}") for i in range(4)]
    # Greedy games (seeded, 400-1400 ms between actions), stored as the server stores
    # them: "<action>@<ms after the start>".
    logs = [[f"{a.a}@{a.t}" for a in greedy_actions(args.deal, seed)] for seed in range(4)]
    results = tuple(
        ResultRow(i + 1, p, n, "locked", 0, len(logs[i]), 10) for i, (p, n) in enumerate(players)
    )
    room = Room(
        code="KQZTRW",
        host=None,
        variant="N",
        deal=args.deal,
        deal_public=False,
        seats=4,
        time_limit=None,
        entrants=tuple(players),
        start_at=1_764_590_400_000,
        finished_at=1_764_590_500_000,
        phase="finished",
        results=results,
    )
    actions = sum(map(len, logs))
    puts, drains = [], []
    for _ in range(args.repeat):
        started = time.process_time()
        for _ in range(args.games):
            data = put(room, logs)
        middle = time.process_time()
        for _ in range(args.games):
            game = decode(data)
        puts.append((middle - started) / args.games * 1e6)
        drains.append((time.process_time() - middle) / args.games * 1e6)
    assert sum(len(r.actions) for r in game.racers) == actions
    print(
        f"{version}: a game of 4 racers, {actions} actions, {len(data):,} bytes in the outbox: "
        f"put {min(puts):.0f} µs (median {statistics.median(puts):.0f}), "
        f"drain {min(drains):.0f} µs (median {statistics.median(drains):.0f}); "
        f"{(min(puts) + min(drains)) / actions:.2f} µs per action"
    )


if __name__ == "__main__":
    main()
