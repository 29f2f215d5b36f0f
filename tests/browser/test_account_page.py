"""The account page (/me) and public profiles (/u/<handle>) in the browser
(docs/accounts.md, docs/browser.md "Accounts"), against two real server processes on the
real Redis and PostgreSQL. Accounts are made over HTTP with the software authenticator;
each page is handed its session's token as session.js keeps it."""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.async_api import expect

from server.core.archive import (
    Action,
    ArchiveBatch,
    ArchivedGame,
    ArchivedRacer,
    ArchivedTournament,
    GameKind,
    RacerResult,
    TournamentPlacing,
)
from server.game import Game
from server.storage.postgres_archive import connect
from tests.support import ServerProcess

from .account_support import account_servers, make_account, open_signed_in, page_url, sign_in
from .conftest import DEAL, Pages
from .helpers import snapshot
from .test_accessibility import serious_axe_findings
from .webauthn import add_virtual_authenticator


@pytest.fixture
def servers(prefix: str, database_url: str) -> Iterator[list[ServerProcess]]:
    with account_servers(prefix, database_url) as started:
        yield started


async def archive_a_game_and_a_cup(database_url: str, player: str, name: str) -> str:
    """A finished practice game of ``player`` (three moves, then resign) and a finished
    tournament they came second in, written to the archive: the game's id."""
    game = Game.from_code(DEAL)
    line: list[str] = []
    for _ in range(3):
        move = next(
            str(m)
            for m in game.legal_moves()
            if not line or str(m).split("-")[0] != line[-1].split("-")[0]
        )
        game.play(move)
        line.append(move)
    now = int(time.time() * 1000)
    actions = tuple(Action(700 * (i + 1), a) for i, a in enumerate([*line, "resign"]))
    result = RacerResult(rank=1, status="resigned", time_ms=2800, moves=3, foundation=9)
    archived = ArchivedGame(
        id="SOLO-1-acct",
        kind=GameKind.PRACTICE,
        deal=DEAL,
        variant="N",
        origin="",
        start_at=now - 60_000,
        ended_at=now - 57_200,
        revealed_at=now - 57_200,
        racers=(ArchivedRacer(player, name, actions, result),),
    )
    standings = (TournamentPlacing(1, "someone", "Bo", 9), TournamentPlacing(2, player, name, 5))
    cup = ArchivedTournament(
        "CUPXYZ", "Friday cup", "N", now - 90_000, now - 30_000, now - 30_000, standings
    )
    schema = database_url.rsplit("search_path=", 1)[1]
    archive = await connect(database_url.split("?")[0], server_settings={"search_path": schema})
    try:
        await archive.write(ArchiveBatch(games=(archived,), tournaments=(cup,)))
    finally:
        await archive.close()
    return archived.id


async def test_signing_out_the_other_device_closes_its_socket_at_once(
    servers: list[ServerProcess], pages: Pages, artifacts: Path
) -> None:
    one, two = servers
    account = await make_account(one, "Ada_42")
    phone = await sign_in(account, two)
    laptop_page = await open_signed_in(pages, page_url(one, "/me"), account.sessions[0]["token"])
    phone_page = await open_signed_in(pages, page_url(two, "/me"), phone["token"])
    await expect(phone_page.get_by_test_id("me-handle")).to_have_text("Signed in as Ada_42")
    await phone_page.wait_for_function("window.crescent.conn.online")
    sessions = laptop_page.get_by_test_id("me-session")
    await expect(sessions).to_have_count(2)
    await expect(sessions.filter(has_text="this device")).to_contain_text("Chrome on Linux")
    other = sessions.filter(has_text="Safari on iPhone")
    await expect(other).to_have_attribute("data-current", "false")
    await expect(laptop_page.get_by_test_id("me-passkey")).to_have_count(1)
    assert await serious_axe_findings(laptop_page) == []
    await snapshot(laptop_page, artifacts / "account-me-390.png", full_page=True)
    assert await laptop_page.evaluate("document.documentElement.scrollWidth <= innerWidth + 1")

    # Keyboard: sign the phone out from the laptop (each on its own server process).
    button = other.get_by_test_id("me-session-signout")
    await expect(button).to_have_accessible_name("Sign out Safari on iPhone")
    await button.focus()
    started = time.time() * 1000
    await laptop_page.keyboard.press("Enter")
    closed = await phone_page.wait_for_function(
        "window.closes.find((c) => c.code === 4011)", timeout=5000
    )
    assert (await closed.json_value())["at"] - started < 1000
    await expect(phone_page.get_by_test_id("me-notice")).to_contain_text(
        "This device was signed out"
    )
    await expect(phone_page.get_by_test_id("me-guest")).to_be_visible()
    await expect(sessions).to_have_count(1)
    # Focus goes to the list's heading, never to <body>.
    await expect(laptop_page.get_by_test_id("me-devices-title")).to_be_focused()
    # The phone is told and chooses (sign in again, or play on): it plays on as a new
    # guest, not as the account.
    await expect(phone_page.get_by_test_id("acct-signed-out")).to_be_visible()
    await phone_page.get_by_test_id("acct-new-guest").click()
    await phone_page.wait_for_function("window.crescent.conn.online")
    guest = await phone_page.evaluate("window.crescent.state.player.id")
    assert guest != account.player_id

    # Link a device: a fresh one-time code, focused, with its five-minute countdown.
    await laptop_page.get_by_test_id("me-link").press("Enter")
    code = laptop_page.get_by_test_id("me-link-code")
    await expect(code).to_be_focused()
    assert re.fullmatch(r"[23456789A-HJKMNP-TW-Z]{8}", await code.get_attribute("data-code") or "")
    await expect(laptop_page.get_by_test_id("me-link-countdown")).to_contain_text(
        re.compile(r"Works once, for 4:5\d more")
    )
    assert not pages.errors


async def test_add_a_passkey_on_this_device_from_the_account_page(
    servers: list[ServerProcess], pages: Pages
) -> None:
    one, _ = servers
    account = await make_account(one, "Kit_9")
    page = await open_signed_in(pages, page_url(one, "/me"), account.sessions[0]["token"])
    device = await add_virtual_authenticator(page)
    listed = page.get_by_test_id("me-passkey")
    await expect(listed).to_have_count(1)  # the one the account was made with

    # By keyboard: the button runs the device's passkey ceremony, the list shows two.
    button = page.get_by_test_id("me-add-passkey")
    await expect(button).to_have_text("Add a passkey on this device")
    await button.focus()
    await page.keyboard.press("Enter")
    await expect(listed).to_have_count(2)
    await expect(page.get_by_test_id("announcer")).to_contain_text(
        "This device has its own passkey now."
    )
    await expect(button).to_be_focused()
    made = await device.credentials()
    assert len(made) == 1 and made[0]["rpId"] == "localhost"
    made_id = base64.urlsafe_b64encode(base64.b64decode(made[0]["credentialId"]))
    me = await page.evaluate(
        """async () => (await fetch('/api/me', {headers:
            {Authorization: 'Bearer ' + localStorage.getItem('crescent.token')}})).json()"""
    )
    assert len(me["passkeys"]) == 2
    assert made_id.decode().rstrip("=") in [key["id"] for key in me["passkeys"]]

    # Again on the same device: the browser refuses (the server excludes this device's
    # passkey), said in words with what to do, the focus stays on the button.
    await page.keyboard.press("Enter")
    await expect(page.get_by_test_id("me-passkey-problem")).to_have_text(
        "This device has a passkey for this account already; sign in with it."
    )
    await expect(button).to_be_focused()
    await expect(button).to_have_accessible_description(
        "This device has a passkey for this account already; sign in with it."
    )
    await expect(listed).to_have_count(2)
    assert len(await device.credentials()) == 1
    assert await serious_axe_findings(page) == []

    # At an IP address no passkey can be made: no button, the reason in words instead.
    at_ip = await open_signed_in(
        pages, f"http://127.0.0.1:{one.port}/me", account.sessions[0]["token"]
    )
    await expect(at_ip.get_by_test_id("me-passkey")).to_have_count(2)
    await expect(at_ip.get_by_test_id("me-no-passkeys")).to_contain_text(
        "This page is open at a network address (127.0.0.1)"
    )
    await expect(at_ip.get_by_test_id("me-add-passkey")).to_have_count(0)
    assert not pages.errors


async def test_profile_download_and_delete(
    servers: list[ServerProcess], pages: Pages, database_url: str, tmp_path: Path, artifacts: Path
) -> None:
    one, _ = servers
    account = await make_account(one, "Zoë_7")
    game_id = await archive_a_game_and_a_cup(database_url, account.player_id, "Zoë_7")
    page = await open_signed_in(pages, page_url(one, "/me"), account.sessions[0]["token"])

    # The public profile, from the account page: the game with its replay, the cup.
    await page.get_by_test_id("me-profile").click()
    await expect(page.get_by_test_id("profile-handle")).to_have_text("Zoë_7")
    await expect(page.get_by_test_id("profile-tournament")).to_contain_text(
        re.compile(r"Friday cup\s*· place 2 of 2")
    )
    game = page.get_by_test_id("profile-game")
    await expect(game).to_have_count(1)
    assert await serious_axe_findings(page) == []
    await snapshot(page, artifacts / "account-profile-390.png", full_page=True)
    await game.get_by_test_id("watch-replay").press("Enter")
    await expect(page).to_have_url(page_url(one, f"/g/{game_id}"))
    await expect(page.get_by_test_id("replay-step")).to_contain_text("Start: 4 actions")
    await expect(page.get_by_test_id("replay")).to_contain_text("Zoë_7")

    # New recovery codes: asked first, then shown once in a modal dialog.
    await page.goto(page_url(one, "/me"))
    await page.get_by_test_id("me-recovery").press("Enter")
    await page.get_by_test_id("me-recovery-make").press("Enter")
    codes = page.get_by_test_id("me-recovery-codes").locator("li")
    await expect(codes).to_have_count(10, timeout=20000)
    await expect(page.get_by_test_id("me-recovery-dialog")).to_have_attribute("aria-modal", "true")
    await page.get_by_test_id("me-recovery-done").press("Enter")
    await expect(page.get_by_test_id("me-recovery")).to_be_focused()

    # Download my data: a JSON file naming the handle.
    async with page.expect_download() as download_info:
        await page.get_by_test_id("me-download").click()
    download = await download_info.value
    saved = tmp_path / "data.json"
    await download.save_as(saved)
    data = json.loads(saved.read_text())
    assert data["handle"] == "Zoë_7" and data["recovery_codes_set"] is True

    # Delete my account: a modal that wants the handle typed out.
    await page.get_by_test_id("me-delete").click()
    dialog = page.get_by_test_id("me-delete-dialog")
    await expect(page.get_by_test_id("me-delete-input")).to_be_focused()
    await page.keyboard.type("Zoe_7")
    await page.keyboard.press("Enter")
    await expect(dialog.get_by_test_id("me-delete-problem")).to_have_text(
        "That is not your handle; type Zoë_7."
    )
    await page.get_by_test_id("me-delete-input").fill("zoë_7")
    await page.keyboard.press("Enter")
    await expect(page.get_by_test_id("me-notice")).to_contain_text("Your account was deleted")
    await expect(dialog).to_have_count(0)
    await expect(page.get_by_test_id("me-title")).to_be_focused()
    await page.goto(page_url(one, "/u/Zo%C3%AB_7"))
    await expect(page.get_by_test_id("profile-missing")).to_contain_text(
        "No player here has the handle Zoë_7"
    )
    await page.goto(page_url(one, f"/g/{game_id}"))
    await expect(page.get_by_test_id("replay")).to_contain_text("deleted player")
    await page.get_by_test_id("language").select_option("sv")
    await page.goto(page_url(one, "/me"))
    await expect(page.get_by_test_id("me-guest")).to_contain_text("Du spelar som gäst")
    assert not pages.errors
