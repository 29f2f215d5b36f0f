"""The board on every screen size: phones upright and sideways, a tablet, a laptop.

At each size a solo practice game is started from the lobby's "Play alone" button, and
the test measures what a player would: every one of the 24 places inside the viewport
(no scrolling), cards at least 40 px wide on phones, touch targets of 44 px, the HUD and
the race strip on screen; and the dialogs (redeal confirmation, how to play, results)
inside the viewport. And at each size the words and layout of issue #20: the hint's
message covers no card and no button and is gone once the results show (at 390×844 also
when the waiting room shows), How to play opens at its top, the strip reads in words, your
own name is never cut, a practice game is given up in practice words, a deal code is
never broken. Screenshots of each size are kept in test-artifacts/.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import FloatRect, Page, expect

from tests.support import ServerProcess

from .conftest import DEAL, Pages
from .helpers import create_room, ready_up, resign, snapshot, wait_for_board

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


# Ten characters, as long as a guest's name ("Guest-A5F8"): never cut when it is yours.
NAME = "Wilhelmina"


def overlaps(a: FloatRect | dict[str, float], b: FloatRect | dict[str, float]) -> bool:
    return bool(
        a["x"] < b["x"] + b["width"] - 0.5
        and b["x"] < a["x"] + a["width"] - 0.5
        and a["y"] < b["y"] + b["height"] - 0.5
        and b["y"] < a["y"] + a["height"] - 0.5
    )


async def rects(page: Page, selector: str) -> list[dict[str, float]]:
    return await page.evaluate(  # type: ignore[no-any-return]
        """sel => [...document.querySelectorAll(sel)]
              .map(el => el.getBoundingClientRect())
              .filter(r => r.width > 0 && r.height > 0)
              .map(r => ({x: r.x, y: r.y, width: r.width, height: r.height}))""",
        selector,
    )


async def keep_toast(page: Page) -> None:
    """The message stays up until something else hides it (its own 4 s timer is off)."""
    await page.evaluate("() => clearTimeout(window.crescent.feedback.toastTimer)")


async def own_name_is_whole(page: Page) -> None:
    """Wherever the page shows your own name, none of it is cut off."""
    cut = await page.evaluate(
        """() => [...document.querySelectorAll(
                 '.standing.me .standing-name, .racer.me .pname, .results tr.me .name-cell')]
              .filter(el => el.getClientRects().length)
              .filter(el => el.scrollWidth > el.clientWidth + 1)
              .map(el => el.textContent)"""
    )
    assert cut == [], cut


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
        server.http_url + "/", width=width, height=height, touch=phone, name=NAME
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

    # The strip (phones, tablets) says what its numbers are; your own name is whole.
    strip = page.locator(".standings")
    if await strip.is_visible():
        await expect(strip).to_have_text(f"{NAME}8 cards home")  # "· " is drawn by the CSS
        await expect(page.get_by_test_id("strip-home")).to_have_text("8 cards home")
    await expect(page.locator(".panel-head h2")).to_have_text("Practice")
    await own_name_is_whole(page)

    # The hint's message covers no card, no foundation and no button of the HUD or panel.
    await page.get_by_test_id("hint").click()
    toast = page.get_by_test_id("toast")
    await expect(toast).to_contain_text("Hint:")
    await expect(toast).to_have_class(re.compile(r"\bshow\b"))
    await keep_toast(page)
    await page.wait_for_timeout(250)  # its 0.18 s slide into place
    message = await toast.bounding_box()
    assert message is not None
    for box in await rects(page, "[data-place], .hud button, .race-panel button"):
        assert not overlaps(message, box), (stem, message, box)
    assert message["y"] + message["height"] <= height and message["x"] >= 0, (stem, message)
    await snapshot(page, artifacts / f"layout-{stem}-hint.png")

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
    # How to play opens at its top (its goal in view), however long it is.
    how_to = page.get_by_test_id("how-to")
    assert await how_to.evaluate("el => el.scrollTop") == 0, stem
    await expect(how_to.get_by_text("The goal", exact=True)).to_be_in_viewport()
    await page.get_by_test_id("close-how-to").click()

    # The results: give up (practice words, the page's own dialog); the table fits.
    await expect(page.get_by_test_id("resign")).to_have_text("Give up")
    await page.get_by_test_id("resign").click()
    give_up = page.get_by_test_id("confirm-resign")
    await expect(give_up.locator("h2")).to_have_text("Give up this game?")
    await expect(give_up).not_to_contain_text("race")
    await give_up.get_by_test_id("confirm-yes").click()
    await expect(page.get_by_test_id("results")).to_be_visible()
    # The hint's message (kept up above) went when the results showed.
    await expect(toast).not_to_have_class(re.compile(r"\bshow\b"))
    await expect(page.get_by_test_id("leave")).to_have_text("Back to the lobby")
    await own_name_is_whole(page)
    # The deal code is one unbroken word.
    deal_code = page.get_by_test_id("deal-was").locator(".deal-code")
    await expect(deal_code).to_have_text(DEAL)
    assert await deal_code.evaluate("el => el.getClientRects().length") == 1, stem
    assert await deal_code.evaluate("el => getComputedStyle(el).whiteSpace") == "nowrap"
    await assert_fits(page, "results", width, height)
    for text in ("Time", NAME):
        cell = page.get_by_test_id("results").get_by_text(text, exact=True).first
        cell_box = await cell.bounding_box()
        assert cell_box and cell_box["x"] + cell_box["width"] <= width, (text, cell_box)
    await snapshot(page, artifacts / f"layout-{stem}-results.png")

    if (width, height) == (390, 844):
        # A message up when the round is over is gone once the waiting room shows (Play
        # again: the room waits for its one racer, who is readied at once).
        await page.evaluate("() => window.crescent.feedback.toast('A message', 'hint')")
        await keep_toast(page)
        await expect(toast).to_have_class(re.compile(r"\bshow\b"))
        phases = await page.evaluate(
            """() => { const seen = [];
                 const app = window.crescent, render = app.render.bind(app);
                 app.render = () => { seen.push([app.phase(), app.toastEl.className]); render(); };
                 window.seenPhases = seen; return true; }"""
        )
        assert phases
        await page.get_by_test_id("rematch").click()
        # The old board stays under the results until the new room arrives, so wait for
        # the waiting room to render, not for a board.
        await page.wait_for_function(
            "() => window.seenPhases.some(([phase]) => phase === 'waiting')", timeout=20000
        )
        await wait_for_board(page)
        await expect(toast).not_to_have_class(re.compile(r"\bshow\b"))


async def strip_clipping(page: Page) -> list[str]:
    """What of the phone strip's entries is cut off: an entry outside the strip, a rank or
    a "cards home" not whole, another racer's name squeezed below a few letters."""
    return await page.evaluate(  # type: ignore[no-any-return]
        """() => {
            const strip = document.querySelector('.standings');
            const box = strip.getBoundingClientRect();
            const cut = [];
            if (strip.scrollWidth > strip.clientWidth + 1) cut.push('strip scrolls sideways');
            if (strip.scrollHeight > strip.clientHeight + 1) cut.push('strip cut at the bottom');
            for (const entry of strip.querySelectorAll('.standing')) {
                const r = entry.getBoundingClientRect();
                const text = entry.textContent;
                if (r.left < box.left - 0.5 || r.right > box.right + 0.5)
                    cut.push('outside: ' + text);
                if (r.right > innerWidth + 0.5) cut.push('off screen: ' + text);
                for (const part of entry.querySelectorAll('.standing-rank, .standing-home')) {
                    const whole = part.scrollWidth <= part.clientWidth + 1;
                    if (!whole || part.getBoundingClientRect().width < 1)
                        cut.push('part cut: ' + part.textContent);
                }
                const name = entry.querySelector('.standing-name');
                if (!entry.classList.contains('me') && name.getBoundingClientRect().width < 28)
                    cut.push('name squeezed: ' + name.textContent);
            }
            return cut;
        }"""
    )


async def test_phone_strip_keeps_every_racer_readable(
    server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    """At 390×844 in a race of three, with an 18-letter own name: the strip shows every
    racer's cards home whole, the own entry first and whole, the others at least a few
    letters; also beside the results button once the race is over."""
    long_name = "Aleksandra-Marijke"
    assert len(long_name) == 18
    phone = await pages.open(
        server.http_url + "/", width=390, height=844, touch=True, name=long_name
    )
    code = await create_room(phone, seats=3)
    others = [
        await pages.open(f"{server.http_url}/r/{code}", name=name)
        for name in ("Christophorus", "Bo")
    ]
    for page in (*others, phone):
        await ready_up(page)
    await wait_for_board(phone)
    entries = phone.locator(".standing")
    await expect(entries).to_have_count(3)
    await expect(entries.first).to_have_class(re.compile(r"\bme\b"))
    await expect(entries.first.locator(".standing-name")).to_have_text(long_name)
    for entry in await entries.all():
        await expect(entry.locator(".standing-home")).to_have_text("8/104")
    assert await strip_clipping(phone) == []
    await own_name_is_whole(phone)
    await snapshot(phone, artifacts / "strip-390x844-race.png")

    # Over: the results button comes beside the strip, which still shows everything.
    for page in (*others, phone):
        await wait_for_board(page)
        await resign(page)
    await expect(phone.get_by_test_id("results")).to_be_visible(timeout=20000)
    await phone.get_by_test_id("close-results").click()
    await expect(phone.get_by_test_id("show-results")).to_be_visible()
    assert await strip_clipping(phone) == []
    await own_name_is_whole(phone)
    await snapshot(phone, artifacts / "strip-390x844-over.png")
    assert not pages.errors
