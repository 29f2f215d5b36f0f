"""Prometheus metrics of one server (own registry, so several apps can share a process).

The per-message metrics (messages by type, acked actions, ack latency, batch sizes) are
plain integers and bucket lists updated without locks (the server is one asyncio
thread) and turned into Prometheus metrics only when ``/metrics`` is scraped: a
prometheus-client ``Counter.inc``/``Histogram.observe`` takes a lock and costs a few
microseconds, which adds up on the ack path.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector


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


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        # process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds...:
        # read from /proc at scrape time (the dashboard's CPU per ack).
        ProcessCollector(registry=r)
        self.connections = Gauge("crescent_connections", "Open WebSocket connections", registry=r)
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
        self.rooms_local = Gauge(
            "crescent_rooms_local", "Rooms with sockets in this process", registry=r
        )
        # Set by the web layer to read the storage's health at scrape time (1 up, 0 down).
        self.redis_up = Gauge(
            "crescent_redis_up",
            "1 while Redis answers this process's calls, 0 from a failed call until the "
            "next one succeeds",
            registry=r,
        )
        self.redis_up.set(1)
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
        # Hot path: plain numbers, exported by _HotPath at scrape time.
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
        r.register(_HotPath(self))

    def count_message(self, kind: str) -> None:
        counts = self.message_counts
        counts[kind] = counts.get(kind, 0) + 1

    def render(self) -> bytes:
        return generate_latest(self.registry)
