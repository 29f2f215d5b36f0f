"""The accounts' HTTP routes (docs/protocol.md, "Accounts"; docs/accounts.md).

HTTP rather than WebSocket requests: the WebAuthn options and responses are JSON the
browser's ``navigator.credentials`` takes and gives as they are, and a sign-in happens
before the page has a socket. The player's token goes in ``Authorization: Bearer
<token>``; each body is a JSON object of at most :data:`MAX_BODY` bytes. Every answer is
JSON; a refusal is ``{"code": …, "message": …}`` with the status of :data:`STATUS`
(400 otherwise). The operations are :class:`server.core.account_requests.AccountRequests`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from crescent_wire.errors import AccountsError, InternalError, ServerError
from server.core.account_requests import AccountRequests, player_of_token
from server.core.accounts import AccountError

log = logging.getLogger("server.web.accounts")

MAX_BODY = 32 * 1024  # a WebAuthn response is at most 16,384 characters (docs/accounts.md)
STATUS = {
    "not_authenticated": 401,
    "bad_token": 401,
    "token_expired": 401,
    "not_signed_in": 401,
    "accounts_off": 404,
    "handle_taken": 409,
    "account_exists": 409,
    "credential_taken": 409,
    "rate_limited": 429,
    "internal_error": 503,
}

RequestsOf = Callable[[web.Request], AccountRequests]
AddressOf = Callable[[web.Request], str]


def _error(err: ServerError) -> web.Response:
    return web.json_response(
        {"code": err.code, "message": err.message}, status=STATUS.get(err.code, 400)
    )


async def _body(request: web.Request) -> dict[str, Any]:
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise AccountsError("bad_field", f"The body is over {MAX_BODY} bytes")
    raw = await request.content.read(MAX_BODY + 1)
    if len(raw) > MAX_BODY:
        raise AccountsError("bad_field", f"The body is over {MAX_BODY} bytes")
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise AccountsError("bad_field", "The body is not JSON") from None
    if not isinstance(body, dict):
        raise AccountsError("bad_field", "The body is a JSON object")
    return body


def _text(body: dict[str, Any], key: str, limit: int = 100) -> str:
    value = body.get(key)
    if not isinstance(value, str) or len(value) > limit:
        raise AccountsError("bad_field", f"{key!r} is a string of at most {limit} characters")
    return value


def _response(body: dict[str, Any]) -> dict[str, Any]:
    value = body.get("response")
    if not isinstance(value, dict):
        raise AccountsError("bad_response", "'response' is the credential's JSON object")
    return value


def _token(request: web.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def _device(request: web.Request) -> str:
    return request.headers.get("User-Agent", "")


def add_account_routes(
    router: web.UrlDispatcher, requests_of: RequestsOf, address_of: AddressOf
) -> None:
    """Add the routes; ``address_of`` is the client's address for the per-address limits
    (the peer, or behind a trusted proxy the X-Forwarded-For entry it appended)."""

    def route(
        method: str,
        path: str,
        handler: Callable[[web.Request, AccountRequests], Awaitable[Any]],
    ) -> None:
        async def answer(request: web.Request) -> web.StreamResponse:
            try:
                result = await handler(request, requests_of(request))
            except ServerError as err:
                return _error(err)
            except AccountError as err:  # a refusal the operation did not map: still coded
                return _error(AccountsError(err.code, err.message))
            except Exception:  # the database did not answer, say: a coded 503, logged
                log.exception("account request failed", extra={"path": path})
                return _error(InternalError())
            if isinstance(result, web.StreamResponse):
                return result
            return web.json_response(result, headers={"Cache-Control": "no-store"})

        router.add_route(method, path, answer)

    def player(request: web.Request, requests: AccountRequests) -> Any:
        return player_of_token(requests, _token(request))

    async def config(request: web.Request, r: AccountRequests) -> Any:
        return r.config()

    async def account_start(request: web.Request, r: AccountRequests) -> Any:
        body = await _body(request)
        options = await r.account_start(
            player(request, r), _text(body, "handle"), address_of(request)
        )
        return {"options": options}

    async def account_finish(request: web.Request, r: AccountRequests) -> Any:
        body = await _body(request)
        return await r.account_finish(
            player(request, r),
            _text(body, "handle"),
            _response(body),
            address_of(request),
            _device(request),
        )

    async def sign_in_start(request: web.Request, r: AccountRequests) -> Any:
        return {"options": await r.sign_in_start(address_of(request))}

    async def sign_in_finish(request: web.Request, r: AccountRequests) -> Any:
        body = await _body(request)
        return await r.sign_in_finish(_response(body), _device(request))

    async def passkey_start(request: web.Request, r: AccountRequests) -> Any:
        return {"options": await r.passkey_add_start(player(request, r), address_of(request))}

    async def passkey_finish(request: web.Request, r: AccountRequests) -> Any:
        body = await _body(request)
        return await r.passkey_add_finish(player(request, r), _response(body))

    async def link_code_create(request: web.Request, r: AccountRequests) -> Any:
        return await r.link_code_create(player(request, r))

    async def link_code_redeem(request: web.Request, r: AccountRequests) -> Any:
        body = await _body(request)
        return await r.link_code_redeem(
            _text(body, "code", 40), address_of(request), _device(request)
        )

    async def recovery_codes(request: web.Request, r: AccountRequests) -> Any:
        return await r.recovery_codes_renew(player(request, r))

    async def recovery_redeem(request: web.Request, r: AccountRequests) -> Any:
        body = await _body(request)
        return await r.recovery_redeem(
            _text(body, "handle"), _text(body, "code", 40), address_of(request), _device(request)
        )

    async def sessions(request: web.Request, r: AccountRequests) -> Any:
        return await r.sessions(player(request, r))

    async def session_revoke(request: web.Request, r: AccountRequests) -> Any:
        body = await _body(request)
        return await r.session_revoke(player(request, r), _text(body, "session"))

    async def me(request: web.Request, r: AccountRequests) -> Any:
        return await r.me(player(request, r))

    async def my_data(request: web.Request, r: AccountRequests) -> Any:
        data = await r.my_data(player(request, r))
        return web.json_response(
            data,
            headers={
                "Content-Disposition": 'attachment; filename="crescent-my-data.json"',
                "Cache-Control": "no-store",
            },
        )

    async def delete(request: web.Request, r: AccountRequests) -> Any:
        return await r.account_delete(player(request, r))

    async def profile(request: web.Request, r: AccountRequests) -> Any:
        found = await r.profile(request.match_info["handle"][:100])
        if found is None:
            return web.json_response(
                {"code": "no_account", "message": "No account has that handle"}, status=404
            )
        return found

    route("GET", "/api/account/config", config)
    route("POST", "/api/account/start", account_start)
    route("POST", "/api/account/finish", account_finish)
    route("POST", "/api/sign-in/start", sign_in_start)
    route("POST", "/api/sign-in/finish", sign_in_finish)
    route("POST", "/api/sign-in/link-code", link_code_redeem)
    route("POST", "/api/sign-in/recovery", recovery_redeem)
    route("POST", "/api/account/passkeys/start", passkey_start)
    route("POST", "/api/account/passkeys/finish", passkey_finish)
    route("POST", "/api/account/link-code", link_code_create)
    route("POST", "/api/account/recovery-codes", recovery_codes)
    route("GET", "/api/account/sessions", sessions)
    route("POST", "/api/account/sessions/revoke", session_revoke)
    route("GET", "/api/me", me)
    route("GET", "/api/account/data", my_data)
    route("DELETE", "/api/account", delete)
    route("GET", "/api/u/{handle}", profile)


__all__ = ["MAX_BODY", "STATUS", "add_account_routes"]
