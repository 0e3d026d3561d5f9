"""Process metrics in the Prometheus text exposition format (no client library needed to serve)."""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _labels(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    if not names:
        return ""
    body = ",".join(f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True))
    return "{" + body + "}"


def _escape(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Counter:
    def __init__(self, name: str, help_text: str, labels: tuple[str, ...] = ()) -> None:
        self.name, self.help, self.label_names = name, help_text, labels
        self._values: dict[tuple[str, ...], float] = defaultdict(float)
        self._lock = threading.Lock()

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = tuple(str(labels.get(n, "")) for n in self.label_names)
        with self._lock:
            self._values[key] += amount

    def value(self, **labels: str) -> float:
        return self._values.get(tuple(str(labels.get(n, "")) for n in self.label_names), 0.0)

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} counter"]
        with self._lock:
            items = sorted(self._values.items())
        if not items and not self.label_names:
            items = [((), 0.0)]
        lines += [f"{self.name}{_labels(self.label_names, k)} {v:g}" for k, v in items]
        return lines


class Gauge(Counter):
    def set(self, value: float, **labels: str) -> None:
        key = tuple(str(labels.get(n, "")) for n in self.label_names)
        with self._lock:
            self._values[key] = value

    def render(self) -> list[str]:
        return [line.replace(" counter", " gauge") if line.startswith("# TYPE") else line for line in super().render()]


class Histogram:
    def __init__(self, name: str, help_text: str, labels: tuple[str, ...] = (),
                 buckets: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.name, self.help, self.label_names, self.buckets = name, help_text, labels, buckets
        self._series: dict[tuple[str, ...], list] = {}
        self._lock = threading.Lock()

    def observe(self, value: float, **labels: str) -> None:
        key = tuple(str(labels.get(n, "")) for n in self.label_names)
        with self._lock:
            series = self._series.setdefault(key, [[0] * len(self.buckets), 0.0, 0])
            index = bisect.bisect_left(self.buckets, value)
            if index < len(self.buckets):
                series[0][index] += 1
            series[1] += value
            series[2] += 1

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        with self._lock:
            items = sorted((k, (list(v[0]), v[1], v[2])) for k, v in self._series.items())
        for key, (counts, total, count) in items:
            running = 0
            for bound, n in zip(self.buckets, counts, strict=True):
                running += n
                names, values = (*self.label_names, "le"), (*key, f"{bound:g}")
                lines.append(f"{self.name}_bucket{_labels(names, values)} {running}")
            lines.append(f"{self.name}_bucket{_labels((*self.label_names, 'le'), (*key, '+Inf'))} {count}")
            lines.append(f"{self.name}_sum{_labels(self.label_names, key)} {total:g}")
            lines.append(f"{self.name}_count{_labels(self.label_names, key)} {count}")
        return lines


class Metrics:
    """Every metric frontdesk exports; one instance per app."""

    def __init__(self) -> None:
        self.requests = Counter("frontdesk_http_requests_total", "HTTP requests by route and status.", ("route", "status"))
        self.request_seconds = Histogram("frontdesk_http_request_seconds", "HTTP request latency.", ("route",))
        self.ttft_seconds = Histogram("frontdesk_answer_ttft_seconds", "Server-side time to first answer token.", ("source",))
        self.answer_seconds = Histogram("frontdesk_answer_seconds", "Server-side time to the done event.", ("source",))
        self.tokens = Counter("frontdesk_tokens_streamed_total", "Answer token events streamed.")
        self.answers = Counter("frontdesk_answers_total", "Answers by source (retrieval, curated, cache, not_found).", ("source",))
        self.cache = Counter("frontdesk_cache_requests_total", "Answer cache lookups by result.", ("result",))
        self.errors = Counter("frontdesk_errors_total", "Errors returned to clients by stable code.", ("code",))
        self.provider_fallbacks = Counter("frontdesk_provider_fallbacks_total", "LLM failures answered by the extractive fallback.")
        self.pages_crawled = Counter("frontdesk_pages_crawled_total", "Crawled pages by outcome.", ("outcome",))
        self.chunks_embedded = Counter("frontdesk_chunks_embedded_total", "Chunks embedded by ingestion.")
        self.queue_depth = Gauge("frontdesk_crawl_queue_depth", "Crawl jobs running or waiting.")
        self.disconnects = Counter("frontdesk_client_disconnects_total", "Answer streams the client closed early.")

    def render(self) -> str:
        lines: list[str] = []
        for metric in vars(self).values():
            lines += metric.render()
        return "\n".join(lines) + "\n"
