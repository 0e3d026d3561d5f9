"""The metrics frontdesk exports at /metrics, kept by prometheus_client in one registry per app
and written in the Prometheus text format (0.0.4).

Callers count with `inc(amount, **labels)`, `observe(value, **labels)` and `set(value, **labels)`;
a label left out counts as ''.

When `frontdesk serve` runs several workers it sets PROMETHEUS_MULTIPROC_DIR before they start:
prometheus_client then keeps every value in per-process files there, and a scrape of any worker
sums them all (prometheus_client's multiprocess mode).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

import prometheus_client
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# No `<name>_created` series beside every counter and histogram: /metrics shows what it always
# showed, and summing a family's samples (as dashboards and tests do) stays a sum of counts.
# prometheus_client only offers this switch for the whole process.
prometheus_client.disable_created_metrics()


class _Series:
    def __init__(self, metric, label_names: tuple[str, ...]) -> None:
        self._metric = metric
        self._label_names = label_names

    def _child(self, labels: dict[str, str]):
        if not self._label_names:
            return self._metric
        return self._metric.labels(*(str(labels.get(name, "")) for name in self._label_names))


class Counter(_Series):
    def __init__(self, registry: CollectorRegistry, name: str, help_text: str, labels: tuple[str, ...] = ()) -> None:
        super().__init__(prometheus_client.Counter(name, help_text, labels, registry=registry), labels)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        self._child(labels).inc(amount)


class Gauge(_Series):
    def __init__(self, registry: CollectorRegistry, name: str, help_text: str, labels: tuple[str, ...] = (), *,
                 multiprocess_mode: Literal["livesum", "liveall", "max", "mostrecent"] = "livesum") -> None:
        """`multiprocess_mode`: how the workers' values combine (default: summed over live workers)."""
        super().__init__(prometheus_client.Gauge(name, help_text, labels, registry=registry,
                                                 multiprocess_mode=multiprocess_mode), labels)

    def set(self, value: float, **labels: str) -> None:
        self._child(labels).set(value)


class Histogram(_Series):
    def __init__(self, registry: CollectorRegistry, name: str, help_text: str, labels: tuple[str, ...] = (),
                 buckets: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        super().__init__(prometheus_client.Histogram(name, help_text, labels, registry=registry, buckets=buckets),
                         labels)

    def observe(self, value: float, **labels: str) -> None:
        self._child(labels).observe(value)


class Metrics:
    """Every metric frontdesk exports; one instance (and one registry) per app, so several apps in
    one process (tests, the CLI beside a server) never share or collide."""

    def __init__(self) -> None:
        self.multiprocess_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None
        self.registry = registry = CollectorRegistry()
        self.requests = Counter(registry, "frontdesk_http_requests_total", "HTTP requests by route and status.",
                                ("route", "status"))
        self.request_seconds = Histogram(registry, "frontdesk_http_request_seconds", "HTTP request latency.",
                                         ("route",))
        self.ttft_seconds = Histogram(registry, "frontdesk_answer_ttft_seconds",
                                      "Server-side time to first answer token.", ("source",))
        self.answer_seconds = Histogram(registry, "frontdesk_answer_seconds", "Server-side time to the done event.",
                                        ("source",))
        self.tokens = Counter(registry, "frontdesk_tokens_streamed_total", "Answer token events streamed.")
        self.answers = Counter(registry, "frontdesk_answers_total",
                               "Answers by source (retrieval, curated, cache, not_found).", ("source",))
        self.cache = Counter(registry, "frontdesk_cache_requests_total", "Answer cache lookups by result.",
                             ("result",))
        self.errors = Counter(registry, "frontdesk_errors_total", "Errors returned to clients by stable code.",
                              ("code",))
        self.provider_fallbacks = Counter(registry, "frontdesk_provider_fallbacks_total",
                                          "LLM failures answered by the extractive fallback.")
        self.grounding_trips = Counter(registry, "frontdesk_grounding_trips_total",
                                       "Generated answers the grounding guard stopped, by reason (markup, echo, "
                                       "language, figure, name, empty; not_on_site: the model said the sources "
                                       "do not answer) and where (first sentence: the extractive answer instead; "
                                       "later: cut at the last grounded sentence).", ("reason", "at"))
        self.pages_crawled = Counter(registry, "frontdesk_pages_crawled_total", "Crawled pages by outcome.",
                                     ("outcome",))
        self.chunks_embedded = Counter(registry, "frontdesk_chunks_embedded_total", "Chunks embedded by ingestion.")
        self.queue_depth = Gauge(registry, "frontdesk_crawl_queue_depth", "Crawl jobs running or waiting.")
        self.disconnects = Counter(registry, "frontdesk_client_disconnects_total",
                                   "Answer streams the client closed early.")

    content_type = CONTENT_TYPE_PLAIN_0_0_4

    def render(self) -> bytes:
        """What a scrape gets: every metric of this app in the Prometheus text format (of every
        worker, summed, in multiprocess mode)."""
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        forget_dead_workers(Path(self.multiprocess_dir))
        combined = CollectorRegistry()
        MultiProcessCollector(combined, path=self.multiprocess_dir)
        return generate_latest(combined)


_LIVE_GAUGE_FILE = re.compile(r"gauge_live\w+?_(\d+)\.db")


def forget_dead_workers(directory: Path) -> None:
    """Drop the live-gauge files of workers that died (granian respawns them under new pids), so a
    dead worker's last queue depth is not summed in; its counters stay, they are history."""
    for path in directory.glob("gauge_live*.db"):
        match = _LIVE_GAUGE_FILE.fullmatch(path.name)
        if match and not _alive(int(match.group(1))):
            mark_process_dead(int(match.group(1)), str(directory))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
