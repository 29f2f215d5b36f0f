"""A server program run as our child and started again whenever it dies: what the embedded
Redis (:mod:`server.embedded_redis`) and the embedded PostgreSQL
(:mod:`server.embedded_postgres`) share.

The child runs in its own session (a Ctrl-C of the server reaches us, not it). A
supervisor thread waits on it (``waitpid``: no polling) and, unless we are stopping,
spawns it again on the same data, logging one line when it goes down and one when it is
back (clients reconnect on their own). A subclass says how to spawn it and when it is
ready; this class keeps the process, the thread and the restart count.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar


class SupervisedChildError(RuntimeError):
    """The child could not be started (or is not ready in time)."""


class SupervisedChild:
    """One supervised child process on its data folder. Subclasses set the class
    attributes and implement :attr:`url`, :meth:`_launch`, :meth:`stop`, :meth:`_spawn`
    and :meth:`_ready`."""

    NAME: ClassVar[str]  # in log lines and the thread's name: "redis", "postgres"
    PROGRAM: ClassVar[str]  # the executable, in error messages: "redis-server"
    PID_NAME: ClassVar[str]  # the file in the data folder the child writes its pid to
    LOG_NAME: ClassVar[str]  # the file in the data folder the child writes its log to
    READY_TIMEOUT_S: ClassVar[float]
    ERROR: ClassVar[type[SupervisedChildError]] = SupervisedChildError

    def __init__(self, log: logging.Logger, data_dir: str | os.PathLike[str]) -> None:
        self._log = log
        self.data_dir = Path(data_dir).resolve()
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._supervisor: threading.Thread | None = None
        self.restarts = 0

    @property
    def url(self) -> str:
        raise NotImplementedError

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def pid_file(self) -> Path:
        return self.data_dir / self.PID_NAME

    @property
    def log_file(self) -> Path:
        return self.data_dir / self.LOG_NAME

    def start(self) -> None:
        """Start the child on its data folder (made if new), then its supervisor."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._launch()
        self._supervise_in_background()
        self._log.info(
            f"embedded {self.NAME} started",
            extra={"data_dir": str(self.data_dir), "url": self.url, "pid": self.pid},
        )

    def stop(self) -> None:
        raise NotImplementedError

    @contextlib.contextmanager
    def running(self) -> Iterator[str]:
        """``with child.running() as url``: started, then stopped on exit."""
        self.start()
        try:
            yield self.url
        finally:
            self.stop()

    # --- for subclasses

    def _launch(self) -> None:
        """Everything :meth:`start` does before supervising: the folder made ready and
        the child spawned."""
        raise NotImplementedError

    def _spawn(self) -> None:
        """Start the child (``self._proc``) and wait until it is ready."""
        raise NotImplementedError

    def _ready(self, proc: subprocess.Popen[bytes]) -> bool:
        """Whether the child answers yet (asked every 20 ms while it starts)."""
        raise NotImplementedError

    def _respawn(self) -> None:
        """Start the child again after it died (a subclass may tidy up first)."""
        self._spawn()

    def _supervise_in_background(self) -> None:
        self._supervisor = threading.Thread(
            target=self._supervise, name=f"{self.NAME}-supervisor", daemon=True
        )
        self._supervisor.start()

    def _end(self, signal_number: int, timeout_s: float) -> None:
        """Stop supervising, send the child ``signal_number`` and wait for it (killed
        after ``timeout_s``)."""
        self._stopping.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal_number)
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if self._supervisor is not None:
            self._supervisor.join(5)

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.READY_TIMEOUT_S
        while True:
            proc = self._proc
            assert proc is not None
            if proc.poll() is not None:
                raise self.ERROR(
                    f"{self.PROGRAM} exited with code {proc.returncode}; see {self.log_file}"
                )
            if self._ready(proc):
                return
            if time.monotonic() > deadline:
                raise self.ERROR(f"{self.PROGRAM} not ready after {self.READY_TIMEOUT_S} s")
            time.sleep(0.02)  # the program announces readiness only in a file or a reply

    def _supervise(self) -> None:
        while not self._stopping.is_set():
            proc = self._proc
            assert proc is not None
            code = proc.wait()
            if self._stopping.is_set():
                return
            self._log.error(
                f"embedded {self.NAME} is down; restarting it",
                extra={"exit_code": code, "pid": proc.pid},
            )
            while not self._stopping.is_set():
                try:
                    self._respawn()
                except (SupervisedChildError, OSError) as exc:
                    self._log.error(
                        f"embedded {self.NAME} did not restart; trying again",
                        extra={"error": str(exc)},
                    )
                    self._stopping.wait(1.0)
                    continue
                self.restarts += 1
                self._log.warning(f"embedded {self.NAME} is back", extra={"pid": self.pid})
                break


def command_line(pid: int) -> bytes | None:
    """Process ``pid``'s ``/proc`` command line, or None if it does not run."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None


def stop_stranger(pid: int, signal_number: int, timeout_s: float) -> bool:
    """Send ``signal_number`` to a process that is not our child and wait up to
    ``timeout_s`` for it to go; whether it is gone."""
    os.kill(pid, signal_number)
    deadline = time.monotonic() + timeout_s
    while pid_running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)  # not our child: no waitpid
    return not pid_running(pid)


def pid_running(pid: int) -> bool:
    """Whether process ``pid`` still runs. A killed process that is not our child stays
    a zombie until its new parent reaps it, and in a container that parent may never
    do so: a zombie counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"
