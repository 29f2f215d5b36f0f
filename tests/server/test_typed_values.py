"""The VIEW, the room events and the tournament's round rows are typed values now: what
they put on the wire is, byte for byte, what the dicts they replaced put there."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from crescent_client.strategy import GreedyStrategy
from crescent_wire import protocol as p
from server.game import Game
from server.lobby import RacerGame, ResultRow
from server.lobby.events import (
    Connected,
    Countdown,
    Finished,
    HostChanged,
    Joined,
    Left,
    Ready,
    Rematch,
    RoomEventData,
)
from server.storage.memory_tournament import MemoryTournamentStorage
from server.tournament import RoundRow, Tournament


def packb(obj: Any) -> bytes:
    return bytes(msgpack.packb(obj, use_bin_type=True))


def dict_view(game: Game, *, resigned: bool = False) -> dict[str, Any]:
    """The VIEW as the engine built it when it was a dict, from the full position."""
    position = game.position()
    piles = []
    for pile in position["piles"]:
        entry: dict[str, Any] = {"n": len(pile), "top": pile[-1] if pile else None}
        if game.variant.open:
            entry["cards"] = list(pile)
        piles.append(entry)
    return {
        "piles": piles,
        "foundations": {
            name: {"n": len(cards), "top": cards[-1]}
            for name, cards in position["foundations"].items()
        },
        "redeals_left": game.redeals_left,
        "moves": game.moves,
        "undo_left": game.undo_left,
        "status": "resigned" if resigned else game.status,
    }


@pytest.mark.parametrize(
    "deal", ["CR1-N-AAAAAAB", "CR1-F-AAAAAAD", "CR1-O-AAAAAAE", "CR1-R-AAAAAAF"]
)
def test_the_view_packs_as_the_dict_did_over_a_whole_game(deal: str) -> None:
    racer, strategy = RacerGame.new(deal), GreedyStrategy()
    checked = 0
    while (action := strategy.next_action(racer.view().to_wire())) is not None:
        racer.apply(action, elapsed_ms=0)
        view = racer.view()
        assert packb(view.to_wire()) == packb(dict_view(racer.game, resigned=racer.resigned))
        assert view.foundation("as") == view.foundations[0]
        checked += 1
    assert checked > 10


def test_a_hidden_card_is_never_in_the_view() -> None:
    game = Game.from_code("CR1-N-AAAAAAB")
    view = game.view()
    assert all(pile.cards is None for pile in view.piles)
    assert all(set(entry) == {"n", "top"} for entry in view.to_wire()["piles"])


def test_a_resigned_view_says_so_and_nothing_else_changes() -> None:
    view = Game.from_code("CR1-N-AAAAAAB").view()
    resigned = view.resigned()
    assert resigned.status == "resigned"
    assert {**resigned.to_wire(), "status": view.status} == view.to_wire()


RESULT = ResultRow(1, "p1", "Ada", "won", 61_000, 200, 104)
# Each kind's typed value and the dict the room's transitions built for it before.
EVENTS: list[tuple[RoomEventData, dict[str, Any]]] = [
    (Joined("p2", "Bo", "racer"), {"player": {"id": "p2", "name": "Bo", "role": "racer"}}),
    (Left("p2"), {"player": "p2"}),
    (HostChanged("p1"), {"player": "p1"}),
    (Ready("p1", True), {"player": "p1", "ready": True}),
    (Connected("p1", False), {"player": "p1", "connected": False}),
    (Countdown(4000, None, 1), {"start_at": 4000, "deadline": None, "round": 1}),
    (
        Finished((RESULT,), "CR1-N-AAAAAAB"),
        {
            "results": [
                {
                    "rank": 1,
                    "player": "p1",
                    "name": "Ada",
                    "status": "won",
                    "time_ms": 61_000,
                    "moves": 200,
                    "foundation": 104,
                }
            ],
            "deal": "CR1-N-AAAAAAB",
        },
    ),
    (Rematch(2, "waiting", False), {"round": 2, "phase": "waiting", "deal_known": False}),
]


@pytest.mark.parametrize(("data", "old"), EVENTS, ids=[e.KIND for e, _ in EVENTS])
def test_each_event_frame_is_the_bytes_of_the_dict_it_replaced(
    data: RoomEventData, old: dict[str, Any]
) -> None:
    frame = p.encode(p.Event(room="K7PQ2X", ver=3, kind=data.KIND, data=data.to_wire()))
    assert frame == p.encode(p.Event(room="K7PQ2X", ver=3, kind=data.KIND, data=old))
    assert frame == packb({"t": "event", "room": "K7PQ2X", "ver": 3, "kind": data.KIND, **old})


def test_every_event_kind_is_listed() -> None:
    kinds = {data.KIND for data, _ in EVENTS}
    assert kinds == {
        "joined",
        "left",
        "host",
        "ready",
        "connected",
        "countdown",
        "finished",
        "rematch",
    }


async def test_round_rows_store_and_read_back_as_the_dicts_did() -> None:
    """A round's rows go through the tournament port typed; the stored blob is the one
    the dict rows made, so rows stored before read back, and t_results sends the same."""
    t = Tournament.create(
        "TK7PQ2X",
        name="Cup",
        host=("h", "Host"),
        variant="N",
        rounds=2,
        time_limit=60,
        max_players=4,
        scoring="time",
        deals=None,
        now=0,
    )
    t = t.join("a", "Ada", now=1).tournament.join("b", "Bo", now=2).tournament
    t = t.start_round("h", room="K7PQ2X", deal="CR1-N-AAAAAAB", start_at=3010, now=10).tournament
    results = [RESULT, ResultRow(2, "b", "Bo", "timeout", 60_000, 30, 50)]
    change = t.record_round(1, "K7PQ2X", results, deal="CR1-N-AAAAAAB", now=63_010)
    old = [
        {
            "place": 1,
            "id": "p1",
            "name": "Ada",
            "finished": True,
            "time_ms": 61_000,
            "moves": 200,
            "foundation": 104,
            "points": None,
            "time_charged_ms": 61_000,
        },
        {
            "place": 2,
            "id": "b",
            "name": "Bo",
            "finished": False,
            "time_ms": None,
            "moves": 30,
            "foundation": 50,
            "points": None,
            "time_charged_ms": 600_000,
        },
    ]
    assert all(isinstance(row, RoundRow) for row in change.rows)
    storage = MemoryTournamentStorage()
    await storage.cas_tournament(
        t.code, -1, change.tournament, ttl_s=60, round_rows=(1, change.rows)
    )
    assert storage.results[t.code][1] == packb(old)
    assert await storage.round_results(t.code, 1) == change.rows
    assert await storage.all_results(t.code) == {1: change.rows}
    reply = p.TResults(tournament=t.code, round=1, deal="CR1-N-AAAAAAB", rows=tuple(old))
    typed = p.TResults(
        tournament=t.code,
        round=1,
        deal="CR1-N-AAAAAAB",
        rows=tuple([row.to_record() for row in change.rows]),
    )
    assert p.encode(typed) == p.encode(reply)
