"""Keyboard, screen readers and axe-core (issue #20): focus stays where the player acts,
a move from the focused card costs at most 3 keys, every dialog is modal, one polite live
region says each move and the race's news, reduced motion stops the deal, and axe-core
finds no serious or critical violation on any screen, at 1280×800 and 390×844, in English
and Swedish."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from server.game import Game
from tests.support import ServerProcess, start_server_process

from .conftest import DEAL, WEB, Pages
from .helpers import board_state, create_room, engine_state, ready_up, resign, wait_for_board
from .test_foundation_chooser import AMBIGUOUS_DEAL, AMBIGUOUS_LINE

AXE = WEB / "node_modules" / "axe-core" / "axe.min.js"
RANKS = "A23456789TJQK"
EN_RANKS = [
    "Ace",
    "Two",
    "Three",
    "Four",
    "Five",
    "Six",
    "Seven",
    "Eight",
    "Nine",
    "Ten",
    "Jack",
    "Queen",
    "King",
]
EN_SUITS = {"S": "spades", "H": "hearts", "D": "diamonds", "C": "clubs"}
# The horseshoe's order for the arrow keys: piles 1–16, then the foundations.
RING = [f"p{n}" for n in range(1, 17)] + ["as", "ah", "ad", "ac", "ds", "dh", "dd", "dc"]
FOCUSED = """() => document.activeElement
    ? (document.activeElement.dataset.place || document.activeElement.tagName) : null"""


def card_name(code: str) -> str:
    return f"{EN_RANKS[RANKS.index(code[0])]} of {EN_SUITS[code[-1]]}"


def said_target(place: str) -> str:
    if place[0] == "p":
        return f"pile {place[1:]}"
    kind = "ace" if place[0] == "a" else "king"
    return f"the {kind} foundation of {EN_SUITS[place[1].upper()]}"


async def focused(page: Page) -> str | None:
    return await page.evaluate(FOCUSED)  # type: ignore[no-any-return]


async def walk_to(page: Page, place: str) -> int:
    """Arrow keys from the focused place to ``place`` the short way round; the keys used."""
    here = await focused(page)
    assert here in RING, f"focus is on {here}, not on the board"
    steps = (RING.index(place) - RING.index(here)) % len(RING)
    key, count = (
        ("ArrowRight", steps) if steps <= len(RING) // 2 else ("ArrowLeft", len(RING) - steps)
    )
    for _ in range(count):
        await page.keyboard.press(key)
    assert await focused(page) == place
    return count


async def play_by_keys(page: Page, game: Game, move: str) -> int:
    """Play ``move`` from its focused card with the keys a player would use; returns how
    many keys that took (the walk to the card not counted)."""
    source, target = move.split("-")
    fits = [str(m) for m in game.tap_targets(source)]
    await page.keyboard.press("Enter")
    keys = 1
    if fits != [move]:
        # Picked up: the places that take it are numbered, focus is on number 1.
        badge = page.locator(f"[data-place={target}] .choice-key")
        number = (await badge.text_content() or "").strip()
        if await focused(page) == target:
            await page.keyboard.press("Enter")
        else:
            await page.keyboard.press(number)
        keys += 1
    game.play(move)
    await expect(page.get_by_test_id("moves")).to_have_text(str(game.moves))
    return keys


async def test_keyboard_play_keeps_focus_and_costs_at_most_3_keys_a_move(
    server: ServerProcess, pages: Pages
) -> None:
    page = await pages.open(server.http_url + "/", width=1280, height=800, name="Kim")
    await page.get_by_test_id("deal-mode").select_option("code")
    await page.get_by_test_id("deal-code").fill(DEAL)
    await page.get_by_test_id("play-alone").focus()
    await page.keyboard.press("Enter")
    await wait_for_board(page)
    # After "Play alone" focus is on the board, not on <body>.
    await expect(page.locator("[data-place=p1]")).to_be_focused()

    game = Game.from_code(DEAL)
    per_move: list[tuple[str, int, int]] = []
    for turn in range(10):
        here = await focused(page)
        assert here in RING
        # The nearest pile (round the horseshoe) with a move: the next move a player makes;
        # every other turn a card with several fits, played to its last choice.
        moves = [str(m) for m in game.legal_moves() if str(m)[0] == "p"]
        several = [m for m in moves if len(game.tap_targets(m.split("-")[0])) > 1]
        if turn % 2 and several:
            moves = [max(several, key=lambda m: (RING.index(m.split("-")[1]) < 16, m))]
        move = min(
            moves,
            key=lambda m: min(
                (RING.index(m.split("-")[0]) - RING.index(here)) % 24,
                (RING.index(here) - RING.index(m.split("-")[0])) % 24,
            ),
        )
        walk = await walk_to(page, move.split("-")[0])
        keys = await play_by_keys(page, game, move)
        per_move.append((move, keys, walk))
        assert keys <= 3, (move, keys)
        # Focus stays on the place the card left, by its name (the board was redrawn).
        assert await focused(page) == move.split("-")[0]
        assert (await board_state(page))["places"] == engine_state(game)
    print("keys per move (move, from the focused card, arrows to reach it):", per_move)
    # Some move needed the card picked up (several fits) and still took 2 keys.
    assert any(keys == 2 for _, keys, _ in per_move), per_move

    # U undoes; focus stays where it was.
    source = await focused(page)
    await page.keyboard.press("u")
    game.undo()
    await expect(page.get_by_test_id("moves")).to_have_text(str(game.moves))
    assert await focused(page) == source

    # The Undo button keeps focus after its own redraw.
    await page.get_by_test_id("undo").focus()
    await page.keyboard.press("Enter")
    game.undo()
    await expect(page.get_by_test_id("moves")).to_have_text(str(game.moves))
    await expect(page.get_by_test_id("undo")).to_be_focused()

    # R asks first; Enter on the dialog's Redeal confirms; focus is back on the place.
    await page.locator("[data-place=p5]").focus()
    await page.keyboard.press("r")
    await expect(page.get_by_test_id("confirm-redeal")).to_be_visible()
    await expect(page.get_by_test_id("confirm-yes")).to_be_focused()
    await page.keyboard.press("Enter")
    game.redeal()
    await expect(page.get_by_test_id("redeal")).to_contain_text("2 left")
    assert await focused(page) == "p5"
    assert (await board_state(page))["places"] == engine_state(game)

    # F sends the focused card home (here: a card whose only fits include a foundation).
    home = next(
        str(m) for m in game.legal_moves() if str(m)[0] == "p" and str(m).split("-")[1][0] in "ad"
    )
    await walk_to(page, home.split("-")[0])
    foundations = [str(m) for m in game.tap_targets(home.split("-")[0]) if str(m)[-2] in "ad"]
    await page.keyboard.press("f")
    if len(foundations) == 2:  # both foundations take it: the chooser asks, Enter picks
        await page.keyboard.press("Enter")
        home = foundations[0]
    game.play(home)
    await expect(page.get_by_test_id("moves")).to_have_text(str(game.moves))
    assert await focused(page) == home.split("-")[0]


async def assert_modal(page: Page, testid: str, *, escape_closes: bool = True) -> None:
    """The dialog is modal: aria-modal, focus inside, Tab and Shift+Tab stay inside, the
    page behind is inert; Escape closes it when that is safe."""
    dialog = page.get_by_test_id(testid)
    await expect(dialog).to_be_visible()
    await expect(dialog).to_have_attribute("role", "dialog")
    await expect(dialog).to_have_attribute("aria-modal", "true")
    inside = (
        "() => !!document.activeElement"
        f" && !!document.activeElement.closest('[data-testid={testid}]')"
    )
    assert await page.evaluate(inside), f"focus is not in {testid}"
    for key in ["Tab"] * 6 + ["Shift+Tab"] * 6:
        await page.keyboard.press(key)
        assert await page.evaluate(inside), f"{key} left {testid}"
    # Behind the dialog nothing takes focus or a click.
    assert await page.evaluate(
        "() => !!document.querySelector('[data-testid=help]').closest('[inert]')"
    )
    if escape_closes:
        await page.keyboard.press("Escape")
        await expect(dialog).to_have_count(0)


async def test_every_dialog_is_modal_and_gives_focus_back(
    server: ServerProcess, pages: Pages
) -> None:
    page = await pages.open(server.http_url + "/", name="Ada")
    # How to play, from the top bar's "?": focus goes back to the "?" on close.
    await page.get_by_test_id("help").focus()
    await page.keyboard.press("Enter")
    await assert_modal(page, "how-to")
    await expect(page.get_by_test_id("help")).to_be_focused()

    code = await create_room(page, seats=2, deal=AMBIGUOUS_DEAL)
    bo = await pages.open(f"{server.http_url}/r/{code}", name="Bo")
    await ready_up(page)
    await ready_up(bo)
    await wait_for_board(page)
    # The redeal question, asked from a focused pile: Esc says no, focus is back there.
    await page.locator("[data-place=p3]").focus()
    await page.keyboard.press("r")
    await assert_modal(page, "confirm-redeal")
    assert await focused(page) == "p3"
    await expect(page.get_by_test_id("redeal")).to_contain_text("3 left")
    # The resign question, from its button.
    await page.get_by_test_id("resign").focus()
    await page.keyboard.press("Enter")
    await assert_modal(page, "confirm-resign")
    await expect(page.get_by_test_id("resign")).to_be_focused()

    # The foundation chooser (both hearts foundations take 5♥ after this line).
    game = Game.from_code(AMBIGUOUS_DEAL)
    for move in AMBIGUOUS_LINE:
        await page.evaluate("m => crescent.game.act(m)", move)
        game.play(move)
        await expect(page.get_by_test_id("moves")).to_have_text(str(game.moves))
    await page.locator("[data-place=p15]").focus()
    await page.keyboard.press("f")
    await assert_modal(page, "chooser")
    assert await focused(page) == "p15"

    # The results: modal, focus on its first action; Esc closes them and focus goes to
    # the button that opens them again; reopened, Tab stays inside.
    await resign(bo)
    await resign(page)
    await assert_modal(page, "results")
    await expect(page.get_by_test_id("show-results")).to_be_focused()
    # A progress frame may come after the end and rebuild the race panel: the focused
    # Results button is replaced, and focus goes to the new one (a CI run once found it
    # on the body).
    await page.evaluate("() => crescent.updateRacePanel()")
    await expect(page.get_by_test_id("show-results")).to_be_focused()
    await page.keyboard.press("Enter")
    await assert_modal(page, "results", escape_closes=False)
    await expect(page.get_by_test_id("results").get_by_test_id("rematch")).to_be_visible()


async def test_one_polite_live_region_says_each_move_and_the_race_news(
    server: ServerProcess, pages: Pages
) -> None:
    ada = await pages.open(server.http_url + "/", name="Ada")
    code = await create_room(ada, seats=2, deal=DEAL)
    bo = await pages.open(f"{server.http_url}/r/{code}", locale="sv-SE", name="Bo")
    await ready_up(ada)
    await ready_up(bo)
    await wait_for_board(ada)
    await wait_for_board(bo)
    for page in (ada, bo):
        regions = await page.evaluate(
            "() => document.querySelectorAll('[aria-live=polite], [role=status], output').length"
        )
        assert regions == 1, "one polite live region per page"
    said = ada.get_by_test_id("announcer")
    await expect(said).to_have_attribute("aria-live", "polite")
    await expect(said).to_contain_text("The race has started")

    game = Game.from_code(DEAL)
    move = next(str(m) for m in game.legal_moves() if str(m)[0] == "p")
    card = game.view().to_wire()["piles"][int(move.split("-")[0][1:]) - 1]["top"]
    await ada.locator(f"[data-place={move.split('-')[0]}]").focus()
    await play_by_keys(ada, game, move)
    await expect(said).to_contain_text(f"{card_name(card)} to {said_target(move.split('-')[1])}")
    await ada.keyboard.press("u")
    await expect(said).to_contain_text("Move undone")

    # In Swedish, in Swedish words.
    bo_game = Game.from_code(DEAL)
    await bo.locator(f"[data-place={move.split('-')[0]}]").focus()
    await play_by_keys(bo, bo_game, move)
    await expect(bo.get_by_test_id("announcer")).to_contain_text(
        re.compile(r"\w+ \w+ till (hög \d+|\w+ grundhög i \w+)")
    )

    # Race news: Bo resigns, Ada hears it; then the race is over.
    await resign(bo)
    await expect(said).to_contain_text("Bo resigned with")
    await resign(ada)
    await expect(ada.get_by_test_id("results")).to_be_visible()
    await expect(said).to_contain_text("You resigned")


async def test_reduced_motion_stops_the_deal(server: ServerProcess, pages: Pages) -> None:
    # Without the wish the deal moves (so the check below can fail) ...
    page = await pages.open(server.http_url + "/", name="Mo")
    await page.get_by_test_id("play-alone").click()
    slot = page.locator(".table.dealing .pile .slot").first
    await expect(slot).to_be_attached()
    assert await slot.evaluate("el => getComputedStyle(el).animationName") == "deal-in"
    # ... with prefers-reduced-motion it does not.
    still = await pages.open(server.http_url + "/", name="Mo")
    await still.emulate_media(reduced_motion="reduce")
    await still.get_by_test_id("deal-mode").select_option("code")
    await still.get_by_test_id("deal-code").fill(DEAL)
    await still.get_by_test_id("play-alone").click()
    slot = still.locator(".table.dealing .pile .slot").first
    await expect(slot).to_be_attached()
    assert await slot.evaluate("el => getComputedStyle(el).animationName") == "none"
    assert await still.evaluate("() => document.getAnimations().length") == 0
    await wait_for_board(still)
    # A move's card does not fly either.
    game = Game.from_code(DEAL)
    move = next(str(m) for m in game.legal_moves() if str(m)[0] == "p")
    await still.locator(f"[data-place={move.split('-')[0]}]").focus()
    await play_by_keys(still, game, move)
    assert await still.evaluate("() => document.getAnimations().length") == 0


# --- axe-core on every screen ------------------------------------------------------------------

SIZES = [(1280, 800), (390, 844)]
LANGUAGES = ["en", "sv"]
# Long enough to check the countdown's screen at both sizes in both languages.
SLOW_COUNTDOWN_MS = 5000


@pytest.fixture
def slow_server(prefix: str) -> Iterator[ServerProcess]:
    with start_server_process(prefix, countdown_ms=SLOW_COUNTDOWN_MS) as proc:
        yield proc


async def serious_axe_findings(page: Page) -> list[str]:
    """axe-core's critical and serious findings (WCAG 2.0/2.1 A and AA) on the page now."""
    if not await page.evaluate("() => typeof window.axe === 'object'"):
        await page.add_script_tag(path=str(AXE))
    result: dict[str, Any] = await page.evaluate(
        """async () => await axe.run(document, {
              runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}})"""
    )
    return [
        f"{v['impact']} {v['id']}: {[n['target'] for n in v['nodes']][:3]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


async def cut_off(page: Page) -> list[str]:
    """Boxes in the race panel whose content is cut off (axe-core cannot see clipping),
    with what sticks out. A name shortened with an ellipsis is meant, and so is the
    phones' one-line strip (`.standings`, aria-hidden): it opens into the full list."""
    cut: list[str] = await page.evaluate(
        """() => [...document.querySelectorAll('.race-panel, .race-panel *')]
              .filter(el => !el.closest('.standings'))
              .filter(el => el.getClientRects().length && el.scrollWidth > el.clientWidth + 1
                      && getComputedStyle(el).overflowX !== 'visible'
                      && getComputedStyle(el).textOverflow !== 'ellipsis')
              .map(el => {
                const right = el.getBoundingClientRect().right + 1;
                const out = [...el.querySelectorAll('*')]
                  .filter(c => c.getBoundingClientRect().right > right).slice(0, 4)
                  .map(c => `${c.className} ${Math.round(c.getBoundingClientRect().width)}px`);
                return `cut off: ${el.className} ${el.scrollWidth}>${el.clientWidth}px (${out})`;
              })"""
    )
    return cut


class Sweep:
    """Each screen at both sizes in both languages, in the page session that reached it
    (the language is switched in place, the viewport resized): one page load per screen
    at most, instead of one per size and language."""

    def __init__(self) -> None:
        self.findings: dict[str, dict[str, list[str]]] = {}

    async def check(
        self,
        page: Page,
        screen: str,
        *,
        reopen: Callable[[], Awaitable[None]] | None = None,
        close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """``reopen``/``close``: a dialog whose words are fixed when it opens is opened
        again in each language."""
        size = page.viewport_size
        for lang in LANGUAGES:
            await page.evaluate("lang => crescent.setLanguage(lang)", lang)
            await expect(page.locator("html")).to_have_attribute("lang", lang)
            if reopen:
                await reopen()
            for width, height in SIZES:
                await page.set_viewport_size({"width": width, "height": height})
                found = await serious_axe_findings(page) + await cut_off(page)
                self.findings.setdefault(screen, {})[f"{width}x{height} {lang}"] = found
            if close:
                await close()
        await page.evaluate("() => crescent.setLanguage('en')")
        if size:
            await page.set_viewport_size(size)


async def test_axe_finds_nothing_serious_on_any_screen(
    slow_server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    server = slow_server
    sweep = Sweep()
    ada = await pages.open(server.http_url + "/", width=1280, height=800, name="Ada")
    await expect(ada.get_by_test_id("play-alone")).to_be_visible()
    await sweep.check(ada, "lobby")

    async def open_how_to() -> None:
        await ada.get_by_test_id("help").click()
        await expect(ada.get_by_test_id("how-to")).to_be_visible()

    async def close_dialog() -> None:
        await ada.keyboard.press("Escape")
        await expect(ada.locator("[aria-modal=true]")).to_have_count(0)

    await sweep.check(ada, "how to play", reopen=open_how_to, close=close_dialog)

    await ada.get_by_test_id("open-daily").click()
    await expect(ada.get_by_test_id("daily-error").or_(ada.locator(".daily"))).to_be_visible()
    await sweep.check(ada, "daily")

    await ada.evaluate("() => crescent.nav.go('/')")
    await ada.get_by_test_id("t-open-create").click()
    await expect(ada.get_by_test_id("t-create-form")).to_be_visible()
    await sweep.check(ada, "tournament form")

    await ada.evaluate("() => crescent.nav.go('/')")
    code = await create_room(ada, seats=2, deal=DEAL)
    await sweep.check(ada, "waiting room")

    # A visitor by link with no name yet is asked for one.
    bo = await pages.open(f"{server.http_url}/r/{code}", width=390, height=844)
    await expect(bo.get_by_test_id("name-gate")).to_be_visible()
    await sweep.check(bo, "name gate")
    # A long name: the other racers' rows in Ada's race panel must still fit it.
    await bo.get_by_test_id("name").fill("Bartholomew-Longname")
    await bo.get_by_test_id("join").click()

    await ready_up(bo)
    await ready_up(ada)
    await expect(ada.get_by_test_id("countdown")).to_be_visible()
    await sweep.check(ada, "countdown")
    await wait_for_board(ada)
    await sweep.check(ada, "race")

    async def open_redeal() -> None:
        await ada.locator("[data-place=p1]").focus()
        await ada.keyboard.press("r")
        await expect(ada.get_by_test_id("confirm-redeal")).to_be_visible()

    await sweep.check(ada, "redeal question", reopen=open_redeal, close=close_dialog)

    await wait_for_board(bo)
    await resign(bo)
    await resign(ada)
    await expect(ada.get_by_test_id("results")).to_be_visible()
    await sweep.check(ada, "results")

    # A practice game with its hint on the board.
    await ada.evaluate("() => crescent.nav.go('/')")
    await ada.get_by_test_id("play-alone").click()
    await wait_for_board(ada)
    await ada.get_by_test_id("hint").click()
    await expect(ada.locator(".place.hinted")).to_have_count(2)
    await sweep.check(ada, "practice game")

    # The tournament page (its host's view).
    await ada.evaluate("() => crescent.nav.go('/')")
    await ada.get_by_test_id("t-open-create").click()
    form = ada.get_by_test_id("t-create-form")
    await form.get_by_test_id("t-name-input").fill("Friday cup")
    await form.get_by_test_id("t-create").click()
    await expect(ada.get_by_test_id("t-code")).to_be_visible()
    await sweep.check(ada, "tournament page")

    (artifacts / "axe-findings.json").write_text(json.dumps(sweep.findings, indent=1))
    assert len(sweep.findings) == 12
    serious = {
        screen: {where: found for where, found in runs.items() if found}
        for screen, runs in sweep.findings.items()
    }
    assert not any(serious.values()), json.dumps(serious, indent=1)
