"""The Daily tab in Chromium: commitment, the ranked attempt, the board, a verified past
day, and the tab on a phone (360×640, 844×390) without horizontal scrolling."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from playwright.async_api import Page, expect

from server.core import messages
from server.core.daily import DAILY_CHANNEL
from server.core.daily_review import disqualify
from server.daily import Commitment, Day, DayRecord
from server.daily.review import DISQUALIFIED, UNDER_REVIEW, Review
from server.storage.redis_base import Keys
from server.storage.redis_daily import RedisDailyStorage
from tests.support import ServerProcess, redis_test_url, start_server_process

from .conftest import COUNTDOWN_MS, DEAL, Pages
from .helpers import wait_for_board


@pytest.fixture
def daily_server(prefix: str) -> Iterator[ServerProcess]:
    with start_server_process(
        prefix, extra_env={"CRESCENT_DAILY_DEAL": DEAL}, countdown_ms=COUNTDOWN_MS
    ) as proc:
        yield proc


async def seed_past_day(server: ServerProcess) -> Commitment:
    """A day two days ago (revealed whatever the time now), as the server stores days."""
    day = Day.of(int(time.time() * 1000)).previous(2)
    commitment = Commitment.make(DEAL)
    client = aioredis.from_url(server.redis_url)
    try:
        storage = RedisDailyStorage(client, server.prefix)
        record = DayRecord(day, "N", commitment, committed_at=day.starts_at - 86_400_000)
        await storage.create_day(record)
    finally:
        await client.aclose()
    return commitment


async def no_horizontal_scroll(page: Page) -> None:
    overflow = await page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"the Daily tab scrolls sideways by {overflow}px"


async def test_daily_tab_play_board_and_verify(
    daily_server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    past = await seed_past_day(daily_server)
    page = await pages.open(daily_server.http_url + "/", name="Ada")
    await page.get_by_test_id("open-daily").click()
    await expect(page).to_have_url(daily_server.http_url + "/daily")
    commitment = page.get_by_test_id("commitment")
    await expect(commitment).to_have_text(re.compile("^[0-9a-f]{64}$"), timeout=20000)
    await expect(page.get_by_test_id("commitment-tomorrow")).to_be_visible()
    # The past day: its deal, salt, the command, and the page's own check.
    await expect(page.get_by_test_id("daily-days")).to_contain_text(
        f"printf '%s' '{DEAL}:{past.salt}' | sha256sum"
    )
    await expect(page.get_by_test_id("verify")).to_contain_text("verified")
    # The past day's deal code is one unbroken word (the salt beside it may wrap).
    deal_code = page.get_by_test_id("daily-deal-code")
    await expect(deal_code).to_have_text(DEAL)
    assert await deal_code.evaluate("el => getComputedStyle(el).whiteSpace") == "nowrap"

    await page.get_by_test_id("daily-play").click()
    await wait_for_board(page)
    await expect(page.get_by_test_id("hint")).to_have_count(0)  # no solver help, ranked
    await page.get_by_test_id("resign").click()
    # Giving up the ranked attempt says what it costs, in the daily's words.
    confirm = page.get_by_test_id("confirm-resign")
    await expect(confirm).to_contain_text("Give up today's attempt?")
    await expect(confirm).to_contain_text("It counts as your ranked attempt")
    await expect(confirm.get_by_test_id("confirm-yes")).to_have_text("Give up")
    await page.get_by_test_id("confirm-yes").click()
    results = page.get_by_test_id("results")
    await expect(results).to_be_visible(timeout=20000)
    await expect(page.get_by_test_id("winnable")).to_have_count(0)  # the deal is sealed
    await page.get_by_test_id("to-daily").click()
    # A guest made today is ranked on the late board; the tab shows that board.
    await expect(page.get_by_test_id("daily-rank")).to_contain_text(
        "You are #1 of 1", timeout=20000
    )
    await expect(page.get_by_test_id("daily-top")).to_contain_text("Ada")
    await expect(page.get_by_test_id("daily-practice")).to_be_visible()
    await expect(page.get_by_test_id("daily-me")).to_contain_text("1 played, 0 won")
    # The late board says in one line why it exists.
    await expect(page.get_by_test_id("daily-late-why")).to_have_text(
        "Players who first came today are ranked here, apart, so nobody can learn the deal"
        " and try again as a new player."
    )

    # Another player's attempt reaches this page's board by a push (no reload).
    other = await pages.open(daily_server.http_url + "/daily", name="Bo")
    await other.get_by_test_id("daily-play").click()
    await wait_for_board(other)
    await other.get_by_test_id("resign").click()
    await other.get_by_test_id("confirm-yes").click()
    await expect(other.get_by_test_id("results")).to_be_visible(timeout=20000)
    await expect(page.get_by_test_id("daily-rank")).to_contain_text(" of 2", timeout=20000)
    await expect(page.get_by_test_id("daily-top")).to_contain_text("Bo")

    for width, height in ((360, 640), (844, 390)):
        await page.set_viewport_size({"width": width, "height": height})
        await expect(page.get_by_test_id("daily-board")).to_be_visible()
        await no_horizontal_scroll(page)
        lines = await page.get_by_test_id("daily-deal-code").evaluate(
            "el => el.getClientRects().length"
        )
        assert lines == 1, f"the deal code is broken across {lines} lines at {width}px"
        await page.screenshot(path=str(artifacts / f"daily-{width}x{height}.png"), full_page=True)
    assert not pages.errors


async def test_daily_tab_waits_while_today_is_being_prepared(
    prefix: str, pages: Pages, artifacts: Path
) -> None:
    """A server whose today is not certified yet answers `day_not_ready`: the tab says the
    challenge is being prepared (no error) and loads it by itself once it is there."""
    today = Day.of(int(time.time() * 1000))
    client = aioredis.from_url(redis_test_url())
    storage = RedisDailyStorage(client, prefix)
    try:
        # Today's certification is leased to someone else (as while another process runs
        # the solver): the server leaves today alone and answers day_not_ready.
        assert await storage.claim_certification(str(today), "browser-test", 120_000)
        with start_server_process(
            prefix, extra_env={"CRESCENT_DAILY_DEAL": DEAL}, countdown_ms=COUNTDOWN_MS
        ) as server:
            page = await pages.open(server.http_url + "/daily", name="Ada")
            preparing = page.get_by_test_id("daily-preparing")
            await expect(preparing).to_have_text("Today's challenge is being prepared…")
            await expect(page.get_by_test_id("daily-error")).to_have_count(0)
            await expect(page.get_by_test_id("commitment")).to_have_count(0)
            await page.screenshot(path=str(artifacts / "daily-preparing.png"))
            # The lease holder stores the day: the page finds it on a retry, no reload.
            record = DayRecord(today, "N", Commitment.make(DEAL), committed_at=today.starts_at)
            await storage.create_day(record)
            await storage.release_certification(str(today), "browser-test")
            await expect(page.get_by_test_id("commitment")).to_have_text(
                record.commitment.digest, timeout=40_000
            )
            await expect(preparing).to_have_count(0)
            await expect(page.get_by_test_id("daily-play")).to_be_visible()
            await expect(page.get_by_test_id("daily-error")).to_have_count(0)
    finally:
        await client.aclose()
    assert not pages.errors


async def test_review_marks_and_a_disqualified_result(
    daily_server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    """Results under review are marked for everyone (a revealed day's one tap from its
    replay); a disqualified result leaves the board, its reason shown to all and to its
    player in the day's panel (docs/daily.md, "Review of implausible times")."""
    past = Day.of(int(time.time() * 1000)).previous(2)
    await seed_past_day(daily_server)
    client = aioredis.from_url(daily_server.redis_url)
    storage = RedisDailyStorage(client, daily_server.prefix)
    try:
        for player, review in (
            ("p-fast", Review(UNDER_REVIEW, "Speedy", "pace", game="ABCDEF-1-x1")),
            ("p-bot", Review(DISQUALIFIED, "Botty", "solver moves")),
        ):
            await storage.set_review(str(past), player, review)
        page = await pages.open(daily_server.http_url + "/daily", name="Ada")
        day = page.get_by_test_id(f"day-{past}")
        flagged = day.get_by_test_id("daily-flagged")
        await expect(flagged).to_contain_text("Speedy", timeout=20000)
        await flagged.get_by_test_id("flagged-replay").click()  # one tap: the replay viewer
        await expect(page).to_have_url(daily_server.http_url + "/g/ABCDEF-1-x1")
        await page.go_back()
        await expect(page.get_by_test_id(f"day-{past}")).to_contain_text("Botty: solver moves")

        # Today: Ada's ranked attempt, flagged, then disqualified by an operator.
        await page.get_by_test_id("daily-play").click()
        await wait_for_board(page)
        await page.get_by_test_id("resign").click()
        await page.get_by_test_id("confirm-yes").click()
        await expect(page.get_by_test_id("results")).to_be_visible(timeout=20000)
        await page.get_by_test_id("to-daily").click()
        await expect(page.get_by_test_id("daily-top")).to_contain_text("Ada", timeout=20000)
        today = str(Day.of(int(time.time() * 1000)))
        (ada,) = await storage.board_top(today, "late", 1)
        await storage.set_review(today, ada.player_id, Review(UNDER_REVIEW, "Ada"))
        await page.reload()
        mark = page.get_by_test_id("daily-top").get_by_test_id("review-mark")
        await expect(mark).to_have_text("under review", timeout=20000)
        await page.get_by_test_id("daily-board").screenshot(
            path=str(artifacts / "daily-under-review.png")
        )
        await disqualify(storage, today, ada.player_id, "too fast", by="op", now=0)
        changed = messages.encode(messages.DailyChanged(day=today))  # as the command does
        await client.publish(Keys(daily_server.prefix).bus(DAILY_CHANNEL), changed)
        # The push: Ada's row leaves the board, the reason is shown under it.
        await expect(page.get_by_test_id("daily-top")).to_have_count(0, timeout=20000)
        board = page.get_by_test_id("daily-board")
        await expect(board.get_by_test_id("daily-disqualified")).to_contain_text("Ada: too fast")
        await page.reload()
        await expect(page.get_by_test_id("daily-disqualified-me")).to_have_text(
            "Your result was taken off the board: too fast", timeout=20000
        )
        await expect(page.get_by_test_id("daily-practice")).to_be_visible()
        await page.screenshot(path=str(artifacts / "daily-review.png"), full_page=True)
    finally:
        await client.aclose()
    assert not pages.errors
