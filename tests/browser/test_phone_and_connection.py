"""A phone-sized page driven by touch, and a server restart mid-race seen from the page."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import expect

from server.game import Game
from tests.support import ServerProcess, free_port, launch_server_process

from .conftest import COUNTDOWN_MS, DEAL, Pages
from .helpers import board_state, create_room, engine_state, ready_up, snapshot, wait_for_board


async def test_phone_width_touch_and_double_tap(
    server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    phone = await pages.open(server.http_url + "/", width=390, height=844, touch=True, name="Pia")
    await snapshot(phone, artifacts / "lobby-phone.png", full_page=True)
    code = await create_room(phone, seats=2)
    # The second racer joins by typing the code into the lobby.
    other = await pages.open(server.http_url + "/", name="Olle")
    await other.get_by_test_id("join-code").fill(code.lower())
    await other.get_by_test_id("join").click()
    await expect(other.get_by_test_id("players")).to_contain_text("Pia")
    await ready_up(other)
    await ready_up(phone)
    await wait_for_board(phone)

    # The whole horseshoe fits the phone's width: no sideways scrolling.
    widths = await phone.evaluate("() => [document.documentElement.scrollWidth, innerWidth]")
    assert widths[0] <= widths[1], widths
    for place in ("p1", "p4", "p5", "p12", "p13", "p16", "as", "dc"):
        box = await phone.locator(f"[data-place={place}]").bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, (place, box)

    game = Game.from_code(DEAL)
    # A tap with the finger: the only fit plays.
    await phone.locator("[data-place=p7]").tap()
    game.play("p7-dc")
    await expect(phone.get_by_test_id("moves")).to_have_text("1")
    # A double-tap sends a card with several fits to its foundation.
    assert len(game.tap_targets("p15")) > 1 and "p15-dh" in map(str, game.tap_targets("p15"))
    await phone.locator("[data-place=p15]").dblclick()
    game.play("p15-dh")
    await expect(phone.get_by_test_id("moves")).to_have_text("2")
    assert (await board_state(phone))["places"] == engine_state(game)
    await snapshot(phone, artifacts / "board-phone.png", full_page=True)


async def test_server_restart_mid_race_the_page_reconnects(
    prefix: str, pages: Pages, artifacts: Path
) -> None:
    port = free_port()
    first = launch_server_process(prefix, port, countdown_ms=COUNTDOWN_MS)
    second = None
    try:
        url = first.http_url
        ada = await pages.open(url + "/", name="Ada")
        code = await create_room(ada, seats=2)
        bo = await pages.open(f"{url}/r/{code}", name="Bo")
        await ready_up(ada)
        await ready_up(bo)
        await wait_for_board(ada)
        await ada.locator("[data-place=p7]").click()
        await expect(ada.get_by_test_id("moves")).to_have_text("1")
        before = await board_state(ada)

        assert first.terminate() == 0  # graceful: the page is told to reconnect (1001)
        banner = ada.locator(".banner.show")
        await expect(banner).to_be_visible()
        # Attempts keep failing: the page says the server can't be reached, and retries.
        await expect(banner).to_contain_text("Can't reach the server", timeout=15000)
        await snapshot(ada, artifacts / "unreachable.png")
        # The board stays on the table meanwhile.
        assert await board_state(ada) == before

        second = launch_server_process(prefix, port, countdown_ms=COUNTDOWN_MS)
        await expect(ada.locator(".banner.show")).to_have_count(0, timeout=20000)
        assert await board_state(ada) == before
        # The game goes on where it was: the next move is stored and acknowledged.
        await ada.locator("[data-place=p2]").click()
        await expect(ada.get_by_test_id("moves")).to_have_text("2")
        # Bo sees Ada's progress from the restarted server.
        row = bo.locator("[data-testid=racer]", has_text="Ada")
        await expect(row).to_contain_text("Moves: 2", timeout=15000)
    finally:
        first.kill()
        first.log_path.unlink(missing_ok=True)
        if second is not None:
            second.terminate()
            second.log_path.unlink(missing_ok=True)
