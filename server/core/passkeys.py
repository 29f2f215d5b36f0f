"""The WebAuthn ceremonies, sans I/O, through py_webauthn (docs/accounts.md#ceremonies).

Registration (a new passkey) and authentication (signing in with one) each take two
steps: the server issues options holding a fresh :class:`~server.core.accounts.Challenge`
(kept by the caller: :meth:`Accounts.issue_challenge`), the browser answers with the
authenticator's response, and the server verifies it against the challenge it took back
(:meth:`Accounts.take_challenge`: single use). Each refusal is an
:class:`~server.core.accounts.AccountError` with a precise code, checked here before the
library's own verification (whose errors are plain messages): a malformed response
``bad_response``; the wrong ceremony ``wrong_ceremony``; a challenge that is not the one
taken ``unknown_challenge``, or past its expiry ``challenge_expired``; ``wrong_origin``;
``wrong_rp_id``; ``user_not_present``; an unknown credential ``unknown_credential``; a
counter that goes back ``sign_count_regressed``; then the signature (``bad_signature``)
or attestation (``bad_attestation``) as py_webauthn verifies them.

Nothing here stores anything: a verification returns a value to store, and a refusal
returns nothing. :mod:`server.core.account_flows` strings the steps together with the
:class:`~server.core.accounts.Accounts` port.

Policy: discoverable credentials (resident keys) required, so a passkey signs in with
no handle typed and the browser can offer it in autofill; user verification preferred
(required would shut out security keys without a PIN); attestation ``none`` (who made
the authenticator is not our business), though a ``packed`` self-attestation verifies.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import (
    base64url_to_bytes,
    bytes_to_base64url,
    parse_attestation_object,
    parse_authentication_credential_json,
    parse_authenticator_data,
    parse_client_data_json,
    parse_registration_credential_json,
)
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AttestationConveyancePreference,
    AuthenticationCredential,
    AuthenticatorData,
    AuthenticatorSelectionCriteria,
    ClientDataType,
    CollectedClientData,
    PublicKeyCredentialDescriptor,
    RegistrationCredential,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)
from webauthn.helpers.structs import (
    AuthenticatorTransport as LibraryTransport,
)

from server.core.accounts import (
    CHALLENGE_TTL_MS,
    Ceremony,
    Challenge,
    Passkey,
    Transport,
    refuse,
)

CHALLENGE_BYTES = 32
MAX_RESPONSE_CHARS = 16_384  # a response longer than this is refused before parsing
# What a response may be: the JSON text the browser's PublicKeyCredential.toJSON() gives,
# or that JSON decoded.
Response = str | Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RelyingParty:
    """The server as WebAuthn sees it. ``id`` is the registrable domain passkeys are
    bound to (``crescent.example``, or ``localhost``); ``origins`` every origin the pages
    are served from (``https://crescent.example``; ``http://localhost:8080`` in
    development). Behind a TLS proxy both are the public name, not the backend's."""

    id: str
    name: str
    origins: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.id or not self.origins:
            raise ValueError("a relying party needs an id and at least one origin")


@dataclass(frozen=True, slots=True)
class Assertion:
    """A verified authentication: store ``sign_count`` for ``credential_id``."""

    credential_id: str
    player_id: str
    sign_count: int
    user_verified: bool
    backed_up: bool


def _new_challenge(ceremony: Ceremony, player_id: str | None, now: int) -> Challenge:
    return Challenge(
        value=bytes_to_base64url(secrets.token_bytes(CHALLENGE_BYTES)),
        ceremony=ceremony,
        player_id=player_id,
        issued_at=now,
        expires_at=now + CHALLENGE_TTL_MS,
    )


def _challenge_bytes(challenge: Challenge) -> bytes:
    return base64url_to_bytes(challenge.value)


def registration_options(
    rp: RelyingParty,
    *,
    player_id: str,
    user_name: str,
    existing: Sequence[Passkey] = (),
    now: int,
) -> tuple[str, Challenge]:
    """Options for ``navigator.credentials.create()`` (JSON, for
    ``PublicKeyCredential.parseCreationOptionsFromJSON``) and the challenge to keep.
    The WebAuthn user id is the player id (random, not personal); ``existing`` passkeys
    are excluded so one authenticator is not registered twice."""
    challenge = _new_challenge(Ceremony.REGISTER, player_id, now)
    options = generate_registration_options(
        rp_id=rp.id,
        rp_name=rp.name,
        user_name=user_name,
        user_id=player_id.encode(),
        user_display_name=user_name,
        challenge=_challenge_bytes(challenge),
        timeout=CHALLENGE_TTL_MS,
        attestation=AttestationConveyancePreference.NONE,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.REQUIRED,
            user_verification=UserVerificationRequirement.PREFERRED,
        ),
        exclude_credentials=[_descriptor(p) for p in existing],
    )
    return options_to_json(options), challenge


def authentication_options(rp: RelyingParty, *, now: int) -> tuple[str, Challenge]:
    """Options for ``navigator.credentials.get()`` with no allow list (discoverable
    credentials: the authenticator offers the passkeys it holds for ``rp.id``)."""
    challenge = _new_challenge(Ceremony.AUTHENTICATE, None, now)
    options = generate_authentication_options(
        rp_id=rp.id,
        challenge=_challenge_bytes(challenge),
        timeout=CHALLENGE_TTL_MS,
        user_verification=UserVerificationRequirement.PREFERRED,
    )
    return options_to_json(options), challenge


def _descriptor(passkey: Passkey) -> PublicKeyCredentialDescriptor:
    return PublicKeyCredentialDescriptor(
        id=base64url_to_bytes(passkey.credential_id),
        transports=[LibraryTransport(str(t)) for t in passkey.transports],
    )


# --- reading a response


def _loaded(response: Response) -> dict[str, Any]:
    if isinstance(response, str):
        if len(response) > MAX_RESPONSE_CHARS:
            raise refuse("bad_response", "the response is too long")
        try:
            response = json.loads(response)
        except ValueError:
            raise refuse("bad_response", "the response is not JSON") from None
    if not isinstance(response, Mapping):
        raise refuse("bad_response", "the response is not an object")
    return dict(response)


def _registration(response: Response) -> RegistrationCredential:
    try:
        return parse_registration_credential_json(_loaded(response))
    except (WebAuthnException, ValueError, TypeError, KeyError) as exc:
        raise refuse("bad_response", f"not a registration response: {exc}") from None


def _authentication(response: Response) -> AuthenticationCredential:
    try:
        return parse_authentication_credential_json(_loaded(response))
    except (WebAuthnException, ValueError, TypeError, KeyError) as exc:
        raise refuse("bad_response", f"not an authentication response: {exc}") from None


def _client_data(raw: bytes) -> CollectedClientData:
    try:
        return parse_client_data_json(raw)
    except Exception as exc:  # the library raises whatever json and its own checks raise
        raise refuse("bad_response", f"clientDataJSON is malformed: {exc}") from None


def response_challenge(response: Response) -> str:
    """The challenge a response answers (base64url), to take back from storage before
    verifying; ``bad_response`` if there is none to read."""
    loaded = _loaded(response)
    inner = loaded.get("response")
    raw = inner.get("clientDataJSON") if isinstance(inner, Mapping) else None
    if not isinstance(raw, str):
        raise refuse("bad_response", "the response has no clientDataJSON")
    try:
        data = base64url_to_bytes(raw)
    except ValueError:
        raise refuse("bad_response", "clientDataJSON is not base64url") from None
    return bytes_to_base64url(_client_data(data).challenge)


def response_credential_id(response: Response) -> str:
    """The credential id an authentication response names (base64url)."""
    return bytes_to_base64url(_authentication(response).raw_id)


def _check_client_data(
    rp: RelyingParty,
    client_data: CollectedClientData,
    challenge: Challenge,
    ceremony: Ceremony,
    *,
    now: int,
) -> None:
    expected_type = (
        ClientDataType.WEBAUTHN_CREATE
        if ceremony is Ceremony.REGISTER
        else ClientDataType.WEBAUTHN_GET
    )
    if client_data.type != expected_type or challenge.ceremony is not ceremony:
        raise refuse(
            "wrong_ceremony",
            f"a {client_data.type} response to a {challenge.ceremony} challenge"
            f" in a {ceremony} ceremony",
        )
    if not hmac.compare_digest(client_data.challenge, _challenge_bytes(challenge)):
        raise refuse("unknown_challenge", "the response answers another challenge")
    if now >= challenge.expires_at:
        raise refuse("challenge_expired", "the challenge has expired")
    if client_data.origin not in rp.origins:
        raise refuse("wrong_origin", f"origin {client_data.origin!r} is not this server's")


def _check_authenticator_data(rp: RelyingParty, auth_data: AuthenticatorData) -> None:
    if not hmac.compare_digest(auth_data.rp_id_hash, hashlib.sha256(rp.id.encode()).digest()):
        raise refuse("wrong_rp_id", "the credential is for another relying party")
    if not auth_data.flags.up:
        raise refuse("user_not_present", "the authenticator saw no user")


def verify_registration(
    rp: RelyingParty,
    response: Response,
    challenge: Challenge,
    *,
    player_id: str,
    now: int,
) -> Passkey:
    """The new passkey a registration response makes, verified against ``challenge``
    (taken back from storage), for ``player_id`` (whom the challenge was issued to)."""
    credential = _registration(response)
    client_data = _client_data(credential.response.client_data_json)
    _check_client_data(rp, client_data, challenge, Ceremony.REGISTER, now=now)
    if challenge.player_id != player_id:
        raise refuse("unknown_challenge", "the challenge was issued to another player")
    try:
        attestation = parse_attestation_object(credential.response.attestation_object)
    except Exception as exc:  # CBOR and structure errors of every kind
        raise refuse("bad_attestation", f"attestationObject is malformed: {exc}") from None
    _check_authenticator_data(rp, attestation.auth_data)
    try:
        verified = verify_registration_response(
            credential=credential,
            expected_challenge=_challenge_bytes(challenge),
            expected_rp_id=rp.id,
            expected_origin=list(rp.origins),
        )
    except WebAuthnException as exc:
        raise refuse("bad_attestation", str(exc)) from None
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise refuse("bad_attestation", f"attestation not verifiable: {exc}") from None
    transports = tuple(
        Transport(str(t.value))
        for t in credential.response.transports or ()
        if str(t.value) in Transport.__members__.values()
    )
    return Passkey(
        credential_id=bytes_to_base64url(verified.credential_id),
        player_id=player_id,
        public_key=verified.credential_public_key,
        sign_count=verified.sign_count,
        transports=transports,
        created_at=now,
        backed_up=verified.credential_backed_up,
    )


def verify_authentication(
    rp: RelyingParty,
    response: Response,
    challenge: Challenge,
    passkey: Passkey | None,
    *,
    now: int,
) -> Assertion:
    """Verify an authentication response against ``challenge`` (taken back) and the
    stored ``passkey`` of the credential it names (None: unknown)."""
    credential = _authentication(response)
    client_data = _client_data(credential.response.client_data_json)
    _check_client_data(rp, client_data, challenge, Ceremony.AUTHENTICATE, now=now)
    credential_id = bytes_to_base64url(credential.raw_id)
    if passkey is None or passkey.credential_id != credential_id:
        raise refuse("unknown_credential", "no account has this passkey")
    user_handle = credential.response.user_handle
    if user_handle and user_handle != passkey.player_id.encode():
        raise refuse("unknown_credential", "the passkey names another account")
    try:
        auth_data = parse_authenticator_data(credential.response.authenticator_data)
    except Exception as exc:
        raise refuse("bad_response", f"authenticatorData is malformed: {exc}") from None
    _check_authenticator_data(rp, auth_data)
    if counter_went_back(passkey.sign_count, auth_data.sign_count):
        raise refuse(
            "sign_count_regressed",
            f"the counter went from {passkey.sign_count} to {auth_data.sign_count}:"
            " a cloned authenticator, or a replay",
        )
    try:
        verified = verify_authentication_response(
            credential=credential,
            expected_challenge=_challenge_bytes(challenge),
            expected_rp_id=rp.id,
            expected_origin=list(rp.origins),
            credential_public_key=passkey.public_key,
            credential_current_sign_count=passkey.sign_count,
        )
    except WebAuthnException as exc:
        raise refuse("bad_signature", str(exc)) from None
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise refuse("bad_signature", f"signature not verifiable: {exc}") from None
    return Assertion(
        credential_id=credential_id,
        player_id=passkey.player_id,
        sign_count=verified.new_sign_count,
        user_verified=verified.user_verified,
        backed_up=verified.credential_backed_up,
    )


def counter_went_back(stored: int, received: int) -> bool:
    """WebAuthn §7.2 step 21: when either counter is non-zero, the received one must be
    greater than the stored one (synced passkeys send 0 every time: no check then).

    >>> counter_went_back(0, 0), counter_went_back(5, 6), counter_went_back(5, 5)
    (False, False, True)
    """
    return (stored > 0 or received > 0) and received <= stored
