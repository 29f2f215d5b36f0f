"""The soak's one-minute version (bench/soak.py ``--smoke``) on the local cluster
(conftest.py): 100 human-paced racers in rooms of 4, a small tournament and daily
players against two server processes with ``--redis-wait-replicas 1``; one server
process killed with kill -9 (restarted at once) and one Redis master killed with
kill -9 (its replica promoted). Nothing acknowledged may be lost or stored twice, every
racer's log must rebuild the game its last ack showed, and every game the clients saw
finish must be in the archive (PostgreSQL) exactly once, the outbox drained.

The checker itself is tested first, on logs written here: a lost ack, an action stored
twice, an entry stored before its seq was sent (an earlier copy: its time mark says so)
and a log that does not replay must each be reported; a ``resign`` the server wrote
last (a racer who left or stayed offline) is counted apart."""

from __future__ import annotations

from collections.abc import Callable

import psutil
import pytest

from bench.devtools import LocalCluster, delete_prefix, random_prefix
from bench.soak import SMOKE, parser, run_soak
from bench.soak_checks import check_problems, cluster_client, verify
from server.core.games import timed
from server.game import Game

DEAL = "CR1-N-AAAAAAB"
START = 1_800_000_000_000  # the race's start (server ms): the time marks' origin


def at(ms: int) -> float:
    """A client's time.time() ``ms`` after the start."""
    return (START + ms) / 1000


def worker_result(acks: list[list[object]], **extra: object) -> dict[str, object]:
    result: dict[str, object] = {
        "acks": acks,
        "unanswered": [],
        "last_views": {},
        "deals": {"ROOMAA|1": DEAL},
        "starts": {"ROOMAA|1": START},
        "finished": [],
    }
    result.update(extra)
    return result


def test_the_checker_reports_lost_doubled_and_broken_logs(redis_url: str) -> None:
    moves = [str(m) for m in list(Game.from_code(DEAL).legal_moves())[:1]]
    game = Game.from_code(DEAL)
    game.play(moves[0])
    prefix = random_prefix("soakcheck")
    log = f"{prefix}:{{ROOMAA}}:r1:log:"
    client = cluster_client(redis_url)
    first = timed(moves[0], 1000)  # stored 1 s after the start
    try:
        client.rpush(log + "kept", first)
        client.rpush(log + "twice", first, first)
        client.rpush(log + "broken", timed("p99-zz", 1000))
        client.rpush(log + "left", first, timed("resign", 5000))  # the server resigned them
        # seq 2 ("undo", sent at 2 s) found stored at 1.5 s: a copy made before it was sent
        client.rpush(log + "copied", first, timed("undo", 1500))
        client.rpush(log + "unmarked", moves[0])
        acks = [
            [at(900), at(1100), "ROOMAA", 1, "kept", 1, moves[0], False, at(900)],
            [at(900), at(1100), "ROOMAA", 1, "lost", 1, moves[0], False, at(900)],
            [at(900), at(1100), "ROOMAA", 1, "twice", 1, moves[0], False, at(900)],
            [at(900), at(1100), "ROOMAA", 1, "broken", 1, "p99-zz", False, at(900)],
            [at(900), at(1100), "ROOMAA", 1, "left", 1, moves[0], False, at(900)],
            [at(900), at(1100), "ROOMAA", 1, "copied", 1, moves[0], False, at(900)],
            [at(2000), at(2100), "ROOMAA", 1, "copied", 2, "undo", True, at(2000)],
            [at(900), at(1100), "ROOMAA", 1, "unmarked", 1, moves[0], False, at(900)],
        ]
        views = {"ROOMAA|1|kept": [1, game.view().to_wire()]}
        checks = verify(redis_url, prefix, [worker_result(acks, last_views=views)])
    finally:
        client.close()
        delete_prefix(prefix, redis_url)
    assert checks["missing_count"] == 1 and "lost" in checks["missing"][0]
    assert checks["stored_twice_or_unacked_count"] == 1
    assert "twice" in checks["stored_twice_or_unacked"][0]
    assert any("broken" in failure for failure in checks["replay_failures"])
    out_of_time = checks["stored_out_of_time"]
    assert checks["stored_out_of_time_count"] == 2, out_of_time
    assert "copied" in out_of_time[0] and "500 ms before its seq was first sent" in out_of_time[0]
    assert "unmarked" in out_of_time[1] and "no time mark" in out_of_time[1]
    assert checks["view_mismatches_count"] == 0  # "kept" replays into its acked view
    reported = [*checks["missing"], *checks["stored_twice_or_unacked"], *checks["replay_failures"]]
    reported += out_of_time
    assert not any("kept" in line or "left" in line for line in reported)
    assert checks["resigned_by_the_server"] == 1
    assert len(check_problems(checks)) == 4


@pytest.mark.timeout(400)
def test_a_minute_of_kills_loses_no_acknowledged_action(
    redis_cluster: LocalCluster, redis_url: str, record_property: Callable[[str, object], None]
) -> None:
    args = parser().parse_args(["--seed", "24"])
    for key, value in SMOKE.items():
        setattr(args, key, value)
    prefix = random_prefix("soak")
    mine = psutil.Process()
    before = {p.pid for p in mine.children(recursive=True)}
    try:
        outcome = run_soak(args, redis_cluster, prefix)
    finally:
        delete_prefix(prefix, redis_url)
    nodes = {n.proc.pid for n in redis_cluster.nodes if n.proc is not None}
    left = [
        p
        for p in mine.children(recursive=True)
        if p.pid not in before | nodes and p.status() != psutil.STATUS_ZOMBIE
    ]
    assert left == [], f"the soak left processes behind: {[p.cmdline() for p in left]}"

    figures, checks = outcome["figures"], outcome["checks"]
    for key in ("acks", "internal_error_acts", "reconnect_p50_ms", "reconnect_p99_ms",
                "master_recover_s", "outliving_killed_servers"):  # fmt: skip
        record_property(key, figures[key])
    print({k: figures[k] for k in ("acks", "internal_error_acts", "reconnect_p99_ms")})
    assert (figures["server_kills"], figures["master_kills"]) == (1, 1)
    assert checks["acks"] > 2000 and checks["logs_read"] >= 100  # they really played
    assert check_problems(checks) == [], checks
    assert figures["reconnects"] >= 1  # the killed server's clients came back
    assert figures["failures"] == [], figures["failures"]
    # Rooms on the killed master's slots acked again once its replica took over (and
    # the old master came back as its replica: WAIT 1).
    assert all(s is not None and s < 45 for s in figures["master_recover_s"])
    # Acts answered internal_error are the ones sent while a master was away: bounded.
    assert figures["internal_error_acts"] < checks["acks"] // 4
    # Every game the clients saw finish archived once, as its logs stand; outbox empty.
    archive = checks["archive"]
    print({k: v for k, v in archive.items() if k != "problems"})
    assert archive["games_finished"] > 10 and archive["archived"] == archive["games_finished"]
    assert (archive["missing"], archive["doubled"], archive["logs_differ"]) == (0, 0, 0)
    assert (archive["outbox_pending"], archive["outbox_notes"]) == (0, 0)
