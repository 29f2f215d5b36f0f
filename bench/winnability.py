"""Winnability study: the solver over random deals, in parallel over all cores.

    nice -n 10 .venv/bin/python bench/winnability.py --deals 2000 --budget-s 1.5

For each variant: the win rate with its 95% Wilson interval (unknowns counted
as losses for the lower bound and as wins for the upper bound, so the interval
holds whatever the unknown deals are), the share of deals decided (won or
proved impossible), and the time per deal (median, p95). One core per deal;
deal codes come from ``random.Random(--seed)``, so a run is reproducible up to
the time budget. Every winning line is replayed through the engine.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm  # type: ignore[import-untyped]

import server.solver
from server.game import DealCode, replay
from server.solver import compiled_available, solve

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Deal:
    variant: str
    code: str
    outcome: str
    nodes: int
    seconds: float


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def deals_for_width(rate: float, half_width: float, z: float = Z95) -> int:
    """Deals needed for a 95% interval of +-half_width at this rate (normal approx.)."""
    return math.ceil(z * z * rate * (1 - rate) / (half_width * half_width))


def solve_one(job: tuple[str, str, float, int, float, bool]) -> Deal:
    variant, code, budget, restart_nodes, greedy_share, mixed = job
    solution = solve(
        code,
        max_seconds=budget,
        restart_nodes=restart_nodes,
        greedy_share=greedy_share,
        mixed_restarts=mixed,
    )
    if solution.outcome == "won":
        assert solution.line is not None
        if replay(code, solution.line).status != "won":
            raise AssertionError(f"{code}: the solver's line does not win")
    return Deal(variant, code, solution.outcome, solution.nodes, solution.seconds)


def summarise(deals: list[Deal]) -> dict[str, Any]:
    n = len(deals)
    won = sum(d.outcome == "won" for d in deals)
    lost = sum(d.outcome == "impossible" for d in deals)
    unknown = n - won - lost
    low, _ = wilson(won, n)
    _, high = wilson(won + unknown, n)
    seconds = sorted(d.seconds for d in deals)
    p95 = seconds[min(n - 1, math.ceil(0.95 * n) - 1)] if n else 0.0
    return {
        "deals": n,
        "won": won,
        "impossible": lost,
        "unknown": unknown,
        "decided_share": (won + lost) / n if n else 0.0,
        "win_rate_low": low,
        "win_rate_high": high,
        "won_share": won / n if n else 0.0,
        "median_s": statistics.median(seconds) if n else 0.0,
        "p95_s": p95,
        "mean_nodes": statistics.fmean(d.nodes for d in deals) if n else 0.0,
    }


def report(variant: str, s: dict[str, Any], budget: float) -> str:
    return (
        f"{variant}: {s['deals']} deals, budget {budget:g} s: won {s['won']}, "
        f"impossible {s['impossible']}, unknown {s['unknown']}; "
        f"decided {100 * s['decided_share']:.1f} %; win rate 95 % interval "
        f"[{100 * s['win_rate_low']:.1f} %, {100 * s['win_rate_high']:.1f} %] "
        f"(unknowns counted both ways); time per deal median {s['median_s']:.2f} s, "
        f"p95 {s['p95_s']:.2f} s"
    )


def plot(summaries: dict[str, dict[str, Any]], budget: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = list(summaries)
    fig, (rate_ax, time_ax) = plt.subplots(1, 2, figsize=(9, 3.8))
    for i, v in enumerate(variants):
        s = summaries[v]
        low, high = 100 * s["win_rate_low"], 100 * s["win_rate_high"]
        rate_ax.bar(
            i, 100 * s["won_share"], color="tab:green", width=0.6, label="won" if i == 0 else None
        )
        rate_ax.bar(
            i,
            100 * s["unknown"] / s["deals"],
            bottom=100 * s["won_share"],
            color="tab:gray",
            width=0.6,
            label="unknown" if i == 0 else None,
        )
        rate_ax.errorbar(
            i,
            (low + high) / 2,
            yerr=(high - low) / 2,
            fmt="none",
            ecolor="black",
            capsize=8,
            label="95 % interval" if i == 0 else None,
        )
    rate_ax.set_xticks(range(len(variants)), [f"{v} (n={summaries[v]['deals']})" for v in variants])
    rate_ax.set_ylim(0, 100)
    rate_ax.set_ylabel("deals (%)")
    rate_ax.set_title("Win rate")
    rate_ax.legend(loc="lower right", fontsize=8)
    width = 0.35
    for i, v in enumerate(variants):
        s = summaries[v]
        time_ax.bar(
            i - width / 2,
            s["median_s"],
            width,
            color="tab:blue",
            label="median" if i == 0 else None,
        )
        time_ax.bar(
            i + width / 2, s["p95_s"], width, color="tab:orange", label="p95" if i == 0 else None
        )
    time_ax.axhline(budget, color="gray", linestyle="--", linewidth=1, label="budget")
    time_ax.set_xticks(range(len(variants)), variants)
    time_ax.set_ylabel("seconds per deal (one core)")
    time_ax.set_title("Time per deal")
    time_ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default="NF", help="variant letters (default NF)")
    parser.add_argument("--deals", type=int, default=2000, help="deals per variant")
    parser.add_argument("--budget-s", type=float, default=1.5, help="seconds per deal")
    parser.add_argument("--seed", type=int, default=1, help="seed of the deal codes")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--plot", type=Path, default=None, help="write the PNG here")
    parser.add_argument("--save", type=Path, default=None, help="write every deal (JSON)")
    parser.add_argument(
        "--restart-nodes",
        type=int,
        default=None,
        help="A/B: nodes of a greedy restart, times the Luby term (default "
        f"{server.solver.RESTART_NODES}); 0 for one greedy search, no restart",
    )
    parser.add_argument(
        "--greedy-share",
        type=float,
        default=None,
        help="A/B: share of the budget for the greedy search (default "
        f"{server.solver.GREEDY_SHARE})",
    )
    parser.add_argument(
        "--mixed",
        action="store_true",
        help="A/B: odd restarts run the exact search (default: all greedy)",
    )
    args = parser.parse_args()
    restart_nodes = (
        server.solver.RESTART_NODES if args.restart_nodes is None else args.restart_nodes
    )
    greedy_share = server.solver.GREEDY_SHARE if args.greedy_share is None else args.greedy_share
    if not compiled_available():
        print(
            "warning: the compiled core is not built; the Python reference is ~60x "
            "slower (run scripts/setup)",
            file=sys.stderr,
        )
    rng = random.Random(args.seed)
    mixed = args.mixed
    jobs = [
        (v, str(DealCode.random(v, rng)), args.budget_s, restart_nodes, greedy_share, mixed)
        for v in args.variants
        for _ in range(args.deals)
    ]
    print(
        f"{len(jobs)} deals ({args.deals} per variant {', '.join(args.variants)}), "
        f"budget {args.budget_s:g} s each, {args.workers} workers, seed {args.seed}, "
        f"restarts of {restart_nodes} nodes x Luby ({'mixed' if mixed else 'greedy'}), "
        f"restart share {greedy_share}",
        file=sys.stderr,
    )
    began = time.monotonic()
    results: list[Deal] = []
    with multiprocessing.Pool(args.workers) as pool:
        for deal in tqdm(
            pool.imap_unordered(solve_one, jobs), total=len(jobs), unit="deal", smoothing=0.05
        ):
            results.append(deal)
    wall = time.monotonic() - began
    summaries = {v: summarise([d for d in results if d.variant == v]) for v in args.variants}
    for v, s in summaries.items():
        print(report(v, s, args.budget_s))
        half = 50 * (s["win_rate_high"] - s["win_rate_low"])
        unknown_share = 100 * s["unknown"] / s["deals"]
        print(
            f"   interval +-{half:.1f} pp; the unknowns alone ({unknown_share:.1f} % of the "
            f"deals) keep it that wide at any sample size; deals for +-2 pp "
            f"were every deal decided at the won share: "
            f"{deals_for_width(s['won_share'], 0.02)}"
        )
    print(f"wall {wall / 60:.1f} min for {len(jobs)} deals with {args.workers} workers")
    if args.save:
        args.save.write_text(
            json.dumps(
                {
                    "budget_s": args.budget_s,
                    "seed": args.seed,
                    "summaries": summaries,
                    "deals": [asdict(d) for d in results],
                },
                indent=1,
            )
        )
    if args.plot:
        plot(summaries, args.budget_s, args.plot)
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
