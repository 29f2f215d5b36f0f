"""A practice game near its end: the hint says it finishes, Auto-finish wins it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
from playwright.async_api import expect

from bench.devclient import open_client
from crescent_wire import protocol as p
from server.game import replay
from server.solver.finishing import finishing_line
from tests.support import ServerProcess

from .conftest import Pages
from .helpers import wait_for_board

WIN = json.loads((Path(__file__).parents[1] / "game" / "data" / "winning_line.json").read_text())
CODE, LINE = WIN["code"], list(WIN["actions"])


async def test_auto_finish_wins_a_practice_game(server: ServerProcess, pages: Pages) -> None:
    ada = await pages.open(server.http_url + "/", name="Ada")
    await ada.get_by_test_id("deal-mode").select_option("code")
    await ada.get_by_test_id("deal-code").fill(CODE)
    await ada.get_by_test_id("play-alone").click()
    await wait_for_board(ada)
    code = ada.url.rsplit("/", 1)[-1]
    # The same player on a second connection plays the line up to where only
    # foundation moves are left.
    near = next(k for k in range(len(LINE)) if finishing_line(replay(CODE, LINE[:k])))
    token = await ada.evaluate("localStorage.getItem('crescent.token')")
    async with aiohttp.ClientSession() as session:
        twin = await open_client(session, server.ws_url, token=token)
        await twin.join(code)
        for seq, action in enumerate(LINE[:near], 1):
            assert isinstance(await twin.act(code, seq, action), p.Ack), action
            await asyncio.sleep(1 / 25)  # under the server's rate limit (30/s), not a wait
        await twin.close()
    await ada.reload()
    await wait_for_board(ada)
    await expect(ada.get_by_test_id("auto-finish")).to_have_count(0)
    await ada.get_by_test_id("hint").click()
    await ada.get_by_test_id("auto-finish").click()
    results = ada.get_by_test_id("results")
    await expect(results).to_be_visible(timeout=30000)
    await expect(results).to_contain_text("104/104")
    await ada.get_by_test_id("winnable").click()
    await expect(ada.get_by_test_id("winnable-result")).to_contain_text(
        "Yes: the solver won it in", timeout=30000
    )
    assert not pages.errors
