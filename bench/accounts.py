"""Passkey ceremony latency (issue #23, docs/accounts.md#latency).

    .venv/bin/python bench/accounts.py                     # 300 of each, PostgreSQL too
    .venv/bin/python bench/accounts.py --rounds 100 --dsn ''   # verification only

1. Verification alone (server/core/passkeys.py, no storage): ``verify_registration``
   of a software authenticator's attestation (``none`` and ``packed``) and
   ``verify_authentication`` of its assertion, each in a loop; the median and p90.
2. The whole server side of each ceremony on the PostgreSQL adapter
   (server/core/account_flows.py over server/storage/postgres_accounts.py, a private
   schema dropped afterwards): options issued (a challenge stored), then the response
   verified and stored (challenge taken, account and passkey or counter written,
   session opened); the median of each step, the browser's part left out.
3. Recovery codes: making a set of ten (ten scrypt hashes) and checking one code.

The responses come from bench/soft_authenticator.py (EC P-256 keys made with
``cryptography``), so the figures include no browser or authenticator time.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import sys
import time
from pathlib import Path

import asyncpg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.soft_authenticator import SoftAuthenticator  # noqa: E402
from server.core import account_flows as flows  # noqa: E402
from server.core.accounts import match_recovery_code, new_recovery_codes  # noqa: E402
from server.core.passkeys import (  # noqa: E402
    RelyingParty,
    authentication_options,
    registration_options,
    verify_authentication,
    verify_registration,
)
from server.storage.postgres_accounts import connect  # noqa: E402

ORIGIN = "http://localhost:8080"
RP = RelyingParty("localhost", "Crescent Race", (ORIGIN,))
LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
T0 = 1_800_000_000_000


def figures(name: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    print(f"{name:<44} median {statistics.median(ordered):8.3f} ms   p90 {p90:8.3f} ms")


def since(start: float) -> float:
    """Milliseconds since ``start`` (a time.perf_counter() reading)."""
    return (time.perf_counter() - start) * 1000


def verification_only(rounds: int) -> None:
    for fmt in ("none", "packed"):
        samples = []
        for _ in range(rounds):
            authenticator = SoftAuthenticator(ORIGIN, RP.id)
            player = secrets.token_hex(8)
            options, challenge = registration_options(
                RP, player_id=player, user_name="bench", now=T0
            )
            response = authenticator.register(options, fmt=fmt)
            start = time.perf_counter()
            verify_registration(RP, response, challenge, player_id=player, now=T0)
            samples.append(since(start))
        figures(f"verify_registration ({fmt} attestation)", samples)
    authenticator = SoftAuthenticator(ORIGIN, RP.id)
    options, challenge = registration_options(RP, player_id="p" * 16, user_name="b", now=T0)
    passkey = verify_registration(
        RP, authenticator.register(options), challenge, player_id="p" * 16, now=T0
    )
    samples = []
    for _ in range(rounds):
        options, challenge = authentication_options(RP, now=T0)
        response = authenticator.authenticate(options, sign_count=passkey.sign_count + 1)
        start = time.perf_counter()
        verify_authentication(RP, response, challenge, passkey, now=T0)
        samples.append(since(start))
    figures("verify_authentication", samples)


async def with_postgres(dsn: str, rounds: int) -> None:
    schema = f"accounts_bench_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(dsn)
    await admin.execute(f"create schema {schema}")
    store = await connect(dsn, max_size=4, server_settings={"search_path": schema})
    steps: dict[str, list[float]] = {
        "start_account (options + challenge stored)": [],
        "finish_account (verify + account + session)": [],
        "start_sign_in (options + challenge stored)": [],
        "finish_sign_in (verify + counter + session)": [],
    }
    timings = iter(steps.values())
    try:
        for n in range(rounds):
            authenticator = SoftAuthenticator(ORIGIN, RP.id)
            player = secrets.token_hex(8)
            handle = f"bench{n}"
            now = T0 + n * 60_000  # past each per-address window: measure, not refuse
            address = f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"
            timings = iter(steps.values())

            start = time.perf_counter()
            options = await flows.start_account(
                store, RP, player_id=player, handle=handle, address=address, now=now
            )
            next(timings).append(since(start))
            response = authenticator.register(options)
            start = time.perf_counter()
            await flows.finish_account(
                store,
                RP,
                response,
                player_id=player,
                handle=handle,
                address=address,
                device="bench",
                now=now,
            )
            next(timings).append(since(start))

            start = time.perf_counter()
            options = await flows.start_sign_in(store, RP, address=address, now=now)
            next(timings).append(since(start))
            assertion = authenticator.authenticate(options)
            start = time.perf_counter()
            await flows.finish_sign_in(store, RP, assertion, device="bench", now=now)
            next(timings).append(since(start))
        for name, samples in steps.items():
            figures(name, samples)
    finally:
        await store.close()
        await admin.execute(f"drop schema {schema} cascade")
        await admin.close()


def recovery(rounds: int) -> None:
    made: list[float] = []
    checked: list[float] = []
    for _ in range(rounds):
        start = time.perf_counter()
        shown, stored = new_recovery_codes()
        made.append(since(start))
        start = time.perf_counter()
        match_recovery_code(shown[4], stored)
        checked.append(since(start))
    figures("new_recovery_codes (10 x scrypt)", made)
    figures("match_recovery_code (1 scrypt + 10 compares)", checked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--dsn", default=LOCAL_POSTGRES, help="'' to skip PostgreSQL")
    parser.add_argument("--recovery-rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"{args.rounds} rounds each")
    verification_only(args.rounds)
    if args.dsn:
        asyncio.run(with_postgres(args.dsn, args.rounds))
    recovery(args.recovery_rounds)


if __name__ == "__main__":
    main()
