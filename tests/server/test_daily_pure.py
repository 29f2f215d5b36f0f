"""The daily challenge's pure parts (server/daily): streaks and the text form of days."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.daily import Day, InvalidDay, Streaks, streaks

TODAY = Day.parse("2025-11-30")
STATUSES = ("won", "locked", "resigned")

# A history: days back from today (0 = today) → the status of that day's finished attempt.
histories = st.dictionaries(st.integers(0, 40), st.sampled_from(STATUSES), max_size=40)


def entries(history: dict[int, str]) -> list[tuple[Day, str]]:
    return [(TODAY.previous(back), status) for back, status in history.items()]


def run_back(history: dict[int, str], start: int, ok: set[str]) -> int:
    """Days in a row, from ``start`` days back going into the past, whose status is in
    ``ok`` (the reference: a plain count, written apart from the function tested)."""
    count = 0
    while history.get(start + count) in ok:
        count += 1
    return count


# --- the cases docs/daily.md names, one by one


def test_today_finished_and_lost_ends_the_won_streak() -> None:
    # Won yesterday, resigned today: two days played, no win today.
    history = [(TODAY.previous(), "won"), (TODAY, "resigned")]
    assert streaks(history, TODAY) == Streaks(played=2, won=0)
    # The day after, before playing: the lost day still ends the won streak.
    assert streaks(history, TODAY.next()) == Streaks(played=2, won=0)


def test_today_finished_and_won_extends_both() -> None:
    history = [(TODAY.previous(2), "won"), (TODAY.previous(), "won"), (TODAY, "won")]
    assert streaks(history, TODAY) == Streaks(played=3, won=3)


def test_today_not_finished_keeps_yesterdays_streaks() -> None:
    # Today not started or still being played: today is not in the history yet.
    history = [(TODAY.previous(2), "locked"), (TODAY.previous(), "won")]
    assert streaks(history, TODAY) == Streaks(played=2, won=1)


def test_a_missed_day_breaks_both() -> None:
    history = [(TODAY.previous(3), "won"), (TODAY.previous(2), "won"), (TODAY, "won")]
    assert streaks(history, TODAY) == Streaks(played=1, won=1)
    # Nothing yesterday and nothing yet today: both streaks are over.
    assert streaks(history[:2], TODAY) == Streaks(played=0, won=0)
    assert streaks([], TODAY) == Streaks(played=0, won=0)


# --- the same rules for any history


@given(histories)
def test_streaks_match_the_definition(history: dict[int, str]) -> None:
    got = streaks(entries(history), TODAY)
    start = 0 if 0 in history else 1  # today once its attempt is finished, else yesterday
    assert got.played == run_back(history, start, set(STATUSES))
    assert got.won == run_back(history, start, {"won"})
    assert got.won <= got.played


@given(histories, st.sampled_from(STATUSES))
def test_todays_finished_attempt_decides(history: dict[int, str], status: str) -> None:
    before = streaks(entries({b: s for b, s in history.items() if b > 0}), TODAY)
    after = streaks(entries({**history, 0: status}), TODAY)
    assert after.played == before.played + 1
    assert after.won == (before.won + 1 if status == "won" else 0)


@given(histories)
def test_an_unfinished_today_changes_nothing_until_it_ends(history: dict[int, str]) -> None:
    past = {b: s for b, s in history.items() if b > 0}
    today = streaks(entries(past), TODAY)
    yesterday = streaks(entries(past), TODAY.previous())
    # Yesterday finished: today's streaks are yesterday's (today may still extend them).
    assert today == (yesterday if 1 in past else Streaks(0, 0))


@given(histories, st.integers(2, 40))
def test_nothing_before_a_gap_counts(history: dict[int, str], gap: int) -> None:
    without_gap_day = {b: s for b, s in history.items() if b != gap}
    recent = {b: s for b, s in without_gap_day.items() if b < gap}
    assert streaks(entries(without_gap_day), TODAY) == streaks(entries(recent), TODAY)


# --- days on the wire


@given(st.dates(min_value=dt.date(1, 1, 1), max_value=dt.date(9999, 12, 31)))
def test_every_day_round_trips(date: dt.date) -> None:
    text = date.isoformat()
    assert str(Day.parse(text)) == text


@given(st.text(max_size=12))
def test_parse_accepts_only_the_canonical_form(text: str) -> None:
    try:
        day = Day.parse(text)
    except InvalidDay:
        return
    assert str(day) == text  # nothing else parses (no week dates, no 8-digit form)


@pytest.mark.parametrize(
    "text", ["", "yesterday", "2025-11-31", "2025-13-01", "2025-W48-7", "20251130", "2025-1-30"]
)
def test_malformed_days(text: str) -> None:
    with pytest.raises(InvalidDay):
        Day.parse(text)
