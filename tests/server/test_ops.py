"""Operations (docs/operations.md): the Prometheus rules and config, the Grafana dashboard,
and the metrics they read.

promtool (Debian's ``prometheus`` package; scripts/test installs it) checks the rules
and the config, runs the rules' unit tests (deploy/prometheus/alerts_test.yml: series
that fire each alert) and parses every PromQL expression of the dashboard. Every metric
the rules, their unit tests and the dashboard name must be one a real server exports
(scraped from an app started in-process), with the histograms' ``le`` bounds it uses.
The event-loop lag probe and ``crescent_redis_up`` are tested against a blocked loop and
a Redis that really stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client.parser import text_string_to_metric_families

from server.compose import build_parts
from server.config import Settings
from server.metrics import Metrics
from server.web import create_app
from server.web.app import LAG_PROBE, SETTINGS
from server.web.lag import LAG_PROBE_INTERVAL_S, EventLoopLagProbe
from tests.support import DEV_SECRET, REPO_ROOT, delete_prefix, random_prefix, require_redis

DEPLOY = REPO_ROOT / "deploy"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
ALERT_TESTS = DEPLOY / "prometheus" / "alerts_test.yml"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
DASHBOARD = DEPLOY / "grafana" / "crescent.json"

# The archive's lag (docs/archive.md): the alerts and the dashboard must watch it.
ARCHIVE_LAG = {
    "crescent_archive_outbox_pending",
    "crescent_archive_oldest_pending_seconds",
}
# Series Prometheus makes itself for every target.
PROMETHEUS_OWN = {"up"}

# PromQL words that look like metric names but are not.
PROMQL_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
    "offset", "bool", "inf", "nan",
}  # fmt: skip


# ---------------------------------------------------------------------- helpers


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail(
            "promtool not found: install Debian's prometheus package "
            "(apt-get install --no-install-recommends prometheus; scripts/test does)"
        )
    return path


def run_promtool(*args: str, cwd: Path | None = None) -> str:
    result = subprocess.run(
        [promtool(), *args], capture_output=True, text=True, timeout=60, cwd=cwd, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return output


def rule_expressions(text: str) -> list[str]:
    """The ``expr:`` of every rule of a Prometheus rules file, single-line or folded."""
    lines = text.splitlines()
    exprs = []
    for i, line in enumerate(lines):
        match = re.match(r"^(\s*)expr:\s*(.*)$", line)
        if not match:
            continue
        indent, rest = len(match.group(1)), match.group(2).strip()
        if rest not in (">-", ">", "|", "|-"):
            exprs.append(rest)
            continue
        block = []
        for following in lines[i + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            block.append(following.strip())
        exprs.append(" ".join(part for part in block if part))
    return exprs


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (not functions, labels, keywords)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values, strings
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\boffset\s+\w+", " ", text)  # offset 5m
    names = set()
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", text):
        name, call = match.group(1), match.group(2)
        if call or name.lower() in PROMQL_KEYWORDS:
            continue
        names.add(name)
    return names


def bucket_bounds_used(text: str) -> set[tuple[str, str]]:
    """(histogram bucket series, ``le``) pairs a text selects."""
    return {
        (m.group(1), m.group(2)) for m in re.finditer(r'(\w+_bucket)\{[^}]*\ble="([^"]+)"', text)
    }


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def dashboard_expressions() -> list[tuple[str, str]]:
    """(panel title, PromQL) of every query of every panel."""
    return [
        (panel["title"], target["expr"])
        for panel in dashboard()["panels"]
        for target in panel.get("targets", [])
    ]


def concrete(expr: str) -> str:
    """A dashboard expression with Grafana's variables replaced by what they stand for."""
    return (
        expr.replace("$__rate_interval", "1m")
        .replace("$job", "crescent")
        .replace("$instance", ".*")
    )


# ---------------------------------------------------------------------- the exported names


class Exported:
    def __init__(self, text: str) -> None:
        self.names: set[str] = set(PROMETHEUS_OWN)
        self.bounds: set[tuple[str, str]] = set()
        self.families: set[str] = set()  # histograms' names, as the docs write them
        suffixes = {
            "counter": ("_total", "_created"),
            "gauge": ("",),
            "histogram": ("_bucket", "_sum", "_count", "_created"),
            "summary": ("", "_sum", "_count", "_created"),
            "untyped": ("",),
        }
        for family in text_string_to_metric_families(text):
            self.families.add(family.name)
            self.names.update(family.name + suffix for suffix in suffixes[family.type])
            for sample in family.samples:
                self.names.add(sample.name)
                if sample.name.endswith("_bucket"):
                    self.bounds.add((sample.name, sample.labels["le"]))

    def unknown(self, names: set[str]) -> set[str]:
        return names - self.names


@pytest.fixture(scope="module")
def exported() -> Exported:
    """What /metrics of a real app (real Redis) exports. A labelled counter nobody has
    counted yet has no sample, but its family (name and type) is in the text."""
    redis_url = require_redis()
    prefix = random_prefix("ops")

    async def scrape() -> str:
        settings = Settings(redis_url=redis_url, key_prefix=prefix, secret=DEV_SECRET)
        async with TestClient(TestServer(create_app(settings, build_parts))) as client:
            response = await client.get("/metrics")
            assert response.status == 200
            return await response.text()

    try:
        return Exported(asyncio.run(scrape()))
    finally:
        delete_prefix(prefix, redis_url)


def test_the_metrics_the_docs_name_are_exported(exported: Exported) -> None:
    for doc in ("operations.md", "server.md"):
        text = (REPO_ROOT / "docs" / doc).read_text()
        named = set(re.findall(r"`((?:crescent|process)_[a-z0-9_]+)", text))
        named -= {"crescent_wire", "crescent_client"}  # the packages
        assert len(named) >= 10, doc
        assert not named - exported.names - exported.families, doc
    for name in (
        "crescent_ack_latency_seconds_bucket",
        "crescent_redis_up",
        "crescent_event_loop_lag_seconds_bucket",
        "crescent_event_loop_lag_last_seconds",
        "process_cpu_seconds_total",
    ):
        assert name in exported.names, name


# ---------------------------------------------------------------------- Prometheus


def test_alert_rules_pass_promtool_check() -> None:
    output = run_promtool("check", "rules", str(ALERTS))
    assert "SUCCESS" in output


def test_prometheus_config_passes_promtool_check() -> None:
    output = run_promtool("check", "config", str(PROMETHEUS_CONFIG))
    assert "SUCCESS: 1 rule files found" in output


def alert_names() -> list[str]:
    return re.findall(r"^\s*- alert:\s*(\w+)\s*$", ALERTS.read_text(), re.M)


def test_alert_unit_tests_pass_and_fire_every_alert() -> None:
    run_promtool("test", "rules", ALERT_TESTS.name, cwd=ALERT_TESTS.parent)
    # Each alert has a case that expects it to fire (exp_alerts with an entry).
    fired = set(
        re.findall(
            r"alertname:\s*(\w+)\s*\n\s*exp_alerts:\s*\n\s*- exp_labels", ALERT_TESTS.read_text()
        )
    )
    names = alert_names()
    assert len(names) >= 12 and len(set(names)) == len(names)
    assert set(names) == fired, set(names) ^ fired


def test_alert_unit_tests_catch_a_changed_threshold(tmp_path: Path) -> None:
    """The unit tests bite: with the ack-latency threshold doubled, they fail."""
    rules = ALERTS.read_text()
    assert rules.count(") > 0.025") == 1
    (tmp_path / "alerts.yml").write_text(rules.replace(") > 0.025", ") > 0.05"))
    shutil.copy(ALERT_TESTS, tmp_path / "alerts_test.yml")
    result = subprocess.run(
        [promtool(), "test", "rules", "alerts_test.yml"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode != 0
    assert "CrescentAckLatencyHigh" in result.stdout + result.stderr


def test_alerts_use_only_exported_metrics(exported: Exported) -> None:
    exprs = rule_expressions(ALERTS.read_text())
    assert len(exprs) == len(alert_names())
    used = set()
    for expr in exprs:
        names = metric_names(expr)
        assert names, expr
        used |= names
    assert not exported.unknown(used)
    assert used >= ARCHIVE_LAG  # the archive's lag is watched
    assert not bucket_bounds_used(ALERTS.read_text()) - exported.bounds


def test_alert_unit_test_series_are_what_the_server_exports(exported: Exported) -> None:
    text = ALERT_TESTS.read_text()
    series = set(re.findall(r"series:\s*'(\w+)\{", text))
    assert series and not exported.unknown(series)
    assert not bucket_bounds_used(text) - exported.bounds


# ---------------------------------------------------------------------- Grafana


def test_dashboard_queries_parse_and_name_only_exported_metrics(
    exported: Exported, tmp_path: Path
) -> None:
    board = dashboard()
    assert board["uid"] == "crescent-race" and board["title"] == "Crescent Race"
    variables = {v["name"] for v in board["templating"]["list"]}
    assert variables == {"datasource", "job", "instance"}
    exprs = dashboard_expressions()
    for panel in board["panels"]:
        assert panel["type"] == "row" or panel.get("targets"), panel["title"]
    used = set()
    for title, expr in exprs:
        names = metric_names(concrete(expr))
        assert names, (title, expr)
        used |= names
    assert not exported.unknown(used)
    assert not bucket_bounds_used(DASHBOARD.read_text()) - exported.bounds
    # What the issue asks the dashboard to show.
    for name in (
        "crescent_ack_latency_seconds_bucket",
        "crescent_actions_acked_total",
        "crescent_connections",
        "crescent_errors_total",
        "crescent_redis_up",
        "crescent_event_loop_lag_seconds_bucket",
        *ARCHIVE_LAG,
    ):
        assert name in used, name
    # promtool parses each query: as recording rules (JSON is YAML).
    rules = [
        {"record": f"dashboard:query_{i}", "expr": concrete(expr)}
        for i, (_title, expr) in enumerate(exprs)
    ]
    path = tmp_path / "dashboard_queries.yml"
    path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))
    assert f"SUCCESS: {len(rules)} rules found" in run_promtool("check", "rules", str(path))


def test_the_name_extractor_sees_a_misspelt_metric() -> None:
    assert metric_names(
        'sum by (code) (rate(crescnt_errors_total{code="x", le="1"}[5m] offset 1h)) > 2'
    ) == {"crescnt_errors_total"}
    assert metric_names("histogram_quantile(0.99, sum by (le) (rate(a_bucket[1m]))) / b") == {
        "a_bucket",
        "b",
    }


# ---------------------------------------------------------------------- the lag probe


async def test_a_blocked_loop_shows_as_lag() -> None:
    metrics = Metrics()
    probe = EventLoopLagProbe(metrics, interval_s=0.05)
    context = probe.context(web.Application())
    await anext(context)
    try:
        assert probe.running
        quiet = await probe.next_sample()
        time.sleep(0.5)  # blocks the event loop, as a long pause would
        blocked = await probe.next_sample()
        assert blocked >= 0.45
        assert quiet < blocked
        assert next(iter(metrics.event_loop_lag_last.collect())).samples[0].value == blocked
        counts = metrics.event_loop_lag.counts
        above_quarter_second = metrics.event_loop_lag.bounds.index(0.25) + 1
        assert sum(counts[above_quarter_second:]) >= 1
    finally:
        with contextlib.suppress(StopAsyncIteration):
            await anext(context)
    assert not probe.running


async def test_the_app_runs_the_probe_and_exports_its_lag(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., Any]
) -> None:
    app = make_app()
    client = await aiohttp_client(app)
    probe = app[LAG_PROBE]
    assert probe.running and probe.interval_s == LAG_PROBE_INTERVAL_S == 0.5
    await probe.next_sample()
    time.sleep(0.8)  # longer than the interval: the next timer is late by 0.3 s or more
    assert await probe.next_sample() >= 0.3
    families = {
        f.name: f
        for f in text_string_to_metric_families(await (await client.get("/metrics")).text())
    }
    lag = {
        (s.name, s.labels.get("le")): s.value
        for s in families["crescent_event_loop_lag_seconds"].samples
    }
    total = lag[("crescent_event_loop_lag_seconds_count", None)]
    assert total >= 2
    assert lag[("crescent_event_loop_lag_seconds_bucket", "0.25")] < total
    assert lag[("crescent_event_loop_lag_seconds_sum", None)] >= 0.3
    await client.close()
    assert not probe.running


# ---------------------------------------------------------------------- crescent_redis_up


@pytest.fixture
async def app_on_private_redis(
    private_redis: Callable[[], subprocess.Popen[bytes]],
    tmp_path: Path,
    aiohttp_client: Callable[..., Any],
) -> AsyncIterator[tuple[Any, subprocess.Popen[bytes], Callable[[], subprocess.Popen[bytes]]]]:
    proc = private_redis()
    settings = Settings(
        redis_url=f"unix://{tmp_path / 'redis.sock'}",
        key_prefix="ops",
        secret=DEV_SECRET,
        redis_deadline_s=0.5,
    )
    yield await aiohttp_client(create_app(settings, build_parts)), proc, private_redis


async def redis_up(client: Any) -> float:
    text = await (await client.get("/metrics")).text()
    (value,) = re.findall(r"^crescent_redis_up (\S+)$", text, re.M)
    return float(value)


async def test_redis_up_follows_a_redis_that_stops_and_comes_back(
    app_on_private_redis: tuple[Any, subprocess.Popen[bytes], Callable[[], Any]],
) -> None:
    client, proc, start_redis = app_on_private_redis
    socket = Path(client.app[SETTINGS].redis_url.removeprefix("unix://"))
    assert (await client.get("/healthz")).status == 200
    assert await redis_up(client) == 1.0
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    socket.unlink(missing_ok=True)  # a killed redis-server leaves its socket file
    assert (await client.get("/healthz")).status == 503  # the failed ping marks it down
    assert await redis_up(client) == 0.0
    start_redis()
    # The pool's connections died with the old server: a call may fail before one
    # reconnects (the docs promise reconnection, not a first call that succeeds).
    deadline = time.monotonic() + 10
    while (await client.get("/healthz")).status != 200:
        assert time.monotonic() < deadline, "the server did not see Redis come back"
        await asyncio.sleep(0.05)
    assert await redis_up(client) == 1.0
