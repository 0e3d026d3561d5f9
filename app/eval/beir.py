"""BEIR datasets: load one, index it through production's indexer (cleaner, chunker, rows),
embedder and store into a cached evaluation tenant (`DATA_DIR/eval-cache/`), run every query,
and score documents by their best chunk (docs/eval.md has the definitions and the published
numbers).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from urllib.parse import quote, unquote

import apsw
import msgspec
import numpy as np

from app.eval.metrics import mrr_at_k, ndcg_at_k, percentiles, recall_at_k, unique
from ingest import chunk as chunk_module
from ingest import clean as clean_module
from ingest import indexer as indexer_module
from ingest.chunk import Chunk
from ingest.document import Document, Section
from ingest.embed import Embedder
from ingest.indexer import PageIndexer, chunk_rows
from store import migrations as migrations_module
from store import pages as pages_module
from store.config import SiteConfig
from store.errors import InvalidInput, InvalidQuery, StoreError
from store.migrations import SCHEMA_VERSION, read_meta, set_meta
from store.page_content import chunk_pages
from store.pages import PageWrite, vector_bytes, write_page
from store.search import (
    DEFAULT_FUSION,
    FusionParams,
    Mode,
    bm25_candidates,
    dense_candidates,
    fuse,
    search,
)
from store.tenants import TenantFile, TenantRegistry
from store.words import MAX_QUERY_CHARS

Progress = Callable[[int, int, str], None]



class BeirData(msgspec.Struct, kw_only=True):
    name: str
    corpus: dict[str, tuple[str, str]]
    """Document id → (title, text)."""
    queries: dict[str, str]
    """Query id → text; only queries with at least one relevant judgement."""
    qrels: dict[str, dict[str, int]]
    """Query id → {document id: grade}."""


def _jsonl(path: Path) -> Iterable[dict]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{path.name} line {number} is not JSON: {exc.msg}") from None
            if not isinstance(item, dict):
                raise InvalidInput(f"{path.name} line {number} is not a JSON object")
            yield item


def load_beir(directory: Path, split: str = "test") -> BeirData:
    """Read a BEIR-format dataset: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""
    directory = Path(directory)
    files = {"corpus": directory / "corpus.jsonl", "queries": directory / "queries.jsonl",
             "qrels": directory / "qrels" / f"{split}.tsv"}
    for path in files.values():
        if not path.is_file():
            raise InvalidInput(f"{path} is missing: a BEIR dataset has corpus.jsonl, queries.jsonl "
                               f"and qrels/{split}.tsv")
    qrels: dict[str, dict[str, int]] = {}
    with files["qrels"].open(encoding="utf-8") as rows:
        for number, row in enumerate(rows, start=1):
            cells = row.rstrip("\n").split("\t")
            if len(cells) < 3 or (number == 1 and not cells[2].lstrip("-").isdigit()):
                continue  # the header, or a blank line
            try:
                grade = int(cells[2])
            except ValueError:
                raise InvalidInput(f"qrels/{split}.tsv line {number}: score {cells[2]!r} is not an integer") from None
            qrels.setdefault(cells[0], {})[cells[1]] = grade
    corpus = {str(d["_id"]): (str(d.get("title") or ""), str(d.get("text") or ""))
              for d in _jsonl(files["corpus"])}
    judged = {q for q, docs in qrels.items() if any(g > 0 for g in docs.values())}
    queries = {str(q["_id"]): str(q.get("text") or "") for q in _jsonl(files["queries"])
               if str(q["_id"]) in judged}
    if not corpus or not queries:
        raise InvalidInput(f"{directory} has no documents or no judged queries for split {split!r}")
    return BeirData(name=directory.name, corpus=corpus, queries=queries,
                    qrels={q: qrels[q] for q in queries})


def _stable_order(ids: Iterable[str], salt: str) -> list[str]:
    return sorted(ids, key=lambda i: hashlib.blake2b(f"{salt}:{i}".encode(), digest_size=8).digest())


def beir_subset(data: BeirData, *, queries: int, distractors: int) -> BeirData:
    """A fixed, reproducible slice: every n-th query (by id), every document judged for those
    queries, plus `distractors` other documents picked by a hash of their id (not by any
    system's ranking, so the slice favours no model)."""
    ordered = sorted(data.queries, key=lambda q: (len(q), q))
    step = max(1, len(ordered) // max(1, queries))
    chosen = ordered[::step][:queries]
    judged = {doc for q in chosen for doc in data.qrels[q] if doc in data.corpus}
    others = [d for d in _stable_order(data.corpus, "distractor") if d not in judged][:distractors]
    keep = judged | set(others)
    return BeirData(
        name=f"{data.name}-q{len(chosen)}-d{distractors}",
        corpus={d: data.corpus[d] for d in data.corpus if d in keep},
        queries={q: data.queries[q] for q in chosen},
        qrels={q: data.qrels[q] for q in chosen},
    )


# ---------------------------------------------------------------------------------------------
# Indexing a BEIR corpus into a cached evaluation tenant
# ---------------------------------------------------------------------------------------------

#: Bump when the way a corpus becomes rows changes in a way the digest below cannot see.
INDEX_FORMAT = "1"
DOC_URL_PREFIX = "beir://doc/"
_EMBED_SLICE = 512
_WRITE_BATCH = 500


class IndexInfo(msgspec.Struct, kw_only=True):
    tenant: str
    model: str
    docs: int
    chunks: int
    embed_seconds: float
    build_seconds: float
    chunks_per_s: float
    cached: bool


def doc_url(doc_id: str) -> str:
    return DOC_URL_PREFIX + quote(doc_id, safe="")


def _eval_tenant_id(name: str, model: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", f"beir-{name}-{model}".lower()).strip("-")
    if len(slug) > 63:  # keep ids valid and distinct however long the dataset name is
        digest = hashlib.blake2b(slug.encode(), digest_size=4).hexdigest()
        slug = slug[:54].rstrip("-") + "-" + digest
    return slug


def _chunk_corpus(data: BeirData, indexer: PageIndexer) -> list[tuple[str, Document, list[Chunk]]]:
    """Each document as production would see a page: cleaned, then cut by the real chunker
    (the corpus is English: no language detection)."""
    out = []
    for doc_id, (title, text) in data.corpus.items():
        url = doc_url(doc_id)
        doc = Document(url=url, canonical_url=url, title=title, lang="en",
                       sections=[Section(heading_path=(), text=text)] if text.strip() else [])
        out.append((doc_id, *indexer.prepare(doc, lang="en")))
    return out


def _corpus_digest(data: BeirData, embedder: Embedder) -> str:
    """What the cached index depends on: the corpus, the model weights, and the code that turns
    text into rows (cleaner, chunker, indexer, page writer and schema sources), so an edit there
    rebuilds the cache. Cheap: chunking 5k documents to compare chunk hashes would cost more than
    a minute per run."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{INDEX_FORMAT}\n{SCHEMA_VERSION}\n{embedder.fingerprint}\n{embedder.max_tokens}\n".encode())
    for module in (chunk_module, clean_module, indexer_module, pages_module, migrations_module):
        digest.update(Path(module.__file__ or "").read_bytes())
    for doc_id, (title, text) in data.corpus.items():
        digest.update(f"{doc_id}\t{title}\t{text}\n".encode())
    return digest.hexdigest()


def index_beir(data_dir: Path, data: BeirData, embedder: Embedder, *, rebuild: bool = False,
               on_progress: Progress | None = None) -> tuple[TenantFile, IndexInfo]:
    """The evaluation tenant of (dataset, model), built once and reused while the corpus, the
    chunker's output and the model weights stay the same (`DATA_DIR/eval-cache/`)."""
    registry = TenantRegistry(Path(data_dir) / "eval-cache")
    tenant_id = _eval_tenant_id(data.name, embedder.id)
    started = time.perf_counter()
    digest = _corpus_digest(data, embedder)
    if registry.exists(tenant_id):
        try:
            tenant = registry.get(tenant_id)
            meta = read_meta(tenant.reader())
        except (StoreError, apsw.Error):
            meta = {}  # unreadable or from another schema: rebuilt below
        if not rebuild and meta.get("eval_digest") == digest:
            return tenant, IndexInfo(
                tenant=tenant_id, model=embedder.id, docs=int(meta["eval_docs"]),
                chunks=int(meta["eval_chunks"]), embed_seconds=float(meta["eval_embed_seconds"]),
                build_seconds=float(meta["eval_build_seconds"]),
                chunks_per_s=float(meta["eval_chunks_per_s"]), cached=True)
        registry.delete(tenant_id)  # stale or half-built: start again
    config = SiteConfig(site="https://beir.invalid/", name=f"BEIR {data.name}", model=embedder.id)
    tenant, _ = registry.create(config, tenant_id, embedder_id=embedder.id, dim=embedder.dim,
                                fingerprint=embedder.fingerprint)
    chunked = _chunk_corpus(data, PageIndexer(tenant, embedder))

    # Embed every distinct chunk once, in length-sorted slices (little padding per batch).
    texts: dict[str, str] = {}
    for _, doc, chunks in chunked:
        for chunk in chunks:
            texts.setdefault(chunk.hash, chunk.embedding_text(doc.title))
    hashes = sorted(texts, key=lambda h: len(texts[h]))
    vectors: dict[str, bytes] = {}
    embed_started = time.perf_counter()
    for start in range(0, len(hashes), _EMBED_SLICE):
        piece = hashes[start : start + _EMBED_SLICE]
        for chunk_hash, vector in zip(piece, embedder.embed([texts[h] for h in piece]), strict=True):
            vectors[chunk_hash] = vector_bytes(vector)
        if on_progress:
            on_progress(len(vectors), len(hashes), "embedding chunks")
    embed_seconds = time.perf_counter() - embed_started

    for start in range(0, len(chunked), _WRITE_BATCH):
        with tenant.write() as conn:
            for doc_id, doc, chunks in chunked[start : start + _WRITE_BATCH]:
                write_page(conn, PageWrite(url=doc.url, title=doc.title, lang=doc.lang, content_hash=doc_id,
                                           chunks=chunk_rows(chunks, vectors)))
        if on_progress:
            on_progress(min(len(chunked), start + _WRITE_BATCH), len(chunked), "writing pages")
    info = IndexInfo(
        tenant=tenant_id, model=embedder.id, docs=len(chunked), chunks=len(hashes),
        embed_seconds=round(embed_seconds, 2), build_seconds=round(time.perf_counter() - started, 2),
        chunks_per_s=round(len(hashes) / embed_seconds, 1) if embed_seconds > 0 else 0.0, cached=False)
    with tenant.write() as conn:
        set_meta(conn, eval_docs=info.docs, eval_chunks=info.chunks, eval_embed_seconds=info.embed_seconds,
                 eval_build_seconds=info.build_seconds, eval_chunks_per_s=info.chunks_per_s)
        set_meta(conn, eval_digest=digest)  # last: only a complete build is ever reused
    tenant.checkpoint()
    return tenant, info


# ---------------------------------------------------------------------------------------------
# Running BEIR queries
# ---------------------------------------------------------------------------------------------


class QueryVectors(msgspec.Struct):
    """Query embeddings made once and reused across modes and fusion settings."""

    vectors: dict[str, np.ndarray]
    embed_ms: dict[str, float]


def embed_queries(data: BeirData, embedder: Embedder) -> QueryVectors:
    """One `embed_query` call per query, as production embeds a visitor's question."""
    vectors, times = {}, {}
    for query_id, text in data.queries.items():
        started = time.perf_counter()
        vectors[query_id] = embedder.embed_query(text)
        times[query_id] = (time.perf_counter() - started) * 1000
    return QueryVectors(vectors=vectors, embed_ms=times)


class BeirReport(msgspec.Struct, kw_only=True, omit_defaults=True):
    dataset: str
    model: str
    mode: str
    queries: int
    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    mrr_at_10: float
    latency_ms: dict[str, float]
    """Query embedding + search(k=10) as production runs it, per query."""
    fusion: dict[str, float]
    index: IndexInfo | None = None
    per_query: dict[str, float] | None = None
    """nDCG@10 per query id (kept for paired comparisons; left out of printed reports)."""
    run: dict[str, list[str]] | None = None
    """The ranked document ids per query (a TREC run, for checking with other tools)."""


def documents_by_chunk(tenant: TenantFile) -> dict[int, list[str]]:
    """chunk id → the documents containing it (identical text in two documents is one chunk)."""
    out: dict[int, list[str]] = {}
    for chunk_id, url in chunk_pages(tenant.reader()):
        if url.startswith(DOC_URL_PREFIX):
            out.setdefault(int(chunk_id), []).append(unquote(url[len(DOC_URL_PREFIX):]))
    return out


def fused_chunk_ranking(conn: apsw.Connection, text: str, vector: np.ndarray | None, *, mode: Mode,
                        params: FusionParams, k: int) -> list[int]:
    """The chunk ids `search()` would return, in its order, for a search without filters or
    boosts — the same candidate and fusion functions, without building k `Hit`s (each costs a
    page lookup), which makes deep (k ≈ 300) evaluation rankings affordable."""
    text = text[:MAX_QUERY_CHARS]
    limit = max(params.candidates, k)
    if mode != "bm25" and vector is None:  # as search() refuses it
        raise InvalidQuery(f"{mode} search needs a query vector")
    dense = dense_candidates(conn, vector, limit, None) if vector is not None and mode != "bm25" else []
    lexical = bm25_candidates(conn, text, limit, None, params)[1] if mode != "dense" else []
    ranked = sorted(fuse(dense, lexical, params, mode).items(), key=lambda item: -item[1])
    return [chunk_id for chunk_id, _ in ranked[:k]]


def rank_documents(conn: apsw.Connection, text: str, vector: np.ndarray | None, *, mode: Mode,
                   params: FusionParams, depth: int, docs_by_chunk: Mapping[int, list[str]],
                   chunks_per_doc: float) -> list[str]:
    """The top `depth` documents for a query: each document scores by its best chunk."""
    k = max(depth, math.ceil(depth * chunks_per_doc * 1.5))
    while True:
        chunk_ids = fused_chunk_ranking(conn, text, vector, mode=mode, params=params, k=k)
        ranking = unique(doc for chunk_id in chunk_ids for doc in docs_by_chunk.get(chunk_id, ()))
        if len(ranking) >= depth or len(chunk_ids) < k:
            return ranking[:depth]
        k *= 2


def run_beir(tenant: TenantFile, data: BeirData, embedder: Embedder | None, *, mode: Mode = "hybrid",
             params: FusionParams = DEFAULT_FUSION, vectors: QueryVectors | None = None,
             index: IndexInfo | None = None, depth: int = 100, keep_per_query: bool = False,
             measure_latency: bool = True, on_progress: Progress | None = None) -> BeirReport:
    """Run every query of `data` against its evaluation tenant and score the document rankings.
    Latency is measured on a production-shaped call (query embedding + `search(k=10)`); the
    metrics come from a deeper ranking of the same candidate and fusion functions."""
    if mode != "bm25" and vectors is None:
        if embedder is None:
            raise InvalidInput(f"{mode} mode needs the embedder")
        vectors = embed_queries(data, embedder)
    docs_by_chunk = documents_by_chunk(tenant)
    chunks_per_doc = max(1.0, len(docs_by_chunk) / max(1, len(data.corpus)))
    conn = tenant.reader()
    scores: dict[str, tuple[float, float, float, float]] = {}
    rankings: dict[str, list[str]] = {}
    latency: list[float] = []
    for number, (query_id, text) in enumerate(data.queries.items(), start=1):
        vector = vectors.vectors[query_id] if (vectors and mode != "bm25") else None
        if measure_latency:
            started = time.perf_counter()
            search(conn, text, vector, k=10, mode=mode, params=params)
            embed_ms = vectors.embed_ms[query_id] if (vectors and mode != "bm25") else 0.0
            latency.append(embed_ms + (time.perf_counter() - started) * 1000)
        ranking = rank_documents(conn, text, vector, mode=mode, params=params, depth=depth,
                                 docs_by_chunk=docs_by_chunk, chunks_per_doc=chunks_per_doc)
        judged = data.qrels[query_id]
        rankings[query_id] = ranking
        scores[query_id] = (ndcg_at_k(ranking, judged, 10), recall_at_k(ranking, judged, 10),
                            recall_at_k(ranking, judged, 100), mrr_at_k(ranking, judged, 10))
        if on_progress and number % 25 == 0:
            on_progress(number, len(data.queries), f"{mode} queries")

    def mean(i: int) -> float:
        return round(sum(s[i] for s in scores.values()) / max(1, len(scores)), 4)

    return BeirReport(
        dataset=data.name, model=embedder.id if embedder else (index.model if index else ""),
        mode=mode, queries=len(scores), ndcg_at_10=mean(0), recall_at_10=mean(1),
        recall_at_100=mean(2), mrr_at_10=mean(3), latency_ms=percentiles(latency),
        fusion=msgspec.to_builtins(params), index=index,
        per_query={q: round(s[0], 4) for q, s in scores.items()} if keep_per_query else None,
        run=rankings if keep_per_query else None)


def beir_markdown(reports: Sequence[BeirReport]) -> str:
    lines = ["| dataset | model | mode | nDCG@10 | recall@10 | recall@100 | MRR@10 | p50 ms | p95 ms | chunks/s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in reports:
        speed = f"{r.index.chunks_per_s:.0f}" if r.index else ""
        lines.append(f"| {r.dataset} | {r.model} | {r.mode} | {r.ndcg_at_10:.3f} | {r.recall_at_10:.3f} | "
                     f"{r.recall_at_100:.3f} | {r.mrr_at_10:.3f} | {r.latency_ms['p50']:.1f} | "
                     f"{r.latency_ms['p95']:.1f} | {speed} |")
    return "\n".join(lines)
