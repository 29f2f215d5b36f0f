"""The account pages in Chromium (docs/browser.md, "Accounts"): passkeys from Chromium's
virtual authenticator (tests/browser/webauthn.py), two server processes on one Redis
prefix and one PostgreSQL schema (each page on its own process), the pages loaded from
``http://localhost:PORT`` (an IP address is never a relying party id; the servers run with
``--rp-id localhost`` and ``--origins`` naming both ports).

- a guest with a daily attempt saves their progress (handle, passkey, the ten recovery
  codes shown once), is signed out from elsewhere (close 4011: "You were signed out on
  this device", no reconnecting), plays on as a new guest, signs back in with the
  passkey and is the same player with the same daily state, without a reload;
- a second browser signs in with a link code and adds its own passkey; a recovery code
  works once, the second use is refused in words;
- at ``http://127.0.0.1:PORT`` the passkey buttons give way to the link-code path and
  its explanation; the dialogs are modal and axe finds nothing serious in them.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from tests.archive.conftest import _create_schema, _drop_schema, postgres_dsn
from tests.support import (
    ServerProcess,
    delete_prefix,
    free_port,
    random_prefix,
    start_server_process,
)

from .conftest import Pages
from .helpers import resign, wait_for_board
from .test_accessibility import assert_modal, serious_axe_findings
from .webauthn import add_virtual_authenticator

__all__ = ["postgres_dsn"]

NO_PASSKEYS = (
    "Passkeys need a secure connection (https or localhost); "
    "use a link code from a signed-in device."
)


@dataclass
class TwoServers:
    one: ServerProcess
    two: ServerProcess


def url(server: ServerProcess, path: str = "/", host: str = "localhost") -> str:
    return f"http://{host}:{server.port}{path}"


@pytest.fixture(scope="module")
def servers(postgres_dsn: str) -> Iterator[TwoServers]:
    """Two server processes sharing a Redis prefix and a PostgreSQL schema (made and
    dropped here), each accepting passkeys made at either one's localhost origin."""
    schema = asyncio.run(_create_schema(postgres_dsn))
    sep = "&" if "?" in postgres_dsn else "?"
    prefix = random_prefix("webacct")
    ports = [free_port()]
    while len(ports) < 2:
        port = free_port()
        if port not in ports:
            ports.append(port)
    origins = ",".join(f"http://localhost:{port}" for port in ports)
    env = {"CRESCENT_DATABASE_URL": f"{postgres_dsn}{sep}search_path={schema}"}
    args = ["--rp-id", "localhost", "--origins", origins]
    try:
        with (
            start_server_process(prefix, ports[0], env, extra_args=args) as one,
            start_server_process(prefix, ports[1], env, extra_args=args) as two,
        ):
            yield TwoServers(one, two)
    finally:
        delete_prefix(prefix)
        asyncio.run(_drop_schema(postgres_dsn, schema))


def handle(stem: str) -> str:
    return f"{stem}_{secrets.token_hex(3)}"


async def player_id(page: Page) -> str:
    """The player the page is (once welcomed)."""
    await page.wait_for_function("() => window.crescent && crescent.state.player")
    value: str = await page.evaluate("() => crescent.state.player.id")
    return value


async def api(page: Page, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """POST to an account route from the page, with its own token (as the account page,
    built apart, does)."""
    answer: dict[str, Any] = await page.evaluate(
        """async ([path, body]) => {
            const token = localStorage.getItem('crescent.token');
            const r = await fetch(path, {method: 'POST', body: JSON.stringify(body),
              headers: {'Content-Type': 'application/json', Authorization: 'Bearer ' + token}});
            return await r.json();
        }""",
        [path, body or {}],
    )
    return answer


async def save_progress(page: Page, name: str) -> list[str]:
    """Save my progress from the top bar; returns the ten recovery codes shown once."""
    await page.get_by_test_id("acct-save-top").click()
    dialog = page.get_by_test_id("acct-save-dialog")
    field = dialog.get_by_test_id("acct-handle")
    await expect(field).to_be_focused()
    # Too short: refused in words before anything is asked of the server.
    await field.fill("ab")
    await dialog.get_by_test_id("acct-create").click()
    await expect(dialog.get_by_test_id("acct-error")).to_have_text(
        "A handle has 3 to 20 letters or digits, with _ or - only between them"
    )
    await expect(field).to_be_focused()
    await field.fill(name)
    await field.press("Enter")
    codes = dialog.get_by_test_id("recovery-codes").locator("li")
    await expect(codes).to_have_count(10, timeout=20000)
    shown = [text.strip() for text in await codes.all_text_contents()]
    assert all(len(code) == 11 and code[5] == "-" for code in shown), shown
    # Closing waits for "I have saved them".
    close = dialog.get_by_test_id("codes-close")
    await expect(close).to_be_disabled()
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_visible()
    await dialog.get_by_test_id("codes-saved").check()
    await close.click()
    await expect(dialog).to_have_count(0)
    link = page.get_by_test_id("account-link")
    await expect(link).to_have_text(name)
    await expect(link).to_be_focused()
    return shown


async def test_save_progress_sign_out_and_back_in_with_the_passkey(
    servers: TwoServers, pages: Pages
) -> None:
    page = await pages.open(url(servers.one, "/daily"), name="Ada")
    authenticator = await add_virtual_authenticator(page)
    # A daily history: today's ranked attempt, given up.
    await page.get_by_test_id("daily-play").click()
    await wait_for_board(page)
    await resign(page)
    await page.get_by_test_id("to-daily").click()
    await expect(page.get_by_test_id("daily-me")).to_contain_text("1 played")
    # A guest is ranked on the guest board, and the page says why.
    await expect(page.get_by_test_id("daily-late-why")).to_contain_text(
        "The main board ranks accounts made before today"
    )
    guest = await player_id(page)

    name = handle("Ada")
    await save_progress(page, name)
    assert await player_id(page) == guest  # the same player, now an account
    assert len(await authenticator.credentials()) == 1
    await expect(page.get_by_test_id("daily-practice")).to_be_visible()

    # Signed out everywhere (as from the account page): the socket is closed with 4011
    # and the page says so, holding the connection (no reconnect with a dead token).
    revoked = await api(page, "/api/account/sessions/revoke", {"session": "all"})
    assert len(revoked["revoked"]) == 1
    signed_out = page.get_by_test_id("acct-signed-out")
    await expect(signed_out).to_contain_text("You were signed out on this device")
    await expect(signed_out.get_by_test_id("acct-signed-out-signin")).to_be_focused()
    assert await page.evaluate("() => crescent.conn.held && !crescent.conn.ws")
    # A reload with the dead token: the hello is refused, the page says the same, and holds.
    await page.reload()
    await expect(page.get_by_test_id("acct-signed-out")).to_be_visible()
    await expect(page.locator(".banner")).to_contain_text("You were signed out on this device")
    assert await page.evaluate("() => crescent.conn.held && !crescent.conn.ws")

    # Play on as a new guest: another player, no attempt today.
    await page.get_by_test_id("acct-new-guest").click()
    await expect(page.get_by_test_id("daily-play")).to_be_visible()
    assert await player_id(page) != guest
    await expect(page.get_by_test_id("acct-save-top")).to_be_visible()

    # Back in with the passkey (a browser without passkey autofill: the button), from
    # "Save progress" → "I have an account": the account's player, name and daily state,
    # without a reload.
    await page.evaluate(
        """() => { window.realConditional = PublicKeyCredential.isConditionalMediationAvailable;
                   PublicKeyCredential.isConditionalMediationAvailable = async () => false; }"""
    )
    await page.get_by_test_id("acct-save-top").click()
    await page.get_by_test_id("acct-have-account").click()
    dialog = page.get_by_test_id("acct-signin-dialog")
    await expect(dialog.get_by_test_id("acct-autofill")).to_be_hidden()
    await expect(dialog.get_by_test_id("acct-passkey")).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(page.get_by_test_id("account-link")).to_have_text(name)
    await expect(dialog).to_have_count(0)
    await expect(page.get_by_test_id("account-link")).to_be_focused()
    await expect(page.get_by_test_id("daily-practice")).to_be_visible()
    await expect(page.get_by_test_id("daily-me")).to_contain_text("1 played")
    assert await player_id(page) == guest
    assert await page.evaluate("() => crescent.state.player.name") == name

    # Signed out once more; this time the browser's passkey autofill signs in: the
    # dialog's handle field (autocomplete "username webauthn") holds a conditional
    # request, which the virtual authenticator answers with its one passkey, no click.
    await page.evaluate(
        "() => { PublicKeyCredential.isConditionalMediationAvailable = window.realConditional; }"
    )
    await api(page, "/api/account/sessions/revoke", {"session": "all"})
    await page.get_by_test_id("acct-signed-out").get_by_test_id("acct-signed-out-signin").click()
    await expect(page.get_by_test_id("account-link")).to_have_text(name)
    await expect(page.get_by_test_id("acct-signin-dialog")).to_have_count(0)
    assert await player_id(page) == guest


async def test_link_code_then_own_passkey_and_a_recovery_code_once(
    servers: TwoServers, pages: Pages, artifacts: Path
) -> None:
    first = await pages.open(url(servers.one), name="Lin")
    await add_virtual_authenticator(first)
    name = handle("Lin")
    # The download holds the codes shown.
    await first.get_by_test_id("acct-save-top").click()
    await first.get_by_test_id("acct-handle").fill(name)
    await first.get_by_test_id("acct-create").click()
    listed = first.get_by_test_id("recovery-codes").locator("li")
    await expect(listed).to_have_count(10, timeout=20000)
    codes = [text.strip() for text in await listed.all_text_contents()]
    assert await serious_axe_findings(first) == []
    await first.screenshot(path=str(artifacts / "accounts-recovery-codes.png"))
    async with first.expect_download() as download_info:
        await first.get_by_test_id("codes-download").click()
    download = await download_info.value
    assert download.suggested_filename == "crescent-recovery-codes.txt"
    saved = Path(await download.path()).read_text()
    assert name in saved and all(code in saved for code in codes)
    await first.get_by_test_id("codes-saved").check()
    await first.get_by_test_id("codes-close").click()
    account = await player_id(first)

    # A second browser, on the other process, linked by a code the first one shows.
    second = await pages.open(url(servers.two), name="Bo")
    other_device = await add_virtual_authenticator(second)
    assert await player_id(second) != account
    link = await api(first, "/api/account/link-code")
    await second.get_by_test_id("acct-signin").click()
    dialog = second.get_by_test_id("acct-signin-dialog")
    await dialog.get_by_test_id("acct-use-link").click()
    code_field = dialog.get_by_test_id("acct-link-code")
    await expect(code_field).to_be_focused()
    await code_field.fill(link["code"].lower())
    await code_field.press("Enter")
    await expect(dialog.get_by_test_id("acct-signed-in")).to_have_text(
        f"You are signed in as {name} on this device."
    )
    await expect(second.get_by_test_id("account-link")).to_have_text(name)
    assert await player_id(second) == account  # switched without a reload
    await dialog.get_by_test_id("acct-add-passkey").click()
    await expect(dialog.get_by_test_id("acct-passkey-added")).to_be_visible()
    assert len(await other_device.credentials()) == 1
    await dialog.get_by_test_id("acct-done").click()
    await expect(dialog).to_have_count(0)
    await expect(second.get_by_test_id("account-link")).to_be_focused()

    # A recovery code, on a third browser: it works once.
    async def recover(server: ServerProcess) -> Page:
        page = await pages.open(url(server), name="Rec")
        await page.get_by_test_id("acct-signin").click()
        await page.get_by_test_id("acct-use-recovery").click()
        await page.get_by_test_id("acct-recovery-handle").fill(name.upper())
        await page.get_by_test_id("acct-recovery-code").fill(codes[0].lower())
        await page.get_by_test_id("acct-recovery-submit").click()
        return page

    third = await recover(servers.two)
    await expect(third.get_by_test_id("acct-signed-in")).to_be_visible()
    await expect(third.get_by_test_id("acct-signin-dialog")).to_contain_text("used up")
    assert await player_id(third) == account
    fourth = await recover(servers.one)
    error = fourth.get_by_test_id("acct-error")
    await expect(error).to_have_text("Wrong handle or recovery code; check both and try again")
    await expect(fourth.get_by_test_id("acct-recovery-code")).to_be_focused()
    assert await player_id(fourth) != account
    await fourth.screenshot(path=str(artifacts / "accounts-recovery-refused.png"))


async def test_at_an_ip_address_the_link_code_path_replaces_passkeys(
    servers: TwoServers, pages: Pages, artifacts: Path
) -> None:
    page = await pages.open(url(servers.one, host="127.0.0.1"), width=360, height=640)
    await expect(page.get_by_test_id("acct-save-top")).to_be_visible()
    overflow = await page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"the lobby scrolls sideways by {overflow}px"
    await page.screenshot(path=str(artifacts / "accounts-lobby-360.png"), full_page=True)
    await page.get_by_test_id("acct-signin").click()
    dialog = page.get_by_test_id("acct-signin-dialog")
    await expect(dialog.get_by_test_id("acct-no-passkeys")).to_contain_text(NO_PASSKEYS)
    await expect(dialog.get_by_test_id("acct-no-passkeys")).to_contain_text("127.0.0.1")
    await expect(dialog.get_by_test_id("acct-passkey")).to_have_count(0)
    await expect(dialog.get_by_test_id("acct-use-link")).to_be_focused()
    assert await serious_axe_findings(page) == []
    await page.screenshot(path=str(artifacts / "accounts-no-passkeys-360.png"))
    await assert_modal(page, "acct-signin-dialog")
    await expect(page.get_by_test_id("acct-signin")).to_be_focused()
    # Save my progress says the same, and offers the link code.
    await page.get_by_test_id("acct-save-top").click()
    save = page.get_by_test_id("acct-save-dialog")
    await expect(save.get_by_test_id("acct-no-passkeys")).to_contain_text(NO_PASSKEYS)
    await save.get_by_test_id("acct-use-link").click()
    await expect(page.get_by_test_id("acct-link-code")).to_be_focused()
    # A code of the wrong form is refused in words, the field keeps focus.
    await page.get_by_test_id("acct-link-code").fill("ABC")
    await page.get_by_test_id("acct-link-code").press("Enter")
    await expect(page.get_by_test_id("acct-error")).to_have_text(
        "A link code has 8 letters and digits; check it and try again"
    )
    await expect(page.get_by_test_id("acct-link-code")).to_be_focused()
    assert await serious_axe_findings(page) == []
    # In Swedish, the same.
    await page.keyboard.press("Escape")
    await page.get_by_test_id("language").select_option("sv")
    await page.get_by_test_id("acct-signin").click()
    await expect(page.get_by_test_id("acct-no-passkeys")).to_contain_text(
        "Lösennycklar kräver en säker anslutning (https eller localhost); "
        "använd en länkkod från en inloggad enhet."
    )
    await expect(page.get_by_test_id("acct-use-link")).to_have_text("Jag har en länkkod")
