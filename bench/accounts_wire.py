"""Accounts over the wire: ceremony round trips through the HTTP routes and the
revocation delay across two server processes (docs/accounts.md, "Latency").

    .venv/bin/python bench/accounts_wire.py --rounds 30

Two real server processes (``python3 -m server``) on the local Redis and one
PostgreSQL (``--dsn``, a private schema made and dropped here), a software
authenticator (bench/soft_authenticator.py) answering as the page would. Client
side, per round:

- save my progress: ``POST /api/account/start`` to one process, ``/finish`` to the
  other (the options' challenge crosses processes through PostgreSQL);
- sign in: ``/api/sign-in/start`` and ``/finish``, likewise split;
- the revocation delay: a socket signed in on process B; ``POST
  /api/account/sessions/revoke`` to process A; the time from sending the request to
  the socket's close (4011) seen by the client.

Medians and p90 over ``--rounds``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.devclient import post_json
from bench.devtools import delete_prefix, launch_server_process, random_prefix
from bench.soft_authenticator import SoftAuthenticator
from crescent_wire.errors import CLOSE_SESSION_REVOKED

ORIGIN = "http://localhost:8080"  # the page's origin the authenticator writes


async def _post(
    http: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any],
    token: str | None = None,
    address: str = "10.0.0.1",
) -> dict[str, Any]:
    return await post_json(http, url, body, token, {"X-Forwarded-For": address})


async def _guest(http: aiohttp.ClientSession, ws_url: str) -> str:
    async with http.ws_connect(ws_url) as ws:
        await ws.send_bytes(msgpack.packb({"t": "hello", "versions": [1], "id": 1}))
        reply = msgpack.unpackb((await ws.receive()).data)
        return str(reply["token"])


async def run(urls: tuple[str, str], rounds: int) -> dict[str, list[float]]:
    a, b = urls
    figures: dict[str, list[float]] = {"save_progress": [], "sign_in": [], "revocation": []}

    async with aiohttp.ClientSession() as http:
        for number in range(rounds):
            authenticator = SoftAuthenticator(ORIGIN, "localhost")
            token = await _guest(http, a.replace("http", "ws") + "/ws")
            handle = f"Bench{number}_{secrets.token_hex(3)}"
            # One address a round (as many players would come from): the per-address
            # limits (3 accounts a day) stay as they are.
            address = f"10.{number // 250}.{number % 250}.1"
            started = time.perf_counter()
            options = await _post(
                http, f"{a}/api/account/start", {"handle": handle}, token, address
            )
            response = authenticator.register(json.dumps(options["options"]))
            body = {"handle": handle, "response": response}
            made = await _post(http, f"{b}/api/account/finish", body, token, address)
            figures["save_progress"].append(time.perf_counter() - started)

            started = time.perf_counter()
            options = await _post(http, f"{b}/api/sign-in/start", {}, None, address)
            response = authenticator.authenticate(json.dumps(options["options"]))
            body = {"response": response}
            signed = await _post(http, f"{a}/api/sign-in/finish", body, None, address)
            figures["sign_in"].append(time.perf_counter() - started)

            async with http.ws_connect(b.replace("http", "ws") + "/ws") as ws:
                hello = {"t": "hello", "versions": [1], "token": signed["token"], "id": 1}
                await ws.send_bytes(msgpack.packb(hello))
                welcome = msgpack.unpackb((await ws.receive()).data)
                assert welcome["t"] == "welcome", welcome
                started = time.perf_counter()
                revoke = _post(
                    http,
                    f"{a}/api/account/sessions/revoke",
                    {"session": signed["session"]},
                    made["token"],
                )
                revoking = asyncio.ensure_future(revoke)
                message = await ws.receive()
                delay = time.perf_counter() - started
                await revoking
                assert message.type == aiohttp.WSMsgType.CLOSE, message
                assert ws.close_code == CLOSE_SESSION_REVOKED, ws.close_code
                figures["revocation"].append(delay)
    return figures


def _report(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[max(0, round(0.9 * len(ordered)) - 1)]
    return f"| {name} | {statistics.median(values) * 1000:.1f} ms | {p90 * 1000:.1f} ms |"


async def _schema(dsn: str, sql: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    schema = f"bench_accounts_{secrets.token_hex(4)}"
    asyncio.run(_schema(args.dsn, f"create schema {schema}"))
    sep = "&" if "?" in args.dsn else "?"
    env = {
        "CRESCENT_DATABASE_URL": f"{args.dsn}{sep}search_path={schema}",
        "CRESCENT_ORIGINS": ORIGIN,
        "CRESCENT_COMPILED": "off",
        "CRESCENT_LOG_LEVEL": "WARNING",
        # each round comes from its own address (X-Forwarded-For), as players would
        "CRESCENT_TRUST_FORWARDED_FOR": "1",
    }
    prefix = random_prefix("bacct")
    servers = []
    try:
        for _ in range(2):
            servers.append(launch_server_process(prefix, extra_env=env))
        figures = asyncio.run(run((servers[0].http_url, servers[1].http_url), args.rounds))
    finally:
        for server in servers:
            server.terminate()
        delete_prefix(prefix)
        asyncio.run(_schema(args.dsn, f"drop schema {schema} cascade"))
    print(f"{args.rounds} rounds, two server processes, client side:")
    print("| round trip | median | p90 |")
    print("|---|---|---|")
    print(_report("save my progress (start on A, finish on B)", figures["save_progress"]))
    print(_report("sign in (start on B, finish on A)", figures["sign_in"]))
    print(_report("revocation: revoke on A to close (4011) on B", figures["revocation"]))


if __name__ == "__main__":
    main()
