"""What an acknowledgement survives, given a Redis's persistence settings.

The server acknowledges an action once Redis has answered the write. Whether that
answer survives depends on Redis's settings (docs/server.md, "Durability"):

==============================  ==================  ===============================
``appendonly`` / ``appendfsync``  redis-server crash  power cut of the Redis machine
==============================  ==================  ===============================
yes / always                    survives            survives (fsync before the reply)
yes / everysec                  survives            up to ~1 s of acks lost (2 s if
                                                    the disk stalls)
yes / no                        survives            up to ~30 s lost (the OS flushes)
no, with ``save`` rules         lost since the      lost since the last snapshot
                                last snapshot
no, no ``save`` rules           all lost            all lost
==============================  ==================  ===============================

:func:`assess` is pure; :func:`read_persistence` asks a live Redis (CONFIG GET).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

import redis.asyncio as aioredis
from redis.exceptions import RedisError

SETTINGS = ("appendonly", "appendfsync", "save")


@dataclass(frozen=True, slots=True)
class Durability:
    """What an acknowledged action survives under some Redis settings."""

    survives_redis_crash: bool  # redis-server killed or crashed, the machine stays up
    survives_power_cut: bool  # the machine running Redis loses power or its kernel
    summary: str  # one sentence: the settings and what they keep

    @property
    def keeps_every_ack(self) -> bool:
        return self.survives_redis_crash and self.survives_power_cut

    def warning(self) -> str | None:
        """A clear warning when an acknowledgement could be lost, else None."""
        if self.keeps_every_ack:
            return None
        if not self.survives_redis_crash:
            return (
                "acknowledged actions are LOST if Redis crashes or restarts: "
                f"{self.summary}. Set appendonly yes and appendfsync always "
                "(docs/server.md, Durability)"
            )
        return (
            "acknowledged actions can be lost on a power cut of the Redis machine: "
            f"{self.summary}. Set appendfsync always to keep every one "
            "(docs/server.md, Durability)"
        )


def assess(config: dict[str, str]) -> Durability:
    """Judge ``CONFIG GET appendonly appendfsync save`` (a name -> value mapping).

    >>> assess({"appendonly": "yes", "appendfsync": "always", "save": ""}).keeps_every_ack
    True
    >>> assess({"appendonly": "no", "appendfsync": "everysec", "save": "3600 1"}
    ...        ).survives_redis_crash
    False
    """
    aof = config.get("appendonly", "no").strip().lower() == "yes"
    fsync = config.get("appendfsync", "everysec").strip().lower()
    save = config.get("save", "").strip()
    if aof:
        if fsync == "always":
            return Durability(
                True,
                True,
                "appendonly yes, appendfsync always: every write is on disk before Redis answers",
            )
        if fsync == "everysec":
            return Durability(
                True,
                False,
                "appendonly yes, appendfsync everysec: up to "
                "about 1 s of acknowledged actions (2 s if the disk stalls) "
                "is lost on a power cut",
            )
        return Durability(
            True,
            False,
            f"appendonly yes, appendfsync {fsync}: the operating "
            "system writes the file when it likes (about 30 s), lost on a "
            "power cut",
        )
    if save:
        return Durability(
            False,
            False,
            f"appendonly no, RDB snapshots only (save {save!r}): "
            "everything since the last snapshot is lost",
        )
    return Durability(
        False,
        False,
        "appendonly no and no save rules: no persistence, everything is lost when Redis restarts",
    )


async def read_persistence(url: str) -> dict[str, str]:
    """``CONFIG GET`` of :data:`SETTINGS` from a live Redis (raises ``RedisError``,
    e.g. when a managed Redis disables CONFIG)."""
    client = aioredis.Redis.from_url(
        url, socket_timeout=5, socket_connect_timeout=5, decode_responses=True
    )
    try:
        config: dict[str, str] = {}
        for name in SETTINGS:  # one name per call: Redis < 7 takes only one
            reply = await client.config_get(name)
            config.update({str(key): str(value) for key, value in reply.items()})
        return config
    finally:
        await client.aclose()


async def master_urls(url: str) -> list[str]:
    """``[url]``, or for a Redis Cluster URL the URL of each of its masters."""
    from server.storage import redis_cluster

    if not redis_cluster.is_cluster_url(url):
        return [url]
    _, auth = redis_cluster.parse_cluster_url(url)
    client = redis_cluster.cluster_client(url, socket_timeout=5, socket_connect_timeout=5)
    try:
        await client.initialize()
        masters = [(node.host, node.port) for node in client.get_primaries()]
    finally:
        await client.aclose()
    scheme = "rediss" if auth.get("ssl") else "redis"
    user = quote(auth.get("username", ""), safe="")
    password = quote(auth.get("password", ""), safe="")
    login = f"{user}:{password}@" if user or password else ""
    return [f"{scheme}://{login}{host}:{port}/0" for host, port in sorted(masters)]


async def check(url: str) -> tuple[Durability | None, str]:
    """Read and judge a Redis's settings: ``(durability, text to log)``; ``None`` and an
    explanation when they could not be read. For a Redis Cluster every master is read
    and the one that keeps least is reported."""
    try:
        judged = [assess(await read_persistence(each)) for each in await master_urls(url)]
        durability = min(judged, key=lambda d: (d.survives_redis_crash, d.survives_power_cut))
    except RedisError as exc:
        return None, (
            f"could not check Redis's persistence settings ({exc}): whether an "
            "acknowledged action survives a Redis crash is unknown "
            "(docs/server.md, Durability)"
        )
    return durability, durability.warning() or f"Redis durability: {durability.summary}"


__all__ = ["SETTINGS", "Durability", "assess", "check", "read_persistence"]
