"""A tournament in the browser (issue #13): the host creates it and runs a round, a player
on a phone joins by link, plays on the race board and sees the standings; the host ends
it and the final page shows the podium, also to a visitor who comes by link afterwards.

Real server process, real Redis, Debian's Chromium (conftest.py). The one seated racer
resigns, which ends the round at once: no test waits for a round's time limit.
"""

from __future__ import annotations

import re
from pathlib import Path

from playwright.async_api import Page, expect

from server.game import Game
from tests.support import ServerProcess

from .conftest import Pages
from .helpers import play_line, resign, snapshot, wait_for_board

# The first move of the winning line in test_winning_race.py, on the same deal.
DEAL = "CR1-N-AAAAAUV"
FIRST_MOVE = "p6-ad"
CODE = re.compile(r"^T[23456789A-Z]{6}$")


async def create_tournament(host: Page, *, name: str, rounds: int) -> str:
    """Fill the lobby's tournament form (chosen deals, 1-minute rounds); returns the code."""
    await host.get_by_test_id("t-open-create").click()
    form = host.get_by_test_id("t-create-form")
    # The scoring is said in plain words with an example, not as a formula.
    help_text = form.get_by_test_id("t-scoring-help")
    await expect(help_text).to_contain_text("with 4 players, the winner gets 4 points")
    await form.get_by_test_id("t-scoring").select_option("time")
    await expect(help_text).to_contain_text("5:00 + 1:40 = 6:40")
    await form.get_by_test_id("t-scoring").select_option("placement")
    await form.get_by_test_id("t-name-input").fill(name)
    await form.get_by_test_id("t-rounds").select_option(str(rounds))
    await form.get_by_test_id("t-limit").select_option("60")
    await form.get_by_test_id("t-max").fill("20")
    await form.get_by_test_id("t-deal-mode").select_option("codes")
    # One code too few: the page says what to do, and sends nothing.
    await form.get_by_test_id("t-deals").fill(DEAL)
    await form.get_by_test_id("t-create").click()
    await expect(host.get_by_test_id("t-form-error")).to_contain_text(f"exactly {rounds} deal")
    await host.get_by_test_id("t-deals").fill("\n".join([DEAL] * rounds))
    await host.get_by_test_id("t-create").click()
    code_el = host.get_by_test_id("t-code")
    await expect(code_el).to_have_text(CODE)
    code = (await code_el.text_content() or "").strip()
    assert host.url.endswith(f"/t/{code}")
    return code


async def test_host_runs_a_round_and_a_phone_player_plays_it(
    server: ServerProcess, pages: Pages, artifacts: Path
) -> None:
    host = await pages.open(server.http_url + "/", name="Hana")
    code = await create_tournament(host, name="Friday cup", rounds=2)
    await expect(host.get_by_test_id("t-name")).to_have_text("Friday cup")
    await expect(host.get_by_test_id("t-host")).to_be_visible()
    # Nothing has started: there is nothing to pause, so Pause is not offered.
    await expect(host.get_by_test_id("t-pause")).to_have_count(0)
    # The page was opened at 127.0.0.1: under Copy link it says so, as the waiting room does.
    await expect(host.get_by_test_id("local-only")).to_contain_text("only works on this computer")
    await expect(host.get_by_test_id("local-only")).not_to_contain_text("README")

    # Nobody has joined: starting a round is refused, with what to do about it.
    await host.get_by_test_id("t-start").click()
    await expect(host.get_by_test_id("t-host-error")).to_contain_text("send the link")

    # A player on a phone comes by the link and joins.
    player = await pages.open(
        f"{server.http_url}/t/{code}", name="Pia", width=390, height=844, touch=True
    )
    await expect(player.get_by_test_id("t-name")).to_have_text("Friday cup")
    await player.get_by_test_id("t-join").click()
    await expect(player.get_by_test_id("t-player")).to_be_visible()
    await expect(player.get_by_test_id("t-next")).to_contain_text("round 1 of 2")
    # None of the host's controls is on the player's page.
    await expect(player.get_by_test_id("t-host")).to_have_count(0)
    for control in ("t-start", "t-pause", "t-end", "t-close-reg", "t-remove"):
        await expect(player.get_by_test_id(control)).to_have_count(0)
    await snapshot(player, artifacts / "tournament-player-waiting-phone.png", full_page=True)

    # The host sees her in the registration list.
    await expect(host.get_by_test_id("t-reg")).to_contain_text("Pia")
    await expect(host.get_by_test_id("t-reg-counts")).to_contain_text("1 active")
    # She came as a spectator (the page watches by link) and is counted as a player only.
    await expect(host.get_by_test_id("t-counts")).to_have_text("1 of 20 players · 0 watching")
    await snapshot(host, artifacts / "tournament-host.png", full_page=True)

    # Round 1: the player is taken to the board; she plays a move.
    await host.get_by_test_id("t-start").click()
    await expect(host.get_by_test_id("t-live")).to_be_visible()
    await wait_for_board(player)
    await expect(player.get_by_test_id("t-strip")).to_be_attached()
    await play_line(player, Game.from_code(DEAL), [FIRST_MOVE])
    # The live standings (t_live, at most once a second) show her move, to the host too.
    live_row = host.get_by_test_id("t-live-table").locator("tr", has_text="Pia")
    await expect(live_row.get_by_test_id("live-moves")).to_have_text("1 move")
    await expect(player.get_by_test_id("t-strip")).to_contain_text("Pia")
    # A reload mid-round: the page finds the round again and shows the same board.
    await player.reload()
    await wait_for_board(player)
    await expect(player.get_by_test_id("moves")).to_have_text("1")
    await snapshot(player, artifacts / "tournament-board-phone.png")
    await snapshot(host, artifacts / "tournament-host-live.png", full_page=True)

    # She resigns: the only racer is done, so the round ends and is scored.
    await resign(player)
    await expect(player.get_by_test_id("results")).to_be_visible()
    await snapshot(player, artifacts / "tournament-round-results-phone.png")
    await player.get_by_test_id("to-tournament").click()
    standings = player.get_by_test_id("t-standings-table")
    pia = standings.locator("tr", has_text="Pia")
    await expect(pia.get_by_test_id("t-score")).to_have_text("1")  # 1 racer: 1st gets 1 point
    await expect(player.get_by_test_id("t-rounds")).to_contain_text("Round 1")
    # She resigned: place 1 of a round nobody finished won nothing.
    round_1 = player.get_by_test_id("t-round-1").locator("summary")
    await expect(round_1).to_contain_text("nobody finished")
    await expect(round_1).not_to_contain_text("won by")
    await expect(round_1).to_contain_text("1 racer")
    await expect(player.get_by_test_id("t-you")).to_contain_text("· 1 point")
    await expect(player.get_by_test_id("t-next")).to_contain_text("round 2 of 2")
    await expect(
        host.get_by_test_id("t-standings-table").locator("tr", has_text="Pia")
    ).to_contain_text("1")
    await expect(host.get_by_test_id("t-start")).to_have_text("Start round 2")
    # Between rounds, with a round to come, pausing means something: it is offered.
    await expect(host.get_by_test_id("t-pause")).to_be_visible()
    # The host plays too: her own row has no Remove (Pia's has).
    await host.get_by_test_id("t-play-too").click()
    reg = host.get_by_test_id("t-reg")
    await expect(reg.locator("li", has_text="Hana")).to_be_visible()
    await expect(reg.locator("li", has_text="Hana").get_by_test_id("t-remove")).to_have_count(0)
    await expect(reg.locator("li", has_text="Pia").get_by_test_id("t-remove")).to_have_count(1)
    await expect(host.get_by_test_id("t-reg-counts")).to_contain_text("2 active")
    await snapshot(player, artifacts / "tournament-after-round-phone.png", full_page=True)

    # The host ends the tournament early: everyone gets the final page with the podium.
    await host.get_by_test_id("t-end").click()
    await host.get_by_test_id("confirm-end").get_by_test_id("confirm-yes").click()
    await expect(host.get_by_test_id("podium-1")).to_contain_text("Pia")
    await expect(player.get_by_test_id("t-phase")).to_have_text("Finished")
    await expect(player.get_by_test_id("podium-1")).to_contain_text("Pia")
    await expect(player.get_by_test_id("t-json")).to_have_attribute(
        "href", f"/api/tournaments/{code}.json"
    )
    await snapshot(player, artifacts / "tournament-final-phone.png", full_page=True)

    # The page stays viewable by link after the end: a newcomer sees it, with no join form.
    visitor = await pages.open(f"{server.http_url}/t/{code}", width=390, height=844, touch=True)
    await expect(visitor.get_by_test_id("podium-1")).to_contain_text("Pia")
    await expect(visitor.get_by_test_id("t-round-1")).to_contain_text("nobody finished")
    await expect(visitor.get_by_test_id("t-join-form")).to_have_count(0)
