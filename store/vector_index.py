"""A fast path for the dense side of large tenants: an in-memory sign-bit index for candidates,
re-ranked with int8 copies of the vectors. vec0 stays the store and the exact path.

Why: vec0 (sqlite-vec 0.1.9) scans every vector on one core; at 100k × 384 that alone costs
~55 ms, and its bit-vector tables and rowid lookups are no faster. Hamming distance over sign
bits in numpy costs ~7 ms for 100k; the few hundred survivors are re-scored with int8 vectors
(cosine within ~0.01 of float32). Memory: 48 + 384 bytes a chunk (~43 MB per 100k chunks),
built once per content generation of a tenant (read back from vec0, ~0.5 s per 100k).
"""

from __future__ import annotations

import threading

import apsw
import numpy as np

from store.connect import Row, all_rows, one_row

#: Tenants with fewer chunks use vec0's exact scan: fast enough, nothing to hold in memory.
MIN_CHUNKS = 20_000
#: Sign-bit candidates re-scored per result wanted (recall of the top 10 ~1.0 at this ratio).
OVERSAMPLE = 8


class VectorIndex:
    def __init__(self, ids: np.ndarray, vectors: np.ndarray, kinds: np.ndarray, langs: np.ndarray,
                 names: dict[str, int]) -> None:
        self.ids = ids
        self.bits = np.packbits(vectors > 0, axis=1)
        pad = (-self.bits.shape[1]) % 8
        if pad:
            self.bits = np.pad(self.bits, ((0, 0), (0, pad)))
        self.words = self.bits.view(np.uint64)
        scale = np.abs(vectors).max(axis=1, keepdims=True)
        scale[scale == 0] = 1.0
        self.scale = (scale / 127.0).astype(np.float32).ravel()
        self.quantized = np.round(vectors / scale * 127.0).astype(np.int8)
        self.kinds = kinds
        self.langs = langs
        self.names = names

    def similarities(self, vector: np.ndarray, chunk_ids: list[int]) -> dict[int, float]:
        """Cosine similarity of the query to these chunks (from the int8 copies)."""
        if not len(self.ids):
            return {}
        wanted = np.asarray(chunk_ids, dtype=np.int64)
        rows = np.searchsorted(self.ids, wanted)
        rows = np.clip(rows, 0, len(self.ids) - 1)
        found = self.ids[rows] == wanted
        rows = rows[found]
        scores = (self.quantized[rows].astype(np.float32) @ np.asarray(vector, dtype=np.float32)) * self.scale[rows]
        return {int(i): float(v) for i, v in zip(wanted[found], scores, strict=True)}

    def search(self, vector: np.ndarray, limit: int, kinds: list[str] | None = None,
               lang: str | None = None) -> list[tuple[int, float]]:
        """(chunk id, cosine distance) of the nearest chunks, best first."""
        query = np.asarray(vector, dtype=np.float32)
        packed = np.packbits(query > 0)
        packed = np.pad(packed, (0, self.bits.shape[1] - packed.shape[0])).view(np.uint64)
        hamming = np.bitwise_count(self.words ^ packed).sum(axis=1)
        mask = None
        if kinds:
            mask = np.isin(self.kinds, [self.names.get(k, -1) for k in kinds])
        if lang:
            lang_mask = self.langs == self.names.get(lang, -1)
            mask = lang_mask if mask is None else mask & lang_mask
        if mask is not None:
            hamming = np.where(mask, hamming, np.iinfo(hamming.dtype).max)
        pool = min(len(hamming), max(limit * OVERSAMPLE, 200))
        candidates = np.argpartition(hamming, pool - 1)[:pool] if pool < len(hamming) else np.arange(len(hamming))
        if mask is not None:
            candidates = candidates[mask[candidates]]
        scores = (self.quantized[candidates].astype(np.float32) @ query) * self.scale[candidates]
        order = np.argsort(-scores)[:limit]
        return [(int(self.ids[candidates[i]]), float(1.0 - scores[i])) for i in order]


_cache: dict[str, tuple[str, VectorIndex]] = {}
_lock = threading.Lock()


def _version(conn: apsw.Connection) -> str:
    """Changes whenever the tenant's content does (and when a file is replaced by another)."""
    meta: dict[str, str] = dict(all_rows(
        conn.execute("SELECT key, value FROM meta WHERE key IN ('generation', 'created_at')")))
    return f"{meta.get('created_at', '')}:{meta.get('generation', '0')}"


def index_for(conn: apsw.Connection) -> VectorIndex | None:
    """The tenant's index for its current content, or None when vec0's exact scan is the way.
    Chunks still waiting for their vectors (store/pending.py) are not in it: the dense side does
    not know them until the embedding stage has written their vectors (which bumps the generation)."""
    count = one_row(conn.execute("SELECT (SELECT count(*) FROM chunks) - (SELECT count(*) FROM chunk_pending)"))[0]
    if count < MIN_CHUNKS:
        return None
    key = conn.filename
    generation = _version(conn)
    cached = _cache.get(key)
    if cached is not None and cached[0] == generation:
        return cached[1]
    with _lock:
        cached = _cache.get(key)
        if cached is not None and cached[0] == generation:
            return cached[1]
        rows: list[Row] = conn.execute("SELECT rowid, embedding, kind, lang FROM chunk_vec ORDER BY rowid").fetchall()
        if not rows:
            return None
        names: dict[str, int] = {}
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        kinds = np.fromiter((names.setdefault(r[2] or "", len(names)) for r in rows), dtype=np.int32, count=len(rows))
        langs = np.fromiter((names.setdefault(r[3] or "", len(names)) for r in rows), dtype=np.int32, count=len(rows))
        index = VectorIndex(ids, vectors, kinds, langs, names)
        _cache[key] = (generation, index)
        return index
