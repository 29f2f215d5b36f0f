"""``crescent-solve CODE [--budget-s S] [--budget-nodes N] [--json]``.

CODE is a deal code or the path of a JSON file holding a rules.md position.
Progress goes to stderr during long searches; the result to stdout. Exit status:
0 won, 1 impossible, 2 unknown, 3 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from server.game import CrescentError

from . import solve

EXIT = {"won": 0, "impossible": 1, "unknown": 2}
BAD_INPUT = 3


def _subject(text: str) -> str | dict[str, Any]:
    path = Path(text)
    if text.endswith(".json") or path.is_file():
        loaded = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(loaded, dict):
            raise ValueError(f"{text}: expected a JSON object (a rules.md position)")
        return loaded
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="crescent-solve",
        description="Solve a Crescent deal: a winning line, a proof that none exists, "
        "or 'unknown' when the budget runs out.",
    )
    parser.add_argument("subject", metavar="CODE", help="a deal code, or a position JSON file")
    parser.add_argument(
        "--budget-s", type=float, default=10.0, help="time budget in seconds (default 10)"
    )
    parser.add_argument(
        "--budget-nodes",
        type=int,
        default=None,
        help="node budget (positions searched): deterministic results",
    )
    parser.add_argument("--engine", choices=("auto", "compiled", "python"), default="auto")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)

    def progress(nodes: int, seconds: float) -> None:
        print(f"\r{nodes:>12,} positions  {seconds:7.1f} s", end="", file=sys.stderr, flush=True)

    try:
        subject = _subject(args.subject)
        solution = solve(
            subject,
            max_nodes=args.budget_nodes,
            max_seconds=args.budget_s,
            progress=progress,
            engine=args.engine,
        )
    except (CrescentError, ValueError, OSError) as error:
        print(f"crescent-solve: {error}", file=sys.stderr)
        return BAD_INPUT
    if solution.nodes >= 1 << 17:
        print(file=sys.stderr)
    if args.json:
        print(json.dumps(solution.to_json()))
    else:
        print(
            f"{solution.code}: {solution.outcome} ({solution.nodes:,} positions, "
            f"{solution.seconds:.2f} s)"
        )
        if solution.line is not None:
            print(" ".join(solution.line))
    return EXIT[solution.outcome]


if __name__ == "__main__":
    sys.exit(main())
