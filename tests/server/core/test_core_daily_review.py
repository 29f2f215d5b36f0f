"""The review of implausible daily times (docs/daily.md): a bot's pace is flagged and
shown "under review" on the board with its replay; an operator confirms one result and
disqualifies another, which leaves the board with its reason shown; a human's pace is
not flagged."""

from __future__ import annotations

import random
from typing import Any

import pytest

from crescent_wire import protocol as p
from server.core.daily_review import ReviewError, confirm, disqualify, list_reviews
from server.daily import Day
from server.solver import solve
from tests.server.core.test_core_daily import MIDNIGHT, ask, clock, hub, play
from tests.server.core_support import DEAL, ManualClock, SettlingHub, connect

__all__ = ["clock", "hub"]  # the daily tests' fixtures: a clock an hour before MIDNIGHT

LINE = solve(DEAL, max_seconds=30).line
DAY = str(Day.of(MIDNIGHT))


async def human_play(
    hub: SettlingHub, clock: ManualClock, conn: Any, actions: tuple[str, ...]
) -> None:
    """Like ``play``, but at a human's uneven pace: 0.5 to 6 s between actions."""
    rng = random.Random(7)
    snapshot = await ask(hub, conn, p.DailyStart())
    code = str(snapshot.room["code"])
    clock.advance(3000)
    for seq, action in enumerate(actions, 1):
        clock.advance(rng.randint(500, 6000))
        assert isinstance(await ask(hub, conn, p.Act(room=code, seq=seq, action=action)), p.Ack)
    await hub.progress.flush()
    await hub.settle()


async def test_bots_are_flagged_confirmed_or_disqualified(
    hub: SettlingHub, clock: ManualClock
) -> None:
    assert LINE is not None and len(LINE) >= 50
    players = [await connect(hub, name) for name in ("Bot", "Metronome", "Human")]
    clock.now = MIDNIGHT + 1000
    await play(hub, clock, players[0], LINE, ms_per_action=100)  # 10 moves a second
    await play(hub, clock, players[1], LINE, ms_per_action=900)  # slow but exact
    await human_play(hub, clock, players[2], LINE)
    storage = hub.daily.storage
    reviews = await storage.reviews(DAY)
    bot, metronome, human = (c.player.id for c in players)  # type: ignore[union-attr]
    assert set(reviews) == {bot, metronome}  # the human is not flagged
    assert reviews[bot].reason.startswith("median 100 ms between actions")
    assert reviews[metronome].reason.startswith("intervals too regular")
    # Each flag told the processes on the daily channel (a DailyChanged, not a raw day
    # that they would drop): the day's boards are pushed again.
    assert hub.bad_bus_messages.occurrences == 0 and hub.daily.boards.dirty == {DAY}

    board = await ask(hub, players[2], p.DailyBoard(top=10))
    rows = {row["name"]: row for row in board.data["top"]}
    assert rows["Bot"]["review"] == "under_review" and rows["Bot"]["replay"].startswith(
        "/api/games/"
    )
    assert "review" not in rows["Human"] and board.data["disqualified"] == []
    assert [r.player for r in await list_reviews(storage, [DAY])] == sorted([bot, metronome])

    await confirm(storage, DAY, metronome, by="op", now=clock())
    await disqualify(
        storage, DAY, bot, "  solver-assisted:\n  every move optimal ", by="op", now=clock()
    )
    board = await ask(hub, players[2], p.DailyBoard(top=10))
    assert [row["name"] for row in board.data["top"]] == ["Metronome", "Human"]
    assert board.data["top"][0]["review"] == "confirmed"
    bot_game = reviews[bot].game
    assert bot_game and board.data["disqualified"] == [
        {
            "player": bot,
            "name": "Bot",
            "reason": "solver-assisted: every move optimal",
            "game": bot_game,
        }
    ]
    assert board.data["flagged"] == [
        {
            "player": metronome,
            "name": "Metronome",
            "state": "confirmed",
            "game": reviews[metronome].game,
        }
    ]
    # The bot is told why its result left the board; its attempt stays finished.
    you = (await ask(hub, players[0], p.DailyToday())).data["you"]
    assert you["disqualified"] == "solver-assisted: every move optimal"
    assert you["finished"] is True and you["result"] is None
    assert (await ask(hub, players[2], p.DailyToday())).data["you"]["disqualified"] is None
    with pytest.raises(ReviewError):
        await confirm(storage, DAY, bot, by="op", now=clock())  # disqualified already
    with pytest.raises(ReviewError):
        await disqualify(storage, DAY, human, "", by="op", now=clock())  # a reason is shown
    with pytest.raises(ReviewError):
        await confirm(storage, DAY, human, by="op", now=clock())  # never flagged


async def test_a_boards_review_marks_and_a_revealed_days_reviews(
    hub: SettlingHub, clock: ManualClock
) -> None:
    """Every row flagged is marked with its game and the day's reveal (when its replay
    can be read); once revealed, ``daily_days`` lists the day's reviews beside it."""
    assert LINE is not None
    players = [await connect(hub, name) for name in ("Bot", "Human")]
    clock.now = MIDNIGHT + 1000
    await play(hub, clock, players[0], LINE, ms_per_action=100)
    await human_play(hub, clock, players[1], LINE)
    # The flag told every process on the daily channel (a message they can read).
    assert hub.bad_bus_messages.occurrences == 0
    bot = players[0].player.id  # type: ignore[union-attr]
    board = (await ask(hub, players[1], p.DailyBoard(top=0, around=0))).data
    (flagged,) = board["flagged"]
    assert flagged["player"] == bot and flagged["state"] == "under_review"
    assert board["reveal_at"] > clock() and board["top"] == []  # sealed with the deal
    rows = (await ask(hub, players[1], p.DailyBoard(top=10))).data["top"]
    assert rows[0]["game"] == flagged["game"]
    assert rows[0]["replay"] == f"/api/games/{flagged['game']}.json"

    await disqualify(hub.daily.storage, DAY, bot, "a bot", by="op", now=clock())
    clock.now = board["reveal_at"] + 1
    (day,) = [
        d for d in (await ask(hub, players[1], p.DailyDays())).data["days"] if d["day"] == DAY
    ]
    assert day["code"] == DEAL and day["flagged"] == []
    assert day["disqualified"] == [
        {"player": bot, "name": "Bot", "reason": "a bot", "game": flagged["game"]}
    ]
