"""Prometheus metrics of one server (own registry, so several apps can share a process).

The per-message metrics (messages by type, acked actions, ack latency, batch sizes) are
plain integers and bucket lists updated without locks (the server is one asyncio
thread) and turned into Prometheus metrics only when ``/metrics`` is scraped: a
prometheus-client ``Counter.inc``/``Histogram.observe`` takes a lock and costs a few
microseconds, which adds up on the ack path.

Workers (``--workers N``, server/supervisor.py): with ``PROMETHEUS_MULTIPROC_DIR`` set
(the supervisor sets it for its workers) the metrics are prometheus-client's
multiprocess ones (each process writes its values to files in that folder; any worker's
``/metrics`` reads every worker's files and adds them up). The hot path stays plain
numbers: :meth:`Metrics.share` copies what changed into the shared files, once a
second (a worker's task) and before each scrape, so another worker's hot-path figures
are at most a second old. Gauges are summed over the live workers.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator, Sequence

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    ProcessCollector,
    generate_latest,
    values,
)
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


class FastHistogram:
    def __init__(self, name: str, doc: str, buckets: Sequence[float]) -> None:
        self.name, self.doc = name, doc
        self.bounds = list(buckets)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def family(self) -> HistogramMetricFamily:
        cumulative, buckets = 0, []
        for bound, count in zip([*map(str, self.bounds), "+Inf"], self.counts, strict=True):
            cumulative += count
            buckets.append((bound, cumulative))
        return HistogramMetricFamily(self.name, self.doc, buckets=buckets, sum_value=self.total)

    def shared(self) -> _SharedHistogram:
        return _SharedHistogram(self)


class _SharedHistogram:
    """A :class:`FastHistogram`'s multiprocess twin: ``sync`` adds what was observed
    since the last call to the values a prometheus-client ``Histogram`` of the same name
    and buckets would write (one per bucket, not cumulative, and the sum: the same
    ``prometheus_client.values.ValueClass`` entries, built the way ``Histogram`` builds
    them, since it has no "add n to a bucket")."""

    def __init__(self, source: FastHistogram) -> None:
        self.source = source
        name, doc = source.name, source.doc
        self.buckets = [
            values.ValueClass("histogram", name, name + "_bucket", ("le",), (le,), doc)
            for le in [*map(floatToGoString, source.bounds), "+Inf"]
        ]
        self.sum = values.ValueClass("histogram", name, name + "_sum", (), (), doc)
        self.counts = [0] * len(source.counts)
        self.total = 0.0

    def sync(self) -> None:
        src = self.source
        for i, count in enumerate(src.counts):
            if count != self.counts[i]:
                self.buckets[i].inc(count - self.counts[i])
                self.counts[i] = count
        if src.total != self.total:
            self.sum.inc(src.total - self.total)
            self.total = src.total


class _HotPath(Collector):
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        m = self.metrics
        messages = CounterMetricFamily(
            "crescent_messages", "Messages received, by type", labels=["type"]
        )
        for kind, count in sorted(m.message_counts.items()):
            messages.add_metric([kind], count)
        yield messages
        yield CounterMetricFamily(
            "crescent_actions_acked", "Actions stored and acknowledged", value=m.acked
        )
        yield CounterMetricFamily(
            "crescent_actions_fast_path",
            "Actions handled without a task (server.web.aiohttp_fast)",
            value=m.fast_path,
        )
        yield m.batch_size.family()
        yield m.ack_latency.family()
        yield m.event_loop_lag.family()


class _SharedHotPath:
    """The hot path's numbers in prometheus-client's multiprocess files (see the module
    docstring): ``sync`` adds what changed since the last call."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self.messages = Counter(
            "crescent_messages", "Messages received, by type", ["type"], registry=None
        )
        self.acked = Counter(
            "crescent_actions_acked", "Actions stored and acknowledged", registry=None
        )
        self.fast_path = Counter(
            "crescent_actions_fast_path",
            "Actions handled without a task (server.web.aiohttp_fast)",
            registry=None,
        )
        self.histograms = [
            metrics.batch_size.shared(),
            metrics.ack_latency.shared(),
            metrics.event_loop_lag.shared(),
        ]
        self.seen_messages: dict[str, int] = {}
        self.seen_acked = 0
        self.seen_fast_path = 0

    def sync(self) -> None:
        m = self.metrics
        for kind, count in m.message_counts.items():
            delta = count - self.seen_messages.get(kind, 0)
            if delta:
                self.messages.labels(kind).inc(delta)
                self.seen_messages[kind] = count
        if m.acked != self.seen_acked:
            self.acked.inc(m.acked - self.seen_acked)
            self.seen_acked = m.acked
        if m.fast_path != self.seen_fast_path:
            self.fast_path.inc(m.fast_path - self.seen_fast_path)
            self.seen_fast_path = m.fast_path
        for histogram in self.histograms:
            histogram.sync()


def multiprocess_dir() -> str | None:
    """prometheus-client's multiprocess folder, when this process is one of several."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class Metrics:
    """One server's metrics: the Prometheus counters and gauges of the slower events,
    the hot path's plain numbers (module docstring)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        # process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds...:
        # read from /proc at scrape time (the dashboard's CPU per ack).
        ProcessCollector(registry=self.registry)
        self._traffic(self.registry)
        self._state(self.registry)
        self._archive_rows(self.registry)
        self._hot_path()
        self.shared: _SharedHotPath | None = None
        if multiprocess_dir() is not None:
            self.shared = _SharedHotPath(self)
        else:
            self.registry.register(_HotPath(self))

    def _traffic(self, r: CollectorRegistry) -> None:
        """The sockets and what their requests met (registered in the order scraped)."""
        self.connections = Gauge(
            "crescent_connections",
            "Open WebSocket connections",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.errors = Counter(
            "crescent_errors_total", "Error replies, by code", ["code"], registry=r
        )
        self.actions_duplicate = Counter(
            "crescent_actions_duplicate_total", "Resent actions answered as duplicates", registry=r
        )
        self.actions_refused = Counter(
            "crescent_actions_refused_total", "Actions refused by the rules", ["code"], registry=r
        )
        self.append_conflicts = Counter(
            "crescent_append_conflicts_total",
            "Action appends that lost a race and were re-validated",
            registry=r,
        )
        # A compare-and-set that lost to another writer and was run again by the server
        # (the client sees only the outcome): record = room | tournament.
        self.cas_retries = Counter(
            "crescent_cas_retries_total",
            "Compare-and-set writes retried after losing a race, by record",
            ["record"],
            registry=r,
        )
        for record in ("room", "tournament"):  # exported (as 0) before the first retry
            self.cas_retries.labels(record=record)

    def _state(self, r: CollectorRegistry) -> None:
        """What the process holds and how its dependencies answer (gauges)."""
        self.rooms_local = Gauge(
            "crescent_rooms_local",
            "Rooms with sockets in this process (workers: summed over them)",
            registry=r,
            multiprocess_mode="livesum",
        )
        # Set by the web layer to read the storage's health at scrape time (1 up, 0 down).
        self.redis_up = Gauge(
            "crescent_redis_up",
            "1 while every Redis master answers this process's calls, 0 from a failed "
            "call to one until a call to it succeeds (or its replica replaced it)",
            registry=r,
        )
        self.redis_up.set(1)
        # Set by the storage's health tracker: a series per master that failed once.
        self.redis_master_up = Gauge(
            "crescent_redis_master_up",
            "Per Redis master (host:port) that stopped answering at least once since "
            "the start: 1 while it answers (or its replica replaced it), 0 while not",
            ["master"],
            registry=r,
        )
        self.event_loop_lag_last = Gauge(
            "crescent_event_loop_lag_last_seconds",
            "The event loop's lag at the latest probe (server/web/lag.py)",
            registry=r,
        )
        # The archive's outbox (docs/archive.md): shared by every process on one Redis,
        # so each reports the same; refreshed by the drainer about once a second.
        self.archive_pending = Gauge(
            "crescent_archive_outbox_pending",
            "Finished games waiting in the outbox for the archive",
            registry=r,
        )
        self.archive_oldest_s = Gauge(
            "crescent_archive_oldest_pending_seconds",
            "Age of the oldest game waiting in the outbox (0: none waiting)",
            registry=r,
        )

    def _archive_rows(self, r: CollectorRegistry) -> None:
        """The archive's rows (docs/archive.md, "Metrics"): one query every few minutes
        per process, the same figures in each: with workers, the latest reading."""
        self.archive_games = Gauge(
            "crescent_archive_games",
            "Games stored in the archive, by kind (sealed ones included)",
            ["kind"],
            registry=r,
            multiprocess_mode="livemostrecent",
        )
        self.archive_racers = Gauge(
            "crescent_archive_racers",
            "Racers' logs stored in the archive (one per racer of a game)",
            registry=r,
            multiprocess_mode="livemostrecent",
        )
        self.archive_tournaments = Gauge(
            "crescent_archive_tournaments",
            "Finished tournaments stored in the archive",
            registry=r,
            multiprocess_mode="livemostrecent",
        )
        self.archive_daily_days = Gauge(
            "crescent_archive_daily_days",
            "Finished daily days stored in the archive",
            registry=r,
            multiprocess_mode="livemostrecent",
        )

    def _hot_path(self) -> None:
        """Hot path: plain numbers, exported by _HotPath at scrape time."""
        self.message_counts: dict[str, int] = {}
        self.acked = 0
        self.fast_path = 0
        self.batch_size = FastHistogram(
            "crescent_write_batch_size",
            "Actions per Redis pipeline",
            (1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
        )
        self.ack_latency = FastHistogram(
            "crescent_ack_latency_seconds",
            "From receiving an action to sending its ack",
            (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
        )
        # How late the event loop runs a timer (server/web/lag.py): a blocked loop, a long
        # garbage collection or a saturated core delay every socket by this much.
        self.event_loop_lag = FastHistogram(
            "crescent_event_loop_lag_seconds",
            "How late the event loop ran a periodic timer",
            (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
        )

    def count_message(self, kind: str) -> None:
        counts = self.message_counts
        counts[kind] = counts.get(kind, 0) + 1

    def share(self) -> None:
        """Workers: copy the hot path's new counts into the multiprocess files."""
        if self.shared is not None:
            self.shared.sync()

    def render(self) -> bytes:
        """The Prometheus text: this process's, or with workers every worker's summed."""
        if self.shared is None:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess

        self.shared.sync()
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)
