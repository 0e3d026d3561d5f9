"""Helpers shared by the benchmarks: timing statistics, tables, JSON results, RSS."""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)

    def pick(q: float) -> float:
        if not ordered:
            return float("nan")
        index = min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))
        return round(ordered[index], 3)

    return {"p50": pick(0.50), "p95": pick(0.95), "p99": pick(0.99),
            "mean": round(statistics.fmean(ordered), 3) if ordered else float("nan"), "n": len(ordered)}


def time_calls(fn: Callable[[], object], repeat: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def print_table(title: str, rows: list[dict], columns: list[str]) -> None:
    widths = {c: max(len(c), *(len(_fmt(r.get(c))) for r in rows)) for c in columns}
    print(f"\n## {title}\n")
    print("| " + " | ".join(c.ljust(widths[c]) for c in columns) + " |")
    print("| " + " | ".join("-" * widths[c] for c in columns) + " |")
    for row in rows:
        print("| " + " | ".join(_fmt(row.get(c)).ljust(widths[c]) for c in columns) + " |")


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return "" if value is None else str(value)


def save(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=str))
    return path
