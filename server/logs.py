"""Structured logs: one JSON object per line (time, level, logger, message, extra fields),
and :class:`RepeatedEvent`: a repeated condition logged once per episode, with a count."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def setup_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


class RepeatedEvent:
    """A condition that repeats while it lasts (an outage, a dead process's players, a
    crowd refused at the door), logged once per episode instead of once per occurrence:

    - the first occurrence logs ``message`` at ``level`` (WARNING by default) with the
      fields it was given;
    - later occurrences are only counted (``count``: how many things, e.g. players);
    - ``recovered()`` (the condition is over) logs ``over_message`` (default
      ``message + ": over"``) at INFO with ``occurrences`` (calls), ``count`` and
      ``duration_s``, if there was an episode.

    ``quiet_s``: an occurrence this long after the previous one starts a new episode
    (the previous one is summed up first), for conditions whose end is only seen as
    silence; ``tick(now)`` sums up an episode that has been quiet that long.

    >>> import logging, io
    >>> stream = io.StringIO()
    >>> logger = logging.getLogger("doctest.repeated")
    >>> logger.addHandler(logging.StreamHandler(stream)); logger.setLevel(logging.INFO)
    >>> lapsed = RepeatedEvent(logger, "presence lapsed", clock=lambda: 0.0)
    >>> for tick in range(30):
    ...     lapsed.occurred(90, rooms=3)
    >>> lapsed.recovered()
    >>> print(stream.getvalue().strip())
    presence lapsed
    presence lapsed: over
    >>> lapsed.occurrences, lapsed.count  # reset: the next occurrence logs again
    (0, 0)
    """

    def __init__(
        self,
        logger: logging.Logger,
        message: str,
        *,
        level: int = logging.WARNING,
        over_message: str | None = None,
        quiet_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.message = message
        self.level = level
        self.over_message = over_message if over_message is not None else message + ": over"
        self.quiet_s = quiet_s
        self.clock = clock
        self.occurrences = 0
        self.count = 0
        self.since = 0.0
        self.last = 0.0

    @property
    def active(self) -> bool:
        return self.occurrences > 0

    def occurred(
        self, count: int = 1, *, exc_info: BaseException | None = None, **fields: Any
    ) -> None:
        """``exc_info``: an exception whose traceback the first line of an episode shows."""
        now = self.clock()
        if self.active and self.quiet_s is not None and now - self.last >= self.quiet_s:
            self._sum_up(self.last)
        if not self.active:
            self.since = now
            self.logger.log(
                self.level, self.message, extra={**fields, "count": count}, exc_info=exc_info
            )
        self.occurrences += 1
        self.count += count
        self.last = now

    def recovered(self, **fields: Any) -> None:
        """The condition is over: one INFO line summing up the episode, if there was one."""
        if self.active:
            self._sum_up(self.clock(), **fields)

    def _sum_up(self, end: float, **fields: Any) -> None:
        self.logger.info(
            self.over_message,
            extra={
                **fields,
                "occurrences": self.occurrences,
                "count": self.count,
                "duration_s": round(end - self.since, 3),
            },
        )
        self.occurrences = 0
        self.count = 0

    def tick(self, now: float | None = None) -> None:
        """Sum up an episode that has been quiet for ``quiet_s`` (call it now and then)."""
        now = self.clock() if now is None else now
        if self.active and self.quiet_s is not None and now - self.last >= self.quiet_s:
            self._sum_up(self.last)
