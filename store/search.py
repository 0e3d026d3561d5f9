"""Hybrid search over one tenant file: vec0 kNN (cosine) + FTS5 bm25, fused by weighted RRF.

The visitor's text never reaches FTS5 as syntax: it is cut into word tokens, each one quoted,
and the quoted terms are OR-ed. Filters (URL prefix, kinds, language) apply on both sides.
Every call can return a trace of each stage (candidates, scores, timings) for debugging.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Literal

import apsw
import msgspec
import numpy as np

from store import text_index, vector_index
from store.connect import Row, all_rows, one_row, time_limit
from store.errors import BackendUnavailable, InvalidQuery
from store.pending import PendingChunk, has_pending, pending_among, pending_rows
from store.words import (
    MAX_QUERY_CHARS,
    TermCoverage,
    boilerplate_words,
    content_terms,
    coverage_threshold,
    fts_terms,
    or_query,
    words_of,
)

Mode = Literal["hybrid", "bm25", "dense"]
MODES = ("hybrid", "bm25", "dense")

class Filters(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    url_prefix: str | None = None
    kinds: list[str] | None = None
    lang: str | None = None


class Hit(msgspec.Struct, kw_only=True):
    chunk_id: int
    score: float
    """Fused score (RRF, plus boosts); comparable only within one search."""
    similarity: float
    """Cosine similarity of query and chunk vectors, 0..1-ish: an absolute confidence signal."""
    text: str
    kind: str
    lang: str
    url: str
    title: str
    heading_path: list[str]
    dense_rank: int | None = None
    bm25_rank: int | None = None
    bm25: float | None = None
    embedded: bool = True
    """False: the chunk waits for its vector (found by BM25 alone; `similarity` is 0.0 until the
    caller measures it, see app/answer.py)."""


class Trace(msgspec.Struct, kw_only=True):
    mode: str
    fts_query: str
    dense: list[tuple[int, float]]
    """(chunk id, cosine distance) in rank order."""
    bm25: list[tuple[int, float]]
    """(chunk id, bm25 score; lower is better in SQLite) in rank order."""
    fused: list[tuple[int, float]]
    timings_ms: dict[str, float]


class SearchResult(msgspec.Struct):
    hits: list[Hit]
    trace: Trace | None = None
    coverage: TermCoverage | None = None
    """With a trace: which of the query's words the site uses (what the answerer's refusal reads)."""


class FusionParams(msgspec.Struct, frozen=True, kw_only=True):
    # k=60 (the standard RRF constant) over the former 20: SciFact hybrid nDCG@10 is flat in k
    # (0.7171 at 20, 0.7167 at 60), the pypug golden set too (MRR 0.944 / 0.945), and the
    # multilingual fastapi golden set gains MRR 0.814 → 0.849 (en, es and de alike). A flatter
    # score curve also lets the relative language and page boosts reach deeper candidates.
    # Weights, title/heading weights and depth: best as they were (`python -m tests.bench eval`).
    rrf_k: float = 60.0
    bm25_weight: float = 0.6
    dense_weight: float = 0.4
    candidates: int = 50
    title_weight: float = 3.0
    heading_weight: float = 1.5


DEFAULT_FUSION = FusionParams()

#: While a crawl is embedding, the best BM25 candidates without vectors yet that are embedded at
#: query time (`embed_pending`) so they take their place on the dense side too.
PENDING_CANDIDATES = 8

EmbedPending = Callable[[list[PendingChunk]], np.ndarray]
"""Vectors (one row each, float32, unit length) for chunks that have none stored yet."""


def searched_in_memory(conn: apsw.Connection) -> bool:
    """Whether a search of this tenant now reads only what this process holds (its text and vector
    indexes, built for its current content) and a few postings and rows of the file: nothing to
    build, no scan of every vector. The answerer then searches on the event loop itself."""
    version = vector_index.content_version(conn)
    return vector_index.holds_current(conn, version) and text_index.holds_current(conn, version)


def chunk_count(conn: apsw.Connection) -> int:
    (count,) = one_row(conn.execute("SELECT count(*) FROM chunks"))
    return int(count)


def chunk_languages(conn: apsw.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT DISTINCT lang FROM chunks WHERE lang != ''")}


def _matches_at_least(conn: apsw.Connection, match: str, limit: int) -> bool:
    """Whether the FTS expression `match` matches `limit` chunks; stops reading there."""
    (found,) = one_row(conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM chunk_fts WHERE chunk_fts MATCH ? LIMIT ?)", (match, limit)
    ))
    return found >= limit


def term_coverage(conn: apsw.Connection, text: str, min_chunks: int | None = None,
                  also_known: str = "") -> TermCoverage:
    """Which of the question's content words occur in at least `min_chunks` chunks (by default
    `coverage_threshold` of the tenant's size), or in `also_known` (e.g. the visitor's page when
    it is not indexed yet).

    Stemmed like the index (porter), so 'installing' finds 'installed'. Each word costs one FTS
    lookup that stops after `min_chunks` rows.
    """
    if min_chunks is None:
        min_chunks = coverage_threshold(chunk_count(conn))
    terms = content_terms(text)
    extra = words_of(also_known)
    unknown = [t for t in terms if t not in extra
               and not _matches_at_least(conn, '"' + t.replace('"', '""') + '"', max(1, min_chunks))]
    share = 1.0 - len(unknown) / len(terms) if terms else 1.0
    return TermCoverage(terms=terms, unknown=unknown, share=share)


def document_counts(conn: apsw.Connection, terms: list[str], cap: int = 1000) -> dict[str, int]:
    """In how many chunks each term occurs (stemmed like the index), counted up to `cap`: the
    rarity that weighs a question's words (a word in every chunk says little)."""
    counts = {}
    for term in terms:
        (found,) = one_row(conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM chunk_fts WHERE chunk_fts MATCH ? LIMIT ?)",
            ('"' + term.replace('"', '""') + '"', cap)))
        counts[term] = int(found)
    return counts


#: How many segments the full-text index may have before `compact_text_index` merges them. Each
#: write transaction (a crawl writes one per page) adds a segment, and FTS5 merges a level's only
#: once 16 have piled up there: the indexed fixture sites kept 14–22, and every term lookup reads
#: each one's b-tree.
TEXT_INDEX_SEGMENTS = 4


def text_index_segments(conn: apsw.Connection) -> int:
    """How many b-tree segments the full-text index is made of (FTS5's %_idx table lists each)."""
    (count,) = one_row(conn.execute("SELECT count(DISTINCT segid) FROM chunk_fts_idx"))
    return int(count)


def compact_text_index(conn: apsw.Connection, most_segments: int = TEXT_INDEX_SEGMENTS) -> bool:
    """Merge the full-text index into one segment (FTS5's 'optimize') when it has more than
    `most_segments`; returns whether it did. Run in a write transaction after a crawl: what
    matches and how it ranks stay the same, the lookups get cheaper."""
    if text_index_segments(conn) <= most_segments:
        return False
    conn.execute("INSERT INTO chunk_fts(chunk_fts) VALUES('optimize')")
    return True


def warm_text_index(conn: apsw.Connection) -> int:
    """Hold the tenant's text index and its most frequent words' postings in this process
    (store/text_index.py `warm`), so that the first questions using those words do not read them
    on the request path. Off the request path: ~1 s at 10k chunks. Returns the rows read."""
    return text_index.warm(conn)


def is_repeated(conn: apsw.Connection, block: str, min_chunks: int, max_words: int = 10) -> bool:
    """Whether `block` (its first `max_words` words, as a phrase) occurs in at least `min_chunks`
    chunks: site boilerplate such as a translation notice at the top of every page."""
    words = boilerplate_words(block, max_words)
    if not words:
        return False
    return _matches_at_least(conn, '"' + " ".join(words).replace('"', '""') + '"', min_chunks)


def _prefix_range(prefix: str) -> tuple[str, str]:
    return prefix, prefix + "\U0010ffff"


def _filter_sql(filters: Filters | None, chunk_col: str) -> tuple[str, list]:
    if filters is None:
        return "", []
    sql, args = [], []
    if filters.kinds:
        sql.append(f"{chunk_col} IN (SELECT id FROM chunks WHERE kind IN ({','.join('?' * len(filters.kinds))}))")
        args += list(filters.kinds)
    if filters.lang:
        sql.append(f"{chunk_col} IN (SELECT id FROM chunks WHERE lang = ?)")
        args.append(filters.lang)
    if filters.url_prefix:
        low, high = _prefix_range(filters.url_prefix)
        sql.append(
            f"{chunk_col} IN (SELECT pc.chunk_id FROM page_chunks pc JOIN pages p ON p.id = pc.page_id "
            "WHERE p.url >= ? AND p.url < ? AND p.status = 'active')"
        )
        args += [low, high]
    return (" AND " + " AND ".join(sql)) if sql else "", args


def bm25_candidates(conn: apsw.Connection, text: str, limit: int, filters: Filters | None,
                    params: FusionParams = DEFAULT_FUSION) -> tuple[str, list[tuple[int, float]]]:
    """The `limit` best chunks by BM25 and their scores (lower is better, as FTS5 gives them).

    Without filters, and when the tenant's text index is current, ranked in memory by FTS5's
    formula (store/text_index.py: ~1 ms instead of 2–10 at 10k chunks once the words' postings are
    held); otherwise by FTS5 itself. On either path a term in at least half the chunks — FTS5
    weighs it 1e-6 (its IDF, log((N - n + 0.5) / (n + 0.5)), is clamped there), yet ranking every
    chunk it occurs in is most of the query's time — is left out whenever the other terms still
    fill the `limit`: the candidates are the same, their scores differ by under 1e-5 and only exact
    ties may come in another order."""
    terms = fts_terms(text)
    if not terms:
        return "", []
    index = text_index.index_for(conn) if filters is None else None
    if index is not None:
        common = _in_half_the_chunks(conn, terms) if len(terms) > 1 else set()
        found = index.top(conn, terms, (params.title_weight, params.heading_weight, 1.0), limit, common)
        if found is not None:  # None: the content changed while it read
            return or_query(found[0]), found[1]
    where, args = _filter_sql(filters, "chunk_fts.rowid")

    def best(query: str) -> list[tuple[int, float]]:
        rows: list[Row] = conn.execute(
            f"SELECT rowid, bm25(chunk_fts, ?, ?, 1.0) AS score FROM chunk_fts "
            f"WHERE chunk_fts MATCH ?{where} ORDER BY score LIMIT ?",
            [params.title_weight, params.heading_weight, query, *args, limit],
        ).fetchall()
        return [(int(r), float(s)) for r, s in rows]

    query = or_query(terms)
    common = _in_half_the_chunks(conn, terms) if len(terms) > 1 else set()
    ranking = [t for t in terms if t not in common]
    if ranking and len(ranking) < len(terms):
        pruned = or_query(ranking)
        rows = best(pruned)
        if len(rows) >= limit:
            return pruned, rows
    return query, best(query)


#: Per tenant file and content version: half its chunk count, and whether each term seen so far
#: occurs in at least that many chunks.
_common_terms: dict[tuple[str, str], tuple[int, dict[str, bool]]] = {}
_COMMON_TERMS_KEPT = 8192


def _in_half_the_chunks(conn: apsw.Connection, terms: list[str]) -> set[str]:
    """Which of `terms` occur in at least half the tenant's chunks (FTS5 then weighs them 1e-6),
    each counted once per content version: a common term's count reads half the index."""
    key = (conn.filename, vector_index.content_version(conn))
    entry = _common_terms.get(key)
    if entry is None:
        for stale in [k for k in _common_terms if k[0] == key[0]]:  # the file's older content
            _common_terms.pop(stale, None)
        if sum(len(known) for _, known in _common_terms.values()) >= _COMMON_TERMS_KEPT:
            _common_terms.clear()
        entry = _common_terms[key] = (-(-chunk_count(conn) // 2), {})
    half, known = entry
    for term in terms:
        if term not in known:
            known[term] = half > 0 and _matches_at_least(conn, or_query([term]), half)
    return {term for term in terms if known[term]}


def dense_candidates(conn: apsw.Connection, vector: np.ndarray, limit: int,
                     filters: Filters | None) -> list[tuple[int, float]]:
    if filters is None or not filters.url_prefix:
        index = vector_index.index_for(conn)
        if index is not None:  # a large tenant: the in-memory fast path
            found = index.search(vector, limit, filters.kinds if filters else None, filters.lang if filters else None)
            return found if index.exact else vector_index.refined(conn, vector, found)
    blob = np.asarray(vector, dtype=np.float32).tobytes()
    sql = "SELECT rowid, distance FROM chunk_vec WHERE embedding MATCH ? AND k = ?"
    args: list = [blob, limit]
    if filters is not None:
        # kind and lang are vec0 metadata columns: filtered inside the kNN scan itself.
        if filters.kinds:
            sql += f" AND kind IN ({','.join('?' * len(filters.kinds))})"
            args += list(filters.kinds)
        if filters.lang:
            sql += " AND lang = ?"
            args.append(filters.lang)
        if filters.url_prefix:
            low, high = _prefix_range(filters.url_prefix)
            sql += (" AND rowid IN (SELECT pc.chunk_id FROM page_chunks pc JOIN pages p ON p.id = pc.page_id "
                    "WHERE p.url >= ? AND p.url < ? AND p.status = 'active')")
            args += [low, high]
    return [(int(r), float(d)) for r, d in all_rows(conn.execute(sql, args))]


def side_weights(params: FusionParams, mode: Mode) -> tuple[float, float]:
    """(dense, bm25) weights of the fusion in `mode`: the params' in hybrid, 1 for the one side
    searched otherwise, 0 for a side not searched (store/pg/search.py fuses in SQL with them too)."""
    if mode == "hybrid":
        return params.dense_weight, params.bm25_weight
    return (1.0, 0.0) if mode == "dense" else (0.0, 1.0)


def fuse(dense: list[tuple[int, float]], bm25: list[tuple[int, float]], params: FusionParams,
         mode: Mode) -> dict[int, float]:
    """Weighted reciprocal rank fusion: score = sum of weight / (k + rank) over the sides."""
    scores: dict[int, float] = {}
    dense_weight, bm25_weight = side_weights(params, mode)
    sides = []
    if mode in ("hybrid", "dense"):
        sides.append((dense, dense_weight))
    if mode in ("hybrid", "bm25"):
        sides.append((bm25, bm25_weight))
    for candidates, weight in sides:
        for rank, (chunk_id, _) in enumerate(candidates, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (params.rrf_k + rank)
    return scores


def _pages_for_chunks(conn: apsw.Connection, chunk_ids: list[int], prefer_url: str | None,
                      url_prefix: str | None) -> dict[int, tuple[str, str, list[str]]]:
    """The page each chunk is shown from (url, title, heading path), in one statement; a chunk on
    no active page (under the prefix) is left out."""
    if not chunk_ids:
        return {}
    low, high = _prefix_range(url_prefix or "")
    marks = ",".join("?" * len(chunk_ids))
    rows: list[Row] = conn.execute(
        # CROSS JOIN keeps page_chunks (indexed by chunk) as the outer loop, not a scan of pages.
        "SELECT pc.chunk_id, p.url, p.title, pc.heading_path FROM page_chunks pc CROSS JOIN pages p "
        f"ON p.id = pc.page_id WHERE pc.chunk_id IN ({marks}) AND p.status = 'active' AND p.url >= ? AND p.url < ? "
        # A chunk on several pages (an untranslated page mirrored under /de/, a print view) is
        # shown from the visitor's page if it is one of them, else from the shortest URL: the
        # original, not the copy under a prefix.
        "ORDER BY pc.chunk_id, (p.url = ?) DESC, length(p.url), p.id",
        (*chunk_ids, low, high, prefer_url or ""),
    ).fetchall()
    pages: dict[int, tuple[str, str, list[str]]] = {}
    for chunk_id, url, title, heading_path in rows:
        if chunk_id not in pages:
            pages[chunk_id] = (url, title, json.loads(heading_path))
    return pages


def _pending_candidates(conn: apsw.Connection, text: str, filters: Filters | None,
                        params: FusionParams) -> list[PendingChunk]:
    """The best BM25 candidates that have no vector yet (at most `PENDING_CANDIDATES`)."""
    _, lexical = bm25_candidates(conn, text, PENDING_CANDIDATES, filters, params)
    waiting = pending_among(conn, [cid for cid, _ in lexical])
    return pending_rows(conn, [cid for cid, _ in lexical if cid in waiting])


def _measure(chunks: list[PendingChunk], vector: np.ndarray, embed_pending: EmbedPending) -> dict[int, float]:
    """Chunk id → cosine similarity to the query, from vectors made now."""
    if not chunks:
        return {}
    vectors = np.asarray(embed_pending(chunks), dtype=np.float32)
    query = np.asarray(vector, dtype=np.float32)
    return {chunk.id: float(v @ query) for chunk, v in zip(chunks, vectors, strict=True)}


def cosine_similarities(conn: apsw.Connection, vector: np.ndarray, chunk_ids: list[int]) -> dict[int, float]:
    """Cosine similarity of the query vector to each stored chunk vector (chunk id → similarity).
    A chunk without a vector yet (pending) is left out of the result."""
    if not chunk_ids:
        return {}
    index = vector_index.index_for(conn)
    if index is not None:  # vec0 answers `rowid IN (...)` by scanning: at 100k chunks, ~100 ms
        return index.similarities(vector, chunk_ids)
    marks = ",".join("?" * len(chunk_ids))
    rows: list[Row] = conn.execute(f"SELECT rowid, embedding FROM chunk_vec WHERE rowid IN ({marks})", chunk_ids).fetchall()
    query = np.asarray(vector, dtype=np.float32)
    return {int(r): float(np.frombuffer(blob, dtype=np.float32) @ query) for r, blob in rows}


def _boost_page(conn: apsw.Connection, fused: dict[int, float], page_url: str, boost: float,
                vector: np.ndarray | None) -> None:
    """Prefer the page the visitor is on: "how do I install it?" asked on a page is about that page.

    The page's best chunks are scored on the fused scale by how similar they are to the query
    compared with the best site-wide candidate, then lifted by `boost` x the top score: a page
    about as relevant as the best hit wins; an unrelated page does not bury a real answer.
    """
    on_page = [r[0] for r in conn.execute(
        "SELECT pc.chunk_id FROM page_chunks pc JOIN pages p ON p.id = pc.page_id WHERE p.url = ? AND p.status = 'active'",
        (page_url,),
    )]
    if not on_page or not fused:
        return
    top = max(fused.values())
    if vector is not None:
        leaders = [cid for cid, _ in sorted(fused.items(), key=lambda item: -item[1])[:5]]
        best = max(cosine_similarities(conn, vector, leaders).values(), default=0.0)
        similar = sorted(cosine_similarities(conn, vector, on_page[:500]).items(), key=lambda item: -item[1])[:3]
        for chunk_id, similarity in similar:
            estimate = top * max(0.0, similarity) / best if best > 0 else 0.0
            fused[chunk_id] = max(fused.get(chunk_id, 0.0), estimate)
    for chunk_id in fused.keys() & set(on_page):
        fused[chunk_id] += boost * top


def search(
    conn: apsw.Connection,
    text: str,
    vector: np.ndarray | None,
    *,
    k: int = 10,
    mode: Mode = "hybrid",
    filters: Filters | None = None,
    params: FusionParams = DEFAULT_FUSION,
    boost_url: str | None = None,
    boost: float = 0.0,
    prefer_lang: str | None = None,
    lang_boost: float = 0.0,
    trace: bool = False,
    time_limit_s: float = 2.0,
    embed_pending: EmbedPending | None = None,
) -> SearchResult:
    """Search one tenant. `vector` is the query embedding (required unless mode is bm25).

    Chunks a running crawl wrote before their vectors (pending) are found by BM25 alone; with
    `embed_pending`, a hybrid search embeds the best few of them now and ranks them on the dense
    side too, as if their vectors were stored (without, they rank by BM25 and get similarity 0)."""
    if mode not in MODES:
        raise InvalidQuery(f"unknown search mode {mode!r}; use one of {', '.join(MODES)}")
    if k < 1 or k > 1000:
        raise InvalidQuery("k must be between 1 and 1000")
    if not isinstance(text, str):
        raise InvalidQuery("the query must be text")
    text = text[:MAX_QUERY_CHARS]
    if mode != "bm25" and vector is None:
        raise InvalidQuery(f"{mode} search needs a query vector")
    limit = max(params.candidates, k)
    if mode != "bm25" and (filters is None or not filters.url_prefix):
        vector_index.index_for(conn)  # a (re)build after a content change is not the query's time
    try:
        measured: dict[int, float] = {}
        if embed_pending is not None and mode == "hybrid" and has_pending(conn):
            assert vector is not None
            with time_limit(conn, time_limit_s):
                waiting = _pending_candidates(conn, text, filters, params)
            measured = _measure(waiting, vector, embed_pending)  # the model's time is not the query's
        with time_limit(conn, time_limit_s):
            return _search(conn, text, vector, k=k, mode=mode, filters=filters, params=params, boost_url=boost_url,
                           boost=boost, prefer_lang=prefer_lang, lang_boost=lang_boost, trace=trace, limit=limit,
                           measured=measured)
    except apsw.InterruptError:
        raise BackendUnavailable(f"the search took longer than {time_limit_s:g} s; please try again") from None


def _search(conn: apsw.Connection, text: str, vector: np.ndarray | None, *, k: int, mode: Mode,
            filters: Filters | None, params: FusionParams, boost_url: str | None, boost: float,
            prefer_lang: str | None, lang_boost: float, trace: bool, limit: int,
            measured: dict[int, float] | None = None) -> SearchResult:
    timings: dict[str, float] = {}
    started = time.perf_counter()
    dense: list[tuple[int, float]] = []
    beside: Future[tuple[list[tuple[int, float]], float]] | None = None
    if mode != "bm25":
        assert vector is not None  # search() refused a dense or hybrid search without one
        if mode == "hybrid" and (filters is None or not filters.url_prefix):
            # The held vectors are scanned on another thread while this one ranks the lexical side.
            beside = vector_index.scan_beside(conn, vector, limit, filters.kinds if filters else None,
                                              filters.lang if filters else None)
        if beside is None:
            dense = dense_candidates(conn, vector, limit, filters)
    timings["dense"] = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    query = ""
    lexical: list[tuple[int, float]] = []
    if mode != "dense":
        query, lexical = bm25_candidates(conn, text, limit, filters, params)
    timings["bm25"] = (time.perf_counter() - started) * 1000
    if beside is not None:
        dense, timings["dense"] = beside.result()
        refining = time.perf_counter()
        assert vector is not None  # a scan is started only with one
        dense = vector_index.refined(conn, vector, dense)  # on this thread: the connection is this thread's
        timings["dense"] += (time.perf_counter() - refining) * 1000
    measured = measured or {}
    if measured:  # pending chunks measured at query time take their place among the dense candidates
        dense = sorted([*dense, *((cid, 1.0 - sim) for cid, sim in measured.items())], key=lambda item: item[1])[:limit]

    started = time.perf_counter()
    fused = fuse(dense, lexical, params, mode)
    if boost and boost_url:
        _boost_page(conn, fused, boost_url, boost, vector)
    ranked = sorted(fused.items(), key=lambda item: -item[1])
    dense_rank = {cid: i for i, (cid, _) in enumerate(dense, start=1)}
    bm25_rank = {cid: i for i, (cid, _) in enumerate(lexical, start=1)}
    bm25_score = dict(lexical)

    window = ranked[: k * 3 if (prefer_lang and lang_boost) else k]
    ids = [cid for cid, _ in window]
    rows = {}
    if ids:
        marks = ",".join("?" * len(ids))
        for cid, chunk_text, kind, lang in conn.execute(
            f"SELECT id, text, kind, lang FROM chunks WHERE id IN ({marks})", ids
        ):
            rows[cid] = (chunk_text, kind, lang)
    similarity = (
        {cid: 1.0 - dist for cid, dist in dense}
        if vector is None
        else cosine_similarities(conn, vector, ids)
    )
    # Chunks written before their vectors (a crawl in progress): BM25 ranks them, the dense side
    # cannot; they are marked so the caller can measure their similarity another way.
    pending = pending_among(conn, ids) if ids else set()
    similarity.update({cid: s for cid, s in measured.items() if cid in pending})
    pages = _pages_for_chunks(conn, [cid for cid in ids if cid in rows], boost_url,
                              filters.url_prefix if filters else None)
    hits: list[Hit] = []
    for cid, score in window:
        page = pages.get(cid)
        if cid not in rows or page is None:
            continue
        chunk_text, kind, lang = rows[cid]
        if prefer_lang and lang_boost and lang == prefer_lang:
            score += lang_boost * (ranked[0][1] if ranked else 0.0)
        hits.append(
            Hit(
                chunk_id=cid, score=score, similarity=similarity.get(cid, 0.0), text=chunk_text,
                kind=kind, lang=lang, url=page[0], title=page[1], heading_path=page[2],
                dense_rank=dense_rank.get(cid), bm25_rank=bm25_rank.get(cid), bm25=bm25_score.get(cid),
                embedded=cid not in pending,
            )
        )
    hits.sort(key=lambda h: -h.score)
    hits = hits[:k]
    timings["fuse"] = (time.perf_counter() - started) * 1000
    result_trace = None
    if trace:
        result_trace = Trace(mode=mode, fts_query=query, dense=dense, bm25=lexical,
                             fused=ranked[: max(k, 20)], timings_ms=timings)
    return SearchResult(hits=hits, trace=result_trace)
