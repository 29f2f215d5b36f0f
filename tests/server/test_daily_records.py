"""The daily port's typed records store the maps they replaced (and read the old ones),
and the wire's typed daily values send the maps the replies had as dicts."""

from __future__ import annotations

import msgpack

from crescent_wire.daily import BoardData, DayInfo, Disqualified, YourRow
from server.core.daily_boards import board_row, daily_summary
from server.core.daily_days import day_info
from server.core.ports import BoardEntry
from server.daily import Commitment, Day, DayRecord, Result, ResultEntry
from server.daily.review import UNDER_REVIEW, Review
from server.storage.records import pack_record, unpack_record

WON = Result("won", 61_000, 120, 104)


def test_a_result_entry_stores_the_map_it_replaced() -> None:
    old = {**WON.to_dict(), "name": "Ada", "finished_at": 5, "board": "ranked"}
    entry = ResultEntry.of(WON, "Ada", 5).on_board("ranked")
    assert pack_record(entry.to_record()) == msgpack.packb(old, use_bin_type=True)
    assert ResultEntry.from_record(unpack_record(msgpack.packb(old))) == entry


def test_a_review_reads_the_maps_written_before_it_was_typed() -> None:
    flagged = {"state": UNDER_REVIEW, "name": "Ada", "reason": "median 90 ms", "game": None}
    review = Review.from_record(unpack_record(msgpack.packb({**flagged, "flagged_at": 5})))
    assert review == Review(UNDER_REVIEW, "Ada", "median 90 ms", None, 5)
    decided = review.decided("disqualified", by="op", at=9, reason="a program")
    assert Review.from_record(unpack_record(pack_record(decided.to_record()))) == decided
    assert (decided.name, decided.reason, decided.by) == ("Ada", "a program", "op")


def test_board_rows_send_the_maps_of_before() -> None:
    entry = ResultEntry.of(WON, "Ada", 5).on_board("ranked")
    plain = board_row(BoardEntry(1, "p1", entry))
    assert plain.to_wire() == {
        "rank": 1,
        "player": "p1",
        "name": "Ada",
        "status": "won",
        "time_ms": 61_000,
        "moves": 120,
        "foundation": 104,
    }
    flagged = board_row(BoardEntry(1, "p1", entry), {"p1": Review(UNDER_REVIEW, game="G1")})
    assert list(flagged.to_wire())[-3:] == ["review", "game", "replay"]
    assert flagged.to_wire()["game"] == "G1"
    assert flagged.to_wire()["replay"] == "/api/games/G1.json"
    data = BoardData(
        "2025-11-30",
        "ranked",
        1,
        0,
        "identities",
        9,
        (plain,),
        (),
        YourRow("ranked", plain),
        (),
        (Disqualified("p2", "Bot", "a program"),),
        watching=True,
    )
    wire = data.reply(7).to_wire()
    assert list(wire) == [
        *("day", "board", "count", "late_count", "ranks", "reveal_at", "top", "around"),
        *("you", "flagged", "disqualified", "watching", "t", "id"),
    ]
    assert wire["top"] == [plain.to_wire()] and wire["around"] == []
    assert wire["you"] == {"board": "ranked", **plain.to_wire()}
    assert wire["disqualified"] == [
        {"player": "p2", "name": "Bot", "reason": "a program", "game": None}
    ]


def test_a_day_and_a_summary_send_the_maps_of_before() -> None:
    day = Day.parse("2025-11-30")
    record = DayRecord(day, "N", Commitment.make("CR1-N-AAAAAAB", "00"), committed_at=1)
    sealed = day_info(record, day.starts_at, 60_000)
    assert sealed == DayInfo(
        "2025-11-30",
        "N",
        day.starts_at,
        day.ends_at,
        record.commitment.digest,
        1,
        day.ends_at + 60_000,
        None,
        None,
    )
    assert list(sealed.to_wire())[-2:] == ["code", "salt"]
    assert day_info(record, day.ends_at + 60_000, 60_000).code == "CR1-N-AAAAAAB"
    history = {"2025-11-30": ResultEntry.of(WON, "Ada", 5).on_board("ranked")}
    assert daily_summary(history, day) == {
        "streak_played": 1,
        "streak_won": 1,
        "best_time_ms": 61_000,
        "best_times": [61_000],
        "days_played": 1,
        "days_won": 1,
        "history": [
            {
                "day": "2025-11-30",
                "board": "ranked",
                "status": "won",
                "time_ms": 61_000,
                "moves": 120,
                "foundation": 104,
            }
        ],
    }
