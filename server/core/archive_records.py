"""The archive's records of what ended (docs/archive.md, "The outbox"): pure, no I/O.

A finished room's race as an :class:`~server.core.archive.ArchivedGame` (its stable id,
its kind, each action's offset), a finished tournament's and a revealed daily day's
records, and the outbox entry's bytes both ways (:func:`encode_record`,
:func:`decode_record`), with the note of a race about to end (:class:`Ending`).
:mod:`server.core.outbox` puts them in the outbox and drains them into the archive.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from itertools import accumulate, repeat
from operator import itemgetter
from typing import Any, NamedTuple

from server.core.archive import (
    Action,
    ArchivedDailyDay,
    ArchivedGame,
    ArchivedRacer,
    ArchivedTournament,
    ArchiveError,
    DailyPlacing,
    GameKind,
    RacerResult,
    TournamentPlacing,
)
from server.core.games import TIME_MARK, untimed
from server.core.ports import BoardEntry
from server.core.replay import parse_replay
from server.daily import Day
from server.game import DealCode
from server.lobby import Room
from server.tournament import Tournament


def game_id(room: Room) -> str:
    """The archived game's id: stable for one round's end (a retry makes the same), and
    new for a room code reused after its keys expired (the start time differs).

    >>> from dataclasses import replace
    >>> game_id(replace(_example_room(), round=2, start_at=1_764_590_400_000))
    'KQZTRW-2-min3kao0'
    """
    assert room.start_at is not None
    return f"{room.code}-{room.round}-{_base36(room.start_at)}"


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        number, digit = divmod(number, 36)
        text = digits[digit] + text
        if number == 0:
            return text


def kind_of(room: Room) -> GameKind:
    """A tournament's round, a daily attempt (or a practice game of the daily's sealed
    deal: :meth:`server.core.outbox.Archiver.game_entry` tells them apart), a
    practice game (one seat) or a room race."""
    if room.tournament is not None:
        return GameKind.TOURNAMENT
    if room.deal_sealed_until is not None:
        return GameKind.DAILY
    if room.seats == 1:
        return GameKind.PRACTICE
    return GameKind.ROOM


def archived_game(
    room: Room, logs: Sequence[Sequence[str]], *, kind: GameKind | None = None
) -> ArchivedGame:
    """The archive record of a finished room's race: ``logs`` are the entrants' stored
    action logs in seat order (``"p3-ad@5120"``: the action and its ms after the start;
    an action stored without its time gets the one before it)."""
    return _game(game_fields(room, logs, kind=kind))


def game_fields(
    room: Room, logs: Sequence[Sequence[str]], *, kind: GameKind | None = None
) -> dict[str, Any]:
    """:func:`archived_game`'s record as the outbox carries it (:func:`_game_fields`),
    made straight from the logs: the end of every race makes one, and what it holds is
    checked once, when the drainer reads it back (``ArchivedGame``)."""
    assert room.start_at is not None and room.finished_at is not None and room.results
    kind = kind or kind_of(room)
    results = {row.player: row for row in room.results}
    racers = []
    for (player, name), entries in zip(room.entrants, logs, strict=True):
        row = results[player]
        text, offsets = log_columns(entries)
        result = (row.rank, row.status, row.time_ms, row.moves, row.foundation)
        racers.append([player, name, text, offsets, result])
    revealed_at = room.finished_at
    origin = room.code
    if room.tournament is not None:
        origin = room.tournament
    elif room.deal_sealed_until is not None:  # a sealed day stays sealed in the archive
        revealed_at = max(revealed_at, room.deal_sealed_until)
        origin = str(Day.of(room.created_at))
    elif kind == GameKind.PRACTICE:
        origin = ""
    return {
        "id": game_id(room),
        "deal": room.deal,
        "variant": str(DealCode.parse(room.deal).variant),
        "origin": origin,
        "start_at": room.start_at,
        "ended_at": room.finished_at,
        "revealed_at": revealed_at,
        "kind": str(kind),
        "racers": racers,
    }


_OFFSET = re.compile(r"@(\d+)(?= |\Z)")  # a stored action's time mark (games.timed)


def log_columns(entries: Sequence[str]) -> tuple[str, list[int]]:
    """A stored log as the archive keeps it: its actions as one space-separated text,
    and their offsets (ms after the start; one stored without its time gets the time
    of the one before, 0 for the first; never less than the one before).

    >>> log_columns(["p3-ad@5120", "undo@4900", "redeal", "resign@9000"])
    ('p3-ad undo redeal resign', [5120, 5120, 5120, 9000])
    """
    text = " ".join(entries)
    found = _OFFSET.findall(text)
    if len(found) == len(entries) == text.count(TIME_MARK):  # all timed: in C throughout
        return _OFFSET.sub("", text), list(accumulate(map(int, found), max))
    names, offsets, last = [], [], 0  # a log (partly) written before actions had times
    for entry in entries:
        action, offset = untimed(entry)
        last = max(last, offset) if offset is not None else last
        names.append(action)
        offsets.append(last)
    return " ".join(names), offsets


class Ending(NamedTuple):
    """A race about to end (noted before its end is stored): if the process dies
    between the end and putting the game's record, a drainer finds this note
    :data:`server.core.outbox.RECOVER_AFTER_MS` later and puts the record itself."""

    room: str
    round: int


Record = ArchivedGame | ArchivedTournament | ArchivedDailyDay


def ending_id(room: str, round_: int) -> str:
    return f"ending:{room}:{round_}"


def record_id(record: Record) -> str:
    """The outbox entry's id: the game's own; ``tournament:<code>``, ``daily:<day>``."""
    if isinstance(record, ArchivedGame):
        return record.id
    if isinstance(record, ArchivedTournament):
        return f"tournament:{record.id}"
    return f"daily:{record.day}"


def encode_record(record: Record) -> bytes:
    """An outbox entry's bytes (JSON): a game compactly (:func:`_game_fields`); a
    finished tournament or daily day as its fields."""
    document: dict[str, Any]
    if isinstance(record, ArchivedGame):
        return encode_game(_game_fields(record))
    if isinstance(record, ArchivedTournament):
        document = {
            "tournament": {
                **{f: getattr(record, f) for f in _TOURNAMENT_FIELDS},
                "standings": [dataclasses.astuple(s) for s in record.standings],
                "games": list(record.games),
            }
        }
    else:
        document = {
            "daily_day": {
                **{f: getattr(record, f) for f in _DAY_FIELDS},
                "board": [dataclasses.astuple(row) for row in record.board],
            }
        }
    return json.dumps(document, separators=(",", ":")).encode()


def encode_game(fields: dict[str, Any]) -> bytes:
    """A game's outbox entry: its :func:`game_fields` (or :func:`_game_fields`)."""
    return json.dumps({"g": fields}, separators=(",", ":")).encode()


_TOURNAMENT_FIELDS = ("id", "name", "variant", "started_at", "ended_at", "revealed_at")
_GAME_FIELDS = ("id", "deal", "variant", "origin", "start_at", "ended_at", "revealed_at")
_GAME_TIMES = ("start_at", "ended_at", "revealed_at")


def _game_fields(game: ArchivedGame) -> dict[str, Any]:
    """A game as the outbox carries it: each racer as ``[player, name, actions, offsets,
    result]``, its actions one space-separated text and their offsets a list of ints
    (as the archive stores them), not an object per action: a game of a few hundred
    actions is then a few strings and lists, cheap to write and to read back."""
    return {
        **{f: getattr(game, f) for f in _GAME_FIELDS},
        "kind": str(game.kind),
        "racers": [
            [
                r.player,
                r.name,
                " ".join(map(itemgetter(1), r.actions)),
                list(map(itemgetter(0), r.actions)),
                dataclasses.astuple(r.result),
            ]
            for r in game.racers
        ],
    }


def _game(fields: dict[str, Any]) -> ArchivedGame:
    """The inverse of :func:`_game_fields`; ``ArchivedGame`` checks what it holds."""
    values = {f: fields[f] for f in _GAME_FIELDS}
    if {type(values[f]) for f in _GAME_TIMES} != {int} or not isinstance(values["id"], str):
        raise ValueError("a game's times are ints, its id a text")
    racers = []
    for player, name, text, offsets, result in fields["racers"]:
        names = text.split(" ") if text else []
        # Checked in C, not per action in Python: the text by ArchivedGame's pattern.
        if len(names) != len(offsets) or not set(map(type, offsets)) <= {int}:
            raise ValueError(f"a racer of {len(names)} actions and {len(offsets)} offsets")
        if not set(map(type, result)) <= {int, str} or not isinstance(player, str):
            raise ValueError("a racer's result holds ints and texts, its id a text")
        # tuple.__new__(Action, (t, a)) is what Action(t, a) does, without its
        # Python-level __new__: a game is hundreds of actions.
        pairs = zip(offsets, names, strict=True)  # lengths checked above
        actions: tuple[Action, ...] = tuple(map(tuple.__new__, repeat(Action), pairs))
        racers.append(ArchivedRacer(player, str(name), actions, RacerResult(*result)))
    return ArchivedGame(
        **values,
        kind=GameKind(fields["kind"]),
        racers=tuple(racers),
    )


_DAY_FIELDS = ("day", "deal", "revealed_at", "attempts")


def decode_record(record: bytes) -> Record | Ending:
    """The record of an outbox entry (:class:`ArchiveError` ``bad_record`` if it is not
    one)."""
    try:
        document = json.loads(record)
        if "ending" in document:
            return Ending(str(document["ending"]["room"]), int(document["ending"]["round"]))
        if "g" in document:
            return _game(document["g"])
        if "game" in document:  # as a process of an earlier version put it
            return parse_replay(document["game"], revealed_at=int(document["revealed_at"]))
        if "tournament" in document:
            t = document["tournament"]
            return ArchivedTournament(
                **{f: t[f] for f in _TOURNAMENT_FIELDS},
                standings=tuple(TournamentPlacing(*row) for row in t["standings"]),
                games=tuple(t["games"]),
            )
        day = document["daily_day"]
        return ArchivedDailyDay(
            **{f: day[f] for f in _DAY_FIELDS},
            board=tuple(DailyPlacing(*row) for row in day["board"]),
        )
    except ArchiveError:
        raise
    except (ValueError, TypeError, KeyError) as exc:
        raise ArchiveError("bad_record", f"not an outbox record: {exc!r}") from exc


def archived_tournament(t: Tournament, games: Sequence[str]) -> ArchivedTournament:
    """A finished tournament's record: its final standings (for time scoring,
    ``points`` holds the time charged in ms) and its rounds' game ids."""
    assert t.finished_at is not None
    return ArchivedTournament(
        id=t.code,
        name=t.name,
        variant=t.variant,
        started_at=t.created_at,
        ended_at=t.finished_at,
        revealed_at=t.finished_at,
        standings=tuple(
            TournamentPlacing(
                rank=int(row["rank"]),
                player=str(row["id"]),
                name=str(row["name"]),
                points=int(row.get("points") or row.get("time_charged_ms") or 0),
            )
            for row in t.standings()
        ),
        games=tuple(games),
    )


def archived_day(
    day: Day, deal: str, revealed_at: int, attempts: int, top: Sequence[BoardEntry]
) -> ArchivedDailyDay:
    """A revealed daily day's record: its deal, how many attempts, its ranked board's
    top rows (every attempt is an archived game too: the deal's board has them all)."""
    return ArchivedDailyDay(
        day=str(day),
        deal=deal,
        revealed_at=revealed_at,
        attempts=attempts,
        board=tuple(
            DailyPlacing(
                rank=row.rank,
                player=row.player_id,
                name=row.entry.name,
                status=row.entry.status,
                time_ms=row.entry.time_ms or 0,
                moves=row.entry.moves,
            )
            for row in top
        ),
    )


def _example_room() -> Room:
    return Room(
        code="KQZTRW",
        host=None,
        variant="N",
        deal="CR1-N-AAAAAAB",
        deal_public=False,
        seats=2,
        time_limit=None,
    )
