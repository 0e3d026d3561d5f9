"""The LLM path measured (issue 11, item 6): golden sets answered through a real OpenAI-compatible
server on 127.0.0.1, beside the extractive baseline measured in the same run.

    python -m tests.bench llm --endpoint http://127.0.0.1:8080/v1 [--model NAME] [--sets pypug demo]

Skipped with a message unless --endpoint is given or FRONTDESK_LLM_BASE_URL is set. Per set and
provider: answer-contains, citations that point at an expected page (share of answered answerable
questions whose answer cites one; answer precision), honest and false refusal, the model's own
"not on this site" replies, grounding-guard trips by reason (app/grounding.py) and where (first
sentence: the visitor got the extractive answer; later: the answer was cut), provider failures,
TTFT p50/p95 at the server (what the visitor waits for, after the guard) and at the model, and
the model's tokens/s (stream pieces, which llama.cpp sends one token each).

The fixture sites are indexed once into ~/.cache/frontdesk-bench/llm (pypug from its folder, the
demo site crawled from app/demo as the quickstart does) and reused; delete the folder to rebuild.
"""

from __future__ import annotations

import asyncio
import collections
import os
import statistics
import time
from collections.abc import AsyncIterator
from pathlib import Path

from app import eval as ev
from app.context import Context
from app.grounding import Grounded, grounded_of, guarded
from app.prompt import Prompt
from app.providers import Extractive, OpenAICompatible, Provider, WithFallback
from app.settings import Settings
from tests.bench.common import percentiles, print_table
from tests.conftest import PYPUG, PYPUG_ORIGIN

EVAL = Path(__file__).resolve().parents[1] / "eval"
DATA = Path.home() / ".cache" / "frontdesk-bench" / "llm"
SETS = {
    "pypug": ("pypug", "pypug.jsonl"),
    "pypug-heldout": ("pypug", "heldout/pypug.jsonl"),
    "pypug-report": ("pypug", "report/pypug.jsonl"),
    "demo": ("demo", "heldout/demo.jsonl"),
    "demo-report": ("demo", "report/demo.jsonl"),
}
DEFAULT_SETS = ("pypug", "demo")


class Timed(Provider):
    """The model's own stream, timed: time to its first piece, and pieces per second after it."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name
        self.first_ms: list[float] = []
        self.pieces = 0
        self.seconds = 0.0

    async def stream(self, prompt: Prompt) -> AsyncIterator[str]:
        started = time.perf_counter()
        first = last = None
        count = 0
        try:
            async for piece in self.inner.stream(prompt):
                last = time.perf_counter()
                if first is None:
                    first = last
                    self.first_ms.append((first - started) * 1000)
                count += 1
                yield piece
        finally:
            if first is not None and last is not None and count > 1:
                self.pieces += count - 1
                self.seconds += last - first

    async def aclose(self) -> None:
        await self.inner.aclose()


def site_tenant(ctx: Context, site: str):
    """The fixture site's tenant, indexed once and then reused."""
    if ctx.registry.exists(site):
        tenant = ctx.tenant(site)
        if tenant.reader().execute("SELECT value FROM meta WHERE key = 'bench_complete'").fetchone():
            return tenant
        ctx.registry.delete(site)
    print(f"  indexing {site} ...", flush=True)
    if site == "pypug":
        from ingest.folder import index_folder

        tenant, _ = ctx.create_tenant(site, PYPUG_ORIGIN + "/")
        index_folder(tenant, ctx.tenant_embedder(tenant), PYPUG, PYPUG_ORIGIN + "/")
    else:
        from app.demo.server import serve_demo_site
        from ingest.pipeline import CrawlOptions, crawl

        with serve_demo_site() as demo:
            tenant, _ = ctx.create_tenant(site, demo.url + "/", allow_private_network=True, name="Harbor & Pine")
            asyncio.run(crawl(tenant, ctx.tenant_embedder(tenant), CrawlOptions(rate=0)))
    with tenant.write() as conn:
        conn.execute("INSERT INTO meta(key, value) VALUES ('bench_complete', '1')")
    return tenant


def cites_expected(rows: list[ev.GoldenRow]) -> tuple[float, float]:
    """(share of answered answerable questions whose answer cites an expected page, mean answer
    precision over those with citation markers)."""
    answered = [r for r in rows if r.kind == "answerable" and r.answered]
    hits = [r.answer_precision is not None and r.answer_precision > 0 for r in answered]
    precisions = [r.answer_precision for r in answered if r.answer_precision is not None]
    return (round(sum(hits) / len(hits), 3) if hits else 0.0,
            round(statistics.fmean(precisions), 3) if precisions else 0.0)


def measure(ctx: Context, tenant, set_name: str, items, provider_name: str, provider: Provider,
            timed: Timed | None) -> dict:
    started = time.perf_counter()
    report = ev.run_golden(ctx, tenant, items, golden_name=set_name, provider_factory=lambda: provider,
                           keep_rows=True)
    rows = report.rows or []
    cite_ok, precision = cites_expected(rows)
    guard = grounded_of(provider)
    trips = collections.Counter(guard.trips) if guard else collections.Counter()
    log = list(guard.log_trips) if guard else []
    refusals = trips.pop("not_on_site", 0)
    row = {
        "set": set_name, "provider": provider_name, "questions": report.questions,
        "contains": report.metrics["answer_contains"], "cites_expected": cite_ok, "precision": precision,
        "honest_refusal": report.metrics["honest_refusal"], "false_refusal": report.metrics["false_refusal"],
        "model_not_on_site": refusals,
        "trips": ", ".join(f"{reason} {n}" for reason, n in trips.most_common()) or ("0" if guard else "-"),
        "first_trips": sum(1 for t in log if t.at == "first" and t.reason != "not_on_site") if guard else None,
        "later_trips": sum(1 for t in log if t.at == "later") if guard else None,
        "failures": provider.failures if isinstance(provider, WithFallback) else None,
        "ttft_p50_ms": report.ttft_ms["p50"], "ttft_p95_ms": report.ttft_ms["p95"],
        "model_ttft_p50_ms": percentiles(timed.first_ms)["p50"] if timed and timed.first_ms else None,
        "model_ttft_p95_ms": percentiles(timed.first_ms)["p95"] if timed and timed.first_ms else None,
        "tokens_per_s": round(timed.pieces / timed.seconds, 1) if timed and timed.seconds else None,
        "generations": len(timed.first_ms) if timed else None,
        "seconds": round(time.perf_counter() - started, 1),
        "trip_log": [{"q": t.question, "reason": t.reason, "at": t.at, "detail": t.detail} for t in log],
        "answers": [{"q": r.q, "kind": r.kind, "answered": r.answered, "contains": r.contains_ok,
                     "answer": r.answer} for r in rows],
    }
    print(f"  {set_name} / {provider_name}: contains {row['contains']}, trips {row['trips']}, "
          f"{row['seconds']} s", flush=True)
    return row


def llm_provider(endpoint: str, model: str, timeout: float, max_tokens: int) -> tuple[Provider, Timed]:
    """What the server runs for an LLM endpoint (the model, the extractive fallback, the guard),
    with the model's stream timed."""
    timed = Timed(OpenAICompatible(endpoint, model, timeout=timeout, max_tokens=max_tokens))
    provider = guarded(WithFallback(timed, Extractive()))
    assert isinstance(grounded_of(provider), Grounded)
    return provider, timed


def run(quick: bool, endpoint: str = "", model: str = "", sets: list[str] | None = None, limit: int = 0,
        timeout: float = 120.0, max_tokens: int = 256) -> dict | None:
    endpoint = endpoint or os.environ.get("FRONTDESK_LLM_BASE_URL", "")
    if not endpoint:
        print("\n(skipping llm: give --endpoint URL or set FRONTDESK_LLM_BASE_URL to an OpenAI-compatible "
              "server on 127.0.0.1, e.g. `python -m llama_cpp.server --model M.gguf --port 8080`; see docs/eval.md)")
        return None
    model = model or os.environ.get("FRONTDESK_LLM_MODEL", "") or "local"
    unknown = [s for s in sets or [] if s not in SETS]
    if unknown:
        raise SystemExit(f"unknown set(s) {', '.join(unknown)}; choose from {', '.join(SETS)}")
    limit = limit or (8 if quick else 0)
    DATA.mkdir(parents=True, exist_ok=True)
    ctx = Context(Settings(data_dir=str(DATA)))
    rows = []
    try:
        for set_name in sets or DEFAULT_SETS:
            site, path = SETS[set_name]
            tenant = site_tenant(ctx, site)
            items = ev.load_golden(EVAL / path)
            if limit and limit < len(items):  # an even sample keeps the set's mix of kinds
                items = [items[i * len(items) // limit] for i in range(limit)]
            rows.append(measure(ctx, tenant, set_name, items, "extractive", Extractive(), None))
            provider, timed = llm_provider(endpoint, model, timeout, max_tokens)
            rows.append(measure(ctx, tenant, set_name, items, f"llm:{model}", provider, timed))
    finally:
        ctx.close()
    print_table(f"The LLM path: {model} at {endpoint} beside the extractive answer (max_tokens {max_tokens})", rows,
                ["set", "provider", "questions", "contains", "cites_expected", "precision", "honest_refusal",
                 "false_refusal", "model_not_on_site", "trips", "first_trips", "later_trips", "failures",
                 "ttft_p50_ms", "ttft_p95_ms", "model_ttft_p50_ms", "tokens_per_s"])
    slug = "".join(c if c.isalnum() else "-" for c in model.lower()).strip("-")
    return {"_name": f"llm-{slug}", "endpoint": endpoint, "model": model, "max_tokens": max_tokens, "limit": limit,
            "rows": rows}
