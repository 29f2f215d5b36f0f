"""Prometheus metrics of one server (own registry, so several apps can share a process)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.connections = Gauge("crescent_connections", "Open WebSocket connections",
                                 registry=r)
        self.messages = Counter("crescent_messages_total", "Messages received, by type",
                                ["type"], registry=r)
        self.errors = Counter("crescent_errors_total", "Error replies, by code", ["code"],
                              registry=r)
        self.actions_acked = Counter("crescent_actions_acked_total",
                                     "Actions stored and acknowledged", registry=r)
        self.actions_duplicate = Counter("crescent_actions_duplicate_total",
                                         "Resent actions answered as duplicates", registry=r)
        self.actions_refused = Counter("crescent_actions_refused_total",
                                       "Actions refused by the rules", ["code"], registry=r)
        self.append_conflicts = Counter("crescent_append_conflicts_total",
                                        "Action appends that lost a race and were re-validated",
                                        registry=r)
        self.batch_size = Histogram("crescent_write_batch_size",
                                    "Actions per Redis pipeline",
                                    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
                                    registry=r)
        self.ack_latency = Histogram("crescent_ack_latency_seconds",
                                     "From receiving an action to sending its ack",
                                     buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05,
                                              0.1, 0.25, 1.0),
                                     registry=r)
        self.rooms_local = Gauge("crescent_rooms_local", "Rooms with sockets in this process",
                                 registry=r)

        self._message_children: dict[str, Any] = {}

    def count_message(self, kind: str) -> None:
        """``messages{type=kind}.inc()`` with the labelled child cached (hot path)."""
        child = self._message_children.get(kind)
        if child is None:
            child = self._message_children[kind] = self.messages.labels(kind)
        child.inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
