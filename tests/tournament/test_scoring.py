"""Scoring and tie-breaks, against tables worked out by hand (docs/tournaments.md has
the same tables)."""

from __future__ import annotations

from server.lobby import ResultRow
from server.lobby.race import initial_progress
from server.lobby.values import record_of
from server.tournament import Tournament
from server.tournament.scoring import LiveRow, RoundRow, charge_ms, live_rows, round_rows

TL = 300  # seconds per round in these tables


def result(rank: int, player: str, status: str, time_ms: int, moves: int, fnd: int) -> ResultRow:
    return ResultRow(rank, player, player.upper(), status, time_ms, moves, fnd)


# Round 1, four racers seated: P = 4, points = P - place + 1.
#   place  player  status   time     cards  points  time charged
#   1      a       won      100 s    104    4       100,000
#   2      b       won      150 s    104    3       150,000
#   3      c       timeout  (300 s)  94     2       300,000 + 10 x 10,000 = 400,000
#   4      d       locked   80 s     60     1       300,000 + 44 x 10,000 = 740,000
ROUND1 = [
    result(1, "a", "won", 100_000, 300, 104),
    result(2, "b", "won", 150_000, 310, 104),
    result(3, "c", "timeout", 300_000, 200, 94),
    result(4, "d", "locked", 80_000, 90, 60),
]
# Round 2, three racers (d withdrew before it; e joined late and plays from round 2):
#   1      c       won      120 s    104    3       120,000
#   2      e       resigned 30 s     20     2       300,000 + 84 x 10,000 = 1,140,000
#   3      a       timeout  (300 s)  8      1       300,000 + 96 x 10,000 = 1,260,000
# b was removed before round 2.
ROUND2 = [
    result(1, "c", "won", 120_000, 280, 104),
    result(2, "e", "resigned", 30_000, 10, 20),
    result(3, "a", "timeout", 300_000, 5, 8),
]


def test_round_rows_placement_and_time() -> None:
    placement = round_rows(ROUND1, scoring="placement", time_limit_s=TL)
    assert [(r.id, r.points, r.time_charged_ms) for r in placement] == [
        ("a", 4, None),
        ("b", 3, None),
        ("c", 2, None),
        ("d", 1, None),
    ]
    assert [r.time_ms for r in placement] == [100_000, 150_000, None, None]
    timed = round_rows(ROUND1, scoring="time", time_limit_s=TL)
    assert [r.time_charged_ms for r in timed] == [100_000, 150_000, 400_000, 740_000]
    assert all(r.points is None for r in timed)
    assert charge_ms("won", 1, 104, TL) == 1
    # The record (stored, sent in t_results, exported): the keys and order of old.
    assert list(placement[0].to_record()) == [
        "place",
        "id",
        "name",
        "finished",
        "time_ms",
        "moves",
        "foundation",
        "points",
        "time_charged_ms",
    ]
    assert all(RoundRow.from_record(r.to_record()) == r for r in timed)


def test_live_rows_are_typed_and_send_the_map_t_live_always_sent() -> None:
    progress = {"b": initial_progress("b")._replace(foundation=30, moves=9)}
    rows = live_rows([("a", "A"), ("b", "B")], progress, start_at=0, now=5)
    assert rows == [
        LiveRow(1, "b", "B", False, None, 30, 9),
        LiveRow(2, "a", "A", False, None, 8, 0),
    ]
    assert list(rows[0].to_record().items()) == [
        ("place", 1),
        ("id", "b"),
        ("name", "B"),
        ("finished", False),
        ("time_ms", None),
        ("foundation", 30),
        ("moves", 9),
    ]
    assert all(r.to_record() == record_of(r) for r in rows)


def played(scoring: str) -> Tournament:
    t = Tournament.create(
        "TK7PQ2X",
        name="Cup",
        host=("h", "Host"),
        variant="N",
        rounds=3,
        time_limit=TL,
        max_players=10,
        scoring=scoring,
        deals=None,
        now=0,
    )
    for i, pid in enumerate("abcd"):
        t = t.join(pid, pid.upper(), now=10 + i).tournament
    t = t.start_round("h", room="R1", deal="CR1-N-AAAAAAB", start_at=100, now=0).tournament
    t = t.record_round(1, "R1", ROUND1, deal="CR1-N-AAAAAAB", now=1).tournament
    t = t.withdraw("d", now=2).tournament
    t = t.remove("h", "b", now=3).tournament
    t = t.join("e", "E", now=4).tournament
    t = t.start_round("h", room="R2", deal="CR1-N-AAAAAAC", start_at=200, now=5).tournament
    return t.record_round(2, "R2", ROUND2, deal="CR1-N-AAAAAAC", now=6).tournament


def test_placement_standings_and_tie_breaks() -> None:
    # Totals after two rounds (withdrawn d keeps its point; removed b is listed last):
    #   player  points     rounds won  best place  registered
    #   c       2 + 3 = 5  1           1           12
    #   a       4 + 1 = 5  1           1           10   <- tie on points, wins, best:
    #   e       0 + 2 = 2  0           2           4        c and a: a registered first
    #   d       1 + 0 = 1  0           4           13
    #   b       3 (removed, unranked)
    rows = played("placement").standings()
    assert [(r["rank"], r["id"], r["points"], r["status"]) for r in rows] == [
        (1, "a", 5, "active"),
        (2, "c", 5, "active"),
        (3, "e", 2, "active"),
        (4, "d", 1, "withdrawn"),
        (None, "b", 3, "removed"),
    ]
    a = rows[0]
    assert (a["rounds_won"], a["best_place"], a["rounds_played"]) == (1, 1, 2)


def test_time_standings_charge_missed_rounds() -> None:
    # Missed round: 300,000 + 1,040,000 = 1,340,000.
    #   player  round 1             round 2              total
    #   c       400,000             120,000              520,000
    #   a       100,000             1,260,000            1,360,000
    #   d       740,000             missed 1,340,000     2,080,000
    #   e       missed 1,340,000    1,140,000            2,480,000
    #   b       150,000 + missed 1,340,000 = 1,490,000 (removed, unranked)
    rows = played("time").standings()
    assert [(r["rank"], r["id"], r["total_ms"]) for r in rows] == [
        (1, "c", 520_000),
        (2, "a", 1_360_000),
        (3, "d", 2_080_000),
        (4, "e", 2_480_000),
        (None, "b", 1_490_000),
    ]


def test_best_place_breaks_a_tie_before_registration() -> None:
    # Registered in the order w, y, x, z.
    #   round 1 (P = 4): w 1st 4, z 2nd 3, y 3rd 2, x 4th 1
    #   round 2 (P = 3, z withdrew): w 1st 3, x 2nd 2, y 3rd 1
    #   player  points     wins  best place
    #   w       7          2     1
    #   x       1 + 2 = 3  0     2     <- ties y on points and wins; better best place
    #   y       2 + 1 = 3  0     3        although y registered earlier
    #   z       3          0     2     <- ties x on points, wins and best: x earlier
    t = Tournament.create(
        "TK7PQ2X",
        name="Cup",
        host=("h", "Host"),
        variant="N",
        rounds=2,
        time_limit=TL,
        max_players=10,
        scoring="placement",
        deals=None,
        now=0,
    )
    for i, pid in enumerate("wyxz"):
        t = t.join(pid, pid, now=i).tournament
    t = t.start_round("h", room="R1", deal="D", start_at=1, now=0).tournament
    r1 = [result(1, "w", "won", 1, 1, 104), result(2, "z", "locked", 1, 1, 60)]
    r1 += [result(3, "y", "locked", 1, 1, 50), result(4, "x", "locked", 1, 1, 40)]
    t = t.record_round(1, "R1", r1, deal="D", now=1).tournament
    t = t.withdraw("z", now=2).tournament
    t = t.start_round("h", room="R2", deal="D", start_at=1, now=2).tournament
    r2 = [result(1, "w", "won", 1, 1, 104), result(2, "x", "locked", 1, 1, 50)]
    r2.append(result(3, "y", "locked", 1, 1, 40))
    t = t.record_round(2, "R2", r2, deal="D", now=3).tournament
    rows = t.standings()
    assert [(r["id"], r["points"], r["rounds_won"], r["best_place"]) for r in rows] == [
        ("w", 7, 2, 1),
        ("x", 3, 0, 2),
        ("z", 3, 0, 2),
        ("y", 3, 0, 3),
    ]
