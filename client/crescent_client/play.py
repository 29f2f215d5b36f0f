"""The bot's game loop, shared by ``crescent bot`` for rooms and for tournaments."""

from __future__ import annotations

import asyncio
from typing import TextIO

from crescent_client.client import CrescentClient
from crescent_client.errors import RequestFailed
from crescent_client.rooms import RoomState
from crescent_client.strategy import GreedyStrategy
from crescent_wire.protocol import Ack, Refused


def say(out: TextIO, text: str) -> None:
    out.write(text + "\n")
    out.flush()


async def play_game(
    client: CrescentClient, room: RoomState, out: TextIO, verbose: bool = False, pace: float = 0.0
) -> dict[str, int | str]:
    """Play this racer's game to its end with the greedy strategy; return a summary.
    ``pace``: seconds to wait before each action (a race people can follow)."""
    strategy = GreedyStrategy()
    acked = refused = 0
    while room.view is not None:
        action = strategy.next_action(room.view)
        if action is None:
            break
        if pace > 0:
            await asyncio.sleep(pace)
        try:
            reply = await client.act(action, room.code)
        except RequestFailed as err:
            if err.code == "not_started":
                await asyncio.sleep(0.05)
                continue
            if err.code == "race_over":
                break
            raise
        if isinstance(reply, Ack):
            acked += 1
            if verbose:
                say(out, f"{action:>8}  ok  ({room.view['status'] if room.view else '?'})")
            if action == "resign":
                break
        elif isinstance(reply, Refused):
            refused += 1
            if verbose:
                say(out, f"{action:>8}  refused: {reply.code}")
    view = room.view or {}
    foundation = sum(f["n"] for f in view.get("foundations", {}).values())
    return {
        "status": view.get("status", "?"),
        "moves": view.get("moves", 0),
        "foundation": foundation,
        "acked": acked,
        "refused": refused,
    }
