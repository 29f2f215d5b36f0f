"""The tournament parts of the ``crescent`` command (docs/client.md, "Tournaments").

    crescent bot --server ws://127.0.0.1:8080/ws --tournament TK7PQ2X [--name Bot]
    crescent tournament create --name Friday --rounds 3 --time-limit 300
    crescent tournament start|open|close|pause|resume|end TK7PQ2X --token TOKEN
    crescent tournament remove TK7PQ2X PLAYER_ID --token TOKEN
    crescent tournament show TK7PQ2X
    crescent tournament export TK7PQ2X --format csv --output friday.csv

The bot registers as a player, plays every round it is seated in with the greedy
strategy and exits when the tournament finishes, printing the final standings. The
host's commands each open a connection with the host's token (``--token`` or the
``CRESCENT_TOKEN`` environment variable; ``create`` prints it), send one request and
exit. ``export`` fetches the server's JSON or CSV export over HTTP.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, TextIO

from crescent_client.client import CrescentClient, connect
from crescent_client.display import (
    round_results_table,
    standings_table,
    tournament_summary,
)
from crescent_client.errors import ClientError, RequestFailed
from crescent_client.play import play_game, say
from crescent_client.tournaments import TournamentState

TOKEN_ENV = "CRESCENT_TOKEN"

# `crescent tournament OP CODE` → the `t_host` op it sends.
HOST_OPS = {
    "start": "start_round",
    "open": "open_registration",
    "close": "close_registration",
    "pause": "pause",
    "resume": "resume",
    "end": "end",
    "remove": "remove",
}


# ------------------------------------------------------------------------------ the bot


async def run_tournament_bot(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """``crescent bot --tournament CODE``: register, play each seated round, print the
    final standings. Exit status 0 when the tournament finished, 1 when this player
    was removed or withdrew on the way."""
    async with connect(args.server, name=args.name, token=args.token) as client:
        state = await client.join_tournament(args.tournament, as_="player")
        say(
            out,
            f"{client.player.get('name')} registered in tournament {state.code} "
            f'"{state.data.get("name", "")}" ({state.status}, round {state.round} of '
            f"{state.rounds})",
        )
        outcome = await play_tournament(client, state, out, args)
        if outcome != "finished":
            say(out, f"no longer playing: {outcome}")
            return 1
        final = await client.standings(state.code)
        say(out, standings_table(final.rows, final=final.final))
    return 0


async def play_tournament(
    client: CrescentClient,
    state: TournamentState,
    out: TextIO,
    args: argparse.Namespace,
) -> str:
    """Play every round this player is seated in until the tournament finishes.

    Returns ``finished``, ``removed`` or ``withdrawn``."""
    done: set[int] = set()  # rounds played or found not to be ours

    def next_step() -> bool:
        if state.finished or state.status in ("removed", "withdrawn"):
            return True
        seated = state.seated_room()
        return seated is not None and seated[1] not in done

    while True:
        await client.wait_until(next_step, timeout=args.wait)
        if state.finished:
            return "finished"
        if state.status in ("removed", "withdrawn"):
            return str(state.status)
        seated = state.seated_room()
        assert seated is not None
        code, round_ = seated
        done.add(round_)
        try:
            room = await client.join(code, as_="racer")
        except RequestFailed as err:
            # Registered during this round's countdown or race: the next round is ours.
            say(out, f"round {round_}: not seated ({err.code}); waiting for the next round")
            continue
        if room.role != "racer":
            say(out, f"round {round_}: not seated; waiting for the next round")
            client.forget_room(code)
            continue
        say(out, f"round {round_}: seated in room {code}")
        await client.wait_for_start(code, timeout=args.wait)
        summary = await play_game(client, room, out, verbose=args.verbose, pace=args.pace)
        say(
            out,
            f"round {round_}: game over: {summary['status']}, {summary['foundation']}/104 "
            f"cards on the foundations, {summary['moves']} moves "
            f"({summary['acked']} actions acknowledged, {summary['refused']} refused)",
        )
        client.forget_room(code)


# ------------------------------------------------------------------------------ the host


def http_base(ws_url: str) -> str:
    """The server's HTTP address from its WebSocket URL.

    >>> http_base("ws://127.0.0.1:8080/ws"), http_base("wss://race.example.org/ws")
    ('http://127.0.0.1:8080', 'https://race.example.org')
    """
    parts = urllib.parse.urlsplit(ws_url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urllib.parse.urlunsplit((scheme, parts.netloc, "", "", ""))


def export(ws_url: str, code: str, fmt: str) -> bytes:
    """``GET /api/tournaments/{code}.{fmt}``: the export's bytes; an unknown code
    raises ``RequestFailed`` with the server's code."""
    url = f"{http_base(ws_url)}/api/tournaments/{urllib.parse.quote(code.upper())}.{fmt}"
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            body: bytes = resp.read()
            return body
    except urllib.error.HTTPError as err:
        with err:  # it holds the response's socket
            body = err.read()
        try:
            info = json.loads(body or b"{}")
        except ValueError:
            info = {}
        raise RequestFailed(
            str(info.get("code") or f"http_{err.code}"), str(info.get("message") or err.reason)
        ) from None


async def run_tournament(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """``crescent tournament OP …`` (the host's terminal; ``show`` and ``export`` for anyone)."""
    if args.op == "export":
        data = export(args.server, args.code, args.format)
        if args.output:
            with open(args.output, "wb") as f:
                f.write(data)
            say(out, f"wrote {len(data)} bytes to {args.output}")
        else:
            out.write(data.decode("utf-8"))
            out.flush()
        return 0
    if not args.token:
        args.token = os.environ.get(TOKEN_ENV) or None
    if args.token is None and args.op in HOST_OPS:
        raise ClientError("no_token", f"the host's token is needed: --token or {TOKEN_ENV}")
    name = args.name if args.op == "create" else None  # a name with a token renames
    async with connect(args.server, name=name, token=args.token) as client:
        if args.op == "create":
            state = await client.create_tournament(
                args.title,
                rounds=args.rounds,
                time_limit=args.time_limit,
                max_players=args.max_players,
                deals=args.deal or None,
                variant=args.variant,
                scoring=args.scoring,
            )
            if args.join:
                state = await client.join_tournament(state.code, as_="player")
            link = state.data.get("link") or f"/t/{state.code}"
            say(out, f"tournament {state.code}  link {link}")
            say(out, f"token {client.token}")
            say(out, f"(host commands: export {TOKEN_ENV}=<token>, or pass --token <token>)")
            return 0
        if args.op == "show":
            state = await client.tournament(args.code)
            say(out, tournament_summary(state))
            rows = (await client.standings(state.code)).rows if args.all else state.standings
            say(out, standings_table(rows, final=state.finished, ids=args.all))
            return 0
        code = args.code.upper()
        await client.host(code, HOST_OPS[args.op], getattr(args, "player", None))
        say(out, f"{args.op}: ok")
        if args.op == "start" and args.wait_end:
            await _wait_round_end(client, code, out, args.wait)
    return 0


async def _wait_round_end(client: CrescentClient, code: str, out: TextIO, wait: float) -> None:
    """After ``start``: follow the round to its end and print its results."""
    state = await client.join_tournament(code, as_="spectator")
    round_ = state.round
    say(out, f"round {round_} under way; waiting for its end")
    await client.wait_until(
        lambda: state.current is None or int(state.current.get("round", 0)) != round_,
        timeout=wait,
    )
    results = await client.tournament_results(code, round_)
    say(out, round_results_table(results.round, results.deal, list(results.rows)))
    say(out, standings_table(state.standings, final=state.finished))


# ------------------------------------------------------------------------------ parsers


def add_tournament_parser(
    sub: Any,  # argparse's _SubParsersAction (a private type)
    common: Any,
) -> None:
    """``crescent tournament …``: one sub-command per host operation."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "tournament", help="create, run, show or export a tournament (a host at a terminal)"
    )
    ops = parser.add_subparsers(dest="op", required=True)

    def host_common(p: argparse.ArgumentParser, default_name: str | None = None) -> None:
        common(p, default_name)

    create = ops.add_parser("create", help="create a tournament; prints its code and your token")
    host_common(create, "Host")
    create.add_argument("title", help="the tournament's name (1-40 characters)")
    create.add_argument("--rounds", type=int, required=True, help="1-20")
    create.add_argument("--time-limit", type=int, required=True, help="seconds per round")
    create.add_argument("--max-players", type=int, default=200, help="2-200 (default 200)")
    create.add_argument(
        "--deal",
        action="append",
        help="a round's deal code; repeat once per round (default: random deals)",
    )
    create.add_argument("--variant", default="N", choices=("N", "F", "O", "R"))
    create.add_argument("--scoring", default="placement", choices=("placement", "time"))
    create.add_argument("--join", action="store_true", help="register the host as a player too")

    _add_operations(ops, host_common)
    remove = ops.add_parser("remove", help="remove a player (who cannot rejoin)")
    host_common(remove)
    remove.add_argument("code", help="tournament code")
    remove.add_argument("player", help="the player's id (see `show --all`)")

    show = ops.add_parser("show", help="the tournament's state and standings")
    host_common(show)
    show.add_argument("code", help="tournament code")
    show.add_argument(
        "--all", action="store_true", help="every standings row with player ids (not the top 10)"
    )

    exp = ops.add_parser("export", help="the JSON or CSV export (HTTP)")
    host_common(exp)
    exp.add_argument("code", help="tournament code")
    exp.add_argument("--format", default="json", choices=("json", "csv"))
    exp.add_argument("--output", "-o", help="file to write (default: standard output)")


def _add_operations(ops: Any, host_common: Any) -> None:
    """The host operations that take only the tournament's code (``start`` also waits)."""
    for op, what in (
        ("start", "start the next round"),
        ("open", "open registration"),
        ("close", "close registration"),
        ("pause", "pause between rounds"),
        ("resume", "resume after a pause"),
        ("end", "end the tournament now (a running round is ended and scored)"),
    ):
        p = ops.add_parser(op, help=what)
        host_common(p)
        p.add_argument("code", help="tournament code, e.g. TK7PQ2X")
        if op == "start":
            p.add_argument(
                "--wait-end",
                "--follow",
                action="store_true",
                help="stay until the round ends and print its results",
            )
            p.add_argument("--wait", type=float, default=7500.0, help="seconds to wait at most")
