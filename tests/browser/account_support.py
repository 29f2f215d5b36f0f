"""Helpers for the browser tests of accounts: server processes that serve passkeys
(pages loaded from ``http://localhost:PORT``: an IP address is no WebAuthn relying party
id), accounts made over HTTP with the software authenticator of tests/accounts (no
browser ceremony), and pages handed a session's token the way session.js keeps it."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp
from playwright.async_api import Page

from bench.devclient import open_client, post_json
from bench.soft_authenticator import SoftAuthenticator
from tests.support import ServerProcess, free_port, start_server_process

from .conftest import COUNTDOWN_MS, Pages

# Session labels come from the User-Agent of the request that opened them.
LAPTOP = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36"
PHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Safari/604.1"


def page_url(server: ServerProcess, path: str = "") -> str:
    """The page's address on ``localhost`` (the relying party id), not 127.0.0.1."""
    return f"http://localhost:{server.port}{path}"


@contextlib.contextmanager
def account_servers(
    prefix: str, database_url: str, count: int = 2
) -> Iterator[list[ServerProcess]]:
    """``count`` server processes on one Redis prefix and one database, each accepting
    passkeys from every one's ``http://localhost:PORT`` origin."""
    ports = [free_port() for _ in range(count)]
    origins = ",".join(f"http://localhost:{port}" for port in ports)
    env = {"CRESCENT_DATABASE_URL": database_url, "CRESCENT_ARCHIVE": "on"}
    args = ["--rp-id", "localhost", "--origins", origins]
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(
                start_server_process(
                    prefix, port, extra_env=env, extra_args=args, countdown_ms=COUNTDOWN_MS
                )
            )
            for port in ports
        ]


@dataclass
class Account:
    handle: str
    player_id: str
    authenticator: SoftAuthenticator
    sessions: list[dict[str, Any]]  # sign-in answers: token, player, handle, session


async def _post(
    http: aiohttp.ClientSession, url: str, body: dict[str, Any], token: str | None, agent: str
) -> dict[str, Any]:
    return await post_json(http, url, body, token, {"User-Agent": agent})


async def make_account(server: ServerProcess, handle: str, agent: str = LAPTOP) -> Account:
    """A guest saves their progress on ``server`` (docs/protocol.md "Accounts"): the
    account and its first session."""
    base = page_url(server)
    authenticator = SoftAuthenticator(base, "localhost")
    async with aiohttp.ClientSession() as http:
        guest = await open_client(http, server.ws_url, name=handle)
        started = await _post(
            http, f"{base}/api/account/start", {"handle": handle}, guest.token, agent
        )
        response = authenticator.register(json.dumps(started["options"]))
        made = await _post(
            http,
            f"{base}/api/account/finish",
            {"handle": handle, "response": response},
            guest.token,
            agent,
        )
        await guest.close()
    return Account(handle, made["player"]["id"], authenticator, [made])


async def sign_in(account: Account, server: ServerProcess, agent: str = PHONE) -> dict[str, Any]:
    """One more session of ``account``: its passkey, on ``server`` (from its origin)."""
    base = page_url(server)
    async with aiohttp.ClientSession() as http:
        started = await _post(http, f"{base}/api/sign-in/start", {}, None, agent)
        response = account.authenticator.authenticate(json.dumps(started["options"]), origin=base)
        signed = await _post(
            http, f"{base}/api/sign-in/finish", {"response": response}, None, agent
        )
    account.sessions.append(signed)
    return signed


# Each page records its sockets' close codes and times (window.closes): a signed-out
# session's socket is closed with 4011 (docs/protocol.md, close codes).
_RECORD_CLOSES = """
window.closes = [];
const NativeSocket = window.WebSocket;
window.WebSocket = class extends NativeSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("close", (e) => window.closes.push({ code: e.code, at: Date.now() }));
  }
};
"""


async def open_signed_in(
    pages: Pages, url: str, token: str, *, width: int = 390, height: int = 844
) -> Page:
    """A page (its own browser context) whose storage holds ``token`` as session.js keeps
    it (``crescent.token``), set once: what the page does with it afterwards stands."""
    context = await pages.browser.new_context(
        viewport={"width": width, "height": height}, locale="en-GB"
    )
    await context.add_init_script(
        "if (!sessionStorage.getItem('seeded')) {"
        f" localStorage.setItem('crescent.token', {json.dumps(token)});"
        " sessionStorage.setItem('seeded', '1'); }"
    )
    await context.add_init_script(_RECORD_CLOSES)
    return await pages.open_in(context, url)
