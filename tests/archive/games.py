"""Real games for the archive's tests: racers played by the client's greedy strategy
(and the known winning line of CR1-N-IPGYBDG) through the server's own RacerGame, ranked
by the server's own results table."""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path

from crescent_client.strategy import GreedyStrategy
from server.core.archive import Action, ArchivedGame, ArchivedRacer, GameKind, RacerResult
from server.lobby.race import RacerGame, rank

WINNING_DEAL = "CR1-N-IPGYBDG"
WINNING_LINE = Path(__file__).parents[1] / "game" / "data" / "winning_line.json"


@functools.cache
def winning_actions() -> tuple[str, ...]:
    return tuple(json.loads(WINNING_LINE.read_text())["actions"])


@functools.cache
def greedy_actions(deal: str, seed: int = 0) -> tuple[Action, ...]:
    """A greedy racer's whole game on ``deal``: each action a human-ish 400-1400 ms
    after the one before (seeded), with the server refusing nothing it stores."""
    rng = random.Random(seed)
    racer = RacerGame.new(deal)
    strategy = GreedyStrategy()
    actions: list[Action] = []
    t = 0
    while (action := strategy.next_action(racer.view().to_wire())) is not None:
        t += rng.randrange(400, 1400)
        if racer.apply(action, elapsed_ms=t) is None:  # refused actions are never logged
            actions.append(Action(t, action))
    return tuple(actions)


def paced(actions: tuple[str, ...], step_ms: int = 900) -> tuple[Action, ...]:
    return tuple(Action((i + 1) * step_ms, a) for i, a in enumerate(actions))


def race(
    game_id: str,
    deal: str,
    logs: dict[str, tuple[Action, ...]],
    *,
    kind: GameKind = GameKind.ROOM,
    start_at: int = 1_700_000_000_000,
    duration_ms: int = 600_000,
    revealed_at: int | None = None,
    origin: str = "ABCD",
) -> ArchivedGame:
    """An archived game of ``logs`` (player id -> actions) ranked as the server ranks:
    each racer's log replayed by RacerGame, racers still playing timed out at the end."""
    progress = {}
    for player, actions in logs.items():
        racer = RacerGame.new(deal)
        for t, a in actions:
            assert racer.apply(a, elapsed_ms=t) is None, (player, t, a)
        progress[player] = racer.progress(player, now=start_at + (actions[-1].t if actions else 0))
    ended_at = start_at + duration_ms
    table = rank([(p, f"Racer {p}") for p in logs], progress, start_at=start_at, now=ended_at)
    rows = {row.player: row for row in table}
    return ArchivedGame(
        id=game_id,
        kind=kind,
        deal=deal,
        variant=deal.split("-")[1],
        origin=origin,
        start_at=start_at,
        ended_at=ended_at,
        revealed_at=ended_at if revealed_at is None else revealed_at,
        racers=tuple(
            ArchivedRacer(
                player=player,
                name=rows[player].name,
                actions=actions,
                result=RacerResult(
                    rank=rows[player].rank,
                    status=rows[player].status,
                    time_ms=rows[player].time_ms,
                    moves=rows[player].moves,
                    foundation=rows[player].foundation,
                ),
            )
            for player, actions in logs.items()
        ),
    )
