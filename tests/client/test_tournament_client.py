"""The client's tournament state, pushes, display and command line, without a server.

What the client does with the server's tournament messages is tested here on the
decoded messages themselves (the codec is crescent_wire's, tested in tests/tournament);
the same code against a real server is in tests/server/test_tournament_e2e.py and
tests/client/test_tournament_cli.py.
"""

from __future__ import annotations

import asyncio
import doctest
import io
import os
import subprocess
import sys
from argparse import Namespace
from typing import Any

import pytest

import crescent_client.display
import crescent_client.tournament_cli
import crescent_client.tournaments
from crescent_client import CrescentClient, TournamentState
from crescent_client.cli import build_parser
from crescent_client.display import round_results_table, standings_table
from crescent_client.errors import NotInRoom
from crescent_client.tournament_cli import play_tournament
from crescent_wire.protocol import TLive, TournamentSnapshot, encode
from tests.support import REPO_ROOT


def snapshot(ver: int, **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "code": "TK7PQ2X",
        "name": "Friday",
        "host": {"id": "h", "name": "Hal"},
        "variant": "N",
        "rounds": 3,
        "time_limit": 60,
        "max_players": 200,
        "scoring": "placement",
        "phase": "registration",
        "registration_open": True,
        "paused": False,
        "ver": ver,
        "players": 2,
        "spectators": 0,
        "round": 0,
        "current": None,
        "deals": [None, None, None],
        "standings": [],
        "finished_rounds": [],
    }
    data.update(fields)
    return data


def live(round_: int, you_place: int | None = None) -> TLive:
    you = None
    if you_place is not None:
        you = {
            "place": you_place,
            "id": "me",
            "name": "Me",
            "finished": False,
            "time_ms": None,
            "foundation": 20,
            "moves": 9,
        }
    return TLive(tournament="TK7PQ2X", round=round_, top=(), you=you, racing=2, finished=0)


@pytest.mark.parametrize(
    "module",
    [crescent_client.tournaments, crescent_client.display, crescent_client.tournament_cli],
)
def test_doctests(module: object) -> None:
    result = doctest.testmod(module)  # type: ignore[arg-type]
    assert result.attempted > 0 and result.failed == 0


def test_state_keeps_the_newest_snapshot_and_the_current_rounds_live() -> None:
    state = TournamentState.from_snapshot(snapshot(5), {"role": "player", "status": "active"})
    assert not state.load_snapshot(snapshot(4, phase="finished"), {"role": "player"})
    assert state.phase == "registration" and state.version == 5
    current = {"round": 1, "room": "k7pq2x", "start_at": 10, "deadline": 70}
    assert state.load_snapshot(snapshot(6, phase="racing", round=1, current=current), {})
    assert state.seated_room() == ("K7PQ2X", 1)
    assert state.apply_live(live(1, you_place=2))
    assert state.live is not None and state.live.you is not None
    # A t_live of an earlier round (a late frame) does not replace the current one.
    state.load_snapshot(snapshot(7, phase="between", round=2, current=None), {})
    assert state.live is None  # round 1's live summary went with round 1
    assert not state.apply_live(live(1))
    assert state.seated_room() is None
    # The same version again (a reply after a push of it) is adopted: nothing older.
    assert state.load_snapshot(snapshot(7, phase="between", round=2), {"role": "spectator"})
    assert state.role == "spectator" and not state.is_player


def test_a_withdrawn_or_removed_player_resubscribes_as_a_watcher() -> None:
    """After a reconnect the client sends t_join again as it subscribed; as ``player``
    that would register a withdrawn player again, so it watches instead."""
    for status in ("withdrawn", "removed"):
        state = TournamentState.from_snapshot(snapshot(1), {"role": "player", "status": "active"})
        state.subscribed_as = "player"
        state.load_snapshot(snapshot(2), {"role": "player", "status": status})
        assert state.subscribed_as == "spectator"


def test_host_who_joined_counts_as_a_player() -> None:
    state = TournamentState.from_snapshot(snapshot(1), {"role": "host", "also_player": True})
    assert state.role == "host" and state.is_player
    alone = TournamentState.from_snapshot(snapshot(1), {"role": "host", "also_player": False})
    assert not alone.is_player and alone.status is None


async def test_pushes_update_the_state_and_reach_the_event_stream() -> None:
    """Frames as the server sends them (encoded, then decoded by the client's codec) go
    through the client's dispatch: state updated, each push queued as an event."""
    client = CrescentClient("ws://127.0.0.1:9/ws")
    client.handle_frame(encode(TournamentSnapshot(tournament=snapshot(1), you={"role": "player"})))
    state = client.tournament_state()
    assert client.tournament_state("tk7pq2x") is state and state.phase == "registration"
    client.handle_frame(
        encode(
            TournamentSnapshot(
                tournament=snapshot(2, phase="countdown", round=1), you={"role": "player"}
            )
        )
    )
    client.handle_frame(encode(live(1, you_place=1)))
    # Another tournament's t_live (not known to this client) is only queued.
    client.handle_frame(encode(TLive("TZZZZZZ", 1, (), None, 0, 0)))
    assert client.frames_received == 4 and client.bytes_received > 100
    assert state.phase == "countdown" and state.round == 1
    assert state.live is not None and state.live.you is not None
    assert state.live.you["place"] == 1
    events = client.pending_events()
    assert [type(e).__name__ for e in events] == [
        "TournamentSnapshot",
        "TournamentSnapshot",
        "TLive",
        "TLive",
    ]
    await client.close()


async def test_naming_a_tournament_is_required_once_there_are_several() -> None:
    client = CrescentClient("ws://127.0.0.1:9/ws")
    with pytest.raises(NotInRoom):
        client.tournament_state()
    for code in ("TAAAAAA", "TBBBBBB"):
        client.handle_frame(
            encode(TournamentSnapshot(tournament=snapshot(1, code=code), you={"role": "none"}))
        )
    with pytest.raises(NotInRoom):
        client.tournament_state()
    with pytest.raises(NotInRoom):
        client.tournament_state("TCCCCCC")
    await client.close()


def test_standings_and_results_tables_for_time_scoring() -> None:
    rows = [
        {
            "rank": 1,
            "id": "a",
            "name": "Ada",
            "status": "active",
            "total_ms": 125_000,
            "rounds_won": 1,
            "best_place": 1,
            "rounds_played": 1,
        }
    ]
    text = standings_table(rows, ids=True)
    assert text.splitlines()[0] == "Standings"
    assert text.splitlines()[2].split() == ["1", "Ada", "active", "2:05", "1", "1", "1", "a"]
    result_rows = [
        {
            "place": 1,
            "id": "a",
            "name": "Ada",
            "finished": False,
            "time_ms": None,
            "moves": 5,
            "foundation": 30,
            "points": None,
            "time_charged_ms": 800_000,
        }
    ]
    assert round_results_table(2, None, result_rows).splitlines()[2].endswith("13:20")


def test_the_command_line_parses_every_tournament_command() -> None:
    parser = build_parser()
    args = parser.parse_args(
        [
            "tournament",
            "create",
            "Friday cup",
            "--rounds",
            "2",
            "--time-limit",
            "60",
            "--deal",
            "CR1-N-AAAAAAB",
            "--deal",
            "CR1-N-AAAAAAC",
            "--scoring",
            "time",
        ]
    )
    assert args.title == "Friday cup" and args.deal == ["CR1-N-AAAAAAB", "CR1-N-AAAAAAC"]
    assert args.rounds == 2 and args.scoring == "time" and args.max_players == 200
    assert parser.parse_args(["tournament", "remove", "TK7PQ2X", "p1"]).player == "p1"
    assert parser.parse_args(["tournament", "start", "TK7PQ2X", "--follow"]).wait_end
    assert parser.parse_args(["bot", "--tournament", "TK7PQ2X"]).tournament == "TK7PQ2X"
    with pytest.raises(SystemExit):
        parser.parse_args(["bot", "--tournament", "TK7PQ2X", "--room", "K7PQ2X"])


def test_host_commands_need_a_token() -> None:
    """Without --token or CRESCENT_TOKEN a host command stops before connecting (a new
    guest could only be refused with not_host)."""
    env = {k: v for k, v in os.environ.items() if k != "CRESCENT_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "crescent_client.cli", "tournament", "start", "TK7PQ2X"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO_ROOT,
        env={**env, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert done.returncode == 2
    assert "error no_token" in done.stderr


async def test_tournament_bot_stops_when_removed() -> None:
    """The bot's round loop returns as soon as a push says this player was removed."""
    client = CrescentClient("ws://127.0.0.1:9/ws")
    client.handle_frame(
        encode(
            TournamentSnapshot(tournament=snapshot(1), you={"role": "player", "status": "active"})
        )
    )
    state = client.tournament_state()
    task = asyncio.create_task(
        play_tournament(client, state, io.StringIO(), Namespace(wait=5, verbose=False, pace=0))
    )
    await asyncio.sleep(0)  # the loop is now waiting for a change
    assert not task.done()
    client.handle_frame(
        encode(
            TournamentSnapshot(tournament=snapshot(2), you={"role": "player", "status": "removed"})
        )
    )
    assert await asyncio.wait_for(task, 5) == "removed"
    await client.close()
