"""Engine benchmark: legal_moves() calls/s and play+undo pairs/s on one core.

Run: ``python3 bench/bench_engine.py`` (options: --positions, --runs, --seed).

Positions come from random play (random legal moves, a redeal now and then)
over random deal codes of all four variants. Each figure is the median of
several timed runs over the whole position set; the process pins itself to one
CPU where the OS allows it.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

from server.game import MOVES_ALL, DealCode, Game, Move


def random_positions(count: int, rng: random.Random) -> list[Game]:
    """``count`` games snapshotted at random points of random play."""
    positions: list[Game] = []
    variants = "NFOR"
    while len(positions) < count:
        game = Game.from_code(DealCode.random(variants[len(positions) % 4], rng))
        for _ in range(rng.randrange(0, 300)):
            moves = list(game.legal_moves())
            if moves and rng.random() < 0.95:
                game.play(rng.choice(moves))
            elif game.redeals_left:
                game.redeal()
            else:
                break
        positions.append(game.copy())
    return positions


def bench_legal_moves(games: list[Game], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        for game in games:
            for _move in game.legal_moves():
                pass
    return repeat * len(games) / (time.perf_counter() - start)


def bench_naive_scan(games: list[Game], repeat: int) -> float:
    """For comparison: legal moves by checking every one of the 24 x 24 place pairs."""
    start = time.perf_counter()
    for _ in range(repeat):
        for game in games:
            for move in MOVES_ALL:
                if game.refusal(move) is None:
                    pass
    return repeat * len(games) / (time.perf_counter() - start)


def bench_play_undo(pairs: list[tuple[Game, Move]], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        for game, move in pairs:
            game.play(move)
            game.undo()
    return repeat * len(pairs) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--positions", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rng = random.Random(args.seed)
    games = random_positions(args.positions, rng)
    pairs = [(g, rng.choice(moves)) for g in games if (moves := list(g.legal_moves()))]
    counts = [sum(1 for _ in g.legal_moves()) for g in games]
    print(
        f"{len(games)} positions from random play; mean legal moves per position "
        f"{statistics.mean(counts):.2f}; {len(pairs)} with a legal move"
    )
    legal = [bench_legal_moves(games, args.repeat) for _ in range(args.runs)]
    play_undo = [bench_play_undo(pairs, args.repeat) for _ in range(args.runs)]
    naive = [bench_naive_scan(games[:200], 1) for _ in range(3)]
    print(
        f"legal_moves() calls/s (fully consumed): median {statistics.median(legal):,.0f} "
        f"(min {min(legal):,.0f}, max {max(legal):,.0f}; {args.runs} runs)"
    )
    print(
        f"  (for comparison, scanning all 576 place pairs: median "
        f"{statistics.median(naive):,.0f} positions/s)"
    )
    print(
        f"play+undo pairs/s: median {statistics.median(play_undo):,.0f} "
        f"(min {min(play_undo):,.0f}, max {max(play_undo):,.0f}; {args.runs} runs)"
    )


if __name__ == "__main__":
    main()
