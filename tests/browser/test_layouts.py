"""The board on every screen size: phones upright and sideways, a tablet, a laptop.

At each size a solo practice game is started from the lobby's "Play alone" button, and
the test measures what a player would: every one of the 24 places inside the viewport
(no scrolling), cards at least 40 px wide on phones, touch targets of 44 px, the HUD and
the race strip on screen; and the dialogs (redeal confirmation, how to play, results)
inside the viewport. Screenshots of each size are kept in test-artifacts/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from tests.support import ServerProcess

from .conftest import DEAL, Pages
from .helpers import snapshot, wait_for_board

# (width, height, is a phone)
SIZES = [
    (360, 640, True),
    (390, 844, True),
    (844, 390, True),
    (740, 360, True),
    (1024, 768, False),
    (1280, 800, False),
]


async def play_alone(page: Page, deal: str | None = DEAL) -> None:
    if deal:
        await page.get_by_test_id("deal-mode").select_option("code")
        await page.get_by_test_id("deal-code").fill(deal)
    await page.get_by_test_id("play-alone").click()
    await wait_for_board(page)


async def place_boxes(page: Page) -> list[dict[str, Any]]:
    return await page.evaluate(  # type: ignore[no-any-return]
        """() => [...document.querySelectorAll('[data-place]')].map(el => {
              const card = el.querySelector('.slot').getBoundingClientRect();
              const hit = getComputedStyle(el, '::before');
              const r = el.getBoundingClientRect();
              const inset = parseFloat(hit.top) || 0;
              return {place: el.dataset.place, x: card.x, y: card.y, w: card.width,
                      h: card.height, hitW: r.width - 2 * inset, hitH: r.height - 2 * inset};
           })"""
    )


def inside(box: dict[str, Any], width: int, height: int) -> bool:
    return bool(
        box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["w"] <= width + 0.5
        and box["y"] + box["h"] <= height + 0.5
    )


async def assert_fits(page: Page, testid: str, width: int, height: int) -> None:
    box = await page.get_by_test_id(testid).bounding_box()
    assert box is not None, testid
    assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, (testid, box)
    assert box["y"] >= 0 and box["y"] + box["height"] <= height + 0.5, (testid, box)
    # Nothing inside is cut off sideways (a table wider than its dialog scrolls).
    overflow = await page.get_by_test_id(testid).evaluate("el => el.scrollWidth - el.clientWidth")
    assert overflow <= 1, (testid, overflow)


@pytest.mark.parametrize(("width", "height", "phone"), SIZES, ids=lambda v: str(v))
async def test_board_fits_every_screen(
    server: ServerProcess, pages: Pages, artifacts: Path, width: int, height: int, phone: bool
) -> None:
    page = await pages.open(
        server.http_url + "/", width=width, height=height, touch=phone, name="Pia"
    )
    stem = f"{width}x{height}"
    await assert_fits(page, "play-alone", width, height * 3)  # the lobby scrolls; no sideways
    widths = await page.evaluate("() => [document.documentElement.scrollWidth, innerWidth]")
    assert widths[0] <= widths[1], widths
    await snapshot(page, artifacts / f"layout-{stem}-lobby.png")
    await play_alone(page)
    await snapshot(page, artifacts / f"layout-{stem}-board.png")

    boxes = await place_boxes(page)
    assert len(boxes) == 24
    for box in boxes:
        assert inside(box, width, height), (stem, box)
    card_width = min(box["w"] for box in boxes)
    if phone:
        assert card_width >= 40, (stem, card_width)
    for box in boxes:
        assert box["hitW"] >= 44 and box["hitH"] >= 44, (stem, box)
    # The page itself does not scroll, either way.
    scroll = await page.evaluate(
        "() => [document.documentElement.scrollWidth - innerWidth,"
        " document.documentElement.scrollHeight - innerHeight]"
    )
    assert scroll[0] <= 0 and scroll[1] <= 0, (stem, scroll)
    for testid in ("hud", "race-panel", "redeal", "resign", "hint"):
        await assert_fits(page, testid, width, height)
    print(f"{stem}: card {card_width:.1f} px wide")

    # The race panel's strip opens into the full list on phones and tablets.
    toggle = page.get_by_test_id("panel-toggle")
    if await toggle.is_visible():
        await toggle.click()
        await expect(page.get_by_test_id("racer")).to_be_visible()
        await snapshot(page, artifacts / f"layout-{stem}-panel.png")
        await toggle.click()

    # Dialogs fit: the redeal confirmation, then how to play.
    await page.get_by_test_id("redeal").click()
    await assert_fits(page, "confirm-redeal", width, height)
    await snapshot(page, artifacts / f"layout-{stem}-confirm.png")
    await page.get_by_test_id("confirm-no").click()
    await expect(page.get_by_test_id("confirm-redeal")).to_have_count(0)
    await page.get_by_test_id("help").click()
    await assert_fits(page, "how-to", width, height)
    await page.get_by_test_id("close-how-to").click()

    # The results: resign (the page's own dialog), and the results table fits.
    await page.get_by_test_id("resign").click()
    await page.get_by_test_id("confirm-yes").click()
    await expect(page.get_by_test_id("results")).to_be_visible()
    await assert_fits(page, "results", width, height)
    for text in ("Time", "Pia"):
        cell = page.get_by_test_id("results").get_by_text(text, exact=True).first
        cell_box = await cell.bounding_box()
        assert cell_box and cell_box["x"] + cell_box["width"] <= width, (text, cell_box)
    await snapshot(page, artifacts / f"layout-{stem}-results.png")
