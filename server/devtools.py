"""Tools for development runs: real server processes and a private key prefix in Redis.

Used by the tests (through tests/support.py) and the benchmarks in bench/; nothing here
runs in production and nothing fakes anything. ``start_server_process`` runs
``python3 -m server`` as a subprocess on a free port against a real Redis and waits
until ``/healthz`` answers 200:

    with start_server_process(prefix) as server:
        ...  # server.ws_url == "ws://127.0.0.1:PORT/ws", server.http_url, server.port

Keys: every key the server writes starts with ``<prefix>:``; ``delete_prefix`` removes
them (SCAN + DEL, never FLUSHDB: the Redis may be shared).
"""

from __future__ import annotations

import contextlib
import os
import resource
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

# The checkout this module was installed from (editable): server processes start here.
REPO_ROOT = Path(__file__).resolve().parent.parent


def redis_test_url() -> str:
    """The development Redis (CRESCENT_TEST_REDIS_URL, default 127.0.0.1:6379 db 0)."""
    return os.environ.get("CRESCENT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def random_prefix(label: str = "t") -> str:
    """A fresh key prefix, e.g. ``t-3f9a1c2b``: one per test keeps tests apart."""
    return f"{label}-{secrets.token_hex(4)}"


def delete_prefix(prefix: str, redis_url: str | None = None) -> int:
    """Delete every key starting with ``prefix:`` (SCAN + DEL). Returns how many."""
    import redis  # imported here so that importing this module stays cheap

    client = redis.Redis.from_url(redis_url or redis_test_url())
    try:
        deleted = 0
        batch: list[bytes] = []
        for key in client.scan_iter(match=f"{_glob_escape(prefix)}:*", count=1000):
            batch.append(key)
            if len(batch) >= 500:
                deleted += client.delete(*batch)
                batch.clear()
        if batch:
            deleted += client.delete(*batch)
        return deleted
    finally:
        client.close()


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\{}" else c for c in text)


def raise_nofile_limit() -> int:
    """Raise the soft open-files limit to the hard limit; return it.

    Load runs hold thousands of sockets; child processes inherit the raised limit.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def free_port() -> int:
    """A TCP port that was free a moment ago (bind to port 0, read it, release)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_health(
    http_url: str, timeout: float = 20.0, proc: subprocess.Popen[bytes] | None = None
) -> None:
    """Poll ``<http_url>/healthz`` until it answers 200; raise with the reason otherwise."""
    deadline = time.monotonic() + timeout
    last_error = "no answer"
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode} before it was healthy")
        try:
            with urllib.request.urlopen(f"{http_url}/healthz", timeout=2) as resp:
                if resp.status == 200:
                    return
                last_error = f"HTTP {resp.status}"
        except urllib.error.HTTPError as exc:
            last_error = f"HTTP {exc.code}"
        except OSError as exc:
            last_error = str(exc)
        time.sleep(0.05)
    raise TimeoutError(f"{http_url}/healthz not healthy after {timeout}s: {last_error}")


@dataclass
class ServerProcess:
    """A running ``python3 -m server`` subprocess."""

    prefix: str
    port: int
    redis_url: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"

    @property
    def http_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.port}/ws"

    def log_text(self) -> str:
        """Everything the server printed so far (stdout and stderr, JSON log lines)."""
        return self.log_path.read_text(errors="replace")

    def terminate(self, timeout: float = 15.0) -> int:
        """SIGTERM (graceful shutdown) and wait; SIGKILL if it does not exit in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return int(self.proc.returncode)

    def kill(self) -> None:
        """SIGKILL: a crash, no goodbye to anyone."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


def launch_server_process(
    prefix: str,
    port: int | None = None,
    extra_env: Mapping[str, str] | None = None,
    *,
    redis_url: str | None = None,
    countdown_ms: int = 300,
    secret: str | None = "test-secret",
    extra_args: list[str] | None = None,
    health_timeout: float = 20.0,
) -> ServerProcess:
    """Start a server process and wait until it is healthy (the caller must terminate it)."""
    port = port or free_port()
    redis_url = redis_url or redis_test_url()
    args = [
        sys.executable,
        "-m",
        "server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--redis-url",
        redis_url,
        "--key-prefix",
        prefix,
        "--countdown-ms",
        str(countdown_ms),
        *(extra_args or []),
    ]
    env = dict(os.environ)
    env.update(extra_env or {})
    if secret is not None:
        env["CRESCENT_SECRET"] = secret
    env.setdefault("PYTHONUNBUFFERED", "1")
    # A fixed daily deal unless the caller names one: otherwise every server started
    # here would certify the coming days' deals with the solver at start-up (seconds of
    # CPU each, and a graceful shutdown waits for a running certification).
    env.setdefault("CRESCENT_DAILY_DEAL", "CR1-N-AAAAAAB")
    log_fd, log_name = tempfile.mkstemp(prefix=f"crescent-server-{port}-", suffix=".log")
    proc = subprocess.Popen(args, cwd=REPO_ROOT, env=env, stdout=log_fd, stderr=subprocess.STDOUT)
    os.close(log_fd)
    server = ServerProcess(
        prefix=prefix,
        port=port,
        redis_url=redis_url,
        proc=proc,
        log_path=Path(log_name),
        args=args,
        env=env,
    )
    try:
        wait_for_health(server.http_url, timeout=health_timeout, proc=proc)
    except BaseException:
        server.kill()
        raise RuntimeError(f"server did not start; its log:\n{server.log_text()}") from None
    return server


@contextlib.contextmanager
def start_server_process(
    prefix: str,
    port: int | None = None,
    extra_env: Mapping[str, str] | None = None,
    **kwargs: object,
) -> Iterator[ServerProcess]:
    """Context manager: a healthy server subprocess; terminated (SIGTERM) on exit.

    Keyword arguments go to ``launch_server_process`` (redis_url, countdown_ms, secret,
    extra_args, health_timeout). It does not delete the prefix's keys: the fixture that
    chose the prefix does (``delete_prefix``), so a restarted server can find them.
    """
    server = launch_server_process(prefix, port, extra_env, **kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.terminate()
        with contextlib.suppress(OSError):
            server.log_path.unlink()
