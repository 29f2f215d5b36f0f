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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The checkout this module was installed from (editable): server processes start here.
REPO_ROOT = Path(__file__).resolve().parent.parent
# The token secret of the servers started here: random per test or benchmark run (a
# restarted server takes the same one), never one printed in the repository.
DEV_SECRET = secrets.token_urlsafe(32)


def redis_test_url() -> str:
    """The development Redis (CRESCENT_TEST_REDIS_URL, default 127.0.0.1:6379 db 0)."""
    return os.environ.get("CRESCENT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def random_prefix(label: str = "t") -> str:
    """A fresh key prefix, e.g. ``t-3f9a1c2b``: one per test keeps tests apart."""
    return f"{label}-{secrets.token_hex(4)}"


def delete_prefix(prefix: str, redis_url: str | None = None) -> int:
    """Delete every key starting with ``prefix:`` (SCAN + DEL). Returns how many."""
    import redis  # imported here so that importing this module stays cheap

    url = redis_url or redis_test_url()
    client: Any
    if url.startswith("redis+cluster://"):  # SCAN on every master, DEL split per slot
        nodes = [n.rsplit(":", 1) for n in url.split("://", 1)[1].split("/")[0].split(",")]
        client = redis.RedisCluster(
            startup_nodes=[redis.cluster.ClusterNode(h, int(p)) for h, p in nodes]  # type: ignore[no-untyped-call]
        )
    else:
        client = redis.Redis.from_url(url)
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


def race_command(
    *, racers: int, warmup: float, duration: float, root: Path = REPO_ROOT
) -> list[str]:
    """bench/load.py's race phase alone (no echo, no idle, no share), as a command line
    (``root``: the checkout whose bench/load.py runs); add ``--target``, ``--json``,
    ``--server-env`` and the like after it."""
    return [
        sys.executable,
        str(root / "bench" / "load.py"),
        "--phases",
        "race",
        "--no-echo",
        "--repeat",
        "1",
        "--share",
        "0",
        "--idle",
        "0",
        "--racers",
        str(racers),
        "--warmup",
        str(warmup),
        "--duration",
        str(duration),
    ]


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


def wait_for_workers(
    http_url: str, workers: int, timeout: float, proc: subprocess.Popen[bytes] | None = None
) -> set[int]:
    """Ask ``/healthz`` on new connections until ``workers`` different pids answered
    (``SO_REUSEPORT`` spreads connections by their source port: each try lands on any
    worker); returns the pids."""
    import json

    deadline = time.monotonic() + timeout
    pids: set[int] = set()
    while len(pids) < workers:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode} before it was healthy")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{workers} workers not healthy after {timeout}s: saw {pids}")
        try:
            with urllib.request.urlopen(f"{http_url}/healthz", timeout=2) as resp:
                pids.add(int(json.load(resp)["pid"]))
        except OSError:
            time.sleep(0.05)  # a worker still starting: try again
    return pids


def wait_for_log(server: ServerProcess, text: str, timeout: float) -> None:
    """Poll the server's log until ``text`` appears in it."""
    deadline = time.monotonic() + timeout
    while text not in server.log_text():
        if server.proc.poll() is not None or time.monotonic() > deadline:
            raise TimeoutError(f"{text!r} not in the server's log after {timeout}s")
        time.sleep(0.05)


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
    secret: str | None = DEV_SECRET,
    extra_args: list[str] | None = None,
    health_timeout: float = 20.0,
    workers: int = 1,
) -> ServerProcess:
    """Start a server process and wait until it is healthy (the caller must terminate it).
    ``workers`` > 1: the process is a supervisor with that many workers (docs/server.md,
    "Workers"); healthy then means every worker serves."""
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
        "--workers",
        str(workers),
        *(extra_args or []),
    ]
    env = dict(os.environ)
    env.update(extra_env or {})
    if secret is not None:
        env["CRESCENT_SECRET"] = secret
    env.setdefault("PYTHONUNBUFFERED", "1")
    # A test run or benchmark that is killed (kill -9, a timeout) takes its servers with
    # it: each shuts down gracefully once this process is gone (server/__main__.py).
    env["CRESCENT_EXIT_WITH_PARENT"] = str(os.getpid())
    # A fixed daily deal unless the caller names one: otherwise every server started
    # here would certify the coming days' deals with the solver at start-up (seconds of
    # CPU each, and a graceful shutdown waits for a running certification).
    env.setdefault("CRESCENT_DAILY_DEAL", "CR1-N-AAAAAAB")
    # No archive unless the caller names a database (CRESCENT_DATABASE_URL): otherwise
    # every server started here would start an embedded PostgreSQL in ./var/postgres,
    # and two at once would share (and stop each other's) data folder.
    if "CRESCENT_DATABASE_URL" not in env:
        env.setdefault("CRESCENT_ARCHIVE", "off")
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
        if workers > 1:  # one worker answered: wait until every one has
            wait_for_workers(server.http_url, workers, health_timeout, proc)
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
    extra_args, health_timeout, workers). It does not delete the prefix's keys: the fixture that
    chose the prefix does (``delete_prefix``), so a restarted server can find them.
    """
    server = launch_server_process(prefix, port, extra_env, **kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.terminate()
        with contextlib.suppress(OSError):
            server.log_path.unlink()


# --- a local Redis Cluster from redis-server binaries (tests, deploy/redis-cluster, bench)


def free_cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    for _ in range(100):
        port = free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair for a cluster node")


@dataclass
class ClusterNodeProcess:
    """One ``redis-server`` of a local cluster."""

    port: int
    directory: Path
    args: list[str]
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = open(self.directory / "redis.log", "ab")  # noqa: SIM115 - the child keeps it
        try:
            self.proc = subprocess.Popen(self.args, cwd=self.directory, stdout=log, stderr=log)
        finally:
            log.close()

    def kill(self) -> None:
        """SIGKILL: the node vanishes without a word."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class LocalCluster:
    """A Redis Cluster of ``redis-server`` processes on 127.0.0.1 (see
    :func:`start_local_cluster`)."""

    directory: Path
    nodes: list[ClusterNodeProcess]
    redis_cli: str = "redis-cli"

    @property
    def ports(self) -> list[int]:
        return [node.port for node in self.nodes]

    @property
    def url(self) -> str:
        """The server's ``--redis-url`` for this cluster (every node a startup node)."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in self.ports)

    def node(self, port: int) -> ClusterNodeProcess:
        return next(n for n in self.nodes if n.port == port)

    def cli(self, port: int, *args: str, timeout: float = 10.0) -> str:
        """``redis-cli -p PORT args…``: its output (raises if it fails)."""
        done = subprocess.run(
            [self.redis_cli, "-h", "127.0.0.1", "-p", str(port), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )
        return done.stdout

    def info(self, port: int, section: str) -> dict[str, str]:
        fields = {}
        for line in self.cli(port, "info", section).splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        return fields

    def roles(self) -> dict[int, str]:
        """Port -> ``master`` or ``slave`` (nodes that answer)."""
        out = {}
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is None:
                with contextlib.suppress(subprocess.SubprocessError):
                    out[node.port] = self.info(node.port, "replication")["role"]
        return out

    def owner_of(self, key: str) -> int:
        """The port of the master serving ``key``'s slot, asked of a live node."""
        live = [n.port for n in self.nodes if n.proc is not None and n.proc.poll() is None]
        slot = int(self.cli(live[0], "cluster", "keyslot", key).strip())
        for line in self.cli(live[0], "cluster", "nodes").splitlines():
            fields = line.split()
            if "master" not in fields[2] or "fail" in fields[2]:
                continue
            for part in fields[8:]:
                low, _, high = part.partition("-")
                if part[0] != "[" and int(low) <= slot <= int(high or low):
                    return int(fields[1].split(":")[1].split("@")[0])
        raise LookupError(f"no master serves slot {slot}")

    def replica_of(self, master_port: int) -> int:
        """The port of a replica of the master on ``master_port``."""
        master_id = self.cli(master_port, "cluster", "myid").strip()
        for line in self.cli(master_port, "cluster", "nodes").splitlines():
            fields = line.split()
            if fields[3] == master_id and "fail" not in fields[2]:
                return int(fields[1].split(":")[1].split("@")[0])
        raise LookupError(f"no replica of {master_port}")

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Until every live node says ``cluster_state:ok``, agrees on the slots and every
        replica's link to its master is up."""
        deadline = time.monotonic() + timeout
        problem = "not checked"
        while time.monotonic() < deadline:
            problem = self._problem()
            if not problem:
                return
            time.sleep(0.1)
        raise TimeoutError(f"cluster not ready after {timeout}s: {problem}")

    def _problem(self) -> str:
        live = [n.port for n in self.nodes if n.proc is not None and n.proc.poll() is None]
        try:
            for port in live:
                if "cluster_state:ok" not in self.cli(port, "cluster", "info"):
                    return f"{port}: cluster_state not ok"
                replication = self.info(port, "replication")
                if replication["role"] == "slave" and replication["master_link_status"] != "up":
                    return f"{port}: replica link down"
            views = {
                " ".join(
                    sorted(
                        line.split()[1].split("@")[0] + ":" + ",".join(line.split()[8:])
                        for line in self.cli(port, "cluster", "nodes").splitlines()
                        if "master" in line.split()[2] and "fail" not in line.split()[2]
                    )
                )
                for port in live
            }
        except (subprocess.SubprocessError, KeyError) as exc:
            return repr(exc)
        if len(views) != 1:
            return "the nodes disagree about the slots"
        return ""

    def restart(self, port: int) -> None:
        """Start a stopped or killed node again (same folder: it rejoins the cluster)."""
        node = self.node(port)
        node.kill()
        node.start()
        _wait_for_redis(self.redis_cli, port)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def _wait_for_redis(redis_cli: str, port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = subprocess.run(
            [redis_cli, "-h", "127.0.0.1", "-p", str(port), "ping"],
            capture_output=True,
            text=True,
            timeout=5,
        )
        if done.stdout.strip() == "PONG":
            return
        time.sleep(0.05)
    raise TimeoutError(f"redis-server on {port} did not answer")


def start_local_cluster(
    directory: Path,
    *,
    masters: int = 3,
    replicas: int = 1,
    node_timeout_ms: int = 1000,
    redis_server: str = "redis-server",
    redis_cli: str = "redis-cli",
    extra_config: Sequence[str] = (),
) -> LocalCluster:
    """Start ``masters * (1 + replicas)`` ``redis-server`` processes in cluster mode on
    free ports (no persistence: ``save ""``, ``appendonly no``; each node's
    ``nodes.conf`` in its own folder under ``directory``), join them with
    ``redis-cli --cluster create`` and wait until the cluster is ready. A failed start
    stops what it started. The caller stops it (:meth:`LocalCluster.stop`)."""
    nodes = []
    for _ in range(masters * (1 + replicas)):
        port = free_cluster_port()
        folder = directory / str(port)
        folder.mkdir(parents=True, exist_ok=True)
        args = [
            redis_server,
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(node_timeout_ms),
            # A replica takes over however long it lost its master (a test kills one).
            "--cluster-replica-validity-factor", "0",
            # Rooms on the other masters keep playing while one master fails over.
            "--cluster-require-full-coverage", "no",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(folder),
            *extra_config,
        ]  # fmt: skip
        nodes.append(ClusterNodeProcess(port, folder, args))
    cluster = LocalCluster(directory, nodes, redis_cli)
    try:
        for node in nodes:
            node.start()
        for node in nodes:
            _wait_for_redis(redis_cli, node.port)
        subprocess.run(
            [
                redis_cli,
                "--cluster",
                "create",
                *(f"127.0.0.1:{node.port}" for node in nodes),
                "--cluster-replicas",
                str(replicas),
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        cluster.wait_ok()
    except BaseException:
        cluster.stop()
        raise
    return cluster
