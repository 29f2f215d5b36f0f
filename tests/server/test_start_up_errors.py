"""A configured Redis or PostgreSQL that cannot be used when the server starts: exit
code 2 and one log line naming the service, the reason and what to do (StartUpError),
not a worker's traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from urllib.parse import urlsplit, urlunsplit

from tests.archive.conftest import postgres_dsn
from tests.support import DEV_SECRET, REPO_ROOT, free_port

__all__ = ["postgres_dsn"]  # the fixture, from tests/archive/conftest.py


def start(*args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CRESCENT_SECRET": DEV_SECRET,
        "CRESCENT_EXIT_WITH_PARENT": str(os.getpid()),
    }
    for name in ("CRESCENT_REDIS_URL", "CRESCENT_DATABASE_URL"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "server", "--port", str(free_port()), "--workers", "1", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_database_that_does_not_exist_stops_the_start_in_words(
    postgres_dsn: str, redis_url: str
) -> None:
    missing = f"crescent_missing_{uuid.uuid4().hex[:8]}"
    url = urlunsplit(urlsplit(postgres_dsn)._replace(path=f"/{missing}"))
    done = start("--redis-url", redis_url, "--database-url", url)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert f'database \\"{missing}\\" does not exist' in out  # a JSON log line
    assert "create it or correct the URL" in out and "Traceback" not in out


def test_a_redis_that_does_not_answer_stops_the_start_in_words() -> None:
    done = start("--redis-url", "redis://127.0.0.1:9/0", "--archive", "off")
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Redis at 127.0.0.1:9 does not answer" in out and "Traceback" not in out
