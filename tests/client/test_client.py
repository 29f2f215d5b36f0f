"""The client library against a real server process and the real Redis."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from crescent_client import (
    Ack,
    CrescentClient,
    Disconnected,
    Progress,
    Reconnected,
    Refused,
    RequestFailed,
    connect,
)
from crescent_client.strategy import foundation_moves, pile_moves
from server.game import Game
from tests.support import ServerProcess, free_port, launch_server_process

DEAL = "CR1-N-AAAAAAB"


def an_illegal_move(view: dict[str, object]) -> str:
    """A pile → pile move that the rules refuse (two piles whose tops are not adjacent)."""
    legal = (
        set(foundation_moves(view))
        | set(pile_moves(view, revealing=True))
        | set(pile_moves(view, revealing=False))
    )
    for source in range(1, 17):
        for target in range(1, 17):
            move = f"p{source}-p{target}"
            if source != target and move not in legal:
                return move
    raise AssertionError("every pile move is legal?")


def a_legal_move(view: dict[str, object]) -> str:
    for move in (
        *foundation_moves(view),
        *pile_moves(view, revealing=True),
        *pile_moves(view, revealing=False),
    ):
        return move
    return "redeal"


async def test_hello_gives_a_player_and_the_token_brings_it_back(server: ServerProcess) -> None:
    async with connect(server.ws_url, name="Ada") as first:
        assert first.player["name"] == "Ada"
        assert first.token
        token, player_id = first.token, first.player["id"]
        rtt = await first.ping()
        assert 0 <= rtt < 5000
        # Same machine: the estimated server clock is the local clock, give or take.
        assert abs(first.server_now() - time.time() * 1000) < 1000
    async with connect(server.ws_url, token=token) as again:
        assert again.player["id"] == player_id
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    with pytest.raises(RequestFailed) as info:
        async with connect(server.ws_url, token=forged):
            pass
    assert info.value.code == "bad_token"


async def test_errors_carry_the_server_code(server: ServerProcess) -> None:
    async with connect(server.ws_url, name="Bo") as client:
        with pytest.raises(RequestFailed) as info:
            await client.join("ZZZZZZ")
        assert info.value.code == "room_not_found"
        room = await client.create_room(seats=2)
        await client.start()  # a 200 ms countdown: the race has not started yet
        with pytest.raises(RequestFailed) as info:
            await client.act("p1-p2", room.code)
        assert info.value.code == "not_started"


async def test_two_racers_race_with_acks_refusals_and_progress(server: ServerProcess) -> None:
    async with connect(server.ws_url, name="Ada") as ada, connect(server.ws_url, name="Bo") as bo:
        room_a = await ada.create_room(seats=2, deal=DEAL)
        room_b = await bo.join(room_a.code)
        assert (
            set(room_a.players) == {ada.player["id"], bo.player["id"]} or len(room_b.players) == 2
        )
        await ada.ready()
        await bo.ready()  # every seat taken and ready: the countdown starts by itself
        await asyncio.gather(ada.wait_for_start(timeout=10), bo.wait_for_start(timeout=10))
        assert room_a.view is not None and room_b.view is not None
        # The client's view matches the engine's own game of that deal.
        assert room_a.view["piles"] == Game.from_code(DEAL).view().to_wire()["piles"]

        refused = await ada.act(an_illegal_move(room_a.view))
        assert isinstance(refused, Refused) and refused.code in ("wrong_suit", "wrong_rank")
        assert room_a.last_seq == 0  # a refused action does not use up its seq

        move = a_legal_move(room_a.view)
        ack = await ada.act(move)
        assert isinstance(ack, Ack) and ack.seq == 1 and not ack.duplicate
        assert room_a.last_seq == 1 and room_a.view == ack.view
        ack2 = await ada.act(a_legal_move(room_a.view))
        assert isinstance(ack2, Ack) and ack2.seq == 2

        # Bo, the other racer, sees Ada's progress in the event stream and in his state.
        async def first_progress_of_ada() -> Progress:
            async for event in bo.events():
                if isinstance(event, Progress) and any(
                    r["player"] == ada.player["id"] and r["moves"] >= 1 for r in event.racers
                ):
                    return event
            raise AssertionError("event stream ended")

        progress = await asyncio.wait_for(first_progress_of_ada(), 5)
        assert progress.room == room_a.code and progress.round == 1
        assert room_b.progress[ada.player["id"]]["moves"] >= 1

        await ada.act("resign")
        await bo.act("resign")
        await ada.wait_until(lambda: room_a.phase == "finished", timeout=10)
        assert room_a.results is not None and len(room_a.results) == 2
        assert room_a.deal == DEAL  # shown once the race is over


async def test_spectator_follows_events(server: ServerProcess) -> None:
    async with (
        connect(server.ws_url, name="Host") as host,
        connect(server.ws_url, name="Eve") as eve,
    ):
        room = await host.create_room(seats=2)
        watched = await eve.join(room.code, as_="spectator")
        assert watched.role == "spectator"
        await host.ready()
        await eve.wait_until(
            lambda: watched.players[host.player["id"]].get("ready") is True, timeout=5
        )
        await host.start()
        await eve.wait_until(lambda: watched.phase == "countdown", timeout=5)
        assert watched.start_at is not None and watched.view is None


def freeze(server: ServerProcess) -> None:
    os.kill(server.proc.pid, signal.SIGSTOP)


async def test_reconnect_after_a_server_crash_resends_the_pending_action(prefix: str) -> None:
    """The server is frozen while an action is in flight, then killed and restarted on
    the same port: the client reconnects with its token, joins again and resends the
    action, which is applied exactly once."""
    port = free_port()
    server = launch_server_process(prefix, port, countdown_ms=100)
    client = CrescentClient(
        server.ws_url, name="Ada", request_timeout=20, reconnect_delays=(0.1, 0.2, 0.3)
    )
    try:
        await client.open()
        player_id = client.player["id"]
        room = await client.create_room(seats=2, deal=DEAL)
        await client.start()
        await client.wait_for_start(timeout=10)
        assert room.view is not None
        first = await client.act(a_legal_move(room.view))
        assert isinstance(first, Ack) and first.seq == 1
        moves_before = room.view["moves"]

        freeze(server)
        pending = asyncio.create_task(client.act(a_legal_move(room.view)))
        await asyncio.sleep(0.3)
        assert not pending.done()
        server.kill()
        server = launch_server_process(prefix, port, countdown_ms=100)

        reply = await asyncio.wait_for(pending, 20)
        assert isinstance(reply, Ack) and reply.seq == 2
        assert client.player["id"] == player_id and client.reconnects == 1
        assert room.last_seq == 2 and room.view is not None
        assert room.view["moves"] in (moves_before, moves_before + 1)
        events = client.pending_events()
        assert any(isinstance(e, Disconnected) and e.reconnecting for e in events)
        assert any(isinstance(e, Reconnected) and e.rooms == (room.code,) for e in events)

        # The game goes on with the next seq, and the stored log agrees with the client.
        third = await client.act(a_legal_move(room.view))
        assert isinstance(third, Ack) and third.seq == 3
        again = await client.join(room.code)
        assert again.last_seq == 3
    finally:
        await client.close()
        server.kill()


async def test_graceful_restart_mid_race(prefix: str) -> None:
    """SIGTERM closes sockets with 1001; the client comes back on the new process."""
    port = free_port()
    server = launch_server_process(prefix, port, countdown_ms=100)
    try:
        async with connect(server.ws_url, name="Bo", reconnect_delays=(0.2, 0.3, 0.5)) as bo:
            room = await bo.create_room(seats=2)
            await bo.start()
            await bo.wait_for_start(timeout=10)
            assert room.view is not None
            await bo.act(a_legal_move(room.view))
            server.terminate()
            server = launch_server_process(prefix, port, countdown_ms=100)
            await bo.wait_until(lambda: bo.reconnects == 1, timeout=20)
            assert room.last_seq == 1
            ack = await bo.act(a_legal_move(room.view))
            assert isinstance(ack, Ack) and ack.seq == 2
    finally:
        server.terminate()


async def test_a_version_gap_is_filled_by_sync(server: ServerProcess) -> None:
    async with (
        connect(server.ws_url, name="Host") as host,
        connect(server.ws_url, name="Guest") as guest,
    ):
        room = await host.create_room(seats=3)
        seen = await guest.join(room.code)
        await host.ready()
        await guest.wait_until(lambda: seen.ver == room.ver >= 2, timeout=20)
        # Pretend the guest missed the last two events (its join and the host's ready):
        # the next event shows a gap, so the client asks the server for everything after
        # its version and applies it in order.
        seen.ver -= 2
        missed = seen.ver
        seen.players[host.player["id"]]["ready"] = False
        seen.players.pop(guest.player["id"])
        await host.ready(ready=False)
        await host.ready(ready=True)
        await guest.wait_until(lambda: seen.ver == missed + 4, timeout=20)
        assert seen.players[host.player["id"]]["ready"] is True
        assert guest.player["id"] in seen.players  # the missed join, applied again


def test_the_example_of_docs_client_md_runs(
    server: ServerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    """The documented example, run as written (only the URL is this test's server)."""
    import re

    from tests.support import REPO_ROOT

    text = (REPO_ROOT / "docs" / "client.md").read_text()
    example = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    assert "asyncio.run(main())" in example
    code = example.replace('"ws://127.0.0.1:8080/ws"', repr(server.ws_url))
    exec(compile(code, "docs/client.md", "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert "join code" in out and "'rank': 1" in out
