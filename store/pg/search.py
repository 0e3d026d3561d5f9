"""Hybrid search over one tenant's schema: pgvector HNSW (cosine) + full text (`tsvector` per
chunk language), fused by the same weighted RRF as store/search.py into the same `Hit`s.

The lexical score is BM25 as SQLite's FTS5 computes it (k1 1.2, b 0.75, a word's occurrences
weighted by title / heading / text), built from PostgreSQL's parts: the words' document
frequencies from one GIN lookup each, then, for the chunks whose words have the highest summed
IDF (`COARSE` x the candidates, and the chunks tied with the last of them, up to `TIE_ROOM` x;
reading every matching chunk's tsvector cost ~0.5 s at 100k chunks), each query word's weighted
frequency read from its tsvector (`unnest`) and the chunk's length in words; the average length
is the candidates'. On the SciFact
slice (`python -m tests.bench store --backend postgres`) that took BM25-only nDCG@10 from 0.712
(per-word `ts_rank` x IDF) to 0.780 (SQLite 0.798) and hybrid from 0.778 to 0.811 (SQLite 0.813).
FTS5's own IDF (without the 1 +) measured the same within 0.004.

One statement, one round trip, fetches everything fusion needs: the dense and the lexical
candidates and each candidate's cosine similarity (and, when the visitor's page is boosted, that
page's chunks), and the text and shown page of the chunks that can make the fused window (the
window by the same RRF computed in SQL, and the visitor's page's best chunks); reading them for
every candidate cost ~5 ms a search on the pypug fixture. Fusion, boosts and ordering are then
store/search.py's own functions and rules, so the two backends rank alike; a chunk the window
holds that the statement did not read (one ranked on a vector made at query time while a crawl
embeds, or an exact tie at the window's edge) is read by a second statement (`timings_ms`
"details" in a trace).
"""

from __future__ import annotations

import json
import time

import numpy as np
from psycopg import sql

from store.errors import InvalidQuery
from store.pg.connect import PgConnection
from store.pg.nul import strip_nul
from store.pg.pending import pending_rows
from store.pg.textsearch import query_words
from store.pg.vectors import query_to_pg
from store.search import (
    DEFAULT_FUSION,
    MODES,
    PENDING_CANDIDATES,
    EmbedPending,
    Filters,
    FusionParams,
    Hit,
    Mode,
    SearchResult,
    Trace,
    fuse,
    side_weights,
)
from store.words import (
    MAX_QUERY_CHARS,
    TermCoverage,
    boilerplate_words,
    content_terms,
    coverage_from_counts,
    coverage_threshold,
)

#: The lexical side ranks COARSE x candidates by their words' IDF alone, then those by BM25. 2
#: and 4 gave the same SciFact nDCG@10 (0.780 BM25 only, 0.811 hybrid); 2 reads half the tsvectors.
COARSE = 2
#: Chunks that tie with the last of the COARSE x candidates (they have the same query words) go on
#: to BM25 with it, up to this many x the candidates: cut by chunk id inside a tie, the German
#: "Datei hochladen mit FastAPI" lost its page (BM25 rank 3 once the tie is kept; fastapi golden
#: set recall@5 0.948 -> 0.966, SQLite's). 5 and 10 gave the same golden sets (444 questions
#: pooled, within a question); at 10k synthetic chunks 10 read more tsvectors for little (hybrid
#: store-only p50 ~45 against ~37 ms, two interleaved rounds; 2, no room: ~32 ms).
TIE_ROOM = 5
#: How many of the visitor's page's chunks are considered for the page boost (as SQLite).
PAGE_CHUNKS = 500


def _filters(filters: Filters | None) -> tuple[sql.Composable, dict[str, object]]:
    """Conditions on `c` (chunks) for the filters, shared by both sides."""
    parts: list[sql.Composable] = []
    args: dict[str, object] = {}
    if filters is not None:
        if filters.kinds:
            parts.append(sql.SQL("c.kind = ANY(%(kinds)s)"))
            args["kinds"] = list(filters.kinds)
        if filters.lang:
            parts.append(sql.SQL("c.lang = %(lang)s"))
            args["lang"] = filters.lang
        if filters.url_prefix:
            parts.append(sql.SQL(
                "EXISTS (SELECT 1 FROM page_chunks pc JOIN pages p ON p.id = pc.page_id "
                "WHERE pc.chunk_id = c.id AND p.status = 'active' AND starts_with(p.url, %(prefix)s))"))
            args["prefix"] = filters.url_prefix
    if not parts:
        return sql.SQL(""), args
    return sql.SQL(" AND ") + sql.SQL(" AND ").join(parts), args


_DENSE = """
dense AS MATERIALIZED (
    SELECT c.id, c.embedding <=> %(vector)s::vector AS distance FROM chunks c
    WHERE true{filters} ORDER BY c.embedding <=> %(vector)s::vector LIMIT %(limit)s)"""
_LEXICAL = """
terms AS MATERIALIZED (
    SELECT k.cfg, w.word, to_tsquery(k.cfg, w.word) AS query,
           ARRAY(SELECT v.lexeme FROM unnest(to_tsvector(k.cfg, w.word)) AS v) AS lexemes
    FROM chunk_configs k CROSS JOIN unnest(%(words)s::text[]) AS w(word)),
matches AS MATERIALIZED (
    -- One GIN lookup per (configuration, word), ids only. OFFSET 0 keeps the subquery a
    -- parameterised index scan: flattened, the planner joined on ts_config and tested @@ on
    -- every chunk (4x slower).
    SELECT t.word, t.cfg, m.id FROM terms t CROSS JOIN LATERAL (
        SELECT c.id FROM chunks c WHERE c.tsv @@ t.query AND c.ts_config = t.cfg{filters} OFFSET 0) AS m
    WHERE numnode(t.query) > 0),
corpus_size AS (
    SELECT CASE WHEN reltuples > 0 THEN reltuples ELSE (SELECT count(*) FROM chunks) END AS n
    FROM pg_class WHERE oid = 'chunks'::regclass),
idf AS (
    SELECT word, cfg, ln(1 + (greatest(s.n - count(*), 0) + 0.5) / (count(*) + 0.5)) AS idf
    FROM matches CROSS JOIN corpus_size s GROUP BY word, cfg, s.n),
scored AS MATERIALIZED (
    SELECT m.id, sum(i.idf) AS s FROM matches m JOIN idf i USING (word, cfg) GROUP BY m.id),
coarse AS MATERIALIZED (
    -- First by the IDF of the words a chunk has (no tsvector read), then the best of those by
    -- BM25: reading a chunk's tsvector is too dear for every match. The cut never falls inside a
    -- tie (chunks with the same words): those all go on to BM25, up to TIE_ROOM x the candidates.
    SELECT id FROM scored
    WHERE s >= coalesce((SELECT s FROM scored ORDER BY s DESC OFFSET %(coarse)s - 1 LIMIT 1), 0)
    ORDER BY s DESC, id LIMIT %(coarse_most)s),
lens AS MATERIALIZED (
    -- A chunk's length in words as FTS5 counts it (stored: migration 4), and below its average
    -- over the candidates.
    SELECT co.id, c.tsv, c.words AS dl
    FROM coarse co JOIN chunks c ON c.id = co.id),
avgdl AS MATERIALIZED (SELECT greatest(avg(dl), 1) AS a FROM lens),
frequencies AS MATERIALIZED (
    -- Each candidate's tsvector read once: the weighted occurrences of every query lexeme in it
    -- (a word's frequency counts each occurrence at its part's weight: title 3, heading 1.5,
    -- text 1, the tsvector's A, B and D).
    SELECT l.id, u.lexeme, sum(CASE x.w WHEN 'A' THEN 3.0 WHEN 'B' THEN 1.5 ELSE 1.0 END) AS tf
    FROM lens l CROSS JOIN LATERAL unnest(l.tsv) AS u CROSS JOIN LATERAL unnest(u.weights) AS x(w)
    WHERE u.lexeme = ANY(ARRAY(SELECT DISTINCT unnest(lexemes) FROM terms))
    GROUP BY l.id, u.lexeme),
per_word AS (
    SELECT m.id, m.word, m.cfg, coalesce(sum(q.tf), 0) AS tf
    FROM lens l JOIN matches m ON m.id = l.id JOIN terms t USING (word, cfg)
    LEFT JOIN frequencies q ON q.id = m.id AND q.lexeme = ANY(t.lexemes)
    GROUP BY m.id, m.word, m.cfg),
lexical AS MATERIALIZED (
    -- BM25 (k1 1.2, b 0.75) as FTS5 computes it.
    SELECT w.id, sum(i.idf * w.tf * 2.2 / (w.tf + 1.2 * (0.25 + 0.75 * l.dl / a.a)))::float4 AS rank
    FROM per_word w JOIN lens l ON l.id = w.id JOIN idf i USING (word, cfg) CROSS JOIN avgdl a
    GROUP BY w.id ORDER BY rank DESC, w.id LIMIT %(limit)s)"""
_ON_PAGE = """
on_page AS (
    SELECT pc.chunk_id AS id FROM page_chunks pc JOIN pages p ON p.id = pc.page_id
    WHERE p.url = %(boost_url)s AND p.status = 'active' ORDER BY pc.position LIMIT %(page_chunks)s)"""
_EMPTY = {"dense": "dense AS (SELECT NULL::bigint AS id, NULL::float8 AS distance WHERE false)",
          "lexical": "lexical AS (SELECT NULL::bigint AS id, NULL::float4 AS rank WHERE false)",
          "on_page": "on_page AS (SELECT NULL::bigint AS id WHERE false)"}
_CANDIDATES = """,
cand AS MATERIALIZED (
    SELECT c.id, d.distance, l.rank, {similarity} AS similarity, (o.id IS NOT NULL) AS on_page,
           c.embedding IS NOT NULL AS embedded
    FROM (SELECT id FROM dense UNION SELECT id FROM lexical UNION SELECT id FROM on_page) AS u
    JOIN chunks c ON c.id = u.id
    LEFT JOIN dense d ON d.id = c.id
    LEFT JOIN lexical l ON l.id = c.id
    LEFT JOIN on_page o ON o.id = c.id),
fused AS MATERIALIZED (
    -- store/search.py `fuse` (weighted RRF) in SQL, only to choose whose text and page to read in
    -- this round trip: the ranking itself is fused again in Python by the shared code.
    SELECT id, on_page, similarity,
        CASE WHEN distance IS NULL THEN 0 ELSE %(dense_weight)s / (%(rrf_k)s + row_number() OVER (
            PARTITION BY distance IS NULL ORDER BY distance, id)) END
      + CASE WHEN rank IS NULL THEN 0 ELSE %(bm25_weight)s / (%(rrf_k)s + row_number() OVER (
            PARTITION BY rank IS NULL ORDER BY rank DESC, id)) END AS score
    FROM cand),
shown AS (
    -- The fused window, the visitor's page's best fused chunks (a page boost lifts them all
    -- alike) and its three most similar (store/search.py `_boost_page` scores those).
    (SELECT id FROM fused WHERE score > 0 ORDER BY score DESC, id LIMIT %(window)s)
    UNION (SELECT id FROM fused WHERE on_page AND score > 0 ORDER BY score DESC, id LIMIT %(window)s)
    UNION (SELECT id FROM fused WHERE on_page ORDER BY similarity DESC NULLS LAST, id LIMIT 3))
SELECT c.id, c.distance, c.rank, c.similarity, c.on_page, c.embedded, s.id IS NOT NULL AS read,
       t.text, t.kind, t.lang, t.url, t.title, t.heading_path
FROM cand c LEFT JOIN shown s ON s.id = c.id
LEFT JOIN LATERAL ({details} AND s.id IS NOT NULL AND ch.id = s.id) AS t ON true"""
#: The text of shown hits and the page each is shown from, as store/search.py: the visitor's page
#: if the chunk is on it, else the shortest URL (the original, not a mirror under a prefix). Read
#: in the candidates' statement for the chunks that can be shown (`shown`), so a search is one
#: round trip; on its own (`_details`) only for a chunk the fused window holds beyond those (one
#: ranked on a vector made at query time while a crawl embeds).
_DETAILS = """
SELECT ch.id, ch.text, ch.kind, ch.lang, page.url, page.title, page.heading_path
FROM chunks ch CROSS JOIN LATERAL (
    SELECT p.url, p.title, pc.heading_path FROM page_chunks pc CROSS JOIN LATERAL (
        -- OFFSET 0: each page by its key; flattened, the planner hashed every page per chunk.
        SELECT p.url, p.title, p.id FROM pages p
        WHERE p.id = pc.page_id AND p.status = 'active' AND starts_with(p.url, %(shown_prefix)s) OFFSET 0) AS p
    WHERE pc.chunk_id = ch.id
    ORDER BY (p.url = %(boost_url)s) DESC, length(p.url), p.id LIMIT 1
) AS page
WHERE true"""


def search(
    conn: PgConnection,
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
    """Search one tenant (a connection from PgTenants.read). Arguments and result as
    store.search.search: `time_limit_s` bounds the search's statements (then BackendUnavailable),
    and with `embed_pending` the best BM25 candidates a running crawl has not embedded yet are
    embedded now and ranked on the dense side too."""
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
    started = time.perf_counter()
    where, args = _filters(filters)
    words = query_words(text) if mode != "dense" else []
    boosting = bool(boost and boost_url)
    ctes = [
        sql.SQL(_DENSE).format(filters=where) if mode != "bm25" else sql.SQL(_EMPTY["dense"]),
        sql.SQL(_LEXICAL).format(filters=where) if words else sql.SQL(_EMPTY["lexical"]),
        sql.SQL(_ON_PAGE) if boosting else sql.SQL(_EMPTY["on_page"]),
    ]
    similarity = sql.SQL("1 - (c.embedding <=> %(vector)s::vector)" if vector is not None else "NULL::float8")
    query = sql.SQL("WITH ") + sql.SQL(",").join(ctes) + sql.SQL(_CANDIDATES).format(
        similarity=similarity, details=sql.SQL(_DETAILS))
    window_size = k * 3 if (prefer_lang and lang_boost) else k
    shown_prefix = (filters.url_prefix if filters else None) or ""
    dense_weight, bm25_weight = side_weights(params, mode)
    args.update(limit=limit, coarse=COARSE * limit, coarse_most=TIE_ROOM * limit, words=words,
                boost_url=boost_url or "", page_chunks=PAGE_CHUNKS, window=window_size,
                rrf_k=float(params.rrf_k), shown_prefix=shown_prefix, dense_weight=float(dense_weight),
                bm25_weight=float(bm25_weight))
    if vector is not None:
        args["vector"] = query_to_pg(vector)
    # The visitor's page URL and the filters come from outside; PostgreSQL text cannot hold U+0000
    # (psycopg refuses it), and stored text has none (store/pg/nul.py), so it is taken out here too.
    args = {key: strip_nul(value) if isinstance(value, str) else value for key, value in args.items()}
    with conn.pipeline():
        # HNSW returns at most ef_search rows: ask for the candidate depth; with filters, keep
        # scanning the graph until enough rows pass them (pgvector 0.8 iterative scans).
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', %s, true), "
                     "set_config('statement_timeout', %s, true)",
                     (str(max(40, limit)), "relaxed_order" if where.as_string(None) else "off",
                      str(max(1, int(time_limit_s * 1000)))))
        rows = conn.execute(query, args).fetchall()
    fetched_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()

    dense = [(int(r[0]), float(r[1])) for r in rows if r[1] is not None]
    ranked_lexical = sorted(((int(r[0]), float(r[2])) for r in rows if r[2] is not None),
                            key=lambda item: (-item[1], item[0]))
    # Reported as SQLite reports bm25: lower is better.
    lexical = [(cid, -rank) for cid, rank in ranked_lexical]
    similarities = {int(r[0]): float(r[3]) for r in rows if r[3] is not None}
    embedded = {int(r[0]): bool(r[5]) for r in rows}
    if embed_pending is not None and mode == "hybrid" and vector is not None:
        waiting = [cid for cid, _ in ranked_lexical[:PENDING_CANDIDATES] if not embedded[cid]]
        for cid, measured in _measure(pending_rows(conn, waiting), vector, embed_pending).items():
            dense.append((cid, 1.0 - measured))  # as the dense side's cosine distance
            similarities[cid] = measured
    dense.sort(key=lambda item: (item[1], item[0]))
    on_page = [int(r[0]) for r in rows if r[4]]

    fused = fuse(dense, lexical, params, mode)
    if boosting and on_page and fused:
        _boost_page(fused, on_page, similarities, boost, vector is not None)
    ranked = sorted(fused.items(), key=lambda item: -item[1])
    dense_rank = {cid: i for i, (cid, _) in enumerate(dense, start=1)}
    bm25_rank = {cid: i for i, (cid, _) in enumerate(lexical, start=1)}
    bm25_score = dict(lexical)
    window = ranked[:window_size]
    # Read in the statement above: each shown candidate's text and page (none: on no active page).
    details = {int(r[0]): tuple(r[7:]) for r in rows if r[6] and r[10] is not None}
    read = {int(r[0]) for r in rows if r[6]}
    read_again_ms = None
    if unread := [cid for cid, _ in window if cid not in read]:
        read_at = time.perf_counter()
        details.update(_details(conn, unread, boost_url, shown_prefix))
        read_again_ms = (time.perf_counter() - read_at) * 1000
    hits: list[Hit] = []
    for cid, score in window:
        if cid not in details:  # on no active page (within the URL filter): not shown, as in SQLite
            continue
        chunk_text, kind, lang, url, title, heading_path = details[cid]
        if prefer_lang and lang_boost and lang == prefer_lang:
            score += lang_boost * (ranked[0][1] if ranked else 0.0)
        hits.append(Hit(
            chunk_id=cid, score=score, similarity=similarities.get(cid, 0.0), text=chunk_text, kind=kind,
            lang=lang, url=url, title=title, heading_path=json.loads(heading_path),
            dense_rank=dense_rank.get(cid), bm25_rank=bm25_rank.get(cid), bm25=bm25_score.get(cid),
            embedded=embedded[cid],
        ))
    hits.sort(key=lambda h: -h.score)
    hits = hits[:k]
    result_trace = None
    if trace:
        timings = {"query": round(fetched_ms, 3), "fuse": round((time.perf_counter() - started) * 1000, 3)}
        if read_again_ms is not None:  # a second round trip: shown chunks the statement did not read
            timings["details"] = round(read_again_ms, 3)
        result_trace = Trace(mode=mode, fts_query=" | ".join(words), dense=dense, bm25=lexical,
                             fused=ranked[: max(k, 20)], timings_ms=timings)
    return SearchResult(hits=hits, trace=result_trace)


def _details(conn: PgConnection, ids: list[int], prefer_url: str | None,
             shown_prefix: str) -> dict[int, tuple[str, str, str, str, str, str]]:
    """Chunk id → (text, kind, lang, url, title, heading path) for the chunks on an active page."""
    rows = conn.execute(_DETAILS + " AND ch.id = ANY(%(ids)s)",
                        {"ids": ids, "boost_url": strip_nul(prefer_url or ""),
                         "shown_prefix": strip_nul(shown_prefix)}).fetchall()
    return {int(r[0]): r[1:] for r in rows}


def _measure(chunks, vector: np.ndarray, embed_pending: EmbedPending) -> dict[int, float]:
    """Chunk id → cosine similarity to the query, from vectors made now (store/search.py)."""
    if not chunks:
        return {}
    vectors = np.asarray(embed_pending(chunks), dtype=np.float32)
    query = np.asarray(vector, dtype=np.float32)
    return {chunk.id: float(v @ query) for chunk, v in zip(chunks, vectors, strict=True)}


def _boost_page(fused: dict[int, float], on_page: list[int], similarities: dict[int, float], boost: float,
                have_vector: bool) -> None:
    """store/search.py `_boost_page` on the similarities already fetched: the visitor's page's
    best chunks scored against the best site-wide candidates, then lifted by `boost` x the top."""
    top = max(fused.values())
    if have_vector:
        leaders = [cid for cid, _ in sorted(fused.items(), key=lambda item: -item[1])[:5]]
        best = max((similarities.get(cid, 0.0) for cid in leaders), default=0.0)
        similar = sorted(((cid, similarities.get(cid, 0.0)) for cid in on_page), key=lambda item: -item[1])[:3]
        for chunk_id, similarity in similar:
            estimate = top * max(0.0, similarity) / best if best > 0 else 0.0
            fused[chunk_id] = max(fused.get(chunk_id, 0.0), estimate)
    for chunk_id in fused.keys() & set(on_page):
        fused[chunk_id] += boost * top


_COUNTS = """
SELECT w.term, (
    SELECT count(*) FROM (
        SELECT 1 FROM chunk_configs k CROSS JOIN LATERAL (
            SELECT 1 FROM chunks c WHERE c.tsv @@ phraseto_tsquery(k.cfg, w.term) AND c.ts_config = k.cfg
            LIMIT %(cap)s OFFSET 0) AS hit
        LIMIT %(cap)s) AS found)
FROM unnest(%(terms)s::text[]) AS w(term)"""


def document_counts(conn: PgConnection, terms: list[str], cap: int = 1000) -> dict[str, int]:
    """As store.search.document_counts: in how many chunks each term occurs, stemmed as each
    chunk is, counted up to `cap`; one statement for all the terms."""
    if not terms:
        return {}
    counts = {term: 0 for term in terms}
    for term, found in conn.execute(_COUNTS, {"terms": list(terms), "cap": cap}):
        counts[term] = int(found)
    return counts


def searched_in_memory(conn: PgConnection) -> bool:
    """As store.search.searched_in_memory: never on PostgreSQL, where every search waits on the
    database."""
    return False


def chunk_count(conn: PgConnection) -> int:
    row = conn.execute("SELECT count(*) FROM chunks").fetchone()
    return int(row[0]) if row else 0


def term_coverage(conn: PgConnection, text: str, min_chunks: int | None = None,
                  also_known: str = "") -> TermCoverage:
    """As store.search.term_coverage: which of the question's content words the site uses in at
    least `min_chunks` chunks (by default `coverage_threshold` of the tenant's size)."""
    if min_chunks is None:
        min_chunks = coverage_threshold(chunk_count(conn))
    floor = max(1, min_chunks)
    return coverage_from_counts(text, document_counts(conn, content_terms(text), cap=floor), floor, also_known)


def chunk_languages(conn: PgConnection) -> set[str]:
    """The languages the tenant's chunks are in (not the unknown, '')."""
    return {r[0] for r in conn.execute("SELECT DISTINCT lang FROM chunks WHERE lang <> ''")}


_REPEATED = """
SELECT count(*) FROM (
    SELECT 1 FROM chunk_configs k CROSS JOIN LATERAL (
        SELECT 1 FROM chunks c WHERE c.tsv @@ phraseto_tsquery(k.cfg, %(phrase)s) AND c.ts_config = k.cfg
        LIMIT %(enough)s OFFSET 0) AS hit
    -- A phrase of stop words alone is no query in that configuration: it matches nothing.
    WHERE numnode(phraseto_tsquery(k.cfg, %(phrase)s)) > 0
    LIMIT %(enough)s) AS found"""


def compact_text_index(conn: PgConnection, most_segments: int = 0) -> bool:
    """As store.search.compact_text_index, with nothing to do: the GIN index over `chunks.tsv` is
    one structure, and what it defers is autovacuum's to merge. Returns False."""
    return False


def warm_text_index(conn: PgConnection) -> int:
    """As store.search.warm_text_index, with nothing to do: PostgreSQL ranks in the database and
    keeps its own buffers. Returns 0."""
    return 0


def is_repeated(conn: PgConnection, block: str, min_chunks: int, max_words: int = 10) -> bool:
    """As store.search.is_repeated: whether `block` (its first `max_words` words, as a phrase)
    occurs in at least `min_chunks` chunks, stemmed as each chunk is; stops counting there."""
    words = boilerplate_words(block, max_words)
    if not words:
        return False
    enough = max(min_chunks, 0)  # LIMIT 0 counts none, which meets a min_chunks of 0 or less, as on SQLite
    row = conn.execute(_REPEATED, {"phrase": " ".join(words), "enough": enough}).fetchone()
    return row is not None and int(row[0]) >= min_chunks
