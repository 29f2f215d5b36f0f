"""``python3 -m server review``: the operator's review of daily results (docs/daily.md,
"Review of implausible times").

    .venv/bin/python -m server review list [--days 7]
    .venv/bin/python -m server review confirm 2027-01-15 PLAYER_ID
    .venv/bin/python -m server review disqualify 2027-01-15 PLAYER_ID --reason "solver-assisted"

It works on the servers' Redis (``--redis-url``/``CRESCENT_REDIS_URL``,
``--key-prefix``/``CRESCENT_KEY_PREFIX``) and tells the running servers' live boards.
Without a URL, as the server itself, it uses the embedded Redis of ``--data-dir``
(``CRESCENT_DATA_DIR``, ``var/redis``): the one ``scripts/serve`` started.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
import time
from pathlib import Path

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError

from crescent_wire.errors import InternalError
from server.core import messages
from server.core.daily import DAILY_CHANNEL
from server.core.daily_review import ReviewError, confirm, disqualify, list_reviews
from server.daily import DAY_MS, Day
from server.embedded_redis import SOCKET_NAME
from server.storage.redis_base import Keys, server_address
from server.storage.redis_daily import RedisDailyStorage


def main(argv: list[str] | None = None) -> int:
    env = os.environ
    parser = argparse.ArgumentParser(
        prog="crescent-server review", description="Review flagged daily results."
    )
    parser.add_argument("--redis-url", default=env.get("CRESCENT_REDIS_URL"))
    parser.add_argument("--data-dir", default=env.get("CRESCENT_DATA_DIR", "var/redis"))
    parser.add_argument("--key-prefix", default=env.get("CRESCENT_KEY_PREFIX", "cr"))
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help="flagged and decided results of the last days")
    listing.add_argument("--days", type=int, default=7, help="how many days back (default 7)")
    for name, text in (("confirm", "the result stands"), ("disqualify", "it leaves the board")):
        command = sub.add_parser(name, help=text)
        command.add_argument("day", help="YYYY-MM-DD")
        command.add_argument("player", help="the player's id (from the list)")
        if name == "disqualify":
            command.add_argument("--reason", required=True, help="shown to everyone")
    args = parser.parse_args(argv)
    if args.redis_url is None:
        socket = Path(args.data_dir, SOCKET_NAME).absolute()
        if not socket.exists():
            print(
                f"review: no Redis named and no embedded one running ({socket} is missing):"
                " pass --redis-url (or set CRESCENT_REDIS_URL) to the servers' Redis",
                file=sys.stderr,
            )
            return 2
        args.redis_url = f"unix://{socket}"
    try:
        return asyncio.run(run(args))
    except (ReviewError, ValueError) as exc:  # ValueError: a day not YYYY-MM-DD
        print(f"review: {exc}", file=sys.stderr)
        return 1
    except (RedisConnectionError, InternalError, OSError) as exc:  # the storage's guard
        where = server_address(args.redis_url)  # not the URL: it may hold a password
        print(f"review: cannot reach Redis at {where}: {exc}", file=sys.stderr)
        return 2


async def run(args: argparse.Namespace) -> int:
    client = aioredis.Redis.from_url(args.redis_url)
    storage = RedisDailyStorage(client, args.key_prefix)
    now = int(time.time() * 1000)
    operator = getpass.getuser()
    try:
        if args.command == "list":
            days = [str(Day.of(now - back * DAY_MS)) for back in range(max(1, args.days))]
            reviews = await list_reviews(storage, days)
            for day, player, review in reviews:
                print(
                    f"{day}  {review.state:<13} {player}  {review.name!r}  "
                    f"{review.reason}  game {review.game}"
                )
            if not reviews:
                since = "today" if len(days) == 1 else f"the last {len(days)} days"
                print(f"no result flagged for review {since}")
            return 0
        day = str(Day.parse(args.day))
        if args.command == "confirm":
            await confirm(storage, day, args.player, by=operator, now=now)
        else:
            await disqualify(storage, day, args.player, args.reason, by=operator, now=now)
        # The running servers push the day's board again to those watching it.
        changed = messages.encode(messages.DailyChanged(day=day))
        await client.publish(Keys(args.key_prefix).bus(DAILY_CHANNEL), changed)
        print(f"{args.command}: {args.player} on {day}")
        return 0
    finally:
        await client.aclose()
