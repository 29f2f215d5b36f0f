"""Two server set-ups under bench/load.py at the same time: CPU per acked action, A against B.

    .venv/bin/python bench/load_pair.py --a CRESCENT_ARCHIVE=off \\
        --b CRESCENT_ARCHIVE=on --b CRESCENT_ARCHIVE_WRITER=process --rounds 3

On this shared machine a run's CPU per action moves by 10-40 % from one minute to the
next with the neighbours' load (docs/archive.md, "The cost on the act path"), far more
than a change worth measuring. So the two set-ups are not run one after the other but
side by side: each round starts two ``bench/load.py`` race phases at once (each its own
server, its own load generator, ``--racers`` racers), so both see the same machine, and
the figure is the ratio B / A of the same round; the sides swap every round (A's
server started first, then B's) and the median of the rounds' ratios is printed.

Each side gets a fresh PostgreSQL schema (made before its run and dropped after), so the
two never share a table: in ``--database-url``, or, without it, in an embedded
PostgreSQL started for the run in a temporary folder (server/embedded_postgres.py, as
the server starts one). ``--a-dir`` or
``--b-dir`` runs that side's bench/load.py (and so its server) from another checkout,
e.g. an older commit extracted with ``git archive`` and its ``build/`` copied in.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: the server package from this checkout
from bench.devtools import race_command  # noqa: E402
from server.embedded_postgres import EmbeddedPostgres  # noqa: E402


@dataclass(frozen=True)
class Side:
    name: str
    env: list[str]  # KEY=VALUE for the server
    root: Path  # the checkout whose bench/load.py (and server) runs


def load_command(side: Side, args: argparse.Namespace, schema: str, out: Path) -> list[str]:
    env = list(side.env)
    sep = "&" if "?" in args.database_url else "?"
    env.append(f"CRESCENT_DATABASE_URL={args.database_url}{sep}search_path={schema}")
    command = [
        *race_command(
            racers=args.racers, warmup=args.warmup, duration=args.duration, root=side.root
        ),
        "--json",
        str(out),
    ]
    for item in env:
        command += ["--server-env", item]
    return command


async def run_side(side: Side, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    schema = f"pair_{secrets.token_hex(4)}"
    conn = await asyncpg.connect(args.database_url)
    try:
        await conn.execute(f"create schema {schema}")
        proc = await asyncio.create_subprocess_exec(
            *load_command(side, args, schema, out),
            cwd=side.root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _, stderr = await proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"{side.name}: bench/load.py failed:\n{stderr.decode()[-2000:]}")
        archived = await conn.fetchval(
            "select count(*) from information_schema.tables "
            "where table_schema = $1 and table_name = 'archive_games'",
            schema,
        )
        games = (
            await conn.fetchval(f"select count(*) from {schema}.archive_games")
            if archived
            else None
        )
    finally:
        await conn.execute(f"drop schema if exists {schema} cascade")
        await conn.close()
    result: dict[str, Any] = json.loads(out.read_text())
    result["archived_games"] = games
    return result


def figures(result: dict[str, Any]) -> tuple[float, float, float | None]:
    head = result["headline"]
    return (
        float(head["server_cpu_us_per_action"]),
        float(result["race"]["p99_ms"]),
        head.get("archive_writer_cpu_us_per_action"),
    )


async def main_async(args: argparse.Namespace) -> int:
    a = Side("A", args.a, Path(args.a_dir or REPO))
    b = Side("B", args.b, Path(args.b_dir or REPO))
    print(f"A: {' '.join(a.env) or '(defaults)'}  [{a.root}]")
    print(f"B: {' '.join(b.env) or '(defaults)'}  [{b.root}]")
    print(f"{args.racers} racers a side, {args.duration:.0f} s windows, both sides at once")
    ratios, rows = [], []
    with tempfile.TemporaryDirectory(prefix="load-pair-") as tmp:
        for n in range(args.rounds):
            first, second = (a, b) if n % 2 == 0 else (b, a)
            outs = {s.name: Path(tmp) / f"{n}-{s.name}.json" for s in (a, b)}
            done = await asyncio.gather(
                run_side(first, args, outs[first.name]),
                run_side(second, args, outs[second.name]),
            )
            by_side = {first.name: done[0], second.name: done[1]}
            (a_us, a_p99, _), (b_us, b_p99, b_writer) = figures(by_side["A"]), figures(by_side["B"])
            ratios.append(b_us / a_us)
            rows.append(by_side)
            writer = f", B's archive writer {b_writer:.2f} µs" if b_writer is not None else ""
            print(
                f"  round {n + 1}: CPU per acked action A {a_us:.1f} µs, B {b_us:.1f} µs "
                f"(B/A {b_us / a_us:.3f}){writer}; ack p99 A {a_p99:.0f} ms, B {b_p99:.0f} ms; "
                f"archived games A {by_side['A']['archived_games']}, "
                f"B {by_side['B']['archived_games']}",
                flush=True,
            )
    print(
        f"B / A, CPU per acked action: median {statistics.median(ratios):.3f} "
        f"(rounds {', '.join(f'{r:.3f}' for r in ratios)})"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"ratios": ratios, "rounds": rows}, indent=1))
    return 0


def run_with_database(args: argparse.Namespace) -> int:
    if args.database_url:
        return asyncio.run(main_async(args))
    folder = Path(tempfile.mkdtemp(prefix="crescent-load-pair-"))
    folder.chmod(0o755)  # reachable by the user PostgreSQL runs as under root
    embedded = EmbeddedPostgres(folder / "postgres")
    try:
        embedded.start()
        args.database_url = embedded.url
        return asyncio.run(main_async(args))
    finally:
        embedded.stop()
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--b", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--a-dir", help="run side A from this checkout")
    parser.add_argument("--b-dir", help="run side B from this checkout")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--racers", type=int, default=300, help="racers a side")
    parser.add_argument("--warmup", type=float, default=8.0)
    parser.add_argument("--duration", type=float, default=40.0)
    parser.add_argument(
        "--database-url",
        help="a PostgreSQL where a schema a side is made and dropped (default: an "
        "embedded one, started for the run)",
    )
    parser.add_argument("--json", help="also write every round's figures here")
    return run_with_database(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
