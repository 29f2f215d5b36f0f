"""Server settings: command line options with environment defaults (see docs/server.md)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from crescent_wire import protocol as p
from server.auth import TOKEN_MAX_AGE_S, check_secret

REPO_ROOT = Path(__file__).resolve().parent.parent


FAST_PATHS = ("aiohttp", "redis")  # the library-internals tricks, each switchable
STORAGES = ("redis", "memory")  # Settings.storage: server/compose.py builds the ports


def parse_fast_paths(text: str) -> frozenset[str]:
    """``on`` (every fast path), ``off`` (none) or a comma list of :data:`FAST_PATHS`.

    >>> sorted(parse_fast_paths("on")), sorted(parse_fast_paths("redis")), parse_fast_paths("off")
    (['aiohttp', 'redis'], ['redis'], frozenset())
    """
    text = text.strip().lower()
    if text in ("on", "all", "1", "true"):
        return frozenset(FAST_PATHS)
    if text in ("off", "none", "0", "false", ""):
        return frozenset()
    names = frozenset(part.strip() for part in text.split(","))
    unknown = names - set(FAST_PATHS)
    if unknown:
        raise ValueError(
            f"unknown fast path(s) {sorted(unknown)}: use on, off or a comma "
            f"list of {', '.join(FAST_PATHS)}"
        )
    return names


def fast_paths_from_env() -> frozenset[str]:
    return parse_fast_paths(os.environ.get("CRESCENT_FAST_PATHS", "on"))


# Where the archive's outbox is drained (Settings.archive_writer; docs/archive.md).
ArchiveWriter = Literal["inline", "process"]


@dataclass
class Settings:
    host: str = "127.0.0.1"
    port: int = 8080
    redis_url: str | None = None  # None: start an embedded Redis in data_dir
    # "redis" (redis_url, shared by every process) or "memory" (this process only,
    # nothing kept after it ends: demos and the web layer's fast tests).
    storage: str = "redis"
    data_dir: str = "var/redis"
    key_prefix: str = "cr"
    secret: str | None = None  # None: shared random secret stored in Redis (SET NX)
    # Rotation: the secret before ``secret`` still verifies tokens until this (epoch s).
    previous_secret: str | None = None
    previous_secret_until: float | None = None
    countdown_ms: int = 3000
    static_dir: str = str(REPO_ROOT / "client" / "web" / "dist")
    log_level: str = "INFO"
    hello_timeout_s: float = 10.0
    heartbeat_s: float = 30.0  # a socket silent this long is pinged…
    pong_timeout_s: float = 15.0  # …and closed if still silent this much later
    rate_per_s: int = p.RATE_PER_S
    rate_burst: int = p.RATE_BURST
    progress_interval_s: float = 0.2  # progress frames: at most 5 per second per room
    flood_close_after: int = 100  # rate_limited errors in a row before closing with 4008
    shutdown_timeout_s: float = 5.0
    loop: str = "uvloop"  # the event loop: "uvloop" (libuv; the default) or "asyncio"
    # Library-internals tricks in use (docs/server.md, "Fast paths"); the default reads
    # CRESCENT_FAST_PATHS, so tests and server processes follow the environment.
    fast_paths: frozenset[str] = field(default_factory=fast_paths_from_env)
    # --- trust under faults and abuse: rooms, races, storage (issue #10, helper trustb)
    # A racer offline this long during a race is resigned by the server.
    disconnect_resign_s: float = 120.0
    # Rooms a player created and is still in, at most (too_many_rooms).
    max_open_rooms: int = 10
    # Every Redis call fails (internal_error) if Redis has not answered within this.
    redis_deadline_s: float = 1.0
    # An action is acknowledged only once this many replicas have it (Redis WAIT after
    # each pipeline of appends; docs/server.md "Redis Cluster"); 0: once the master has.
    redis_wait_replicas: int = 0
    redis_wait_timeout_ms: int = 500  # WAIT's timeout: fewer replicas by then: not acked
    # The players of a server process that died are marked offline within this (each
    # process refreshes its presence every quarter of it; server/core/presence.py).
    presence_timeout_s: float = 30.0
    # --- connection-level limits (issue #10; docs/server.md "Limits and backpressure").
    # Bytes a client may leave unread (frames queued + the socket's write buffer) before
    # it is closed with 4009.
    send_buffer_bytes: int = 1024 * 1024
    # Open WebSockets per client address (0: no limit), refused with 4029.
    max_connections_per_address: int = 1000
    # New guest players (hello without a token) per address per minute (0: no limit).
    new_players_per_address_per_min: int = 120
    # Behind a trusted proxy (deploy/nginx.conf) the client address is the last entry of
    # X-Forwarded-For; otherwise the header is ignored (a client could forge it).
    trust_forwarded_for: bool = False
    # A full garbage collection after this many closed connections, or this many seconds
    # after the first one (closed connections are cyclic garbage: server/web/collector.py).
    gc_after_closed: int = 500
    gc_interval_s: float = 30.0
    # The daily challenge (docs/daily.md).
    daily_variant: str = "N"
    daily_time_limit_s: int = 3600  # the longest ranked attempt; the deal is revealed after
    daily_deal: str | None = None  # a fixed deal for every day (tests, demos); None: solver
    daily_solver_seconds: float = 20.0  # budget per deal drawn by the solver
    daily_push_interval_s: float = 1.0  # live board updates: at most one per watcher per this
    daily_check_interval_s: float = 30.0  # prepare the coming days, finish stale attempts
    # --- worker processes (issue #24; docs/server.md "Workers"; server/supervisor.py)
    # Server processes sharing the port; 1: this process serves (no supervisor).
    workers: int = 1
    worker_backoff_s: float = 0.5  # a dead worker's first restart waits this…
    worker_backoff_max_s: float = 30.0  # …doubling with each quick death, up to this
    worker_stable_s: float = 60.0  # a worker that lived this long restarts without delay
    worker_ready_timeout_s: float = 60.0  # a new worker not serving by then failed
    # --- the archive (docs/archive.md): PostgreSQL, fed through an outbox in Redis.
    # None: python3 -m server starts an embedded PostgreSQL with its data in postgres_dir.
    database_url: str | None = None
    postgres_dir: str = "var/postgres"
    # False (--archive off): no game is archived (benchmarks comparing with and without
    # the archive; a deployment without PostgreSQL). --storage memory archives in memory.
    archive: bool = True
    # Where the outbox is drained into the archive (docs/archive.md, "The writer
    # process"): "inline" in every serving process, or "process": one process of its own,
    # started by the supervisor, so that the serving processes spend nothing on the
    # archive's writes. --archive-writer auto (the default): "process" with more than one
    # worker, else "inline".
    archive_writer: ArchiveWriter = "inline"
    # TEST ONLY: the outbox's drainer waits this long after a game is put before
    # writing it (the kill -9 test needs a window between a game's end and its archive
    # write). 0 in production.
    archive_drain_delay_s: float = 0.0
    # TEST ONLY: a finished race's record is put in the outbox this long after its end
    # is stored (the kill -9 test of a crash between the end and the put). 0 in
    # production.
    archive_put_delay_s: float = 0.0
    # --- accounts (docs/accounts.md): WebAuthn's relying party. Behind a TLS proxy both
    # are the public name (docs/server.md, "Behind a TLS proxy"). origins empty: the
    # development default, http://localhost:<port> (see relying_party_origins).
    rp_id: str = "localhost"
    origins: tuple[str, ...] = ()

    def relying_party_origins(self) -> tuple[str, ...]:
        """The configured origins, or in development ``http://localhost:<port>``
        (``127.0.0.1`` cannot be: a passkey's relying party id is never an IP address).

        >>> Settings(port=9000).relying_party_origins()
        ('http://localhost:9000',)
        """
        return self.origins or (f"http://localhost:{self.port}",)


@dataclass(frozen=True)
class Option:
    """One command line option, declared once: ``--name-with-dashes``, read from the
    environment variable ``CRESCENT_NAME_IN_CAPITALS`` when not given, else the
    ``Settings`` field's default (``default``: the text for a field without one).
    ``kind`` parses the text; ``flag``: an on/off switch (``1``, ``on``, ``true``,
    ``yes`` in the environment)."""

    name: str
    kind: Callable[[str], Any] = str
    help: str | None = None
    flag: bool = False
    choices: tuple[str, ...] | None = None
    default: str | None = None

    @property
    def env_var(self) -> str:
        return "CRESCENT_" + self.name.upper()

    def add_to(self, parser: argparse.ArgumentParser, env: Mapping[str, str]) -> None:
        option = "--" + self.name.replace("_", "-")
        text = env.get(self.env_var)
        if self.flag:
            parser.add_argument(
                option, action="store_true", default=_flag(text or ""), help=self.help
            )
            return
        default = self.default if self.default is not None else _field_default(self.name)
        if text is not None and (text or default is not None):  # blank: unset, if it may be
            default = text  # argparse parses a text default with ``type``
        parser.add_argument(
            option, type=self.kind, default=default, choices=self.choices, help=self.help
        )


def _field_default(name: str) -> Any:
    default = Settings.__dataclass_fields__[name].default
    return None if default is MISSING else default


OPTIONS: Final = (
    Option("host"),
    Option("port", int),
    Option("redis_url", help="Redis to use; unset: an embedded Redis with data in --data-dir"),
    Option(
        "storage",
        help="redis (default) or memory: this process only, nothing kept after it ends",
    ),
    Option("data_dir"),
    Option("key_prefix"),
    Option("secret", help="token secret, at least 32 bytes; unset: a random one kept in Redis"),
    Option(
        "previous_secret",
        help="rotation: the former secret, still accepted for tokens until "
        "--previous-secret-until (new tokens use --secret)",
    ),
    Option(
        "previous_secret_until",
        help="the end of the previous secret's grace period: an ISO 8601 UTC date "
        "or time, at most 30 days ahead",
    ),
    Option("countdown_ms", int),
    Option("static_dir"),
    Option("log_level"),
    Option(
        "loop",
        choices=("uvloop", "asyncio"),
        help="event loop: uvloop (default; about a third less CPU per "
        "message, docs/performance.md) or the standard asyncio loop",
    ),
    Option("rate_per_s", int),
    Option("rate_burst", int),
    Option(
        "fast_paths",
        default="on",
        help="library-internals fast paths: on (default), off, or a comma "
        "list of " + ", ".join(FAST_PATHS),
    ),
    # --- trust under faults and abuse: rooms, races, storage (issue #10, helper trustb)
    Option(
        "disconnect_resign_s", float, help="a racer offline this long during a race is resigned"
    ),
    Option("max_open_rooms", int, help="rooms a player created and is still in, at most"),
    Option(
        "redis_deadline_s",
        float,
        help="a Redis call unanswered this long fails with internal_error",
    ),
    Option(
        "redis_cluster",
        flag=True,
        help="the Redis URL names a node of a Redis Cluster (same as a "
        "redis+cluster://host:port[,host:port...] URL)",
    ),
    Option(
        "redis_wait_replicas",
        int,
        help="acknowledge an action only once this many replicas have it (WAIT); 0: off",
    ),
    Option(
        "redis_wait_timeout_ms",
        int,
        help="WAIT's timeout: an action not replicated by then gets internal_error",
    ),
    # --- connection-level limits (issue #10)
    Option("send_buffer_bytes", int),
    Option("max_connections_per_address", int),
    Option("new_players_per_address_per_min", int),
    Option("gc_after_closed", int),
    Option("gc_interval_s", float),
    Option("presence_timeout_s", float),
    Option(
        "trust_forwarded_for",
        flag=True,
        help="take the client address from X-Forwarded-For (behind a trusted proxy only)",
    ),
    Option(
        "daily_deal",
        help="one fixed deal code for every daily challenge (demos, tests); "
        "default: a deal the solver proves winnable",
    ),
    # worker processes (issue #24; docs/server.md "Workers"; server/supervisor.py)
    Option(
        "workers",
        int,
        default="0",
        help="server processes sharing the port (default 0: one per core, or 1 with "
        "--storage memory; 1: this process serves, no supervisor; docs/server.md, Workers)",
    ),
    Option("worker_backoff_s", float),
    Option("worker_backoff_max_s", float),
    Option("worker_stable_s", float),
    Option("worker_ready_timeout_s", float),
    # --- the archive (docs/archive.md)
    Option(
        "database_url",
        help="the archive's PostgreSQL (postgresql://user@host:5432/db); unset: an "
        "embedded PostgreSQL with data in --postgres-dir",
    ),
    Option("postgres_dir"),
    Option(
        "archive",
        choices=("on", "off"),
        default="on",
        help="archive every finished game (default on); off: nothing archived, no database",
    ),
    Option(
        "archive_writer",
        choices=("auto", "inline", "process"),
        default="auto",
        help="where finished games are written to the archive: process (one writer "
        "process beside the workers), inline (in every server process); default auto: "
        "process with more than one worker, else inline",
    ),
    # test only: documented as such in docs/server.md
    Option("archive_drain_delay_s", float, help=argparse.SUPPRESS),
    Option("archive_put_delay_s", float, help=argparse.SUPPRESS),
    # --- accounts (docs/accounts.md)
    Option(
        "rp_id",
        help="the passkeys' relying party id: the public domain (not an IP address)",
    ),
    Option(
        "origins",
        default="",
        help="comma list of the origins the pages are served from (https://host[:port]); "
        "unset: http://localhost:<port>",
    ),
)
WORKER_TIMINGS: Final = (
    "worker_backoff_s",
    "worker_backoff_max_s",
    "worker_stable_s",
    "worker_ready_timeout_s",
)
# Options whose value becomes its Settings field only after parse_args checks it.
CHECKED: Final = frozenset(
    {
        "redis_url",
        "redis_cluster",
        "fast_paths",
        "previous_secret_until",
        "log_level",
        "workers",
        "archive",
        "archive_writer",
        "rp_id",
        "origins",
    }
)


def parse_args(argv: list[str] | None = None) -> Settings:
    parser = argparse.ArgumentParser(
        prog="crescent-server", description="Crescent Race server (see docs/server.md)"
    )
    for option in OPTIONS:
        option.add_to(parser, os.environ)
    args = parser.parse_args(argv)
    try:
        fast_paths = parse_fast_paths(args.fast_paths)
    except ValueError as err:
        parser.error(str(err))
    if args.countdown_ms < 0:
        parser.error("--countdown-ms must be >= 0")
    if args.storage not in STORAGES:
        parser.error(f"--storage must be one of {', '.join(STORAGES)}, not {args.storage!r}")
    redis_url = _redis_url(parser, args)
    try:
        previous_until = check_secrets(
            args.secret, args.previous_secret, args.previous_secret_until
        )
    except ValueError as err:
        parser.error(str(err))
    workers = args.workers or (1 if args.storage == "memory" else (os.cpu_count() or 1))
    if args.workers < 0:
        parser.error("--workers must be >= 0 (0: one per core)")
    if workers > 1 and args.storage == "memory":
        parser.error("--storage memory is one process's: it needs --workers 1")
    for name in WORKER_TIMINGS:
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be > 0")
    if args.worker_backoff_max_s < args.worker_backoff_s:
        parser.error("--worker-backoff-max-s must be >= --worker-backoff-s")
    try:
        rp_id, origins = parse_relying_party(args.rp_id, args.origins)
    except ValueError as err:
        parser.error(str(err))
    # auto: the writer process with more than one worker; archive off: nothing to write
    wants_process = args.archive_writer == "process" or (
        args.archive_writer == "auto" and workers > 1
    )
    archive_writer: ArchiveWriter = (
        "process" if wants_process and args.archive == "on" else "inline"
    )
    if archive_writer == "process" and args.storage == "memory":
        parser.error("--archive-writer process needs --storage redis (memory is one process's)")
    if args.archive_drain_delay_s < 0:
        parser.error("CRESCENT_ARCHIVE_DRAIN_DELAY_S must be >= 0")
    if args.archive_put_delay_s < 0:
        parser.error("CRESCENT_ARCHIVE_PUT_DELAY_S must be >= 0")
    if args.presence_timeout_s <= 0:
        parser.error("--presence-timeout-s must be > 0")
    return Settings(
        **{o.name: getattr(args, o.name) for o in OPTIONS if o.name not in CHECKED},
        redis_url=redis_url,
        fast_paths=fast_paths,
        previous_secret_until=previous_until,
        log_level=args.log_level.upper(),
        workers=workers,
        archive=args.archive == "on",
        archive_writer=archive_writer,
        rp_id=rp_id,
        origins=origins,
    )


def _redis_url(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """``--redis-url`` (a cluster's URL with ``--redis-cluster``), its settings checked."""
    redis_url: str | None = args.redis_url
    if args.redis_cluster:
        if redis_url is None:
            parser.error("--redis-cluster needs --redis-url (a node of the cluster)")
        try:
            redis_url = cluster_url(redis_url)
        except ValueError as err:
            parser.error(str(err))
    if args.redis_wait_replicas < 0 or args.redis_wait_timeout_ms <= 0:
        parser.error("--redis-wait-replicas must be >= 0 and --redis-wait-timeout-ms > 0")
    if args.redis_wait_timeout_ms / 1000 >= args.redis_deadline_s:
        parser.error("--redis-wait-timeout-ms must be shorter than --redis-deadline-s")
    return redis_url


def check_secrets(
    secret: str | None, previous: str | None, previous_until: str | None, now: float | None = None
) -> float | None:
    """Check the token secrets (``server.auth.check_secret``) and the rotation settings;
    return the grace period's end (epoch seconds) or None. Raises ``ValueError`` with a
    message naming the fix."""
    if secret is not None:
        check_secret(secret)
    if previous is None:
        if previous_until is not None:
            raise ValueError("--previous-secret-until needs --previous-secret")
        return None
    if secret is None:
        raise ValueError(
            "--previous-secret (CRESCENT_PREVIOUS_SECRET) needs --secret: rotation goes "
            "from one configured secret to another"
        )
    check_secret(previous, "--previous-secret (CRESCENT_PREVIOUS_SECRET)")
    if previous == secret:
        raise ValueError("--previous-secret is the same as --secret: give the former one")
    if previous_until is None:
        raise ValueError(
            "--previous-secret needs --previous-secret-until (CRESCENT_PREVIOUS_SECRET_UNTIL): "
            "the end of its grace period, e.g. 2026-01-31T00:00Z, at most 30 days ahead"
        )
    try:
        until = datetime.fromisoformat(previous_until.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"--previous-secret-until {previous_until!r} is not an ISO 8601 date or time "
            "(e.g. 2026-01-31 or 2026-01-31T12:00Z, UTC unless it says otherwise)"
        ) from None
    if until.tzinfo is None:
        until = until.replace(tzinfo=UTC)
    end = until.timestamp()
    now = time.time() if now is None else now
    if end > now + TOKEN_MAX_AGE_S:
        raise ValueError(
            "--previous-secret-until is more than 30 days ahead: a token lives 30 days, "
            "so no grace period needs longer"
        )
    return end


def _flag(text: str) -> bool:
    return text.strip().lower() in ("1", "on", "true", "yes")


def cluster_url(url: str) -> str:
    """The Redis Cluster URL of a node's URL (``--redis-cluster``).

    >>> cluster_url("redis://:pw@10.0.0.1:7000/0"), cluster_url("redis+cluster://a:1,b:2")
    ('redis+cluster://:pw@10.0.0.1:7000/0', 'redis+cluster://a:1,b:2')
    """
    scheme, sep, rest = url.partition("://")
    if scheme.lower() in ("redis+cluster", "rediss+cluster"):
        return url
    if not sep or scheme.lower() not in ("redis", "rediss"):
        raise ValueError(f"a Redis Cluster needs a redis:// or rediss:// URL, not {url!r}")
    return f"{scheme}+cluster://{rest}"


def parse_relying_party(rp_id: str, origins: str) -> tuple[str, tuple[str, ...]]:
    """Check ``--rp-id`` and ``--origins`` (docs/server.md, "Behind a TLS proxy").

    >>> parse_relying_party("crescent.example", "https://crescent.example, https://a.crescent.example")
    ('crescent.example', ('https://crescent.example', 'https://a.crescent.example'))
    >>> parse_relying_party("127.0.0.1", "")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: --rp-id (CRESCENT_RP_ID) cannot be an IP address: use a domain name ...
    """
    rp_id = rp_id.strip().lower()
    if not rp_id or "/" in rp_id or ":" in rp_id:
        raise ValueError(f"--rp-id (CRESCENT_RP_ID) is a bare domain name, not {rp_id!r}")
    try:
        ipaddress.ip_address(rp_id)
    except ValueError:
        pass  # a name: good
    else:
        raise ValueError(
            "--rp-id (CRESCENT_RP_ID) cannot be an IP address: use a domain name "
            "(localhost in development)"
        )
    listed = tuple(o.strip().rstrip("/") for o in origins.split(",") if o.strip())
    for origin in listed:
        scheme, sep, host = origin.partition("://")
        hostname = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
        if scheme not in ("http", "https") or not sep or "/" in host:
            raise ValueError(f"--origins: {origin!r} is not scheme://host[:port]")
        if hostname != rp_id and not hostname.endswith("." + rp_id):
            raise ValueError(
                f"--origins: {origin!r} is not on the relying party id {rp_id!r} or a "
                "subdomain of it (browsers refuse such passkeys)"
            )
    return rp_id, listed
