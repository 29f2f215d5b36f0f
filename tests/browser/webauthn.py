"""Chromium's virtual authenticator, through the DevTools protocol's WebAuthn domain, for
the account pages' browser tests: a platform authenticator (CTAP2, internal transport)
with resident keys and user verification, which says yes at once
(``automaticPresenceSimulation``), as a phone's or a laptop's built-in one would after
the person confirms. Each page (tab) has its own: one device each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from playwright.async_api import CDPSession, Page

OPTIONS = {
    "protocol": "ctap2",
    "transport": "internal",
    "hasResidentKey": True,
    "hasUserVerification": True,
    "isUserVerified": True,
    "automaticPresenceSimulation": True,
}


@dataclass
class VirtualAuthenticator:
    """One page's authenticator: its DevTools session and its id."""

    cdp: CDPSession
    id: str

    async def credentials(self) -> list[dict[str, Any]]:
        """The passkeys it holds (id, rpId, userHandle, signCount, isResidentCredential)."""
        answer = await self.cdp.send("WebAuthn.getCredentials", {"authenticatorId": self.id})
        credentials: list[dict[str, Any]] = answer["credentials"]
        return credentials

    async def remove(self) -> None:
        """Take it away (the device is gone): the page has no authenticator after this."""
        await self.cdp.send("WebAuthn.removeVirtualAuthenticator", {"authenticatorId": self.id})


async def add_virtual_authenticator(page: Page) -> VirtualAuthenticator:
    """Give ``page`` a virtual platform authenticator (WebAuthn.enable, then
    WebAuthn.addVirtualAuthenticator with :data:`OPTIONS`)."""
    cdp = await page.context.new_cdp_session(page)
    await cdp.send("WebAuthn.enable")
    answer = await cdp.send("WebAuthn.addVirtualAuthenticator", {"options": OPTIONS})
    return VirtualAuthenticator(cdp, str(answer["authenticatorId"]))
