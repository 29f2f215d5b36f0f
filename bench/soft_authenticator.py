"""A software authenticator: real WebAuthn registration (attestation ``none`` or
``packed`` self-attestation) and authentication responses, signed with an EC P-256 key
made by ``cryptography``, in the JSON form browsers send (PublicKeyCredential.toJSON).

Every field a test wants to get wrong (origin, rp id, challenge, counter, ceremony type,
user presence) can be overridden per call."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url

UP, UV, BE, BS, AT = 0x01, 0x04, 0x08, 0x10, 0x40


def _b64(data: bytes) -> str:
    return bytes_to_base64url(data)


@dataclass
class SoftAuthenticator:
    """One passkey. ``counting``: a counter moving on with each assertion (security
    keys); else 0 every time (synced passkeys)."""

    origin: str
    rp_id: str
    counting: bool = True
    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    credential_id: bytes = field(default_factory=lambda: os.urandom(16))
    sign_count: int = 0
    user_handle: bytes = b""

    @property
    def id(self) -> str:
        return _b64(self.credential_id)

    def cose_key(self) -> bytes:
        numbers = self.key.public_key().public_numbers()
        return cbor2.dumps(
            {
                1: 2,
                3: -7,
                -1: 1,
                -2: numbers.x.to_bytes(32, "big"),
                -3: numbers.y.to_bytes(32, "big"),
            }
        )

    def _sign(self, data: bytes) -> bytes:
        return self.key.sign(data, ec.ECDSA(hashes.SHA256()))

    def _client_data(self, kind: str, challenge: str, origin: str | None) -> bytes:
        return json.dumps(
            {
                "type": kind,
                "challenge": challenge,
                "origin": origin if origin is not None else self.origin,
                "crossOrigin": False,
            }
        ).encode()

    def register(
        self,
        options: str,
        *,
        fmt: str = "none",
        origin: str | None = None,
        rp_id: str | None = None,
        challenge: str | None = None,
        kind: str = "webauthn.create",
        flags: int = UP | UV | BE | BS | AT,
    ) -> dict[str, Any]:
        """The response to ``navigator.credentials.create(options)``."""
        parsed = json.loads(options)
        self.user_handle = base64url_to_bytes(parsed["user"]["id"])
        client_data = self._client_data(kind, challenge or parsed["challenge"], origin)
        attested = (
            bytes(16) + struct.pack(">H", len(self.credential_id)) + self.credential_id
        ) + self.cose_key()
        auth_data = self._auth_data(rp_id, flags, self.sign_count) + attested
        statement: dict[str, Any] = {}
        if fmt == "packed":
            signed = auth_data + hashlib.sha256(client_data).digest()
            statement = {"alg": -7, "sig": self._sign(signed)}
        attestation = cbor2.dumps({"fmt": fmt, "attStmt": statement, "authData": auth_data})
        return self._credential(
            {
                "clientDataJSON": _b64(client_data),
                "attestationObject": _b64(attestation),
                "transports": ["internal", "hybrid"],
            }
        )

    def authenticate(
        self,
        options: str,
        *,
        origin: str | None = None,
        rp_id: str | None = None,
        challenge: str | None = None,
        kind: str = "webauthn.get",
        sign_count: int | None = None,
        flags: int = UP | UV | BE | BS,
    ) -> dict[str, Any]:
        """The response to ``navigator.credentials.get(options)``."""
        parsed = json.loads(options)
        if sign_count is None:
            if self.counting:
                self.sign_count += 1
            sign_count = self.sign_count
        client_data = self._client_data(kind, challenge or parsed["challenge"], origin)
        auth_data = self._auth_data(rp_id, flags, sign_count)
        signature = self._sign(auth_data + hashlib.sha256(client_data).digest())
        return self._credential(
            {
                "clientDataJSON": _b64(client_data),
                "authenticatorData": _b64(auth_data),
                "signature": _b64(signature),
                "userHandle": _b64(self.user_handle),
            }
        )

    def _auth_data(self, rp_id: str | None, flags: int, sign_count: int) -> bytes:
        """The authenticator data's fixed part: RP id hash, flags, signature counter."""
        return (
            hashlib.sha256((rp_id or self.rp_id).encode()).digest()
            + bytes([flags])
            + struct.pack(">I", sign_count)
        )

    def _credential(self, response: dict[str, Any]) -> dict[str, Any]:
        """A PublicKeyCredential as JSON around an attestation or assertion response."""
        return {
            "id": self.id,
            "rawId": self.id,
            "type": "public-key",
            "response": response,
            "clientExtensionResults": {},
            "authenticatorAttachment": "platform",
        }
