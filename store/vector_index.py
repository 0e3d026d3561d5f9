"""The dense side in memory: a tenant's vectors held as float32 for an exact scan (tenants up to
``EXACT_MAX_CHUNKS``), or, for larger ones, a sign-bit index for candidates re-ranked with int8
copies. vec0 stays the store, and the path when no index is held.

Why: vec0 (sqlite-vec 0.1.9) scans every vector on one core and answers `rowid IN (...)` by
scanning too: ~5 ms for the top 60 at 10k chunks, ~55 ms at 100k, and the answerer asks for the
similarity of a few dozen passages several times a question. numpy's matrix-vector product over
the same float32 vectors gives the same ranking in ~1.8 ms at 10k on one core (~10 ms at 50k);
above that, Hamming distance over sign bits costs ~0.6 ms for 100k, the nearest 15%
(``POOL_SHARE``) is re-scored with int8 vectors (cosine within ~0.01 of float32), and the nearest
20 of those (``REFINE``) with their float32 vectors read back from vec0 (``refine``).
Memory: 1536 bytes a chunk exact (15 MB per 10k), 432 bytes a chunk above (~43 MB per 100k).
Built once per content generation of a tenant (read back from vec0, ~0.14 s per 10k) and kept
within a per-process budget (``configure``), least recently used out first. A hybrid search scans
a sign-bit index on a thread of its own while the lexical side ranks (``scan_beside``); an exact
scan stays inline.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import apsw
import numpy as np

from store.connect import Row, all_rows, one_row

#: Tenants with fewer chunks have no index: nothing to gain.
MIN_CHUNKS = 1
#: Up to this many chunks the float32 vectors are held and scanned exactly (77 MB at 50k).
EXACT_MAX_CHUNKS = 50_000
#: Sign-bit candidates re-scored per result wanted, at least.
OVERSAMPLE = 8
#: The share of a tenant's rows whose sign bits are nearest the query that are re-scored. A fixed
#: few hundred found the exact top 10 on synthetic vectors (mixtures of 300 real passages), not on
#: real ones. On 10,661 real chunk vectors (pypug, FastAPI and SciFact passages) and 700 real
#: questions, recall@10 against the exact scan was 0.960 re-scoring 400 and 0.983 re-scoring a tenth
#: (0.987 counting equal vectors, FastAPI's untranslated copies, as either copy); int8 re-scoring of
#: every row reaches 0.990. At a fixed share it rises with the tenant's size (a tenth: 0.978 at 5.3k
#: rows, 0.983 at 10.7k), and the index is only held above EXACT_MAX_CHUNKS (`python -m tests.bench
#: store`, "The sign-bit index ... on real vectors"; README, "Speed"). 15% of the rows: 0.987, and
#: with REFINE (below) 0.991, for ~2 ms more a search at 100k than a tenth.
POOL_SHARE = 0.15
#: The nearest candidates after int8 re-scoring that are re-scored once more with their float32
#: vectors, read from vec0 a row at a time (~0.1 ms each; vec0 answers `rowid IN (...)` by
#: scanning). int8 alone orders near ties wrongly: re-scoring every row with it reaches recall@10
#: 0.990. On 10,661 real vectors and 700 real questions, a tenth of the rows re-scored: 0.982, and
#: 0.986 with the nearest 20 read exactly; 15% of the rows: 0.987, and 0.991 with them (10 read
#: exactly: no better than none; 30 or 50: no better than 20). `python -m tests.bench store`.
REFINE = 20
#: Candidates re-scored at a time: their float32 copy (1.5 MB) stays in cache for the product, which
#: re-scores 10k rows in ~2.6 ms instead of ~8 ms in one piece.
RESCORE_BLOCK = 1024
#: A stale index is rebuilt at most this often: while a crawl writes (a new generation every
#: embedding batch) the questions in between use vec0 instead of paying for a rebuild each.
REBUILD_INTERVAL_S = 10.0
#: An index used this recently is not evicted to make room for another tenant's: that one uses
#: vec0 instead, so a budget smaller than the busy tenants never rebuilds on every question.
KEEP_RECENT_S = 60.0


class VectorIndex:
    def __init__(self, ids: np.ndarray, vectors: np.ndarray, kinds: np.ndarray, langs: np.ndarray,
                 names: dict[str, int], exact: bool | None = None) -> None:
        self.ids = ids
        self.kinds = kinds
        self.langs = langs
        self.names = names
        self.exact = len(ids) <= EXACT_MAX_CHUNKS if exact is None else exact
        if self.exact:
            self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
            self.nbytes = self.vectors.nbytes + ids.nbytes + kinds.nbytes + langs.nbytes
            return
        bits = np.packbits(vectors > 0, axis=1)
        pad = (-bits.shape[1]) % 8
        if pad:
            bits = np.pad(bits, ((0, 0), (0, pad)))
        # Word j of every row side by side: the distance is then a few passes over contiguous
        # arrays (~0.6 ms at 100k) instead of a sum across each row's words (~5 ms).
        self.columns = np.ascontiguousarray(bits.view(np.uint64).T)
        scale = np.abs(vectors).max(axis=1, keepdims=True)
        scale[scale == 0] = 1.0
        self.scale = (scale / 127.0).astype(np.float32).ravel()
        self.quantized = np.round(vectors / scale * 127.0).astype(np.int8)
        self.nbytes = (self.columns.nbytes + self.scale.nbytes + self.quantized.nbytes + ids.nbytes
                       + kinds.nbytes + langs.nbytes)

    def _scores(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        if self.exact:
            return self.vectors[rows] @ query
        scores = np.empty(len(rows), dtype=np.float32)
        for start in range(0, len(rows), RESCORE_BLOCK):  # each block's float32 copy stays in cache
            block = rows[start:start + RESCORE_BLOCK]
            scores[start:start + len(block)] = self.quantized[block].astype(np.float32) @ query
        return scores * self.scale[rows]

    def similarities(self, vector: np.ndarray, chunk_ids: list[int]) -> dict[int, float]:
        """Cosine similarity of the query to these chunks (exact, or from the int8 copies)."""
        if not len(self.ids):
            return {}
        wanted = np.asarray(chunk_ids, dtype=np.int64)
        rows = np.searchsorted(self.ids, wanted)
        rows = np.clip(rows, 0, len(self.ids) - 1)
        found = self.ids[rows] == wanted
        rows = rows[found]
        scores = self._scores(rows, np.asarray(vector, dtype=np.float32))
        return {int(i): float(v) for i, v in zip(wanted[found], scores, strict=True)}

    def search(self, vector: np.ndarray, limit: int, kinds: list[str] | None = None,
               lang: str | None = None) -> list[tuple[int, float]]:
        """(chunk id, cosine distance) of the nearest chunks, best first."""
        query = np.asarray(vector, dtype=np.float32)
        mask = self._mask(kinds, lang)
        if self.exact:
            scores = self.vectors @ query
            candidates = np.arange(len(scores)) if mask is None else np.flatnonzero(mask)
            scores = scores[candidates]
        else:
            candidates = self._sign_candidates(query, limit, mask)
            scores = self._scores(candidates, query)
        if len(scores) > limit:
            best = np.argpartition(-scores, limit - 1)[:limit]
            order = best[np.argsort(-scores[best], kind="stable")]
        else:
            order = np.argsort(-scores, kind="stable")
        return [(int(self.ids[candidates[i]]), float(1.0 - scores[i])) for i in order]

    def _mask(self, kinds: list[str] | None, lang: str | None) -> np.ndarray | None:
        mask = None
        if kinds:
            mask = np.isin(self.kinds, [self.names.get(k, -1) for k in kinds])
        if lang:
            lang_mask = self.langs == self.names.get(lang, -1)
            mask = lang_mask if mask is None else mask & lang_mask
        return mask

    def _sign_candidates(self, query: np.ndarray, limit: int, mask: np.ndarray | None) -> np.ndarray:
        """Rows whose sign bits are nearest the query's (Hamming distance), filters applied."""
        packed = np.packbits(query > 0)
        words = np.pad(packed, (0, 8 * len(self.columns) - packed.shape[0])).view(np.uint64)
        hamming = np.bitwise_count(self.columns[0] ^ words[0]).astype(np.uint16)
        for column, word in zip(self.columns[1:], words[1:], strict=True):
            hamming += np.bitwise_count(column ^ word)
        if mask is not None:
            hamming = np.where(mask, hamming, np.iinfo(hamming.dtype).max)
        pool = min(len(hamming), max(limit * OVERSAMPLE, 200, int(POOL_SHARE * len(hamming))))
        # In row order, so that re-scoring reads the int8 rows front to back.
        if pool >= len(hamming):
            candidates = np.arange(len(hamming))
        else:
            candidates = np.sort(np.argpartition(hamming, pool - 1)[:pool])
        if mask is not None:
            candidates = candidates[mask[candidates]]
        return candidates


class _Entry:
    """One tenant file's index (None: none is held) for one content generation."""

    __slots__ = ("generation", "index", "built_at", "used_at", "no_room")

    def __init__(self, generation: str, index: VectorIndex | None, built_at: float, no_room: bool = False) -> None:
        self.generation = generation
        self.index = index
        self.built_at = built_at
        self.used_at = built_at
        #: Not held for want of room: tried again once the others may have gone quiet.
        self.no_room = no_room


_cache: OrderedDict[str, _Entry] = OrderedDict()
_lock = threading.Lock()
_budget_bytes = 256 * 1024 * 1024


def configure(memory_mb: float) -> None:
    """The memory the indexes of this process may hold together (FRONTDESK_VECTOR_MEMORY_MB);
    0 holds none (vec0 answers every query)."""
    global _budget_bytes
    with _lock:
        _budget_bytes = int(memory_mb * 1024 * 1024)
        _evict(0, time.monotonic(), keep_recent=False)


def held_bytes() -> int:
    """Bytes the indexes of this process hold now."""
    return sum(e.index.nbytes for e in _cache.values() if e.index is not None)


def _evict(room: int, now: float, keep_recent: bool = True) -> bool:
    """Drop the least recently used indexes until `room` more bytes fit the budget; False when
    they cannot (everything left was used within KEEP_RECENT_S)."""
    held = held_bytes()
    for key in list(_cache):
        if held + room <= _budget_bytes:
            break
        entry = _cache[key]
        if entry.index is None or (keep_recent and now - entry.used_at < KEEP_RECENT_S):
            continue
        held -= entry.index.nbytes
        del _cache[key]
    return held + room <= _budget_bytes


def content_version(conn: apsw.Connection) -> str:
    """Changes whenever the tenant's content does (and when a file is replaced by another)."""
    meta: dict[str, str] = dict(all_rows(
        conn.execute("SELECT key, value FROM meta WHERE key IN ('generation', 'created_at')")))
    return f"{meta.get('created_at', '')}:{meta.get('generation', '0')}"


def holds_current(conn: apsw.Connection, version: str | None = None) -> bool:
    """Whether this process holds an index of the tenant's current content (`version`: its
    `content_version`, when the caller read it): `index_for` then builds nothing and vec0 scans
    nothing."""
    entry = _cache.get(conn.filename)
    return (entry is not None and entry.index is not None
            and entry.generation == (content_version(conn) if version is None else version))


def index_for(conn: apsw.Connection) -> VectorIndex | None:
    """The tenant's index for its current content, or None when vec0's scan is the way (no
    vectors, no room in the budget, or a rebuild not due yet). One small read of `meta` when the
    index is current. Chunks still waiting for their vectors (store/pending.py) are not in it: the
    dense side does not know them until the embedding stage has written their vectors (which
    bumps the generation)."""
    if _budget_bytes <= 0:
        return None
    key = conn.filename
    generation = content_version(conn)
    now = time.monotonic()
    entry = _cache.get(key)
    if entry is not None:
        current = entry.generation == generation
        if current and not (entry.no_room and now - entry.built_at >= KEEP_RECENT_S):
            entry.used_at = now
            return entry.index
        if not current and now - entry.built_at < REBUILD_INTERVAL_S:
            return None  # stale, and rebuilt a moment ago: vec0 until the next rebuild is due
    with _lock:
        entry = _cache.get(key)
        if entry is not None and entry.generation == generation and not entry.no_room:
            return entry.index
        _cache.pop(key, None)  # the stale index goes before the new one is counted against the budget
        index = _build(conn)
        no_room = index is not None and not _evict(index.nbytes, now)
        _cache[key] = _Entry(generation, None if no_room else index, now, no_room)
        return None if no_room else index


def _build(conn: apsw.Connection) -> VectorIndex | None:
    count = one_row(conn.execute("SELECT (SELECT count(*) FROM chunks) - (SELECT count(*) FROM chunk_pending)"))[0]
    if count < max(MIN_CHUNKS, 1) or count * (1536 if count <= EXACT_MAX_CHUNKS else 440) > _budget_bytes:
        return None  # too few to gain, or more than the whole budget: vec0
    rows: list[Row] = conn.execute("SELECT rowid, embedding, kind, lang FROM chunk_vec ORDER BY rowid").fetchall()
    if not rows:
        return None
    names: dict[str, int] = {}
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    kinds = np.fromiter((names.setdefault(r[2] or "", len(names)) for r in rows), dtype=np.int32, count=len(rows))
    langs = np.fromiter((names.setdefault(r[3] or "", len(names)) for r in rows), dtype=np.int32, count=len(rows))
    return VectorIndex(ids, vectors, kinds, langs, names)


def stored_vectors(conn: apsw.Connection, chunk_ids: list[int]) -> dict[int, np.ndarray]:
    """The float32 vectors vec0 stores for these chunks, one point lookup each (a chunk without a
    vector yet is left out)."""
    found = {}
    for chunk_id in chunk_ids:
        row = conn.execute("SELECT embedding FROM chunk_vec WHERE rowid = ?", (chunk_id,)).fetchone()
        if row is not None:
            found[chunk_id] = np.frombuffer(row[0], dtype=np.float32)
    return found


def refine(vector: np.ndarray, found: list[tuple[int, float]],
           vectors_of: Callable[[list[int]], dict[int, np.ndarray]]) -> list[tuple[int, float]]:
    """A sign-bit index's candidates (`VectorIndex.search`, best first) with the nearest REFINE
    re-scored from their float32 vectors (`vectors_of`: `stored_vectors` on the tenant's
    connection), so that the top of the ranking is the exact scan's whenever the candidates hold it."""
    head = found[:REFINE]
    exact = vectors_of([chunk_id for chunk_id, _ in head])
    query = np.asarray(vector, dtype=np.float32)
    rescored = [(chunk_id, 1.0 - float(exact[chunk_id] @ query)) if chunk_id in exact else (chunk_id, distance)
                for chunk_id, distance in head]
    return sorted(rescored, key=lambda item: item[1]) + found[REFINE:]


def refined(conn: apsw.Connection, vector: np.ndarray, found: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """`refine` with the vectors the tenant's file stores: what a search on `conn` uses."""
    return refine(vector, found, lambda chunk_ids: stored_vectors(conn, chunk_ids))


def _scan_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="frontdesk-dense")


#: Where `scan_beside` runs the scans. Threads start at the first scan; a forked process (granian's
#: workers) gets a pool of its own, since a parent's threads do not survive the fork.
_SCANS = _scan_pool()


def _new_pool_after_fork() -> None:
    global _SCANS
    _SCANS = _scan_pool()


os.register_at_fork(after_in_child=_new_pool_after_fork)


def _timed_search(index: VectorIndex, vector: np.ndarray, limit: int, kinds: list[str] | None,
                  lang: str | None) -> tuple[list[tuple[int, float]], float]:
    started = time.perf_counter()
    found = index.search(vector, limit, kinds, lang)
    return found, (time.perf_counter() - started) * 1000


def scan_beside(conn: apsw.Connection, vector: np.ndarray, limit: int, kinds: list[str] | None = None,
                lang: str | None = None) -> Future[tuple[list[tuple[int, float]], float]] | None:
    """Start the scan of a large tenant's held vectors (the sign-bit index, above
    ``EXACT_MAX_CHUNKS``) on a thread of its own: (candidates as `search` gives them, milliseconds).
    A hybrid search ranks its lexical side meanwhile: numpy's scan and SQLite both release the GIL,
    so on two cores the search takes about the longer of its two sides instead of their sum (issue
    15). None when no index is held (vec0's scan is the way) or it is scanned exactly: that scan
    takes ~2 ms at 10k chunks, and served at 10k with it on a thread, 1-stream TTFT p95 went
    41.9 -> 51.9 ms (README, "Speed"). The index is only read, and each search waits for its own
    scan."""
    index = index_for(conn)
    if index is None or index.exact:
        return None
    return _SCANS.submit(_timed_search, index, vector, limit, kinds, lang)
