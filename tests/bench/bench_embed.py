"""The embedding model on this machine: `python -m tests.bench embed [--quick]`.

- spinning: query embedding + hybrid search (10k-chunk tenant) per question, with onnxruntime's
  worker threads allowed to spin-wait after each run or not, each variant in its own process,
  the variants interleaved round by round, on the machine as it is and with one more core kept
  busy by a spinning process (a busy machine).
- configurations: chunks/s of the int8 model on real fastapi-fixture chunks, embedded page by
  page as a crawl does (and all at once, as a crawl that batched across pages would), for
  thread counts, batch sizes, graph optimisation levels, a token budget per batch (sequence-length
  buckets) and two single-thread sessions side by side; configurations interleaved round by round,
  medians reported, today's default first and once more as a noise control.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from tests.bench.common import percentiles, print_table

ROOT = str(Path(__file__).resolve().parents[2])
CACHE = str(Path(tempfile.gettempdir()) / "frontdesk-bench-models")

SPIN_SCRIPT = """
import sys, json, time
sys.path.insert(0, {root!r})
from pathlib import Path
from ingest.embed import OnnxMiniLM
from store.search import search
from store.tenants import TenantRegistry
from tests.bench.bench_store import QUERIES
embedder = OnnxMiniLM(int8=True, cache_dir=Path({cache!r}), allow_spinning={spin!r})
embedder.warm_up()
registry = TenantRegistry(Path({tenants!r}))
conn = registry.get("bench").reader()
for q in QUERIES[:5]:
    search(conn, q, embedder.embed_query(q), k=10, mode="hybrid")
embed_ms, total_ms = [], []
for _ in range({repeat}):
    for q in QUERIES:
        started = time.perf_counter()
        vector = embedder.embed_query(q)
        embedded = time.perf_counter()
        search(conn, q, vector, k=10, mode="hybrid")
        done = time.perf_counter()
        embed_ms.append((embedded - started) * 1000)
        total_ms.append((done - started) * 1000)
registry.close_all()
print(json.dumps({{"embed": embed_ms, "total": total_ms}}))
"""

HOG_SCRIPT = "while True:\n    pass\n"


def _spin_round(tenants: Path, spin: bool, repeat: int) -> dict[str, list[float]]:
    script = SPIN_SCRIPT.format(root=ROOT, cache=CACHE, spin=spin, tenants=str(tenants), repeat=repeat)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_spinning(quick: bool) -> list[dict]:
    from ingest.embed import OnnxMiniLM
    from tests.bench.bench_store import _synthetic_tenant, real_texts

    embedder = OnnxMiniLM(int8=True, cache_dir=Path(CACHE))
    texts = real_texts(300)
    base = embedder.embed(texts)
    vocabulary = sorted({w.lower().strip(".,:;()[]\"'") for t in texts for w in t.split() if w.isascii()} - {""})
    rounds, repeat = (3, 2) if quick else (5, 3)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        _synthetic_tenant(Path(tmp), 10_000, base, vocabulary)
        for load in ("as is", "+1 busy core"):
            hog = subprocess.Popen([sys.executable, "-c", HOG_SCRIPT]) if load != "as is" else None
            try:
                per_variant: dict[bool, dict[str, list]] = {True: {"embed": [], "total": [], "p95": []},
                                                            False: {"embed": [], "total": [], "p95": []}}
                for round_no in range(rounds):
                    # Alternate which variant goes first so drift in the machine's load cancels.
                    order = (True, False) if round_no % 2 == 0 else (False, True)
                    for spin in order:
                        samples = _spin_round(Path(tmp), spin, repeat)
                        per_variant[spin]["embed"] += samples["embed"]
                        per_variant[spin]["total"] += samples["total"]
                        per_variant[spin]["p95"].append(percentiles(samples["total"])["p95"])
            finally:
                if hog is not None:
                    hog.kill()
                    hog.wait()
            for spin in (True, False):
                data = per_variant[spin]
                total, embed = percentiles(data["total"]), percentiles(data["embed"])
                rows.append({"load": load, "spinning": "on" if spin else "off", "rounds": rounds,
                             "n": total["n"], "embed_p50_ms": embed["p50"], "embed_p95_ms": embed["p95"],
                             "embed_search_p50_ms": total["p50"], "embed_search_p95_ms": total["p95"],
                             "median_round_p95_ms": round(float(np.median(data["p95"])), 2)})
    return rows


def fastapi_pages(limit: int) -> list[list[str]]:
    """The embedding texts of the first `limit` fastapi-fixture pages, chunked as the indexer
    chunks them, one list per page."""
    from ingest.chunk import chunk_document
    from ingest.embed import OnnxMiniLM
    from ingest.extract import extract
    from tests.conftest import FASTAPI, FASTAPI_ORIGIN

    counter = OnnxMiniLM(int8=True, cache_dir=Path(CACHE))
    pages = []
    for path in sorted(FASTAPI.rglob("*.html")):
        doc = extract(path.read_bytes(), f"{FASTAPI_ORIGIN}/{path.relative_to(FASTAPI).as_posix()}")
        chunks = chunk_document(doc, counter.count_tokens)
        if chunks:
            pages.append([c.embedding_text(doc.title) for c in chunks])
        if len(pages) >= limit:
            break
    return pages


class _TokenBudget:
    """Batches cut by a token budget (rows x longest row) rather than a row count: short texts go
    in big batches, long ones in small ones."""

    def __init__(self, embedder, budget: int) -> None:
        self.embedder, self.budget = embedder, budget

    def embed(self, texts: list[str]) -> np.ndarray:
        e = self.embedder
        e._load()
        lengths = [len(enc.ids) for enc in e._tokenizer.encode_batch(texts)]
        order = sorted(range(len(texts)), key=lambda i: lengths[i])
        out = np.empty((len(texts), e.dim), dtype=np.float32)
        batch: list[int] = []
        for i in order:
            if batch and (len(batch) + 1) * lengths[i] > self.budget:
                out[batch] = e.embed_batch([texts[j] for j in batch])
                batch = []
            batch.append(i)
        if batch:
            out[batch] = e.embed_batch([texts[j] for j in batch])
        return out


class _SideBySide:
    """Two single-thread sessions, each embedding half of every call's batches at once."""

    def __init__(self, embedders) -> None:
        self.embedders = embedders
        self.pool = ThreadPoolExecutor(max_workers=len(embedders))

    def embed(self, texts: list[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        halves = [order[k :: len(self.embedders)] for k in range(len(self.embedders))]
        futures = [self.pool.submit(e.embed, [texts[i] for i in half])
                   for e, half in zip(self.embedders, halves, strict=True)]
        out = np.empty((len(texts), self.embedders[0].dim), dtype=np.float32)
        for half, future in zip(halves, futures, strict=True):
            if half:
                out[half] = future.result()
        return out


def _configurations() -> dict[str, object]:
    from ingest.embed import OnnxMiniLM

    def minilm(**kwargs):
        batch = kwargs.pop("batch", None)
        embedder = OnnxMiniLM(int8=True, cache_dir=Path(CACHE), **kwargs)
        if batch:
            embedder.batch_size = batch
        embedder.warm_up()
        return embedder

    return {
        "today: 2 threads, one text per run, opt all": minilm(threads=2),
        # The same configuration again, its own object: how far apart two identical rows land
        # is the noise floor of this run.
        "today again (noise control)": minilm(threads=2),
        "1 thread": minilm(threads=1),
        "opt basic": minilm(threads=2, optimization="basic"),
        "opt extended": minilm(threads=2, optimization="extended"),
        "batch 4": minilm(threads=2, batch=4),
        "batch 8": minilm(threads=2, batch=8),
        "batch 32 (the default before)": minilm(threads=2, batch=32),
        "token budget 2048": _TokenBudget(minilm(threads=2, batch=64), 2048),
        "2 sessions x 1 thread": _SideBySide([minilm(threads=1), minilm(threads=1)]),
    }


def bench_configurations(quick: bool) -> list[dict]:
    pages = fastapi_pages(12 if quick else 30)
    texts = [t for page in pages for t in page]
    configs = _configurations()
    rounds = 2 if quick else 3
    per_page: dict[str, list[float]] = {name: [] for name in configs}
    at_once: dict[str, list[float]] = {name: [] for name in configs}
    names = list(configs)
    for round_no in range(rounds):
        for name in (names if round_no % 2 == 0 else names[::-1]):
            embedder = configs[name]
            started = time.perf_counter()
            for page in pages:
                embedder.embed(page)
            per_page[name].append(len(texts) / (time.perf_counter() - started))
            started = time.perf_counter()
            embedder.embed(texts)
            at_once[name].append(len(texts) / (time.perf_counter() - started))
    today = float(np.median(per_page[names[0]]))
    rows = []
    for name in names:
        page_rate, all_rate = float(np.median(per_page[name])), float(np.median(at_once[name]))
        rows.append({"configuration": name, "pages": len(pages), "chunks": len(texts), "rounds": rounds,
                     "per_page_chunks_per_s": round(page_rate, 1), "vs_today": round(page_rate / today, 2),
                     "all_at_once_chunks_per_s": round(all_rate, 1),
                     "per_page_runs": [round(r, 1) for r in per_page[name]]})
    return rows


def run(quick: bool = False) -> dict:
    configurations = bench_configurations(quick)
    print_table("Embedding configurations, int8 MiniLM, real fastapi-fixture chunks (page by page as a crawl "
                "embeds them, and all at once), medians of interleaved rounds", configurations,
                ["configuration", "pages", "chunks", "rounds", "per_page_chunks_per_s", "vs_today",
                 "all_at_once_chunks_per_s"])
    spinning = bench_spinning(quick)
    print_table("Query embedding + hybrid search (10k chunks), onnxruntime spin-waiting on vs off, "
                "interleaved processes", spinning,
                ["load", "spinning", "rounds", "n", "embed_p50_ms", "embed_p95_ms", "embed_search_p50_ms",
                 "embed_search_p95_ms", "median_round_p95_ms"])
    return {"configurations": configurations, "spinning": spinning, "cpus": os.cpu_count()}
