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
from server.auth import Player
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


Handler = Callable[[web.Request, AccountRequests], Awaitable[Any]]


def _player(request: web.Request, requests: AccountRequests) -> Player:
    return player_of_token(requests, _token(request))


def _answerer(
    handler: Handler, requests_of: RequestsOf, path: str
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The aiohttp handler: the operation's answer as JSON (``no-store``), or its
    refusal coded; anything else a logged 503 ``internal_error``."""

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

    return answer


class _Ceremonies:
    """The routes that take the client's address (the per-address limits): creating an
    account, signing in, adding a passkey, redeeming a code."""

    def __init__(self, address_of: AddressOf) -> None:
        self.address_of = address_of

    async def account_start(self, request: web.Request, r: AccountRequests) -> Any:
        body = await _body(request)
        player = _player(request, r)
        return {
            "options": await r.account_start(
                player, _text(body, "handle"), self.address_of(request)
            )
        }

    async def account_finish(self, request: web.Request, r: AccountRequests) -> Any:
        body = await _body(request)
        return await r.account_finish(
            _player(request, r),
            _text(body, "handle"),
            _response(body),
            self.address_of(request),
            _device(request),
        )

    async def sign_in_start(self, request: web.Request, r: AccountRequests) -> Any:
        return {"options": await r.sign_in_start(self.address_of(request))}

    async def passkey_start(self, request: web.Request, r: AccountRequests) -> Any:
        player = _player(request, r)
        return {"options": await r.passkey_add_start(player, self.address_of(request))}

    async def link_code_redeem(self, request: web.Request, r: AccountRequests) -> Any:
        body = await _body(request)
        return await r.link_code_redeem(
            _text(body, "code", 40), self.address_of(request), _device(request)
        )

    async def recovery_redeem(self, request: web.Request, r: AccountRequests) -> Any:
        body = await _body(request)
        handle, code = _text(body, "handle"), _text(body, "code", 40)
        return await r.recovery_redeem(handle, code, self.address_of(request), _device(request))


async def _config(request: web.Request, r: AccountRequests) -> Any:
    return r.config()


async def _sign_in_finish(request: web.Request, r: AccountRequests) -> Any:
    body = await _body(request)
    return await r.sign_in_finish(_response(body), _device(request))


async def _passkey_finish(request: web.Request, r: AccountRequests) -> Any:
    body = await _body(request)
    return await r.passkey_add_finish(_player(request, r), _response(body))


async def _link_code_create(request: web.Request, r: AccountRequests) -> Any:
    return await r.link_code_create(_player(request, r))


async def _recovery_codes(request: web.Request, r: AccountRequests) -> Any:
    return await r.recovery_codes_renew(_player(request, r))


async def _sessions(request: web.Request, r: AccountRequests) -> Any:
    return await r.sessions(_player(request, r))


async def _session_revoke(request: web.Request, r: AccountRequests) -> Any:
    body = await _body(request)
    return await r.session_revoke(_player(request, r), _text(body, "session"))


async def _me(request: web.Request, r: AccountRequests) -> Any:
    return await r.me(_player(request, r))


async def _my_data(request: web.Request, r: AccountRequests) -> Any:
    data = await r.my_data(_player(request, r))
    return web.json_response(
        data,
        headers={
            "Content-Disposition": 'attachment; filename="crescent-my-data.json"',
            "Cache-Control": "no-store",
        },
    )


async def _delete(request: web.Request, r: AccountRequests) -> Any:
    return await r.account_delete(_player(request, r))


async def _profile(request: web.Request, r: AccountRequests) -> Any:
    found = await r.profile(request.match_info["handle"][:100])
    if found is None:
        return web.json_response(
            {"code": "no_account", "message": "No account has that handle"}, status=404
        )
    return found


def add_account_routes(
    router: web.UrlDispatcher, requests_of: RequestsOf, address_of: AddressOf
) -> None:
    """Add the routes; ``address_of`` is the client's address for the per-address limits
    (the peer, or behind a trusted proxy the X-Forwarded-For entry it appended)."""
    c = _Ceremonies(address_of)

    def route(method: str, path: str, handler: Handler) -> None:
        router.add_route(method, path, _answerer(handler, requests_of, path))

    route("GET", "/api/account/config", _config)
    route("POST", "/api/account/start", c.account_start)
    route("POST", "/api/account/finish", c.account_finish)
    route("POST", "/api/sign-in/start", c.sign_in_start)
    route("POST", "/api/sign-in/finish", _sign_in_finish)
    route("POST", "/api/sign-in/link-code", c.link_code_redeem)
    route("POST", "/api/sign-in/recovery", c.recovery_redeem)
    route("POST", "/api/account/passkeys/start", c.passkey_start)
    route("POST", "/api/account/passkeys/finish", _passkey_finish)
    route("POST", "/api/account/link-code", _link_code_create)
    route("POST", "/api/account/recovery-codes", _recovery_codes)
    route("GET", "/api/account/sessions", _sessions)
    route("POST", "/api/account/sessions/revoke", _session_revoke)
    route("GET", "/api/me", _me)
    route("GET", "/api/account/data", _my_data)
    route("DELETE", "/api/account", _delete)
    route("GET", "/api/u/{handle}", _profile)


__all__ = ["MAX_BODY", "STATUS", "add_account_routes"]
