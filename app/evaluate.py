"""Evaluation: retrieval on BEIR datasets and answers on golden question sets (SPEC section 9).

- Metrics with the BEIR / pytrec_eval (trec_eval) definitions: nDCG@k with graded, linear gains,
  recall@k, MRR@k; percentiles for latencies.
- BEIR: load a dataset, index it through production's cleaner, chunker, embedder and store into
  a cached evaluation tenant (`DATA_DIR/eval-cache/`), run every query, score documents by their
  best chunk.
- Golden sets: run retrieval and the full answer pipeline (`Answerer.stream`) against a tenant.
- Reports as msgspec structs (JSON) and Markdown tables.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal
from urllib.parse import quote, unquote, urljoin

import apsw
import msgspec
import numpy as np

from app.context import Context
from app.providers import Provider, make_provider
from ingest import chunk as chunk_module
from ingest import clean as clean_module
from ingest.chunk import Chunk, chunk_document
from ingest.clean import clean_document
from ingest.document import Document, Section
from ingest.embed import Embedder
from store import migrations as migrations_module
from store import pages as pages_module
from store.config import CleanSettings, SiteConfig
from store.errors import InvalidInput, StoreError
from store.migrations import SCHEMA_VERSION, read_meta, set_meta
from store.pages import ChunkRow, PageWrite, vector_bytes, write_page
from store.search import (
    DEFAULT_FUSION,
    MAX_QUERY_CHARS,
    FusionParams,
    Mode,
    bm25_candidates,
    chunk_languages,
    dense_candidates,
    fuse,
    search,
)
from store.tenants import Tenant, TenantRegistry

Progress = Callable[[int, int, str], None]

# ---------------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------------
# A ranking is a list of ids, best first; `relevance` maps judged ids to a grade (qrels). Only
# grades > 0 count as relevant (trec_eval's relevance level 1). Ranks start at 1. Ranking by
# position means there are no score ties to break.


def _unique(ranking: Iterable[str]) -> list[str]:
    """A run holds each document once: later repeats of an id are dropped."""
    return list(dict.fromkeys(ranking))


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain with linear gains: sum of gain_i / log2(i + 1)."""
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


def ndcg_at_k(ranking: Sequence[str], relevance: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k as pytrec_eval's `ndcg_cut_k`: DCG of the top k over the DCG of the ideal order of
    all judged-relevant documents (also cut at k). 0 when nothing is relevant."""
    gains = [max(0, relevance.get(doc, 0)) for doc in _unique(ranking)[:k]]
    ideal = sorted((g for g in relevance.values() if g > 0), reverse=True)[:k]
    best = dcg(ideal)
    return dcg(gains) / best if best > 0 else 0.0


def recall_at_k(ranking: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    """Share of the judged-relevant documents found in the top k (pytrec_eval `recall_k`)."""
    relevant = {doc for doc, grade in relevance.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(_unique(ranking)[:k])) / len(relevant)


def mrr_at_k(ranking: Sequence[str], relevance: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document within the top k, else 0 (BEIR `MRR@k`)."""
    rank = first_relevant_rank(ranking, relevance)
    return 1.0 / rank if rank is not None and rank <= k else 0.0


def first_relevant_rank(ranking: Sequence[str], relevance: Mapping[str, int]) -> int | None:
    for rank, doc in enumerate(_unique(ranking), start=1):
        if relevance.get(doc, 0) > 0:
            return rank
    return None


def percentiles(samples_ms: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / p99 (linear interpolation between closest ranks, as numpy) and the mean."""
    if not samples_ms:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "mean": 0.0}
    values = np.asarray(samples_ms, dtype=np.float64)
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {"p50": round(float(p50), 2), "p95": round(float(p95), 2),
            "p99": round(float(p99), 2), "mean": round(float(values.mean()), 2)}


# ---------------------------------------------------------------------------------------------
# BEIR datasets
# ---------------------------------------------------------------------------------------------


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


def _chunk_corpus(data: BeirData, embedder: Embedder) -> list[tuple[str, Document, list[Chunk]]]:
    """Each document as production would see a page: cleaned, then cut by the real chunker."""
    clean = CleanSettings()
    target = min(256, embedder.max_tokens)
    out = []
    for doc_id, (title, text) in data.corpus.items():
        url = doc_url(doc_id)
        doc = Document(url=url, canonical_url=url, title=title, lang="en",
                       sections=[Section(heading_path=(), text=text)] if text.strip() else [])
        doc = clean_document(doc, clean)
        out.append((doc_id, doc, chunk_document(doc, embedder.count_tokens, target_tokens=target)))
    return out


def _corpus_digest(data: BeirData, embedder: Embedder) -> str:
    """What the cached index depends on: the corpus, the model weights, and the code that turns
    text into rows (cleaner, chunker, page writer and schema sources), so an edit there rebuilds
    the cache. Cheap:
    chunking 5k documents to compare chunk hashes would cost more than a minute per run."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{INDEX_FORMAT}\n{SCHEMA_VERSION}\n{embedder.fingerprint}\n{embedder.max_tokens}\n".encode())
    for module in (chunk_module, clean_module, pages_module, migrations_module):
        digest.update(Path(module.__file__ or "").read_bytes())
    for doc_id, (title, text) in data.corpus.items():
        digest.update(f"{doc_id}\t{title}\t{text}\n".encode())
    return digest.hexdigest()


def index_beir(data_dir: Path, data: BeirData, embedder: Embedder, *, rebuild: bool = False,
               on_progress: Progress | None = None) -> tuple[Tenant, IndexInfo]:
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
    chunked = _chunk_corpus(data, embedder)

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
                write_page(conn, PageWrite(
                    url=doc.url, title=doc.title, lang=doc.lang, content_hash=doc_id,
                    chunks=[ChunkRow(hash=c.hash, kind=c.kind, lang=c.lang, text=c.text,
                                     heading_path=c.heading_path, position=c.position, uid=c.uid,
                                     tokens=c.tokens, vector=vectors[c.hash]) for c in chunks]))
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


def _docs_by_chunk(tenant: Tenant) -> dict[int, list[str]]:
    """chunk id → the documents containing it (identical text in two documents is one chunk)."""
    out: dict[int, list[str]] = {}
    rows = tenant.reader().execute(
        "SELECT pc.chunk_id, p.url FROM page_chunks pc JOIN pages p ON p.id = pc.page_id "
        "WHERE p.status = 'active' ORDER BY p.id")
    for chunk_id, url in rows:
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
    dense = dense_candidates(conn, vector, limit, None) if mode != "bm25" else []
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
        ranking = _unique(doc for chunk_id in chunk_ids for doc in docs_by_chunk.get(chunk_id, ()))
        if len(ranking) >= depth or len(chunk_ids) < k:
            return ranking[:depth]
        k *= 2


def run_beir(tenant: Tenant, data: BeirData, embedder: Embedder | None, *, mode: Mode = "hybrid",
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
    docs_by_chunk = _docs_by_chunk(tenant)
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


# ---------------------------------------------------------------------------------------------
# Golden question sets
# ---------------------------------------------------------------------------------------------


class GoldenItem(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    q: str = ""
    turns: list[str] = msgspec.field(default_factory=list)
    """A conversation instead of one question: asked in order, scored on the last turn."""
    expect_url: list[str] = msgspec.field(default_factory=list)
    """Pages that answer the question (any one suffices); relative URLs resolve against the site."""
    a_contains: list[str] = msgspec.field(default_factory=list)
    """Strings the answer must all contain (case-insensitive)."""
    lang: str = ""
    kind: Literal["answerable", "unanswerable"] = "answerable"
    category: Literal["", "answerable", "near_miss", "off_topic", "multi_turn"] = ""
    """What the question tests (reported separately): a near miss is unanswerable in the site's
    own vocabulary, an off-topic one shares only a word with it."""

    @property
    def question(self) -> str:
        """The question that is scored: the last turn of a conversation."""
        return self.turns[-1] if self.turns else self.q

    @property
    def earlier_turns(self) -> list[str]:
        return self.turns[:-1]


def load_golden(path: Path) -> list[GoldenItem]:
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"golden set {path} does not exist")
    items = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip() or line.lstrip().startswith("//"):
                continue
            try:
                item = msgspec.json.decode(line, type=GoldenItem)
            except msgspec.DecodeError as exc:
                raise InvalidInput(f"{path.name} line {number}: {exc}") from None
            if item.kind == "answerable" and not item.expect_url:
                raise InvalidInput(f"{path.name} line {number}: an answerable question needs expect_url")
            if bool(item.q) == bool(item.turns):
                raise InvalidInput(f"{path.name} line {number}: give either q or turns")
            items.append(item)
    if not items:
        raise InvalidInput(f"golden set {path} has no questions")
    return items


def normalise_url(url: str) -> str:
    url = url.split("#", 1)[0]
    return url[: -len("index.html")] if url.endswith("/index.html") else url


class GoldenRow(msgspec.Struct, kw_only=True):
    q: str
    kind: str
    lang: str
    detected_lang: str
    expect_url: list[str]
    rank: int | None
    """Rank of the first expected page among the retrieved pages (None: not in the top 10)."""
    top_urls: list[str]
    answered: bool
    contains_ok: bool | None
    confidence: float
    answer_precision: float | None = None
    """Share of the answer's sentences quoted from an expected page (answered, answerable only)."""
    category: str = ""
    retrieval_ms: float
    ttft_ms: float
    answer: str = ""


class GoldenReport(msgspec.Struct, kw_only=True, omit_defaults=True):
    tenant: str
    golden: str
    questions: int
    answerable: int
    unanswerable: int
    metrics: dict[str, float]
    by_lang: dict[str, dict[str, float]]
    by_category: dict[str, dict[str, float]]
    retrieval_ms: dict[str, float]
    ttft_ms: dict[str, float]
    misses: list[GoldenRow]
    rows: list[GoldenRow] | None = None


def answer_precision(answer: str, cited_urls: Sequence[str], expected: set[str]) -> float | None:
    """Share of the answer's sentences that cite an expected page: the text before each marker
    [n] is quoted from citation n. None when the answer has no marked sentence."""
    from ingest.chunk import split_sentences

    hits = total = 0
    for segment, marker in re.findall(r"(.*?)\[(\d{1,2})\]", answer, flags=re.S):
        number = int(marker)
        sentences = len(split_sentences(segment)) or 1
        total += sentences
        if 1 <= number <= len(cited_urls) and normalise_url(cited_urls[number - 1]) in expected:
            hits += sentences
    return round(hits / total, 4) if total else None


def _contains_all(answer: str, needles: Sequence[str]) -> bool:
    text = " ".join(answer.casefold().split())
    return all(" ".join(n.casefold().split()) in text for n in needles)


def tenant_languages(tenant: Tenant) -> set[str]:
    return chunk_languages(tenant.reader())


#: The language preference `Answerer.retrieve` applies on multilingual tenants.
ANSWER_LANG_BOOST = 0.3


def rank_pages(tenant: Tenant, embedder: Embedder | None, question: str, lang: str, *, multilingual: bool,
               mode: Mode = "hybrid", k_chunks: int = 30, params: FusionParams = DEFAULT_FUSION,
               lang_boost: float = ANSWER_LANG_BOOST) -> list[str]:
    """Pages in the order the answer pipeline takes its sources: search with the same language
    preference as `Answerer.retrieve`, chunks grouped by page (a page ranks by its best chunk).
    30 chunks give at least 10 distinct pages on the sites measured."""
    vector = embedder.embed_query(question) if mode != "bm25" and embedder is not None else None
    hits = search(tenant.reader(), question, vector, k=k_chunks, mode=mode, params=params,
                  prefer_lang=lang if multilingual else None, lang_boost=lang_boost if multilingual else 0.0).hits
    return _unique(normalise_url(hit.url) for hit in hits)


def _expected(site: str, item: GoldenItem) -> set[str]:
    return {normalise_url(urljoin(site, u)) for u in item.expect_url}


def _first_rank(pages: Sequence[str], expected: set[str], k: int = 10) -> int | None:
    return next((i for i, url in enumerate(pages[:k], start=1) if url in expected), None)


RETRIEVAL_METRICS = ("hit_at_1", "recall_at_5", "recall_at_10", "mrr", "ndcg_at_10")


def golden_retrieval(tenant: Tenant, embedder: Embedder, items: Sequence[GoldenItem], *,
                     mode: Mode = "hybrid", params: FusionParams = DEFAULT_FUSION,
                     lang_boost: float = ANSWER_LANG_BOOST) -> dict[str, dict[str, float]]:
    """Page-retrieval metrics of a golden set without running answers (bake-offs, fusion tuning):
    {"all": {...}, "<lang>": {...}} over the answerable questions."""
    from app.answer import question_language

    site = tenant.config().site
    site_langs = tenant_languages(tenant)
    multilingual = len(site_langs) > 1
    rows = []
    for item in items:
        if item.kind != "answerable":
            continue
        lang = question_language(item.question, None, "", site_langs)
        pages = rank_pages(tenant, embedder, item.question, lang, multilingual=multilingual, mode=mode, params=params,
                           lang_boost=lang_boost)
        expected = _expected(site, item)
        rows.append(GoldenRow(q=item.question, kind=item.kind, lang=item.lang, detected_lang=lang,
                              expect_url=sorted(expected), rank=_first_rank(pages, expected), top_urls=pages[:10],
                              answered=True, contains_ok=None, confidence=0.0, retrieval_ms=0.0, ttft_ms=0.0,
                              answer=""))
    out = {"all": _golden_metrics(rows)}
    out.update({lang: _golden_metrics([r for r in rows if r.lang == lang])
                for lang in sorted({r.lang for r in rows if r.lang})})
    return {group: {k: v for k, v in metrics.items() if k in RETRIEVAL_METRICS} for group, metrics in out.items()}


def _rate(flags: Sequence[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def _golden_metrics(rows: Sequence[GoldenRow]) -> dict[str, float]:
    answerable = [r for r in rows if r.kind == "answerable"]
    unanswerable = [r for r in rows if r.kind == "unanswerable"]
    with_needles = [r for r in answerable if r.contains_ok is not None]
    relevance = [({normalise_url(u): 1 for u in r.expect_url}, r) for r in answerable]
    precisions = [r.answer_precision for r in answerable if r.answered and r.answer_precision is not None]
    return {
        "hit_at_1": _rate([r.rank == 1 for r in answerable]),
        "recall_at_5": _rate([r.rank is not None and r.rank <= 5 for r in answerable]),
        "recall_at_10": _rate([r.rank is not None and r.rank <= 10 for r in answerable]),
        "mrr": round(sum(1 / r.rank for r in answerable if r.rank) / len(answerable), 4) if answerable else 0.0,
        "ndcg_at_10": round(sum(ndcg_at_k(r.top_urls, rel, 10) for rel, r in relevance) / len(relevance), 4)
        if relevance else 0.0,
        "answer_contains": _rate([bool(r.contains_ok) for r in with_needles]),
        "answer_precision": round(sum(precisions) / len(precisions), 4) if precisions else 0.0,
        "honest_refusal": _rate([not r.answered for r in unanswerable]),
        "false_refusal": _rate([not r.answered for r in answerable]),
        "lang_detected": _rate([r.detected_lang == r.lang for r in rows if r.lang]),
    }


def _is_miss(row: GoldenRow) -> bool:
    if row.kind == "unanswerable":
        return row.answered
    return row.rank is None or row.rank > 5 or not row.answered or row.contains_ok is False


async def _golden_rows(ctx: Context, tenant: Tenant, items: Sequence[GoldenItem],
                       provider: Provider, on_progress: Progress | None,
                       params: FusionParams) -> list[GoldenRow]:
    from app.answer import Answerer, question_language
    from app.cache import AnswerCache
    from app.events import ChatRequest
    from app.followup import carried_subject
    from app.metrics import Metrics

    answerer = Answerer(ctx, provider, AnswerCache(16, 0), Metrics())
    site = tenant.config().site
    embedder = ctx.tenant_embedder(tenant)
    site_langs = tenant_languages(tenant)
    multilingual = len(site_langs) > 1
    rows = []
    for number, item in enumerate(items, start=1):
        # A conversation's earlier turns are answered first; their answers are its history.
        history: list[tuple[str, str]] = []
        for earlier in item.earlier_turns:
            before = await answerer.answer(tenant, ChatRequest(key=tenant.widget_key, question=earlier),
                                           persist=False, use_cache=False, history=list(history))
            history.append((earlier, before.answer))
        question = item.question
        carried = carried_subject(question, history)
        query = f"{carried} {question}" if carried else question
        lang = question_language(question, None, "", site_langs,
                                 previous=question_language(carried, None, "", site_langs) if carried else "")
        started = time.perf_counter()
        pages = await asyncio.to_thread(
            functools.partial(rank_pages, tenant, embedder, query, lang, multilingual=multilingual, params=params))
        retrieval_ms = (time.perf_counter() - started) * 1000
        expected = _expected(site, item)
        rank = _first_rank(pages, expected)
        request = ChatRequest(key=tenant.widget_key, question=question)
        # No cache and no persistence: an evaluation must neither be served from nor leave
        # conversations and knowledge gaps in the tenant it measures.
        found = await answerer.answer(tenant, request, persist=False, use_cache=False, history=history)
        answered, confidence, answer = found.answered, found.confidence, found.answer
        ttft = found.ttft_ms or found.latency_ms
        contains = precision = None
        if item.kind == "answerable" and item.a_contains:
            contains = answered and _contains_all(answer, item.a_contains)
        if item.kind == "answerable" and answered:
            precision = answer_precision(answer, [c.url for c in found.citations], expected)
        rows.append(GoldenRow(
            q=" → ".join([*item.earlier_turns, question]), kind=item.kind, lang=item.lang, detected_lang=lang,
            expect_url=sorted(expected), rank=rank, top_urls=pages[:10], answered=answered, contains_ok=contains,
            confidence=round(confidence, 3), answer_precision=precision, category=item.category,
            retrieval_ms=round(retrieval_ms, 2), ttft_ms=round(ttft, 2), answer=answer[:400]))
        if on_progress:
            on_progress(number, len(items), question[:60])
    await answerer.drain()
    return rows


def run_golden(ctx: Context, tenant: Tenant, items: Sequence[GoldenItem], *, golden_name: str = "",
               provider_factory: Callable[[], Provider] | None = None, keep_rows: bool = False,
               params: FusionParams = DEFAULT_FUSION, on_progress: Progress | None = None) -> GoldenReport:
    """Ask every golden question: page retrieval metrics, then the full answer pipeline with the
    provider the server would use (an LLM if FRONTDESK_LLM_BASE_URL is set, else extractive)."""

    def production_provider() -> Provider:
        s = ctx.settings
        return make_provider(s.llm_base_url, s.llm_model, s.llm_api_key, s.llm_timeout)

    async def run():
        provider = (provider_factory or production_provider)()
        try:
            return await _golden_rows(ctx, tenant, items, provider, on_progress, params)
        finally:
            await provider.aclose()

    rows = asyncio.run(run())
    by_lang = {lang: _golden_metrics([r for r in rows if r.lang == lang])
               for lang in sorted({r.lang for r in rows if r.lang})}
    return GoldenReport(
        tenant=tenant.id, golden=golden_name, questions=len(rows),
        answerable=sum(r.kind == "answerable" for r in rows),
        unanswerable=sum(r.kind == "unanswerable" for r in rows),
        metrics=_golden_metrics(rows), by_lang=by_lang,
        by_category={category: _golden_metrics([r for r in rows if r.category == category])
                     for category in sorted({r.category for r in rows if r.category})},
        retrieval_ms=percentiles([r.retrieval_ms for r in rows]),
        ttft_ms=percentiles([r.ttft_ms for r in rows]),
        misses=[r for r in rows if _is_miss(r)], rows=rows if keep_rows else None)


_GOLDEN_LABELS = {
    "hit_at_1": "hit@1", "recall_at_5": "recall@5", "recall_at_10": "recall@10", "mrr": "MRR@10",
    "ndcg_at_10": "nDCG@10", "answer_contains": "answer contains", "answer_precision": "answer precision",
    "honest_refusal": "honest refusal (unanswerable)",
    "false_refusal": "false refusal (answerable)", "lang_detected": "question language detected",
}


def golden_markdown(report: GoldenReport) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    langs = list(report.by_lang)
    lines = [f"### {report.golden or 'golden set'} on tenant `{report.tenant}`", "",
             f"{report.questions} questions: {report.answerable} answerable, {report.unanswerable} unanswerable.", "",
             "| metric | all | " + " | ".join(langs) + " |",
             "| --- | --- | " + " | ".join("---" for _ in langs) + " |"]
    for key, label in _GOLDEN_LABELS.items():
        values = [report.metrics[key], *(report.by_lang[lang][key] for lang in langs)]
        lines.append(f"| {label} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    for name, stats in (("retrieval ms", report.retrieval_ms), ("time to first token ms", report.ttft_ms)):
        lines.append(f"| {name} p50 / p95 / p99 | {stats['p50']:.1f} / {stats['p95']:.1f} / {stats['p99']:.1f} |"
                     + " |" * len(langs))
    if report.misses:
        lines += ["", "Misses:", "", "| question | lang | kind | rank | answered | contains | confidence | expected | got |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for row in report.misses:
            lines.append(
                f"| {cell(row.q)} | {row.lang} | {row.kind} | {row.rank or '-'} | {'yes' if row.answered else 'no'} | "
                f"{'-' if row.contains_ok is None else 'yes' if row.contains_ok else 'no'} | {row.confidence:.2f} | "
                f"{cell(', '.join(row.expect_url)) or '-'} | {cell(', '.join(row.top_urls[:3]))} |")
    return "\n".join(lines)


__all__ = [
    "BeirData", "BeirReport", "GoldenItem", "GoldenReport", "GoldenRow", "IndexInfo", "QueryVectors",
    "beir_markdown", "beir_subset", "embed_queries", "golden_markdown", "index_beir", "load_beir",
    "load_golden", "mrr_at_k", "ndcg_at_k", "percentiles", "rank_pages", "recall_at_k", "run_beir",
    "golden_retrieval", "run_golden", "tenant_languages",
]
