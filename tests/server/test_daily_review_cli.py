"""``python -m server review`` on real Redis: list the flagged results, disqualify one
(it leaves the board, the reason kept), confirm another; bad input is refused."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from server.core import messages
from server.core.daily import DAILY_CHANNEL
from server.daily import Day, ResultEntry
from server.daily.review import Review
from server.storage.redis_base import Keys
from server.storage.redis_daily import RedisDailyStorage
from tests.support import REPO_ROOT

DAY = str(Day.of(int(time.time() * 1000)).previous())  # yesterday: within list's 7 days


@pytest.fixture
async def daily(redis_url: str, prefix: str) -> AsyncIterator[RedisDailyStorage]:
    client = aioredis.Redis.from_url(redis_url)
    yield RedisDailyStorage(client, prefix)
    await client.aclose()


def run_review(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m server review ARGS``, with no Redis named by the environment."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("CRESCENT_REDIS_URL", "CRESCENT_DATA_DIR")
    }
    return subprocess.run(
        [sys.executable, "-m", "server", "review", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def review(redis_url: str, prefix: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_review("--redis-url", redis_url, "--key-prefix", prefix, *args)


def test_without_a_url_it_uses_the_embedded_redis_of_the_data_dir(
    private_redis: Callable[[], subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    """As the server: no URL means the embedded Redis (its socket in --data-dir), not
    whatever answers on 6379; nothing flagged is said, not an empty output."""
    private_redis()  # its socket: tmp_path/redis.sock, where the embedded one puts it
    listed = run_review("--data-dir", str(tmp_path), "--key-prefix", "reviewnone", "list")
    assert (listed.returncode, listed.stdout) == (
        0,
        "no result flagged for review the last 7 days\n",
    )
    missing = run_review("--data-dir", str(tmp_path / "nothing"), "list")
    assert missing.returncode == 2 and "pass --redis-url" in missing.stderr
    down = run_review("--redis-url", "redis://127.0.0.1:9/0", "list")
    assert down.returncode == 2 and down.stderr.startswith("review: cannot reach Redis at")
    assert "Traceback" not in down.stderr


async def test_list_disqualify_confirm(
    daily: RedisDailyStorage, redis_url: str, prefix: str
) -> None:
    for score, (player, name) in enumerate([("bot", "Bot"), ("fast", "Fast"), ("ann", "Ann")]):
        entry = ResultEntry("won", 60_000 + score, 100, 104, name, 1)
        assert await daily.record_result(DAY, player, "ranked", score, entry)
    for player in ("bot", "fast"):
        flagged = Review("under_review", player, "median 90 ms", game=f"G{player}-1-x")
        await daily.set_review(DAY, player, flagged)

    listed = review(redis_url, prefix, "list", "--days", "3")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.count("under_review") == 2 and "Gbot-1-x" in listed.stdout

    client = aioredis.Redis.from_url(redis_url)
    bus: Any = client.pubsub()  # redis-py's PubSub: aclose is untyped
    await bus.subscribe(Keys(prefix).bus(DAILY_CHANNEL))
    done = review(redis_url, prefix, "disqualify", DAY, "bot", "--reason", "a program")
    assert done.returncode == 0, done.stderr
    # The running servers are told as they understand it (a raw day would be dropped).
    told = None
    for _ in range(3):  # the subscription's confirmation comes first (None here)
        told = await bus.get_message(ignore_subscribe_messages=True, timeout=5.0)
        if told is not None:
            break
    assert told is not None and messages.decode(told["data"]) == messages.DailyChanged(day=DAY)
    await bus.aclose()
    await client.aclose()
    assert review(redis_url, prefix, "confirm", DAY, "fast").returncode == 0
    top = await daily.board_top(DAY, "ranked", 10)
    assert [row.player_id for row in top] == ["fast", "ann"]
    reviews = await daily.reviews(DAY)
    assert reviews["bot"].state == "disqualified" and reviews["bot"].reason == "a program"
    assert reviews["bot"].name == "Bot" and reviews["fast"].state == "confirmed"

    refused = review(redis_url, prefix, "confirm", DAY, "ann")
    assert refused.returncode == 1 and "not under review" in refused.stderr
    bad_day = review(redis_url, prefix, "confirm", "2031-3-14", "ann")  # not YYYY-MM-DD
    assert bad_day.returncode == 1 and bad_day.stderr.startswith("review:")
