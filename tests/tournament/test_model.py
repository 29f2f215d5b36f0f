"""The tournament's transitions and who may make them (pure: no storage, no clock)."""

from __future__ import annotations

import pytest

from crescent_wire.errors import TournamentError
from server.lobby import ResultRow
from server.tournament import Tournament
from server.tournament.model import LIST_FACTOR


def new(**kw: object) -> Tournament:
    args: dict[str, object] = dict(
        name="Cup",
        host=("h", "Host"),
        variant="N",
        rounds=2,
        time_limit=60,
        max_players=3,
        scoring="placement",
        deals=None,
        now=0,
    )
    args.update(kw)
    return Tournament.create("TK7PQ2X", **args)  # type: ignore[arg-type]


def code_of(fn: object) -> str:
    with pytest.raises(TournamentError) as info:
        fn()  # type: ignore[operator]
    return info.value.code


def test_record_round_trip_and_versions() -> None:
    t = new().join("a", "A", now=1).tournament
    assert t.ver == 1 and Tournament.from_record(t.to_record()) == t
    again = t.join("a", "A", now=2)
    assert not again.changed  # a resume


def test_registration_rules() -> None:
    t = new()
    for pid in "abc":
        t = t.join(pid, pid, now=1).tournament
    assert code_of(lambda: t.join("d", "d", now=2)) == "tournament_full"
    t = t.withdraw("c", now=3).tournament  # a withdrawal frees the seat
    t = t.join("d", "d", now=4).tournament
    assert code_of(lambda: t.join("c", "c", now=5)) == "tournament_full"
    closed = t.set_registration("h", False, now=6).tournament
    assert code_of(lambda: closed.join("e", "e", now=7)) == "registration_closed"
    removed = t.remove("h", "a", now=8).tournament
    assert code_of(lambda: removed.join("a", "a", now=9)) == "removed_from_tournament"
    assert code_of(lambda: removed.remove("h", "zz", now=9)) == "not_registered"
    assert code_of(lambda: removed.withdraw("zz", now=9)) == "not_registered"
    assert removed.registered == 3 and len(removed.players) == 4 <= LIST_FACTOR * 3


def test_only_the_host_controls() -> None:
    t = new().join("a", "A", now=1).tournament
    for attempt in (
        lambda: t.set_registration("a", False, now=2),
        lambda: t.set_paused("a", True, now=2),
        lambda: t.remove("a", "a", now=2),
        lambda: t.check_can_start("a"),
        lambda: t.start_round("a", room="R", deal="D", start_at=5, now=2),
        lambda: t.end("a", now=2),
    ):
        assert code_of(attempt) == "not_host"


def test_rounds_pause_and_end() -> None:
    t = new()
    assert code_of(lambda: t.check_can_start("h")) == "no_players"
    t = t.join("a", "A", now=1).tournament
    paused = t.set_paused("h", True, now=2).tournament
    assert code_of(lambda: paused.check_can_start("h")) == "tournament_paused"
    change = t.start_round("h", room="R1", deal="D1", start_at=1000, now=2)
    assert change.urgent
    running = change.tournament
    assert running.phase_at(999) == "countdown" and running.phase_at(1000) == "racing"
    assert running.current is not None and running.current.deadline == 61_000
    assert code_of(lambda: running.check_can_start("h")) == "round_running"
    assert code_of(lambda: running.set_paused("h", True, now=3)) == "round_running"
    assert code_of(lambda: running.end("h", now=3)) == "round_running"
    late = running.join("b", "B", now=4).tournament
    assert late.player("b").first_round == 2  # type: ignore[union-attr]
    assert not late.record_round(1, "OTHER", [], deal="D1", now=5).changed  # not its room
    done = late.record_round(1, "R1", [], deal="D1", now=5)
    assert done.changed and done.tournament.phase == "between"
    assert not done.tournament.record_round(1, "R1", [], deal="D1", now=6).changed  # once
    public = done.tournament.public_dict(7)
    assert public["deals"] == ["D1", None] and public["current"] is None
    ended = done.tournament.end("h", now=8).tournament
    assert ended.finished and code_of(lambda: ended.join("c", "C", now=9)) == "tournament_over"
    assert code_of(lambda: ended.check_can_start("h")) == "tournament_over"


def test_last_round_finishes_and_deals_stay_secret() -> None:
    t = new(rounds=1, deals=("CR1-N-AAAAAAB",)).join("a", "A", now=1).tournament
    assert t.next_deal() == "CR1-N-AAAAAAB"
    t = t.start_round("h", room="R1", deal="CR1-N-AAAAAAB", start_at=10, now=2).tournament
    assert t.public_dict(3)["deals"] == [None]
    t = t.record_round(1, "R1", [], deal="CR1-N-AAAAAAB", now=4).tournament
    assert t.finished and t.public_dict(5)["deals"] == ["CR1-N-AAAAAAB"]
    you = t.you("h")
    assert you["role"] == "host" and not you["also_player"]
    assert t.you("a")["row"]["rounds_played"] == 0 and t.you("zz")["role"] == "none"


def test_prepared_deals_are_used_once() -> None:
    t = new().join("a", "A", now=1).tournament
    t = t.add_prepared("CR1-N-AAAAAAC", now=2).tournament
    t = t.add_prepared("CR1-N-AAAAAAD", now=3).tournament
    assert not t.add_prepared("CR1-N-AAAAAAE", now=4).changed  # two random rounds left
    assert t.next_deal() == "CR1-N-AAAAAAC"
    t = t.start_round("h", room="R1", deal="CR1-N-AAAAAAC", start_at=5, now=5).tournament
    assert t.prepared == ("CR1-N-AAAAAAD",)


def test_a_player_registered_after_the_seating_plays_from_the_next_round() -> None:
    """start_round seats the active players the host's request read; one who registered
    meanwhile (a crowd joining while the host starts) is not seated in this round, so
    their first round is the next one."""
    t = new(max_players=3).join("a", "A", now=1).tournament
    t = t.join("b", "B", now=2).tournament  # after the host's read of {a}
    started = t.start_round("h", room="R1", deal="D1", start_at=10, now=3, seated=frozenset("a"))
    a, b = started.tournament.player("a"), started.tournament.player("b")
    assert a is not None and a.first_round == 1
    assert b is not None and b.first_round == 2


def result(player: str, rank: int, status: str, foundation: int) -> ResultRow:
    return ResultRow(rank, player, player.upper(), status, 60_000, 10, foundation)


def test_a_racer_who_resigned_does_not_win_the_round() -> None:
    """Place 1 wins the round unless they resigned; then nobody does (the others were
    placed behind them). Points follow the places all the same."""
    t = new().join("a", "A", now=1).tournament.join("b", "B", now=2).tournament
    t = t.start_round("h", room="R1", deal="D1", start_at=10, now=3).tournament
    results = [result("a", 1, "resigned", 40), result("b", 2, "timeout", 30)]
    done = t.record_round(1, "R1", results, deal="D1", now=70_000).tournament
    assert done.finished_rounds[0].winner is None
    assert done.public_dict(70_001)["finished_rounds"][0]["winner"] is None
    assert [pl.rounds_won for pl in done.players] == [0, 0]
    assert [pl.points for pl in done.players] == [2, 1]
    # Round 2: b placed first without resigning (out of time) wins it.
    t = done.start_round("h", room="R2", deal="D2", start_at=70_010, now=70_010).tournament
    results = [result("b", 1, "timeout", 50), result("a", 2, "locked", 20)]
    done = t.record_round(2, "R2", results, deal="D2", now=140_000).tournament
    assert done.finished_rounds[1].winner == ("b", "B")
    assert [pl.rounds_won for pl in done.players] == [0, 1]
