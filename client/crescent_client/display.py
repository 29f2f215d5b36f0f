"""Plain-text rendering of a room for the terminal (sans-I/O: returns strings).

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

from crescent_client.rooms import RoomState

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
