"""The replay format ``crescent-replay/1`` and the check of a recorded result.

docs/replay.md is the format's reference. Pure: a document in, a game out (or a
:class:`ReplayFormatError` saying where the document is wrong), and :func:`verify_game`
replays each racer's actions with the rules engine, exactly as the server applied them
(server.lobby.race.RacerGame: moves, ``redeal``, ``undo``, ``resign``), and confirms the
recorded result: the basis of ``crescent verify``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from server.core.archive import (
    Action,
    ArchivedGame,
    ArchivedRacer,
    ArchiveError,
    GameKind,
    RacerResult,
)
from server.lobby.race import TERMINAL, TIMEOUT, RacerGame

FORMAT = "crescent-replay/1"
MAX_RACERS = 1_000  # bounds what a document may make a reader hold
MAX_ACTIONS = 100_000  # per racer
MAX_TEXT = 64  # a name, player id, origin or action
STATUSES = frozenset({"won", "locked", "resigned", TIMEOUT})


class ReplayFormatError(ArchiveError):
    """A document that is not a ``crescent-replay/1`` replay (code ``bad_replay``); the
    message names the first wrong field by its path, e.g. ``racers[0].actions[3].t``."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__("bad_replay", f"{path}: {problem}")
        self.path = path


def replay_document(game: ArchivedGame) -> dict[str, Any]:
    """The game as a ``crescent-replay/1`` document (JSON-ready: str, int, list, dict)."""
    return {
        "format": FORMAT,
        "id": game.id,
        "kind": str(game.kind),
        "deal": game.deal,
        "variant": game.variant,
        "origin": game.origin,
        "start_at": game.start_at,
        "ended_at": game.ended_at,
        "racers": [
            {
                "player": racer.player,
                "name": racer.name,
                "actions": [{"t": t, "a": a} for t, a in racer.actions],
                "result": {
                    "rank": racer.result.rank,
                    "status": racer.result.status,
                    "time_ms": racer.result.time_ms,
                    "moves": racer.result.moves,
                    "foundation": racer.result.foundation,
                },
            }
            for racer in game.racers
        ],
    }


def parse_replay(document: object, *, revealed_at: int | None = None) -> ArchivedGame:
    """The game a ``crescent-replay/1`` document describes (its ``revealed_at`` is its
    ``ended_at`` unless given: a published replay is revealed; the outbox carries a
    sealed game's own). Checks shape, types and bounds, not the rules:
    :func:`verify_game` does that."""
    doc = _mapping(document, "$")
    if doc.get("format") != FORMAT:
        raise ReplayFormatError("format", f"expected {FORMAT!r}, got {doc.get('format')!r}")
    kind_text = _text(doc, "kind", "kind")
    try:
        kind = GameKind(kind_text)
    except ValueError:
        raise ReplayFormatError("kind", f"unknown kind {kind_text!r}") from None
    racers_in = doc.get("racers")
    if not isinstance(racers_in, list) or not 1 <= len(racers_in) <= MAX_RACERS:
        raise ReplayFormatError("racers", f"expected a list of 1 … {MAX_RACERS} racers")
    racers = tuple(_racer(item, f"racers[{i}]") for i, item in enumerate(racers_in))
    game_id = _text(doc, "id", "id")
    deal = _text(doc, "deal", "deal")
    variant = _text(doc, "variant", "variant")
    origin = _text(doc, "origin", "origin", empty=True)
    start_at = _int(doc, "start_at", "start_at")
    ended_at = _int(doc, "ended_at", "ended_at")
    try:  # what ArchivedGame itself checks: the id, the deal code, the variant, actions
        return ArchivedGame(
            id=game_id,
            kind=kind,
            deal=deal,
            variant=variant,
            origin=origin,
            start_at=start_at,
            ended_at=ended_at,
            revealed_at=ended_at if revealed_at is None else revealed_at,
            racers=racers,
        )
    except ArchiveError as exc:
        raise ReplayFormatError("$", exc.message) from exc


def _racer(item: object, path: str) -> ArchivedRacer:
    racer = _mapping(item, path)
    actions_in = racer.get("actions")
    if not isinstance(actions_in, list) or len(actions_in) > MAX_ACTIONS:
        raise ReplayFormatError(f"{path}.actions", f"expected a list of ≤ {MAX_ACTIONS} actions")
    actions = []
    for i, entry in enumerate(actions_in):
        action = _mapping(entry, f"{path}.actions[{i}]")
        actions.append(
            Action(
                _int(action, "t", f"{path}.actions[{i}].t"),
                _text(action, "a", f"{path}.actions[{i}].a"),
            )
        )
    result = _mapping(racer.get("result"), f"{path}.result")
    status = _text(result, "status", f"{path}.result.status")
    if status not in STATUSES:
        raise ReplayFormatError(f"{path}.result.status", f"unknown status {status!r}")
    return ArchivedRacer(
        player=_text(racer, "player", f"{path}.player"),
        name=_text(racer, "name", f"{path}.name", empty=True),
        actions=tuple(actions),
        result=RacerResult(
            rank=_int(result, "rank", f"{path}.result.rank"),
            status=status,
            time_ms=_int(result, "time_ms", f"{path}.result.time_ms"),
            moves=_int(result, "moves", f"{path}.result.moves"),
            foundation=_int(result, "foundation", f"{path}.result.foundation"),
        ),
    )


def _mapping(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ReplayFormatError(path, "expected an object")
    return value


def _text(obj: Mapping[str, Any], key: str, path: str, *, empty: bool = False) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or len(value) > MAX_TEXT or (not value and not empty):
        raise ReplayFormatError(path, f"expected a string of 1 … {MAX_TEXT} characters")
    return value


def _int(obj: Mapping[str, Any], key: str, path: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ReplayFormatError(path, "expected an integer ≥ 0")
    return value


@dataclass(frozen=True, slots=True)
class Verdict:
    """What replaying one racer's actions gave. ``ok``: the recorded result is what the
    actions produce; otherwise ``problems`` says each difference (``code: detail``)."""

    player: str
    status: str  # as replayed (a racer still playing at the end: ``timeout``)
    moves: int
    foundation: int
    time_ms: int | None  # the offset of the action that finished the game, if any
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_racer(deal: str, racer: ArchivedRacer) -> Verdict:
    """Replay ``racer``'s actions on ``deal`` and compare with the recorded result."""
    problems: list[str] = []
    game = RacerGame.new(deal)
    last_t = 0
    for index, (t, action) in enumerate(racer.actions):
        if t < last_t:
            problems.append(f"offsets_not_ordered: action {index} at {t} ms after {last_t} ms")
            break
        last_t = t
        refusal = game.apply(action, elapsed_ms=t)
        if refusal is not None:
            problems.append(f"illegal_action: action {index} ({action!r}): {refusal.code}")
            break
    status = game.status if game.status in TERMINAL else TIMEOUT
    recorded = racer.result
    if status != recorded.status:
        problems.append(f"status: recorded {recorded.status}, replayed {status}")
    if game.game.moves != recorded.moves:
        problems.append(f"moves: recorded {recorded.moves}, replayed {game.game.moves}")
    if game.game.foundation_count != recorded.foundation:
        problems.append(
            f"foundation: recorded {recorded.foundation}, replayed {game.game.foundation_count}"
        )
    if status in TERMINAL:
        if game.finished_ms != recorded.time_ms:
            problems.append(f"time_ms: recorded {recorded.time_ms}, replayed {game.finished_ms}")
    elif recorded.time_ms < last_t:  # timed out: the race ended after the last action
        problems.append(f"time_ms: recorded {recorded.time_ms}, before the last action {last_t}")
    return Verdict(
        player=racer.player,
        status=status,
        moves=game.game.moves,
        foundation=game.game.foundation_count,
        time_ms=game.finished_ms,
        problems=tuple(problems),
    )


def verify_game(game: ArchivedGame) -> list[Verdict]:
    """Every racer's :class:`Verdict`, plus a check that the recorded ranks follow the
    results table's order (winners by time then moves, then the others by cards on the
    foundations then moves; ties may go either way): a racer ranked above a better one
    gets ``rank: ...``."""
    verdicts = [verify_racer(game.deal, racer) for racer in game.racers]
    by_rank = sorted(range(len(game.racers)), key=lambda i: game.racers[i].result.rank)
    ranks = [game.racers[i].result.rank for i in by_rank]
    if ranks != list(range(1, len(ranks) + 1)):
        first = by_rank[0]
        verdicts[first] = _with_problem(verdicts[first], f"rank: ranks are {ranks}, not 1 … n")
        return verdicts
    for above, below in itertools.pairwise(by_rank):
        if _order(game.racers[below].result) < _order(game.racers[above].result):
            verdicts[above] = _with_problem(
                verdicts[above],
                f"rank: ranked {game.racers[above].result.rank} above "
                f"{game.racers[below].player}, who did better",
            )
    return verdicts


def _order(result: RacerResult) -> tuple[int, int, int]:
    if result.status == "won":
        return (0, result.time_ms, result.moves)
    return (1, -result.foundation, result.moves)


def _with_problem(verdict: Verdict, problem: str) -> Verdict:
    return Verdict(
        verdict.player,
        verdict.status,
        verdict.moves,
        verdict.foundation,
        verdict.time_ms,
        (*verdict.problems, problem),
    )
