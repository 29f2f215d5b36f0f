"""Accounts end to end: two server apps (two hubs, as two processes) on one real Redis
and one real PostgreSQL (a private schema), real HTTP and WebSockets, passkeys from the
software authenticator (docs/accounts.md, docs/protocol.md "Accounts").

A guest with a daily history saves their progress (an account: handle and passkey),
signs in on a "second device" (a new connection with no token) with the passkey and
finds the same player id and history; a link code works once; a recovery code works
once; signing out a session closes its socket on the other process within a second and
its token is refused at ``hello``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from bench.devclient import open_client
from bench.soft_authenticator import SoftAuthenticator
from crescent_wire import protocol as p
from crescent_wire.errors import CLOSE_SESSION_REVOKED
from server.core.archive import ArchiveBatch, ArchivedTournament, TournamentPlacing
from server.daily import ResultEntry
from server.web.app import HUB, PARTS
from tests.archive.conftest import _create_schema, _drop_schema, postgres_dsn
from tests.server.test_archive_routes import archiver_of, race

__all__ = ["postgres_dsn"]

ORIGIN = "http://localhost:8080"  # the development default for port 8080


@pytest.fixture
async def two_servers(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., object], postgres_dsn: str
) -> AsyncIterator[tuple[Any, Any]]:
    schema = await _create_schema(postgres_dsn)
    sep = "&" if "?" in postgres_dsn else "?"
    url = f"{postgres_dsn}{sep}search_path={schema}"
    first = await aiohttp_client(make_app(database_url=url, port=8080))
    second = await aiohttp_client(make_app(database_url=url, port=8080))
    yield first, second
    await first.close()
    await second.close()
    await _drop_schema(postgres_dsn, schema)


async def post(
    client: Any, path: str, body: dict[str, Any] | None = None, token: str | None = None
) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    resp = await client.post(path, json=body or {}, headers=headers)
    return resp.status, await resp.json()


async def get(client: Any, path: str, token: str | None = None) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    resp = await client.get(path, headers=headers)
    return resp.status, await resp.json()


async def hello_refused(client: Any, token: str) -> str:
    ws = await open_client(client, "/ws", hello=False)
    reply = await ws.call(p.Hello(versions=(1,), token=token))
    await ws.close()
    assert isinstance(reply, p.Error), reply
    return reply.code


async def save_progress(
    client: Any, token: str, authenticator: SoftAuthenticator, handle: str, finish_on: Any
) -> dict[str, Any]:
    status, started = await post(client, "/api/account/start", {"handle": handle}, token)
    assert status == 200, started
    response = authenticator.register(json.dumps(started["options"]))
    status, made = await post(
        finish_on, "/api/account/finish", {"handle": handle, "response": response}, token
    )
    assert status == 200, made
    return made


async def sign_in(client: Any, authenticator: SoftAuthenticator, finish_on: Any) -> dict[str, Any]:
    status, started = await post(client, "/api/sign-in/start")
    assert status == 200, started
    response = authenticator.authenticate(json.dumps(started["options"]))
    status, signed = await post(finish_on, "/api/sign-in/finish", {"response": response})
    assert status == 200, signed
    return signed


async def test_a_guest_saves_progress_and_signs_in_on_another_device(
    two_servers: tuple[Any, Any],
) -> None:
    one, two = two_servers
    authenticator = SoftAuthenticator(ORIGIN, "localhost")
    guest = await open_client(one, "/ws", name="Ada")
    player_id = guest.player["id"]
    daily = one.server.app[PARTS].daily_storage
    entry = ResultEntry("won", 95_000, 120, 104)
    assert await daily.record_result("2026-11-30", player_id, "ranked", 1, entry)

    # Save my progress: options from one process, the response to the other.
    made = await save_progress(one, guest.token, authenticator, "Ada_42", finish_on=two)
    assert made["player"]["id"] == player_id and made["handle"] == "Ada_42"
    # The guest token no longer opens the account's identity; the new one does.
    assert await hello_refused(two, guest.token) == "sign_in_required"
    first_device = await open_client(two, "/ws", token=made["token"])
    assert first_device.player["id"] == player_id

    # A second device: no token; the passkey finds the account (discoverable).
    signed = await sign_in(two, authenticator, finish_on=one)
    assert signed["player"]["id"] == player_id and signed["session"] != made["session"]
    second_device = await open_client(one, "/ws", token=signed["token"])
    assert second_device.player == {"id": player_id, "name": "Ada_42"}
    status, me = await get(two, "/api/me", signed["token"])
    assert status == 200 and me["handle"] == "Ada_42"
    assert [row["day"] for row in me["daily"]["history"]] == ["2026-11-30"]
    assert me["daily"]["best_time_ms"] == 95_000
    assert {s["id"] for s in me["sessions"]} == {made["session"], signed["session"]}

    # The public profile.
    status, profile = await get(one, "/api/u/ada_42")
    assert status == 200 and profile["handle"] == "Ada_42"
    assert profile["daily"]["days_won"] == 1
    assert "player_id" not in json.dumps(profile)
    assert (await get(one, "/api/u/nobody_here"))[0] == 404

    for ws in (guest, first_device, second_device):
        await ws.close()


async def test_link_code_and_recovery_code_work_once(two_servers: tuple[Any, Any]) -> None:
    one, two = two_servers
    authenticator = SoftAuthenticator(ORIGIN, "localhost")
    guest = await open_client(one, "/ws")
    made = await save_progress(one, guest.token, authenticator, "Linker", finish_on=one)
    await guest.close()

    status, link = await post(one, "/api/account/link-code", token=made["token"])
    assert status == 200 and len(link["code"]) == 8
    status, linked = await post(two, "/api/sign-in/link-code", {"code": link["code"].lower()})
    assert status == 200 and linked["player"]["id"] == made["player"]["id"]
    status, again = await post(one, "/api/sign-in/link-code", {"code": link["code"]})
    assert (status, again["code"]) == (400, "link_code_used")
    # The linked device adds its own passkey, then signs in with it.
    phone = SoftAuthenticator(ORIGIN, "localhost")
    status, started = await post(two, "/api/account/passkeys/start", token=linked["token"])
    assert status == 200
    response = phone.register(json.dumps(started["options"]))
    status, added = await post(
        one, "/api/account/passkeys/finish", {"response": response}, linked["token"]
    )
    assert (status, added) == (200, {"passkeys": 2})
    assert (await sign_in(one, phone, finish_on=two))["player"]["id"] == made["player"]["id"]

    status, recovery = await post(two, "/api/account/recovery-codes", token=made["token"])
    assert status == 200 and len(recovery["codes"]) == 10
    code = recovery["codes"][3]
    status, recovered = await post(one, "/api/sign-in/recovery", {"handle": "linker", "code": code})
    assert status == 200 and recovered["player"]["id"] == made["player"]["id"]
    status, refused = await post(two, "/api/sign-in/recovery", {"handle": "Linker", "code": code})
    assert (status, refused["code"]) == (400, "bad_recovery_code")
    # Requests of a signed-in device need a live session: a guest token is refused.
    stranger = await open_client(two, "/ws")
    status, denied = await post(two, "/api/account/link-code", token=stranger.token)
    assert (status, denied["code"]) == (401, "not_signed_in")
    await stranger.close()


async def test_revoking_a_session_closes_its_socket_on_the_other_process(
    two_servers: tuple[Any, Any],
) -> None:
    one, two = two_servers
    authenticator = SoftAuthenticator(ORIGIN, "localhost")
    guest = await open_client(one, "/ws")
    made = await save_progress(one, guest.token, authenticator, "Revoker", finish_on=one)
    await guest.close()
    other = await sign_in(one, authenticator, finish_on=one)
    doomed = await open_client(two, "/ws", token=other["token"])  # on the other process
    kept = await open_client(one, "/ws", token=made["token"])

    started = time.perf_counter()
    status, revoked = await post(
        one, "/api/account/sessions/revoke", {"session": other["session"]}, made["token"]
    )
    assert (status, revoked["revoked"]) == (200, [other["session"]])
    await asyncio.wait_for(doomed.closed.wait(), 1.0)
    delay = time.perf_counter() - started
    assert doomed.close_code == CLOSE_SESSION_REVOKED
    assert delay < 1.0
    assert not kept.closed.is_set()
    assert await hello_refused(two, other["token"]) == "session_revoked"
    status, denied = await get(one, "/api/me", other["token"])
    assert (status, denied["code"]) == (401, "not_signed_in")
    status, again = await post(
        two, "/api/account/sessions/revoke", {"session": other["session"]}, made["token"]
    )
    assert (status, again["code"]) == (400, "unknown_session")

    # Deleting the account ends every session: the kept socket goes too.
    kept_on_two = await open_client(two, "/ws", token=made["token"])
    status, deleted = await client_delete(two, made["token"])
    assert status == 200 and deleted["deleted"] is True
    await asyncio.wait_for(kept.closed.wait(), 1.0)
    await asyncio.wait_for(kept_on_two.closed.wait(), 1.0)
    assert kept.close_code == kept_on_two.close_code == CLOSE_SESSION_REVOKED
    assert (await get(two, "/api/u/Revoker"))[0] == 404
    # The deleted player's id stays with its past results: the old guest token is no
    # way back in, a new guest is.
    assert await hello_refused(one, guest.token) == "sign_in_required"
    fresh = await open_client(one, "/ws")
    assert fresh.player["id"] != made["player"]["id"]
    await fresh.close()
    assert one.server.app[HUB].accounts.accounts is not None


async def client_delete(client: Any, token: str) -> tuple[int, dict[str, Any]]:
    resp = await client.delete("/api/account", headers={"Authorization": f"Bearer {token}"})
    return resp.status, await resp.json()


async def test_account_creation_is_limited_per_address(two_servers: tuple[Any, Any]) -> None:
    """3 accounts a day per address (docs/accounts.md, "Limits"), counted across
    processes: the fourth, whichever process finishes it, is refused and stores nothing."""
    one, two = two_servers
    for number, server in enumerate((one, two, one)):
        guest = await open_client(server, "/ws")
        await save_progress(
            server, guest.token, SoftAuthenticator(ORIGIN, "localhost"), f"Many{number}", two
        )
        await guest.close()
    guest = await open_client(two, "/ws")
    status, started = await post(two, "/api/account/start", {"handle": "Many3"}, guest.token)
    assert status == 200
    response = SoftAuthenticator(ORIGIN, "localhost").register(json.dumps(started["options"]))
    status, refused = await post(
        one, "/api/account/finish", {"handle": "Many3", "response": response}, guest.token
    )
    assert (status, refused["code"]) == (429, "rate_limited")
    assert (await get(one, "/api/u/Many3"))[0] == 404
    player = await open_client(one, "/ws", token=guest.token)  # still a guest
    assert player.player["id"] == guest.player["id"]
    for ws in (guest, player):
        await ws.close()


async def test_the_public_profile_lists_recent_archived_games(
    two_servers: tuple[Any, Any],
) -> None:
    one, two = two_servers
    authenticator = SoftAuthenticator(ORIGIN, "localhost")
    guest = await open_client(one, "/ws")
    made = await save_progress(one, guest.token, authenticator, "Player_9", finish_on=one)
    await guest.close()
    device = await open_client(one, "/ws", token=made["token"])
    rival = await open_client(one, "/ws")
    code = await race(one, [device, rival], moves=3)
    await drained_by_either((one, two), 1)
    # A finished tournament of the player's, archived (as the tournament's end does).
    now = int(time.time() * 1000)
    standings = (
        TournamentPlacing(1, rival.player["id"], "Rival", 12),
        TournamentPlacing(2, made["player"]["id"], "Player_9", 8),
    )
    cup = ArchivedTournament("CUPCUP", "Friday cup", "N", now - 60_000, now, now, standings)
    archive = one.server.app[PARTS].archive
    assert archive is not None
    await archive.write(ArchiveBatch(tournaments=(cup,)))
    status, profile = await get(two, "/api/u/player_9")
    assert status == 200
    games = profile["recent_games"]
    assert [g["game"].split("-")[0] for g in games] == [code]
    assert games[0]["replay"].startswith("/api/games/")
    assert [(t["code"], t["name"], t["place"], t["players"]) for t in profile["tournaments"]] == [
        ("CUPCUP", "Friday cup", 2, 2)
    ]
    # Deleting the account: the profile is gone, its past results read "deleted player".
    status, deleted = await client_delete(one, made["token"])
    assert status == 200 and deleted["deleted"] is True
    assert (await get(two, "/api/u/player_9"))[0] == 404
    status, replay = await get(two, games[0]["replay"])
    names = {r["player"]: r["name"] for r in replay["racers"]}
    assert status == 200 and names[made["player"]["id"]] == "deleted player"
    assert names[rival.player["id"]] != "deleted player"
    kept = await archive.tournament("CUPCUP", now=now)
    assert kept is not None and [p.name for p in kept.standings] == ["Rival", "deleted player"]
    for ws in (device, rival):
        await ws.close()


async def drained_by_either(clients: tuple[Any, Any], games: int) -> None:
    """Wait until the two apps' drainers (either may claim a game) wrote ``games``."""
    archivers = [archiver_of(client) for client in clients]
    while sum(archiver.written for archiver in archivers) < games:
        for archiver in archivers:
            archiver.caught_up.clear()
        waits = [asyncio.ensure_future(archiver.caught_up.wait()) for archiver in archivers]
        done, pending = await asyncio.wait(waits, timeout=20, return_when=asyncio.FIRST_COMPLETED)
        for waiting in pending:
            waiting.cancel()
        assert done, "no drainer wrote the game within 20 s"


async def test_replays_and_foreign_origins_are_refused_over_http(
    two_servers: tuple[Any, Any],
) -> None:
    one, two = two_servers
    authenticator = SoftAuthenticator(ORIGIN, "localhost")
    guest = await open_client(one, "/ws")
    await save_progress(one, guest.token, authenticator, "Careful", finish_on=two)
    await guest.close()
    status, started = await post(one, "/api/sign-in/start")
    response = authenticator.authenticate(json.dumps(started["options"]))
    assert (await post(two, "/api/sign-in/finish", {"response": response}))[0] == 200
    status, replayed = await post(one, "/api/sign-in/finish", {"response": response})
    assert (status, replayed["code"]) == (400, "challenge_replayed")
    status, started = await post(two, "/api/sign-in/start")
    phished = authenticator.authenticate(
        json.dumps(started["options"]), origin="https://crescent-race.example"
    )
    status, refused = await post(one, "/api/sign-in/finish", {"response": phished})
    assert (status, refused["code"]) == (400, "wrong_origin")
