"""``crescent``: a greedy bot and a terminal watcher for Crescent Race.

    crescent bot   --server ws://127.0.0.1:8080/ws --room K7PQ2X [--name Bot]
    crescent bot   --server ws://127.0.0.1:8080/ws --solo          # create, start, play alone
    crescent bot   --server ws://… --create --seats 4              # create, wait for others
    crescent watch --server ws://127.0.0.1:8080/ws --room K7PQ2X [--follow]
    crescent bot   --server ws://… --tournament TK7PQ2X               # play a tournament
    crescent tournament create|start|open|close|pause|resume|remove|end|show|export …

The bot joins (or creates) a room, says ready, waits for the start, plays its game to
the end with crescent_client.strategy.GreedyStrategy, then prints the results when
the race is over. The watcher joins as a spectator and redraws a progress table. Tournaments: see
crescent_client.tournament_cli.
Exit status: 0 done, 2 an error (printed as ``error <code>: <message>``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any, TextIO

from crescent_client.client import Disconnected, Reconnected, connect
from crescent_client.display import progress_table, results_table
from crescent_client.errors import ClientError
from crescent_client.play import play_game, say
from crescent_client.tournament_cli import (
    add_tournament_parser,
    run_tournament,
    run_tournament_bot,
)
from crescent_wire.protocol import Event, Progress

DEFAULT_SERVER = "ws://127.0.0.1:8080/ws"


async def run_bot(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    async with connect(args.server, name=args.name, token=args.token) as client:
        if args.room:
            room = await client.join(args.room, as_="racer")
        else:
            room = await client.create_room(
                variant=args.variant, deal=args.deal, seats=args.seats, time_limit=args.time_limit
            )
            say(out, f"room {room.code}  link {room.settings.get('link') or '/r/' + room.code}")
        say(out, f"{client.player.get('name')} seated in room {room.code} as {room.role}")
        if room.phase == "waiting":
            await client.ready(room.code)
            if args.solo:
                await client.start(room.code)
        await client.wait_for_start(room.code, timeout=args.wait)
        say(out, f"race started (round {room.round})")
        summary = await play_game(client, room, out, verbose=args.verbose, pace=args.pace)
        say(
            out,
            "game over: {status}, {foundation}/104 cards on the foundations, "
            "{moves} moves ({acked} actions acknowledged, {refused} refused)".format(**summary),
        )
        if args.no_results:
            return 0
        await client.wait_until(lambda: room.phase == "finished", timeout=args.wait)
        say(out, results_table(room))
    return 0


async def run_watch(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    fancy = out.isatty()
    async with connect(args.server, name=args.name, token=args.token) as client:
        room = await client.join(args.room, as_="spectator")
        last_text = ""
        last_drawn = 0.0
        reported_round = 0

        def draw(force: bool = False) -> None:
            nonlocal last_text, last_drawn
            text = progress_table(room, client.server_now())
            now = time.monotonic()
            if not force and (text == last_text or now - last_drawn < args.interval):
                return
            last_text, last_drawn = text, now
            say(out, ("\x1b[H\x1b[2J" if fancy else "") + text + ("" if fancy else "\n"))

        draw(force=True)
        async for event in client.events():
            if isinstance(event, Disconnected):
                say(out, f"(connection lost, code {event.close_code}; reconnecting)")
            elif isinstance(event, Reconnected):
                say(out, "(reconnected)")
            elif isinstance(event, Event | Progress):
                draw(force=isinstance(event, Event))
            if room.phase == "finished" and room.round != reported_round:
                reported_round = room.round
                draw(force=True)
                say(out, results_table(room))
                if not args.follow:
                    return 0
    return 0


def board_table(board: dict[str, Any]) -> str:
    """A daily board as text: the top rows, then the rows around the player."""

    def row(r: dict[str, Any]) -> str:
        result = (
            f"{r['time_ms'] / 1000:8.1f} s"
            if r["status"] == "won"
            else f"{r['foundation']:4d}/104 "
        )
        return f"{r['rank']:6d}  {r['name'][:24]:24s}  {r['status']:9s} {result} {r['moves']:5d}"

    lines = [
        f"daily {board['day']} ({board['board']}): {board['count']} played"
        f" (+{board['late_count']} new identities ranked apart)",
        "  rank  name                      status    result    moves",
    ]
    lines += [row(r) for r in board["top"]]
    if board["around"] and board["you"] and board["you"]["rank"] > len(board["top"]):
        lines.append("   ...")
        lines += [row(r) for r in board["around"]]
    if board["you"]:
        lines.append(f"you: rank {board['you']['rank']} of {board['count']}")
    return "\n".join(lines)


DAY_NOT_READY_FIRST_WAIT_S = 2.0  # docs/protocol.md: retry after about 2 s,
DAY_NOT_READY_MAX_WAIT_S = 30.0  # doubling the wait up to 30 s
DAY_NOT_READY_GIVE_UP_S = 180.0


async def daily_when_ready(client: Any, out: TextIO) -> dict[str, Any]:
    """``daily``, retried as docs/protocol.md says while the server is still
    certifying today's deal (``day_not_ready``, usually for seconds after its first start)."""
    wait = DAY_NOT_READY_FIRST_WAIT_S
    give_up = time.monotonic() + DAY_NOT_READY_GIVE_UP_S
    while True:
        try:
            info: dict[str, Any] = await client.daily()
            return info
        except ClientError as err:
            if err.code != "day_not_ready" or time.monotonic() + wait > give_up:
                raise
        say(out, f"today's challenge is being prepared; asking again in {wait:g} s")
        await asyncio.sleep(wait)
        wait = min(wait * 2, DAY_NOT_READY_MAX_WAIT_S)


async def run_daily(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    async with connect(args.server, name=args.name, token=args.token) as client:
        info = await daily_when_ready(client, out)
        today = info["today"]
        say(
            out,
            f"daily {today['day']} (variant {today['variant']}), commitment {today['commitment']}",
        )
        if args.play:
            room = await client.daily_start(practice=args.practice)
            say(out, f"{'practice' if args.practice else 'ranked attempt'}: room {room.code}")
            await client.wait_for_start(room.code, timeout=60)
            summary = await play_game(client, room, out, verbose=args.verbose, pace=args.pace)
            say(out, "game over: {status}, {foundation}/104 cards, {moves} moves".format(**summary))
            await client.wait_until(lambda: room.phase == "finished", timeout=60)
            # The server puts the finished attempt on the board just after the race
            # ends; no event says so to this connection: ask until it is there.
            deadline = time.monotonic() + 10
            while (await client.daily())["you"].get("result") is None:
                if time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
        board = await client.daily_board(day=args.day, top=args.top, late=args.late)
        say(out, board_table(board))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crescent", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_bot_parser(sub)
    add_watch_parser(sub)
    add_daily_parser(sub)
    add_tournament_parser(sub, common)
    return parser


def common(p: argparse.ArgumentParser, default_name: str | None) -> None:
    """The options every sub-command has: the server and who this client is."""
    p.add_argument("--server", default=DEFAULT_SERVER, help="WebSocket URL of the server")
    p.add_argument("--name", default=default_name, help="display name")
    p.add_argument("--token", help="token of an earlier session (same player)")


def add_bot_parser(sub: Any) -> None:  # argparse's _SubParsersAction (a private type)
    bot = sub.add_parser("bot", help="join or create a room and play a game to its end")
    common(bot, "Bot")
    where = bot.add_mutually_exclusive_group(required=True)
    where.add_argument("--room", help="join code of the room to join")
    where.add_argument("--create", action="store_true", help="create a room and wait for racers")
    where.add_argument(
        "--solo", action="store_true", help="create a room and start it at once, racing alone"
    )
    where.add_argument(
        "--tournament",
        help="code of a tournament: register, play every round, print the final standings",
    )
    bot.add_argument("--seats", type=int, default=2, help="seats of a created room (2-8)")
    bot.add_argument("--variant", default="N", choices=("N", "F", "O", "R"))
    bot.add_argument("--deal", help="deal code of a created room, e.g. CR1-N-AAAAAAB")
    bot.add_argument("--time-limit", type=int, help="seconds (30-7200) for a created room")
    bot.add_argument(
        "--wait",
        type=float,
        default=3600.0,
        help="seconds to wait for the start and for the results",
    )
    bot.add_argument(
        "--no-results",
        action="store_true",
        help="exit when the own game ends, without waiting for the others",
    )
    bot.add_argument("--verbose", "-v", action="store_true", help="print every action")
    bot.add_argument(
        "--pace", type=float, default=0.0, help="seconds to wait before each action (default: none)"
    )


def add_watch_parser(sub: Any) -> None:
    watch = sub.add_parser("watch", help="spectate a room: live progress table in the terminal")
    common(watch, "Watcher")
    watch.add_argument("--room", required=True, help="join code of the room")
    watch.add_argument(
        "--follow", action="store_true", help="keep watching after the results (rematches)"
    )
    watch.add_argument(
        "--interval", type=float, default=0.5, help="least seconds between two redraws"
    )


def add_daily_parser(sub: Any) -> None:
    daily = sub.add_parser("daily", help="the daily challenge's board; --play: a bot plays it")
    common(daily, "Bot")
    daily.add_argument("--play", action="store_true", help="play today's attempt first (a bot)")
    daily.add_argument("--practice", action="store_true", help="with --play: a practice game")
    daily.add_argument("--day", help="the board of this day (YYYY-MM-DD; default today)")
    daily.add_argument("--top", type=int, default=10, help="rows from the top (0-100)")
    daily.add_argument(
        "--late",
        action="store_true",
        help="the board of identities created after the day went live",
    )
    daily.add_argument("--verbose", "-v", action="store_true", help="print every action")
    daily.add_argument("--pace", type=float, default=0.0, help="seconds before each action")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "solo", False) or getattr(args, "create", False):
        args.room = None
    runner = {
        "bot": run_tournament_bot if getattr(args, "tournament", None) else run_bot,
        "watch": run_watch,
        "daily": run_daily,
        "tournament": run_tournament,
    }[args.command]
    try:
        return asyncio.run(runner(args))
    except ClientError as err:
        print(f"error {err.code}: {err.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except OSError as err:
        print(f"error connection_failed: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
