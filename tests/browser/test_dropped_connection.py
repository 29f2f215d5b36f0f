"""A connection that drops with an action in flight, seen from the page.

The page's WebSocket runs through Playwright's WebSocket routing as a relay to the real
server; the relay cuts the connection at a chosen moment (a network fault, the server is
untouched). Once before the action reaches the server, once after the server stored it
but before the ack came back. Either way the page reconnects, asks for the room, and the
action is applied exactly once.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgpack
from playwright.async_api import Page, WebSocketRoute, expect

from server.game import Game
from tests.support import ServerProcess

from .conftest import DEAL, Pages
from .helpers import board_state, create_room, engine_state, ready_up, wait_for_board


class Relay:
    """Forwards every frame between page and server; can cut the line at an act or its ack."""

    def __init__(self) -> None:
        self.cut: str | None = None  # "act" (before the server) or "ack" (after it)
        self.acts: list[dict[str, Any]] = []
        self.connections = 0
        self.tasks: set[asyncio.Task[None]] = set()

    def _close(self, page_side: WebSocketRoute, server_side: WebSocketRoute) -> None:
        async def close() -> None:
            await page_side.close(code=4000, reason="network fault (test)")
            await server_side.close(code=4000, reason="network fault (test)")

        task = asyncio.ensure_future(close())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def __call__(self, page_side: WebSocketRoute) -> None:
        self.connections += 1
        server_side = page_side.connect_to_server()

        def from_page(frame: str | bytes) -> None:
            msg = msgpack.unpackb(frame) if isinstance(frame, bytes) else {}
            if msg.get("t") == "act":
                self.acts.append(msg)
                if self.cut == "act":
                    self.cut = None
                    self._close(page_side, server_side)
                    return
            server_side.send(frame)

        def from_server(frame: str | bytes) -> None:
            msg = msgpack.unpackb(frame) if isinstance(frame, bytes) else {}
            if msg.get("t") == "ack" and self.cut == "ack":
                self.cut = None
                self._close(page_side, server_side)
                return
            page_side.send(frame)

        page_side.on_message(from_page)
        server_side.on_message(from_server)


async def open_relayed(pages: Pages, url: str, relay: Relay, name: str) -> Page:
    context = await pages.browser.new_context(viewport={"width": 1280, "height": 860})
    pages.contexts.append(context)
    await context.add_init_script(f"localStorage.setItem('crescent.name', {name!r});")
    page = await context.new_page()
    page.on("pageerror", lambda exc: pages.errors.append(str(exc)))
    page.set_default_timeout(15000)
    await page.route_web_socket("**/ws", relay)
    await page.goto(url)
    return page


async def test_action_in_flight_when_the_line_drops(server: ServerProcess, pages: Pages) -> None:
    relay = Relay()
    ada = await open_relayed(pages, server.http_url + "/", relay, "Ada")
    code = await create_room(ada, seats=2)
    bo = await pages.open(f"{server.http_url}/r/{code}", name="Bo")
    await ready_up(ada)
    await ready_up(bo)
    await wait_for_board(ada)
    game = Game.from_code(DEAL)
    connections = relay.connections

    # 1. The act never reaches the server: after the reconnect it goes out again, same seq.
    relay.cut = "act"
    await ada.locator("[data-place=p7]").click()  # one fit: p7-dc
    game.play("p7-dc")
    await expect(ada.get_by_test_id("moves")).to_have_text("1")
    assert relay.connections == connections + 1
    assert [(m["seq"], m["action"]) for m in relay.acts] == [(1, "p7-dc"), (1, "p7-dc")]
    assert (await board_state(ada))["places"] == engine_state(game)

    # 2. The server stored it, the ack is lost: the snapshot says so, nothing is resent.
    relay.cut = "ack"
    await ada.locator("[data-place=p2]").click()  # one fit: p2-p8
    game.play("p2-p8")
    await expect(ada.get_by_test_id("moves")).to_have_text("2")
    assert relay.connections == connections + 2
    assert [(m["seq"], m["action"]) for m in relay.acts[2:]] == [(2, "p2-p8")]
    assert (await board_state(ada))["places"] == engine_state(game)

    # The server holds exactly these two moves: the other racer sees 2 moves, and the
    # next action continues with seq 3.
    await expect(bo.locator("[data-testid=racer]", has_text="Ada")).to_contain_text("Moves: 2")
    await ada.locator("[data-place=p9]").click()
    game.play(str(game.tap_targets("p9")[0]))
    await expect(ada.get_by_test_id("moves")).to_have_text("3")
    assert relay.acts[-1]["seq"] == 3
    assert (await board_state(ada))["places"] == engine_state(game)
