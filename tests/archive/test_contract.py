"""The Archive port's contract, run against both adapters (memory and PostgreSQL)."""

from __future__ import annotations

import asyncio

import pytest

from server.core.archive import (
    DAY_MS,
    MAX_PAGE,
    RETENTION_MS,
    Archive,
    ArchiveBatch,
    ArchivedDailyDay,
    ArchivedGame,
    ArchivedTournament,
    ArchiveQueryError,
    BoardEntry,
    DailyPlacing,
    GameKind,
    HistoryEntry,
    PlayerTournament,
    TournamentPlacing,
    WriteReport,
)
from tests.archive.games import WINNING_DEAL, greedy_actions, paced, race, winning_actions

T0 = 1_800_000_000_000
OTHER_DEAL = "CR1-N-AAAAAAB"


def two_racer_game(
    game_id: str, *, ended_at: int, step_ms: int = 900, **kw: object
) -> ArchivedGame:
    """A real race on CR1-N-IPGYBDG: ``w`` plays the winning line at ``step_ms`` an
    action, ``g`` the greedy strategy (locked)."""
    start_at = ended_at - 600_000
    return race(
        game_id,
        WINNING_DEAL,
        {"w": paced(winning_actions(), step_ms), "g": greedy_actions(WINNING_DEAL)},
        start_at=start_at,
        **kw,  # type: ignore[arg-type]
    )


async def test_a_written_game_reads_back_whole(archive: Archive) -> None:
    game = two_racer_game("ROOM-1", ended_at=T0)
    assert await archive.write(ArchiveBatch(games=(game,))) == WriteReport(games=1)
    read = await archive.game("ROOM-1", now=T0)
    assert read == game
    assert read is not None and read.racers[0].actions[-1] == game.racers[0].actions[-1]
    assert await archive.game("ROOM-2", now=T0) is None


async def test_writes_are_idempotent(archive: Archive) -> None:
    game = two_racer_game("ROOM-1", ended_at=T0)
    other = two_racer_game("ROOM-2", ended_at=T0 + 1)
    assert await archive.write(ArchiveBatch(games=(game, game))) == WriteReport(games=1)
    # the outbox delivers again, with a new game in the same batch: only the new is written
    assert await archive.write(ArchiveBatch(games=(game, other))) == WriteReport(games=1)
    # a different record under a stored id does not replace it
    imposter = two_racer_game("ROOM-1", ended_at=T0 + 5, step_ms=100)
    assert await archive.write(ArchiveBatch(games=(imposter,))) == WriteReport()
    assert await archive.game("ROOM-1", now=T0 + 10) == game
    counts = await archive.counts()
    assert counts.games[GameKind.ROOM] == 2 and counts.racers == 4
    page = await archive.history("w", now=T0 + 10)
    assert [e.game_id for e in page.entries] == ["ROOM-2", "ROOM-1"]


async def test_nothing_is_readable_before_its_reveal(archive: Archive) -> None:
    sealed = two_racer_game(
        "DAILY-1", ended_at=T0, kind=GameKind.DAILY, revealed_at=T0 + DAY_MS, origin="2027-01-15"
    )
    tournament = ArchivedTournament(
        id="T-1",
        name="Friday",
        variant="N",
        started_at=T0 - 3_600_000,
        ended_at=T0,
        revealed_at=T0 + DAY_MS,
        standings=(TournamentPlacing(1, "w", "Racer w", 6),),
        games=("DAILY-1",),
    )
    day = ArchivedDailyDay(
        day="2027-01-15",
        deal=WINNING_DEAL,
        revealed_at=T0 + DAY_MS,
        attempts=2,
        board=(DailyPlacing(1, "w", "Racer w", "won", 110_700, 120),),
    )
    report = await archive.write(
        ArchiveBatch(games=(sealed,), tournaments=(tournament,), daily_days=(day,))
    )
    assert report == WriteReport(games=1, tournaments=1, daily_days=1)
    before = T0 + DAY_MS - 1
    assert await archive.game("DAILY-1", now=before) is None
    assert (await archive.history("w", now=before)).entries == ()
    assert (await archive.board(WINNING_DEAL, now=before)).entries == ()
    assert await archive.tournament("T-1", now=before) is None
    assert await archive.daily_day("2027-01-15", now=before) is None
    at = T0 + DAY_MS
    assert await archive.game("DAILY-1", now=at) == sealed
    assert [e.game_id for e in (await archive.history("w", now=at)).entries] == ["DAILY-1"]
    assert len((await archive.board(WINNING_DEAL, now=at)).entries) == 2
    assert await archive.tournament("T-1", now=at) == tournament
    assert await archive.daily_day("2027-01-15", now=at) == day
    assert (await archive.counts()).tournaments == 1  # counts include the sealed


async def test_history_pages_neither_repeat_nor_skip_while_games_arrive(
    archive: Archive,
) -> None:
    # 23 games of "w", some ending at the same ms (ties go by id), one not revealed yet
    games = [
        two_racer_game(f"G{i:02d}", ended_at=T0 + (i // 3) * 1000, origin=f"R{i}")
        for i in range(23)
    ]
    sealed = two_racer_game("SEALED", ended_at=T0 + 5_500, revealed_at=T0 + DAY_MS)
    stranger = race("X", OTHER_DEAL, {"z": greedy_actions(OTHER_DEAL)}, start_at=T0)
    await archive.write(ArchiveBatch(games=(*games, sealed, stranger)))
    now = T0 + 60_000
    expected = sorted(games, key=lambda g: (g.ended_at, g.id), reverse=True)
    seen: list[HistoryEntry] = []
    page = await archive.history("w", now=now, limit=7)
    arrivals = 0
    while True:
        seen.extend(page.entries)
        if page.next is None:
            break
        # new games end (later than everything so far) between two page reads
        arrivals += 1
        new = two_racer_game(f"NEW{arrivals}", ended_at=now + arrivals)
        await archive.write(ArchiveBatch(games=(new,)))
        page = await archive.history("w", now=now + 100, limit=7, after=page.next)
    assert [e.game_id for e in seen] == [g.id for g in expected]
    assert arrivals == 3  # 7 + 7 + 7 + 2
    first = seen[0]
    assert first.racers == 2 and first.kind == GameKind.ROOM and first.deal == WINNING_DEAL
    assert first.result.status == "won" and first.result.rank == 1
    assert (await archive.history("g", now=now, limit=MAX_PAGE)).entries[0].result.status == (
        "locked"
    )
    assert (await archive.history("nobody", now=now)).entries == ()


async def test_a_deals_board_is_best_first_over_every_game(archive: Archive) -> None:
    # winners at different paces, in rooms, daily and practice; greedy racers locked
    games = [
        two_racer_game(f"B{i}", ended_at=T0 + i, step_ms=step, kind=kind)
        for i, (step, kind) in enumerate(
            [
                (900, GameKind.ROOM),
                (500, GameKind.DAILY),
                (1200, GameKind.PRACTICE),
                (500, GameKind.TOURNAMENT),
                (700, GameKind.ROOM),
            ]
        )
    ]
    resigned = race(
        "B-RESIGN", WINNING_DEAL, {"q": paced((*winning_actions()[:30], "resign"))}, start_at=T0
    )
    elsewhere = race("X", OTHER_DEAL, {"z": greedy_actions(OTHER_DEAL)}, start_at=T0)
    await archive.write(ArchiveBatch(games=(*games, resigned, elsewhere)))
    now = T0 + DAY_MS
    rows: list[BoardEntry] = []
    page = await archive.board(WINNING_DEAL, now=now, limit=4)
    rows.extend(page.entries)
    while page.next is not None:
        page = await archive.board(WINNING_DEAL, now=now, limit=4, after=page.next)
        rows.extend(page.entries)
    assert len(rows) == 11  # 5 games × 2 racers + the resigned one
    again: list[BoardEntry] = []
    page = await archive.board(WINNING_DEAL, now=now, limit=4)
    arrivals = 0
    while True:
        again.extend(page.entries)
        if page.next is None:
            break
        # a faster and a slower game arrive between two page reads: no row repeats,
        # none of the rows there before is skipped, the order holds
        arrivals += 1
        fast = two_racer_game(f"FAST{arrivals}", ended_at=T0 + 100 + arrivals, step_ms=100)
        slow = two_racer_game(f"SLOW{arrivals}", ended_at=T0 + 200 + arrivals, step_ms=5000)
        await archive.write(ArchiveBatch(games=(fast, slow)))
        page = await archive.board(WINNING_DEAL, now=now, limit=4, after=page.next)
    assert arrivals >= 2
    keys = [(r.game_id, r.seat) for r in again]
    assert len(set(keys)) == len(keys)
    assert set(keys) >= {(r.game_id, r.seat) for r in rows}
    assert [r.cursor for r in again] == sorted(r.cursor for r in again)
    # the fast winners sort ahead of every cursor: not on this pass (a fresh read has them)
    assert not any(r.game_id.startswith("FAST") and r.result.status == "won" for r in again)
    assert any(r.game_id.startswith("SLOW") and r.result.status == "won" for r in again)
    winners = [r for r in rows if r.result.status == "won"]
    # the winning line has 123 actions: a winner's time is 123 × their pace
    assert [r.result.time_ms for r in winners] == [123 * s for s in (500, 500, 700, 900, 1200)]
    assert [r.game_id for r in winners[:2]] == ["B1", "B3"]  # same time and moves: by id
    assert rows[:5] == winners and {r.kind for r in winners} == set(GameKind)
    others = rows[5:]
    assert [r.result.foundation for r in others] == sorted(
        (r.result.foundation for r in others), reverse=True
    )
    assert others[-1].player == "q" and others[-1].result.status == "resigned"
    assert [r.cursor for r in rows] == sorted(r.cursor for r in rows)
    assert len({(r.game_id, r.seat) for r in rows}) == 11


async def test_retention_deletes_only_what_is_past_its_age(archive: Archive) -> None:
    now = T0 + 400 * DAY_MS
    kept_for_good = [
        two_racer_game(f"D{i}", ended_at=T0 + i, kind=GameKind.DAILY) for i in range(3)
    ] + [two_racer_game("T0", ended_at=T0, kind=GameKind.TOURNAMENT)]
    old_rooms = [two_racer_game(f"R{i}", ended_at=T0 + i) for i in range(5)]
    young_room = two_racer_game("R-young", ended_at=now - 364 * DAY_MS)
    old_practice = two_racer_game("P-old", ended_at=now - 31 * DAY_MS, kind=GameKind.PRACTICE)
    young_practice = two_racer_game("P-young", ended_at=now - DAY_MS, kind=GameKind.PRACTICE)
    await archive.write(
        ArchiveBatch(games=(*kept_for_good, *old_rooms, young_room, old_practice, young_practice))
    )
    assert await archive.expire(RETENTION_MS, now=now, limit=4) == 4
    assert await archive.expire(RETENTION_MS, now=now, limit=4) == 2
    assert await archive.expire(RETENTION_MS, now=now, limit=4) == 0
    counts = await archive.counts()
    assert dict(counts.games) == {
        GameKind.DAILY: 3,
        GameKind.TOURNAMENT: 1,
        GameKind.ROOM: 1,
        GameKind.PRACTICE: 1,
    }
    assert counts.racers == 12  # the racers went with their games
    assert await archive.game("R0", now=now) is None
    assert await archive.game("R-young", now=now) is not None
    history = await archive.history("w", now=now, limit=MAX_PAGE)
    assert {e.game_id for e in history.entries} == {"D0", "D1", "D2", "T0", "R-young", "P-young"}
    with pytest.raises(ArchiveQueryError):
        await archive.expire({GameKind.ROOM: -1}, now=now)


@pytest.mark.parametrize("limit", [0, -1, MAX_PAGE + 1])
async def test_page_sizes_are_bounded(archive: Archive, limit: int) -> None:
    with pytest.raises(ArchiveQueryError) as refused:
        await archive.history("w", now=T0, limit=limit)
    assert refused.value.code == "bad_page_size"
    with pytest.raises(ArchiveQueryError):
        await archive.board(WINNING_DEAL, now=T0, limit=limit)


async def test_concurrent_deliveries_of_one_batch_store_it_once(archive: Archive) -> None:
    """Two outbox drainers (or a retry racing the first try) deliver the same batch at
    once: one stores it, the others skip it, none fails."""
    games = tuple(two_racer_game(f"C{i}", ended_at=T0 + i) for i in range(5))
    orders = [games, games[::-1], games[2:] + games[:2], games]  # overlapping, any order
    reports = await asyncio.gather(*(archive.write(ArchiveBatch(games=o)) for o in orders))
    assert sum(r.games for r in reports) == 5
    counts = await archive.counts()
    assert counts.games[GameKind.ROOM] == 5 and counts.racers == 10
    assert [await archive.game(g.id, now=T0 + 10) for g in games] == list(games)


def cup(
    tid: str, ended_at: int, *rows: tuple[str, int], revealed_at: int | None = None
) -> ArchivedTournament:
    """A finished tournament ranking ``rows`` (player, points) in that order."""
    return ArchivedTournament(
        id=tid,
        name=f"Cup {tid}",
        variant="N",
        started_at=ended_at - 3_600_000,
        ended_at=ended_at,
        revealed_at=ended_at if revealed_at is None else revealed_at,
        standings=tuple(
            TournamentPlacing(n, player, f"Racer {player}", points)
            for n, (player, points) in enumerate(rows, start=1)
        ),
    )


async def test_a_players_tournaments_newest_first_with_their_place(archive: Archive) -> None:
    await archive.write(
        ArchiveBatch(
            tournaments=(
                cup("T-A", T0, ("w", 9), ("g", 4)),
                cup("T-B", T0 + 1000, ("g", 7), ("w", 5), ("z", 1)),
                cup("T-C", T0 + 1000, ("z", 3)),  # without w
                cup("T-D", T0 + 2000, ("w", 2), revealed_at=T0 + DAY_MS),  # sealed
            )
        )
    )
    found = await archive.player_tournaments("w", now=T0 + 5000)
    assert found == (
        PlayerTournament("T-B", "Cup T-B", "N", T0 + 1000, rank=2, points=5, players=3),
        PlayerTournament("T-A", "Cup T-A", "N", T0, rank=1, points=9, players=2),
    )
    assert [t.id for t in await archive.player_tournaments("w", now=T0 + 5000, limit=1)] == ["T-B"]
    newest, *_ = await archive.player_tournaments("w", now=T0 + DAY_MS)
    assert newest.id == "T-D"
    assert await archive.player_tournaments("nobody", now=T0 + DAY_MS) == ()
    # a second delivery of a tournament adds no row
    await archive.write(ArchiveBatch(tournaments=(cup("T-A", T0, ("w", 9), ("g", 4)),)))
    assert len(await archive.player_tournaments("w", now=T0 + 5000)) == 2
    with pytest.raises(ArchiveQueryError):
        await archive.player_tournaments("w", now=T0, limit=MAX_PAGE + 1)


async def test_renaming_a_player_rewrites_every_record_of_theirs(archive: Archive) -> None:
    """A deleted account: its games, standings and daily boards read "deleted player";
    the other players' names and everything else stay."""
    game = two_racer_game("ROOM-1", ended_at=T0)
    other = race("ROOM-2", OTHER_DEAL, {"z": greedy_actions(OTHER_DEAL)}, start_at=T0)
    day = ArchivedDailyDay(
        day="2027-01-15",
        deal=WINNING_DEAL,
        revealed_at=T0,
        attempts=2,
        board=(
            DailyPlacing(1, "w", "Racer w", "won", 110_700, 120),
            DailyPlacing(2, "g", "Racer g", "locked", 300_000, 80),
        ),
    )
    tournament = cup("T-A", T0, ("g", 9), ("w", 4))
    await archive.write(
        ArchiveBatch(games=(game, other), tournaments=(tournament,), daily_days=(day,))
    )
    assert await archive.rename_player("w", "deleted player") == 3
    read = await archive.game("ROOM-1", now=T0)
    assert read is not None
    assert [(r.player, r.name) for r in read.racers] == [
        ("w", "deleted player"),
        ("g", "Racer g"),
    ]
    assert read.racers[0].actions == game.racers[0].actions
    assert await archive.game("ROOM-2", now=other.revealed_at) == other
    cup_read = await archive.tournament("T-A", now=T0)
    assert cup_read is not None
    assert [(p.player, p.name, p.rank) for p in cup_read.standings] == [
        ("g", "Racer g", 1),
        ("w", "deleted player", 2),
    ]
    day_read = await archive.daily_day("2027-01-15", now=T0)
    assert day_read is not None and [p.name for p in day_read.board] == [
        "deleted player",
        "Racer g",
    ]
    board = await archive.board(WINNING_DEAL, now=T0)
    assert {e.name for e in board.entries} == {"deleted player", "Racer g"}
    assert await archive.rename_player("nobody", "deleted player") == 0
