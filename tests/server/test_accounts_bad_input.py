"""The accounts' HTTP routes refuse bad input with documented codes, never a crash
(docs/protocol.md, "Accounts"): on the in-memory storage (accounts in memory), and
``accounts_off`` on a server without a database."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.devclient import open_client
from server.auth import Player
from server.compose import build_parts
from server.config import Settings
from server.web import PARTS, create_app
from server.web.account_routes import MAX_BODY


@pytest.fixture
async def memory_client(aiohttp_client: Callable[..., Any]) -> Any:
    app_settings = Settings(
        storage="memory", secret=secrets.token_urlsafe(32), daily_deal="CR1-N-AAAAAAB"
    )
    return await aiohttp_client(create_app(app_settings, build_parts))


async def answer(
    client: Any, path: str, data: bytes, token: str | None = None
) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    resp = await client.post(path, data=data, headers=headers)
    return resp.status, await resp.json()


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("/api/account/start", b'{"handle": "Ada"}', 401, "not_authenticated"),
        ("/api/sign-in/finish", b"not json", 400, "bad_field"),
        ("/api/sign-in/finish", b"[1, 2]", 400, "bad_field"),
        ("/api/sign-in/finish", b'{"response": "text"}', 400, "bad_response"),
        ("/api/sign-in/finish", b'{"response": {}}', 400, "bad_response"),
        ("/api/sign-in/link-code", b'{"code": 12345678}', 400, "bad_field"),
        ("/api/sign-in/link-code", b'{"code": "0OIL"}', 400, "bad_link_code"),
        ("/api/sign-in/link-code", b'{"code": "ABCDEFGH"}', 400, "link_code_unknown"),
        ("/api/sign-in/recovery", b'{"handle": "Ada"}', 400, "bad_field"),
        ("/api/sign-in/recovery", b'{"handle": "Ada", "code": "X"}', 400, "bad_recovery_code"),
        ("/api/account/link-code", b"{}", 401, "not_authenticated"),
        ("/api/sign-in/finish", b'{"response": {}}' + b" " * MAX_BODY, 400, "bad_field"),
    ],
)
async def test_refusals_are_coded(
    memory_client: Any, path: str, body: bytes, status: int, code: str
) -> None:
    assert await answer(memory_client, path, body) == (status, {"code": code, "message": ANY})


async def test_tokens_are_checked(memory_client: Any) -> None:
    guest = await open_client(memory_client, "/ws")
    status, refused = await answer(memory_client, "/api/account/link-code", b"{}", "forged")
    assert (status, refused["code"]) == (401, "bad_token")
    status, refused = await answer(memory_client, "/api/account/link-code", b"{}", guest.token)
    assert (status, refused["code"]) == (401, "not_signed_in")  # a guest: no session
    for handle, code in (("ab", "bad_handle"), ("admin", "handle_reserved")):
        body = json.dumps({"handle": handle}).encode()
        status, refused = await answer(memory_client, "/api/account/start", body, guest.token)
        assert (status, refused["code"]) == (400, code)
    await guest.close()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=30),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
        max_leaves=12,
    ),
    path=st.sampled_from(
        ["/api/sign-in/finish", "/api/sign-in/link-code", "/api/sign-in/recovery"]
    ),
)
async def test_any_json_gets_a_coded_answer(memory_client: Any, body: Any, path: str) -> None:
    status, data = await answer(memory_client, path, json.dumps(body).encode())
    assert status in (400, 429) and set(data) == {"code", "message"}


async def test_a_server_without_a_database_has_no_accounts(client: Any) -> None:
    status, refused = await answer(client, "/api/sign-in/start", b"{}")
    assert (status, refused["code"]) == (404, "accounts_off")
    assert (await client.get("/api/u/anyone")).status == 404
    # The page asks first, and then shows nothing of accounts.
    config = await client.get("/api/account/config")
    assert (config.status, (await config.json())["code"]) == (404, "accounts_off")


async def test_the_page_learns_the_relying_party_id(memory_client: Any) -> None:
    config = await memory_client.get("/api/account/config")
    assert config.status == 200 and await config.json() == {"rp_id": "localhost"}
    assert config.headers["Cache-Control"] == "no-store"


class _Any:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(other)


ANY: Any = _Any()


async def test_a_database_fault_is_a_coded_503(
    memory_client: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    parts = memory_client.server.app[PARTS]

    async def unreachable(session_id: str) -> None:
        raise ConnectionError("the database went away")

    monkeypatch.setattr(parts.accounts, "session", unreachable)
    token = parts.signer.sign(Player("p1", "Ada", "some-session"))
    resp = await memory_client.get("/api/me", headers={"Authorization": f"Bearer {token}"})
    assert resp.status == 503 and (await resp.json())["code"] == "internal_error"
    assert "account request failed" in caplog.text
