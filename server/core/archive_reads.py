"""Reading the archive for players (docs/archive.md, "Reading"): a game's replay, a
player's history and a deal's board, as JSON-ready documents, for the HTTP routes and
the ``replay`` wire request. Bad input is an :class:`ArchiveReadError` with its code;
nothing unrevealed is ever returned (the archive's own rule: every read takes ``now``).
"""

from __future__ import annotations

import logging
from typing import Any

from crescent_wire.errors import ArchiveReadError
from server.core.archive import (
    BOARD_PAGE,
    HISTORY_PAGE,
    MAX_PAGE,
    Archive,
    ArchiveError,
    BoardCursor,
    BoardEntry,
    HistoryCursor,
    HistoryEntry,
    PlayerTournament,
    RacerResult,
    check_id,
)
from server.core.ports import Clock
from server.core.replay import replay_document
from server.game import CrescentError, DealCode
from server.logs import RepeatedEvent

log = logging.getLogger("server.archive")

CURSOR_SEP = "~"  # never in a game id (A-Z a-z 0-9 _ . : -)
MAX_PLAYER_ID = 64


def history_cursor(cursor: HistoryCursor) -> str:
    """``<ended_at>~<game id>``, for the ``before`` of the next page's URL.

    >>> history_cursor(HistoryCursor(1764590580000, "KQZTRW-1-min3kao0"))
    '1764590580000~KQZTRW-1-min3kao0'
    >>> parse_history_cursor("1764590580000~KQZTRW-1-min3kao0")
    HistoryCursor(ended_at=1764590580000, game_id='KQZTRW-1-min3kao0')
    """
    return f"{cursor.ended_at}{CURSOR_SEP}{cursor.game_id}"


def parse_history_cursor(text: str) -> HistoryCursor:
    ended_at, sep, game_id = text.partition(CURSOR_SEP)
    if not sep or not ended_at.isdigit() or len(ended_at) > 15:
        raise ArchiveReadError("bad_cursor")
    return HistoryCursor(int(ended_at), _cursor_game_id(game_id))


def board_cursor(cursor: BoardCursor) -> str:
    """``<finished>~<score>~<moves>~<seat>~<game id>`` (score: negative for a racer who
    did not win: minus the foundation count).

    >>> board_cursor(BoardCursor(1, -60, 80, "G-1", 0))
    '1~-60~80~0~G-1'
    >>> parse_board_cursor("1~-60~80~0~G-1")
    BoardCursor(finished=1, score=-60, moves=80, game_id='G-1', seat=0)
    """
    return CURSOR_SEP.join(
        str(part)
        for part in (cursor.finished, cursor.score, cursor.moves, cursor.seat, cursor.game_id)
    )


def parse_board_cursor(text: str) -> BoardCursor:
    parts = text.split(CURSOR_SEP)
    if len(parts) != 5:
        raise ArchiveReadError("bad_cursor")
    finished, score, moves, seat, game_id = parts
    try:
        numbers = [int(finished), int(score), int(moves), int(seat)]
    except ValueError:
        raise ArchiveReadError("bad_cursor") from None
    if numbers[0] not in (0, 1) or any(abs(n) >= 10**15 for n in numbers):
        raise ArchiveReadError("bad_cursor")
    return BoardCursor(numbers[0], numbers[1], numbers[2], _cursor_game_id(game_id), numbers[3])


def _cursor_game_id(text: str) -> str:
    try:
        return check_id(text)
    except ArchiveError:
        raise ArchiveReadError("bad_cursor") from None


def page_size(text: str | None, default: int) -> int:
    if text is None:
        return default
    if not text.isdigit() or not 1 <= int(text) <= MAX_PAGE:
        raise ArchiveReadError("bad_page_size", f"a page holds 1 to {MAX_PAGE} rows")
    return int(text)


def _result(result: RacerResult) -> dict[str, Any]:
    return {
        "rank": result.rank,
        "status": result.status,
        "time_ms": result.time_ms,
        "moves": result.moves,
        "foundation": result.foundation,
    }


def replay_path(game_id: str) -> str:
    return f"/api/games/{game_id}.json"


def _history_row(entry: HistoryEntry) -> dict[str, Any]:
    return {
        "game": entry.game_id,
        "kind": str(entry.kind),
        "deal": entry.deal,
        "variant": entry.variant,
        "origin": entry.origin,
        "start_at": entry.start_at,
        "ended_at": entry.ended_at,
        "racers": entry.racers,
        "result": _result(entry.result),
        "replay": replay_path(entry.game_id),
    }


def _board_row(entry: BoardEntry) -> dict[str, Any]:
    return {
        "game": entry.game_id,
        "kind": str(entry.kind),
        "origin": entry.origin,
        "player": entry.player,
        "name": entry.name,
        "ended_at": entry.ended_at,
        "result": _result(entry.result),
        "replay": replay_path(entry.game_id),
    }


def _tournament_row(row: PlayerTournament) -> dict[str, Any]:
    return {
        "code": row.id,
        "name": row.name,
        "variant": row.variant,
        "ended_at": row.ended_at,
        "place": row.rank,
        "players": row.players,
        "points": row.points,
    }


class ArchiveReads:
    """The player-facing reads; ``archive`` None: this server keeps none (``archive_off``)."""

    def __init__(self, archive: Archive | None, clock: Clock) -> None:
        self.archive = archive
        self.clock = clock
        self.failing = RepeatedEvent(log, "archive reads failing", quiet_s=60.0)

    def _archive(self) -> Archive:
        if self.archive is None:
            raise ArchiveReadError("archive_off")
        return self.archive

    async def replay(self, game_id: str) -> dict[str, Any]:
        """The game's ``crescent-replay/1`` document; ``game_not_found`` if the id is
        unknown, malformed or not yet revealed (the same answer: nothing leaks)."""
        archive = self._archive()
        try:
            check_id(game_id)
        except ArchiveError:
            raise ArchiveReadError("game_not_found") from None
        try:
            game = await archive.game(game_id, now=self.clock())
        except Exception as exc:
            raise self._unavailable(exc) from exc
        if game is None:
            raise ArchiveReadError("game_not_found")
        return replay_document(game)

    async def history(
        self, player: str, *, before: str | None = None, limit: str | None = None
    ) -> dict[str, Any]:
        """The player's revealed games, newest first; ``next``: the cursor of the next
        page (``before=``), None at the end."""
        archive = self._archive()
        if not 0 < len(player) <= MAX_PLAYER_ID:
            raise ArchiveReadError("bad_player_id")
        size = page_size(limit, HISTORY_PAGE)
        after = parse_history_cursor(before) if before is not None else None
        try:
            page = await archive.history(player, now=self.clock(), limit=size, after=after)
        except Exception as exc:
            raise self._unavailable(exc) from exc
        return {
            "player": player,
            "games": [_history_row(entry) for entry in page.entries],
            "next": history_cursor(page.next) if page.next is not None else None,
        }

    async def board(
        self, deal: str, *, after: str | None = None, limit: str | None = None
    ) -> dict[str, Any]:
        """Every revealed result on ``deal``, best first; ``next``: the ``after=`` of the
        next page, None at the end."""
        archive = self._archive()
        try:
            code = str(DealCode.parse(deal.upper()))
        except CrescentError:
            raise ArchiveReadError("bad_deal_code") from None
        size = page_size(limit, BOARD_PAGE)
        cursor = parse_board_cursor(after) if after is not None else None
        try:
            page = await archive.board(code, now=self.clock(), limit=size, after=cursor)
        except Exception as exc:
            raise self._unavailable(exc) from exc
        return {
            "deal": code,
            "rows": [_board_row(entry) for entry in page.entries],
            "next": board_cursor(page.next) if page.next is not None else None,
        }

    async def tournaments(self, player: str, *, limit: int = HISTORY_PAGE) -> dict[str, Any]:
        """The finished tournaments ``player`` is ranked in, newest first, with their
        place (a public profile's list)."""
        archive = self._archive()
        try:
            rows = await archive.player_tournaments(player, now=self.clock(), limit=limit)
        except Exception as exc:
            raise self._unavailable(exc) from exc
        return {"tournaments": [_tournament_row(row) for row in rows]}

    async def rename_player(self, player: str, name: str) -> int:
        """``name`` for ``player`` everywhere in the archive (a deleted account)."""
        try:
            return await self._archive().rename_player(player, name)
        except ArchiveReadError:
            raise
        except Exception as exc:
            raise self._unavailable(exc) from exc

    def _unavailable(self, exc: Exception) -> ArchiveReadError:
        if isinstance(exc, ArchiveError):  # the adapter's own bounds (checked above too)
            return ArchiveReadError("bad_page_size")
        self.failing.occurred(error=repr(exc))
        return ArchiveReadError("archive_unavailable")
