"""Rebuild a tenant's vectors with its model, or switch it to another model (`frontdesk reindex`)."""

from __future__ import annotations

import time
from collections.abc import Callable

import msgspec

from app.context import Context
from ingest.chunk import embedding_text
from ingest.embed import MODELS
from store.errors import InvalidConfig
from store.migrations import create_chunk_vec, read_meta, set_meta


class ReindexSummary(msgspec.Struct, kw_only=True):
    tenant_id: str
    model: str
    previous_model: str
    dim: int
    chunks: int
    curated: int
    gaps: int
    seconds: float


REINDEX_BATCH = 64


def reindex(ctx: Context, tenant_id: str, *, model: str | None = None, batch: int = REINDEX_BATCH,
            on_progress: Callable[[int, int], None] | None = None) -> ReindexSummary:
    """Rebuild every vector of a tenant with its configured model, or switch it to `model`.

    New vectors are staged in a side table, batch by batch (an interrupted run resumes), and swapped
    in with the model's id in one transaction: searches see the old vectors or the new, never a mix.
    """
    started = time.perf_counter()
    tenant = ctx.registry.get(tenant_id)  # not ctx.tenant(): a model mismatch is what this fixes
    config = tenant.config()
    model = model or config.model
    if model not in MODELS:
        raise InvalidConfig(f"unknown model {model!r}; choose one of {', '.join(MODELS)}", field="model")
    embedder = ctx.embedder(model)
    previous = read_meta(tenant.reader()).get("embedder_id", "")
    with tenant.write() as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS reindex_vectors "
                     "(chunk_id INTEGER PRIMARY KEY, model TEXT NOT NULL, embedding BLOB NOT NULL)")
        conn.execute("DELETE FROM reindex_vectors WHERE model != ?", (embedder.fingerprint,))

    def stage(conn, rows: list[tuple[int, str, str, str]]) -> None:
        # chunks.heading is the heading path joined with " > " (store/pages.py); split back, it
        # gives the text ingestion embedded. With the same model a rebuilt vector matches the
        # original up to int8 activation quantisation, which depends on what shares the batch.
        vectors = embedder.embed([embedding_text(title, heading.split(" > "), text)
                                  for _, title, heading, text in rows])
        conn.executemany(
            "INSERT OR REPLACE INTO reindex_vectors(chunk_id, model, embedding) VALUES (?, ?, ?)",
            [(row[0], embedder.fingerprint, vector.tobytes()) for row, vector in zip(rows, vectors, strict=True)],
        )

    reader = tenant.reader()
    total = reader.execute("SELECT count(*) FROM chunks").fetchone()[0]
    done = reader.execute("SELECT count(*) FROM reindex_vectors r JOIN chunks c ON c.id = r.chunk_id").fetchone()[0]
    pending = ("SELECT c.id, c.title, c.heading, c.text FROM chunks c WHERE c.id > ? AND NOT EXISTS "
               "(SELECT 1 FROM reindex_vectors r WHERE r.chunk_id = c.id) ORDER BY c.id LIMIT ?")
    last_id = 0
    while rows := reader.execute(pending, (last_id, batch)).fetchall():
        with tenant.write() as conn:
            stage(conn, rows)
        last_id, done = rows[-1][0], done + len(rows)
        if on_progress is not None:
            on_progress(done, total)

    curated = reader.execute("SELECT id, question FROM curated").fetchall()
    gaps = reader.execute("SELECT id, question FROM gaps WHERE embedding IS NOT NULL").fetchall()
    curated_vectors = embedder.embed([question for _, question in curated])
    gap_vectors = embedder.embed([question for _, question in gaps])
    with tenant.write() as conn:
        # Chunks a crawl added while the batches ran have no staged vector yet.
        late = conn.execute("SELECT c.id, c.title, c.heading, c.text FROM chunks c WHERE NOT EXISTS "
                            "(SELECT 1 FROM reindex_vectors r WHERE r.chunk_id = c.id)").fetchall()
        if late:
            stage(conn, late)
        conn.execute("DROP TABLE chunk_vec")
        create_chunk_vec(conn, embedder.dim)
        conn.execute("INSERT INTO chunk_vec(rowid, embedding, kind, lang) SELECT c.id, r.embedding, c.kind, c.lang "
                     "FROM chunks c JOIN reindex_vectors r ON r.chunk_id = c.id")
        chunks = conn.execute("SELECT count(*) FROM chunk_vec").fetchone()[0]
        conn.executemany("UPDATE curated SET embedding = ? WHERE id = ?",
                         [(v.tobytes(), row[0]) for row, v in zip(curated, curated_vectors, strict=True)])
        conn.executemany("UPDATE gaps SET embedding = ? WHERE id = ?",
                         [(v.tobytes(), row[0]) for row, v in zip(gaps, gap_vectors, strict=True)])
        set_meta(conn, embedder_id=embedder.id, embedder_dim=embedder.dim,
                 embedder_fingerprint=embedder.fingerprint)
        tenant.set_config(msgspec.structs.replace(config, model=model))  # joins this transaction
        tenant.bump_generation(conn)
        conn.execute("DROP TABLE reindex_vectors")
    tenant.embedder_id, tenant.embedder_dim = embedder.id, embedder.dim
    return ReindexSummary(tenant_id=tenant_id, model=embedder.id, previous_model=previous, dim=embedder.dim,
                          chunks=chunks, curated=len(curated), gaps=len(gaps),
                          seconds=round(time.perf_counter() - started, 3))


