"""``python3 -m server verify GAME`` (or ``crescent-server verify``): replay an archived
game with the server's rules engine and confirm its recorded result (docs/archive.md,
"Verifying a game").

GAME is a game id (fetched from a server's ``/api/games/<id>.json``, ``--server``), a
URL of a replay, or a path to a replay file (docs/replay.md). With ``--database-url``
an id is read from the archive itself, sealed or not (the operator's review of a daily
result before its day is revealed). The Python client (``crescent``) holds no rules
engine, so verifying lives here.

Exit status: 0 every racer's result is confirmed, 1 a difference (each printed), 2 the
game could not be read (unknown id, not revealed, not a replay, server unreachable).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from server.core.archive import ArchivedGame, ArchiveError
from server.core.replay import parse_replay, verify_game

DEFAULT_SERVER = "http://127.0.0.1:8080"
MAX_DOCUMENT = 64 * 1024 * 1024  # a replay file read at most this big
SEALED_TOO = 2**62  # "now" far ahead: the archive returns sealed games as well


class Unreadable(Exception):
    """The game could not be read; the message says why."""


def read_document(game: str, server: str) -> Any:
    """The replay document GAME names: a file, a URL, or an id on ``server``."""
    path = Path(game)
    if path.is_file():
        try:
            return json.loads(path.read_bytes()[:MAX_DOCUMENT])
        except ValueError as exc:
            raise Unreadable(f"{game}: not JSON ({exc})") from None
    url = game if "://" in game else f"{server.rstrip('/')}/api/games/{game}.json"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return json.loads(response.read(MAX_DOCUMENT))
    except urllib.error.HTTPError as exc:
        try:
            body = json.loads(exc.read())
            reason = f"{body['code']}: {body['message']}"
        except (ValueError, KeyError, TypeError):
            reason = f"HTTP {exc.code}"
        raise Unreadable(f"{url}: {reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise Unreadable(f"{url}: {exc}") from None


async def read_from_database(game_id: str, database_url: str) -> ArchivedGame:
    from server.storage.postgres_archive import connect

    archive = await connect(database_url, min_size=1, max_size=1)
    try:
        game = await archive.game(game_id, now=SEALED_TOO)
    finally:
        await archive.close()
    if game is None:
        raise Unreadable(f"{game_id}: no such game in the archive")
    return game


def counted(n: int, word: str) -> str:
    """``1 racer``, ``2 racers``: the CLI speaks English, whose plural is an s here."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def report(game: ArchivedGame) -> tuple[bool, list[str]]:
    """Whether every racer's recorded result is confirmed, and the lines to print."""
    lines = [f"{game.id}: {game.kind} on {game.deal}, {counted(len(game.racers), 'racer')}"]
    confirmed = True
    for racer, verdict in zip(game.racers, verify_game(game), strict=True):
        result = racer.result
        summary = (
            f"  #{result.rank} {racer.name or racer.player} ({racer.player}): {result.status}, "
            f"{counted(result.moves, 'move')}, {counted(result.foundation, 'card')} home, "
            f"{result.time_ms} ms, {counted(len(racer.actions), 'action')}"
        )
        if verdict.ok:
            lines.append(summary + ": confirmed")
        else:
            confirmed = False
            lines.append(summary + ": NOT CONFIRMED")
            lines.extend(f"    {problem}" for problem in verdict.problems)
    return confirmed, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="crescent-server verify",
        description="Replay an archived game with the rules engine and confirm its result.",
    )
    parser.add_argument("game", help="a game id, a replay's URL, or a replay file")
    parser.add_argument(
        "--server", default=DEFAULT_SERVER, help=f"where to fetch an id (default {DEFAULT_SERVER})"
    )
    parser.add_argument(
        "--database-url",
        help="read the id from this archive database instead, sealed games included",
    )
    args = parser.parse_args(argv)
    try:
        if args.database_url:
            game = asyncio.run(read_from_database(args.game, args.database_url))
        else:
            game = parse_replay(read_document(args.game, args.server))
    except Unreadable as exc:
        print(f"cannot verify: {exc}", file=sys.stderr)
        return 2
    except ArchiveError as exc:
        print(f"cannot verify: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    confirmed, lines = report(game)
    print("\n".join(lines))
    return 0 if confirmed else 1
