"""Keyset pagination of the in-memory archive (the contract's reference) under random
data: paging through with any page size gives exactly the whole ordered list."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from server.core.archive import (
    Action,
    ArchiveBatch,
    ArchivedGame,
    ArchivedRacer,
    BoardEntry,
    GameKind,
    HistoryEntry,
    RacerResult,
    board_key,
)
from server.storage.memory_archive import MemoryArchive

DEAL = "CR1-N-AAAAAAB"
results = st.builds(
    RacerResult,
    rank=st.just(1),
    status=st.sampled_from(["won", "locked", "resigned", "timeout"]),
    time_ms=st.integers(0, 50),
    moves=st.integers(0, 5),
    foundation=st.integers(8, 12),
)
games = st.lists(
    st.tuples(
        st.integers(0, 20),  # ended_at: many ties
        st.integers(0, 40),  # revealed_at offset
        st.lists(st.tuples(st.sampled_from("abc"), results), min_size=1, max_size=3),
    ),
    max_size=40,
)


def build(spec: list[tuple[int, int, list[tuple[str, RacerResult]]]]) -> list[ArchivedGame]:
    built = []
    for i, (ended_at, reveal, racers) in enumerate(spec):
        unique = dict(racers)  # a player races once
        built.append(
            ArchivedGame(
                id=f"g{i}",
                kind=GameKind.ROOM,
                deal=DEAL,
                variant="N",
                origin="",
                start_at=0,
                ended_at=ended_at,
                revealed_at=ended_at + reveal,
                racers=tuple(
                    ArchivedRacer(p, p, (Action(1, "p1-p2"),), r) for p, r in unique.items()
                ),
            )
        )
    return built


@settings(max_examples=150, deadline=None)
@given(games, st.integers(1, 7), st.integers(0, 60))
def test_paging_through_gives_the_whole_ordered_list(
    spec: list[tuple[int, int, list[tuple[str, RacerResult]]]], limit: int, now: int
) -> None:
    archived = build(spec)
    visible = [g for g in archived if g.revealed_at <= now]

    async def walk() -> tuple[list[HistoryEntry], list[BoardEntry]]:
        archive = MemoryArchive()
        await archive.write(ArchiveBatch(games=tuple(archived)))
        history: list[HistoryEntry] = []
        page = await archive.history("a", now=now, limit=limit)
        history.extend(page.entries)
        while page.next is not None:
            page = await archive.history("a", now=now, limit=limit, after=page.next)
            history.extend(page.entries)
        board: list[BoardEntry] = []
        board_page = await archive.board(DEAL, now=now, limit=limit)
        board.extend(board_page.entries)
        while board_page.next is not None:
            board_page = await archive.board(DEAL, now=now, limit=limit, after=board_page.next)
            board.extend(board_page.entries)
        return history, board

    history, board = asyncio.run(walk())
    expected_history = sorted(
        (g for g in visible if any(r.player == "a" for r in g.racers)),
        key=lambda g: (g.ended_at, g.id),
        reverse=True,
    )
    assert [e.game_id for e in history] == [g.id for g in expected_history]
    expected_board = sorted(
        board_key(r.result, g.id, seat) for g in visible for seat, r in enumerate(g.racers)
    )
    assert [e.cursor for e in board] == expected_board
