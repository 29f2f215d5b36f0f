"""Plain-text rendering of a room or a tournament for the terminal (sans-I/O).

>>> from crescent_client.rooms import RoomState
>>> room = RoomState.from_snapshot(
...     {"code": "K7PQ2X", "ver": 5, "phase": "racing", "round": 1, "start_at": 1000,
...      "players": [{"id": "a", "name": "Ada", "role": "racer"},
...                  {"id": "b", "name": "Bo", "role": "racer"}]},
...     {"role": "spectator"})
>>> room.apply_progress(1, [
...     {"player": "a", "moves": 31, "foundation": 27, "redeals_used": 1,
...      "status": "playing", "finished_ms": None},
...     {"player": "b", "moves": 40, "foundation": 104, "redeals_used": 0,
...      "status": "won", "finished_ms": 65000}])
>>> print(progress_table(room, server_now_ms=184000))
Room K7PQ2X  round 1  racing
racer       status         cards  moves  redeals    time
Bo          won          104/104     40        0    1:05
Ada         playing       27/104     31        1    3:03
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crescent_client.rooms import RoomState
from crescent_client.tournaments import TournamentState

NAME_WIDTH = 10


def format_ms(ms: int | None) -> str:
    """``183000`` → ``3:03``; ``None`` → ``-``.

    >>> format_ms(183000), format_ms(3_723_000), format_ms(None)
    ('3:03', '1:02:03', '-')
    """
    if ms is None:
        return "-"
    seconds = max(0, ms) // 1000
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def progress_table(room: RoomState, server_now_ms: int) -> str:
    """The live race: one line per racer, most cards on the foundations first."""
    lines = [
        f"Room {room.code}  round {room.round}  {room.phase_at(server_now_ms)}",
        f"{'racer':<{NAME_WIDTH}}  {'status':<12} {'cards':>7}  {'moves':>5}  "
        f"{'redeals':>7}  {'time':>6}",
    ]
    racers = [p for p in room.players.values() if p.get("role") == "racer"]
    rows = []
    for player in racers:
        progress = room.progress.get(player["id"]) or player.get("progress") or {}
        status = progress.get("status", "ready" if player.get("ready") else "waiting")
        finished_ms = progress.get("finished_ms")
        if finished_ms is None and status == "playing" and room.start_at is not None:
            elapsed: int | None = server_now_ms - room.start_at
        else:
            elapsed = finished_ms
        rows.append((progress.get("foundation", 8), player, status, progress, elapsed))
    rows.sort(key=lambda row: (-row[0], row[4] if row[4] is not None else 0))
    for cards, player, status, progress, elapsed in rows:
        name = str(player.get("name", player["id"]))[:NAME_WIDTH]
        lines.append(
            f"{name:<{NAME_WIDTH}}  {status:<12} {cards:>3}/104  "
            f"{progress.get('moves', 0):>5}  {progress.get('redeals_used', 0):>7}  "
            f"{format_ms(elapsed):>6}"
        )
    return "\n".join(lines)


def results_table(room: RoomState) -> str:
    """The final ranking (RESULTS of docs/protocol.md)."""
    lines = [
        f"Results of room {room.code}, round {room.round}"
        + (f" (deal {room.deal})" if room.deal else ""),
        f"{'rank':>4}  {'racer':<{NAME_WIDTH}}  {'status':<10} {'cards':>5}  "
        f"{'moves':>5}  {'time':>6}",
    ]
    for row in room.results or []:
        lines.append(
            f"{row['rank']:>4}  {str(row.get('name', row['player']))[:NAME_WIDTH]:<10}"
            f"  {row['status']:<10} {row.get('foundation', 0):>5}  "
            f"{row.get('moves', 0):>5}  {format_ms(row.get('time_ms')):>6}"
        )
    return "\n".join(lines)


def _points(n: int) -> str:
    """``1 pt``, ``2 pts``."""
    return "1 pt" if n == 1 else f"{n} pts"


def _score(row: dict[str, Any]) -> str:
    """A standings row's score: points (placement scoring) or total time (time)."""
    if row.get("points") is not None:
        return _points(int(row["points"]))
    if row.get("total_ms") is not None:
        return format_ms(int(row["total_ms"]))
    return "-"


def standings_table(
    rows: Sequence[dict[str, Any]], *, final: bool = False, ids: bool = False
) -> str:
    """Tournament standings (Row of docs/protocol.md): removed players come unranked.

    >>> print(standings_table([
    ...     {"rank": 1, "id": "a", "name": "Ada", "status": "active", "points": 7,
    ...      "rounds_won": 2, "best_place": 1, "rounds_played": 3},
    ...     {"rank": 2, "id": "b", "name": "Bo", "status": "withdrawn", "points": 4,
    ...      "rounds_won": 0, "best_place": 2, "rounds_played": 2},
    ...     {"rank": None, "id": "c", "name": "Cy", "status": "removed", "points": 1,
    ...      "rounds_won": 0, "best_place": None, "rounds_played": 1}], final=True))
    Final standings
    rank  player      status       score   won  best  played
       1  Ada         active       7 pts     2     1       3
       2  Bo          withdrawn    4 pts     0     2       2
       -  Cy          removed       1 pt     0     -       1
    """
    lines = [
        "Final standings" if final else "Standings",
        f"{'rank':>4}  {'player':<{NAME_WIDTH}}  {'status':<10} {'score':>7}  "
        f"{'won':>4}  {'best':>4}  {'played':>6}" + ("  id" if ids else ""),
    ]
    for row in rows:
        rank = "-" if row.get("rank") is None else str(row["rank"])
        best = "-" if row.get("best_place") is None else str(row["best_place"])
        lines.append(
            f"{rank:>4}  {str(row.get('name', row['id']))[:NAME_WIDTH]:<{NAME_WIDTH}}  "
            f"{row.get('status', '')!s:<10} {_score(row):>7}  "
            f"{row.get('rounds_won', 0):>4}  {best:>4}  {row.get('rounds_played', 0):>6}"
            + (f"  {row['id']}" if ids else "")
        )
    return "\n".join(lines)


def round_results_table(round_: int, deal: str | None, rows: Sequence[dict[str, Any]]) -> str:
    """A finished tournament round (the rows of ``t_results``).

    >>> print(round_results_table(1, "CR1-N-AAAAAAB", [
    ...     {"place": 1, "id": "a", "name": "Ada", "finished": True, "time_ms": 65000,
    ...      "moves": 140, "foundation": 104, "points": 2, "time_charged_ms": None},
    ...     {"place": 2, "id": "b", "name": "Bo", "finished": False, "time_ms": None,
    ...      "moves": 90, "foundation": 40, "points": 1, "time_charged_ms": None}]))
    Round 1 (deal CR1-N-AAAAAAB)
    place  player      cards  moves    time  score
        1  Ada         104/104    140    1:05  2 pts
        2  Bo           40/104     90       -  1 pt
    """
    lines = [
        f"Round {round_}" + (f" (deal {deal})" if deal else ""),
        f"{'place':>5}  {'player':<{NAME_WIDTH}}  {'cards':>5}  {'moves':>5}  {'time':>6}  score",
    ]
    for row in rows:
        if row.get("points") is not None:
            score = _points(int(row["points"]))
        elif row.get("time_charged_ms") is not None:
            score = format_ms(int(row["time_charged_ms"]))
        else:
            score = "-"
        lines.append(
            f"{row.get('place', '-'):>5}  "
            f"{str(row.get('name', row['id']))[:NAME_WIDTH]:<{NAME_WIDTH}}  "
            f"{row.get('foundation', 0):>3}/104  {row.get('moves', 0):>5}  "
            f"{format_ms(row.get('time_ms')):>6}  {score}"
        )
    return "\n".join(lines)


def tournament_summary(state: TournamentState) -> str:
    """A tournament's head lines: settings, phase, rounds, the round under way.

    >>> from crescent_client.tournaments import TournamentState
    >>> state = TournamentState.from_snapshot({
    ...     "code": "TK7PQ2X", "name": "Friday", "host": {"id": "h", "name": "Hal"},
    ...     "variant": "N", "rounds": 3, "time_limit": 300, "max_players": 200,
    ...     "scoring": "placement", "phase": "racing", "registration_open": True,
    ...     "paused": False, "ver": 9, "players": 12, "spectators": 2, "round": 2,
    ...     "current": {"round": 2, "room": "K7PQ2X", "start_at": 1, "deadline": 2},
    ...     "deals": ["CR1-N-AAAAAAB", None, None], "standings": [],
    ...     "finished_rounds": [{"round": 1, "deal": "CR1-N-AAAAAAB",
    ...                          "winner": {"id": "a", "name": "Ada"}, "racers": 12}]},
    ...     {"role": "host"})
    >>> print(tournament_summary(state))
    Tournament TK7PQ2X "Friday"  host Hal  (you: host)
    variant N, 3 rounds of 5:00, placement scoring, 12/200 players, 2 spectators
    phase racing, round 2 of 3, registration open
    round 2 under way in room K7PQ2X
    round 1: deal CR1-N-AAAAAAB, 12 racers, won by Ada
    """
    data = state.data
    host = (data.get("host") or {}).get("name", "?")
    flags = ["registration open" if data.get("registration_open") else "registration closed"]
    if data.get("paused"):
        flags.append("paused")
    lines = [
        f'Tournament {state.code} "{data.get("name", "")}"  host {host}  (you: {state.role})',
        f"variant {data.get('variant', 'N')}, {state.rounds} rounds of "
        f"{format_ms(int(data.get('time_limit', 0)) * 1000)}, {data.get('scoring')} scoring, "
        f"{data.get('players', 0)}/{data.get('max_players', 0)} players, "
        f"{data.get('spectators', 0)} spectators",
        f"phase {state.phase}, round {state.round} of {state.rounds}, {', '.join(flags)}",
    ]
    seated = state.seated_room()
    if seated is not None:
        lines.append(f"round {seated[1]} under way in room {seated[0]}")
    for done in data.get("finished_rounds") or []:
        winner = (done.get("winner") or {}).get("name")
        lines.append(
            f"round {done['round']}: deal {done.get('deal')}, {done.get('racers', 0)} racers, "
            + (f"won by {winner}" if winner else "nobody won")
        )
    return "\n".join(lines)
