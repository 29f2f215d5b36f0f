"""Group commit: a process runs one committer per tournament; every transition asked
for meanwhile (200 players registering at once) is applied in order to one loaded copy
and stored in one compare-and-set, so requests do not race each other, only the
processes' committers do. A committer that loses re-runs its batch (the server's
retry, bounded, counted in ``crescent_cas_retries_total{record="tournament"}``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Final

from crescent_wire.errors import InternalError
from server.core.cas import compare_and_set
from server.core.ports import Clock, TournamentStorage
from server.core.tournaments.base import load, load_or_none, ttl_of
from server.core.tournaments.live import Live
from server.metrics import Metrics
from server.tournament import Change, RoundRow, Tournament

log = logging.getLogger("server.tournaments")

# A committer whose compare-and-set lost to another process's runs its batch again, at
# most this many times in all (the retry policy: server/core/cas.py).
MAX_COMMIT_ATTEMPTS: Final = 16

Transition = Callable[[Tournament, int], Change]
RoundRows = tuple[int, tuple[RoundRow, ...]]


@dataclass
class Queued:
    """A transition waiting for this process's committer of its tournament."""

    change: Transition
    done: asyncio.Future[Tournament]


@dataclass
class Applied:
    """A batch applied in order to one copy: the outcome, each entry's error, and the
    entries left for the next batch."""

    new: Tournament
    urgent: bool
    rows: RoundRows | None
    errors: dict[int, BaseException]
    taken: list[Queued]
    rest: list[Queued]


class Committer:
    def __init__(
        self,
        storage: TournamentStorage,
        live: Live,
        clock: Clock,
        metrics: Metrics,
        *,
        spawn: Callable[[Coroutine[Any, Any, Any]], None],
    ) -> None:
        self.storage = storage
        self.live = live
        self.clock = clock
        self.metrics = metrics
        self.spawn = spawn
        # Told of every tournament this process finished (the archive, hub.py).
        self.on_finished: Callable[[Tournament], None] = lambda t: None
        # Tournaments with a committer running here -> the transitions waiting for it.
        self.queued: dict[str, list[Queued]] = {}

    async def load_or_none(self, code: str) -> Tournament | None:
        return await load_or_none(self.storage, code)

    async def load(self, code: str) -> Tournament:
        return await load(self.storage, code)

    async def transition(self, code: str, change: Transition) -> Tournament:
        """Run a pure transition against the stored tournament: queued for this
        process's committer of the tournament, which stores it with every transition
        queued meanwhile in one compare-and-set. Returns the tournament as committed
        (this change and those batched with it), or raises the change's own error."""
        done: asyncio.Future[Tournament] = asyncio.get_running_loop().create_future()
        queue = self.queued.get(code)
        if queue is None:
            queue = self.queued[code] = []
            self.spawn(self._run_committer(code, queue))
        queue.append(Queued(change, done))
        return await done

    async def _run_committer(self, code: str, queue: list[Queued]) -> None:
        """Commit the queued transitions in batches until none is left."""
        try:
            while queue:
                batch = queue[:]
                del queue[:]
                queue[:0] = await self._commit_batch(code, batch)
        finally:
            if self.queued.get(code) is queue:
                del self.queued[code]
            for entry in queue:  # only if cancelled (the server stops)
                if not entry.done.done():
                    entry.done.set_exception(InternalError("The server is stopping; retry"))

    async def _commit_batch(self, code: str, batch: list[Queued]) -> list[Queued]:
        """Apply ``batch`` in order to the stored tournament and store the outcome with
        one compare-and-set; resolve each entry (the committed tournament, or the error
        its change raised). Returns the entries left for the next batch: those after a
        second change that records a round's rows (one round's rows per write)."""

        async def attempt(n: int) -> list[Queued]:
            waiting = [entry for entry in batch if not entry.done.done()]  # cancelled
            if not waiting:
                return []
            cached = self.live.cached(code) if n == 0 else None
            t = cached if cached is not None else await self.load(code)
            applied = self._apply(t, waiting)
            new = applied.new
            if new is not t:
                await self.storage.cas_tournament(
                    code, t.ver, new, ttl_s=ttl_of(new), round_rows=applied.rows
                )
            self._resolve(applied)
            if new is t:
                self.live.remember(t)
            else:
                self.live.committed(new, urgent=applied.urgent)
                if new.finished and not t.finished:
                    self.on_finished(new)
            return applied.rest

        try:
            return await compare_and_set(
                attempt,
                record="tournament",
                key=code,
                attempts=MAX_COMMIT_ATTEMPTS,
                metrics=self.metrics,
                log=log,
            )
        except BaseException as exc:
            failure = exc if isinstance(exc, Exception) else InternalError()
            for entry in batch:
                if not entry.done.done():
                    entry.done.set_exception(failure)
            if not isinstance(exc, Exception):
                raise
            return []

    def _apply(self, t: Tournament, batch: list[Queued]) -> Applied:
        """Apply the batch's changes in order to ``t``, up to a second change that
        records a round's rows (that one and those after it are left for the next)."""
        now = self.clock()
        new, urgent = t, False
        rows: RoundRows | None = None
        errors: dict[int, BaseException] = {}
        taken, rest = batch, []
        for index, entry in enumerate(batch):
            try:
                outcome = entry.change(new, now)
            except Exception as exc:  # this request's error: the others go on
                errors[index] = exc
                continue
            if not outcome.changed:
                continue
            after = outcome.tournament
            if outcome.rows or after.finished_rounds != new.finished_rounds:
                if rows is not None:
                    taken, rest = batch[:index], batch[index:]
                    break
                rows = (after.finished_rounds[-1].round, outcome.rows)
            new, urgent = after, urgent or outcome.urgent
        return Applied(new, urgent, rows, errors, taken, rest)

    @staticmethod
    def _resolve(applied: Applied) -> None:
        """Each entry taken gets the committed tournament or its own change's error."""
        for index, entry in enumerate(applied.taken):
            if entry.done.done():
                continue
            if index in applied.errors:
                entry.done.set_exception(applied.errors[index])
            else:
                entry.done.set_result(applied.new)
