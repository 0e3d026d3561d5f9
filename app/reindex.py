"""Rebuild a tenant's vectors with its model, or switch it to another model (`frontdesk reindex`)."""

from __future__ import annotations

import time
from collections.abc import Callable

import msgspec

from app.context import Context
from ingest.chunk import embedding_text
from ingest.embed import MODELS
from store.errors import InvalidConfig
from store.reindex import ChunkText
from store.tenants import Connection


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
    staging = tenant.store.reindex
    config = tenant.config()
    model = model or config.model
    if model not in MODELS:
        raise InvalidConfig(f"unknown model {model!r}; choose one of {', '.join(MODELS)}", field="model")
    embedder = ctx.embedder(model)
    with tenant.reading() as conn:
        previous = tenant.store.migrations.read_meta(conn).get("embedder_id", "")
    with tenant.write() as conn:
        staging.begin_staging(conn, embedder.fingerprint)

    def stage(conn: Connection, rows: list[ChunkText]) -> None:
        # chunks.heading is the heading path joined with " > " (store/pages.py); split back, it
        # gives the text ingestion embedded. With the same model a rebuilt vector matches the
        # original up to int8 activation quantisation, which depends on what shares the batch.
        vectors = embedder.embed([embedding_text(title, heading.split(" > "), text)
                                  for _, title, heading, text in rows])
        staging.stage_vectors(conn, embedder.fingerprint,
                              [(row[0], vector.tobytes()) for row, vector in zip(rows, vectors, strict=True)])

    with tenant.reading() as conn:
        total, done = staging.staging_progress(conn)
    last_id = 0
    while True:
        with tenant.reading() as conn:
            rows = staging.unstaged_chunks(conn, last_id, batch)
        if not rows:
            break
        with tenant.write() as conn:
            stage(conn, rows)
        last_id, done = rows[-1][0], done + len(rows)
        if on_progress is not None:
            on_progress(done, total)

    with tenant.reading() as conn:
        curated, gaps = staging.questions_to_embed(conn)
    curated_vectors = embedder.embed([question for _, question in curated])
    gap_vectors = embedder.embed([question for _, question in gaps])
    with tenant.write() as conn:
        staging.lock_chunks(conn)
        # Chunks a crawl added while the batches ran have no staged vector yet.
        late = staging.all_unstaged_chunks(conn)
        if late:
            stage(conn, late)
        chunks = staging.swap_in(
            conn, embedder.dim,
            curated=[(row[0], v.tobytes()) for row, v in zip(curated, curated_vectors, strict=True)],
            gaps=[(row[0], v.tobytes()) for row, v in zip(gaps, gap_vectors, strict=True)])
        tenant.store.migrations.set_meta(conn, embedder_id=embedder.id, embedder_dim=embedder.dim,
                                         embedder_fingerprint=embedder.fingerprint)
        # The config names the model; setting it also bumps the generation (the vectors changed).
        tenant.set_config(msgspec.structs.replace(config, model=model), conn)
        staging.end_staging(conn)
    tenant.embedder_id, tenant.embedder_dim = embedder.id, embedder.dim
    return ReindexSummary(tenant_id=tenant_id, model=embedder.id, previous_model=previous, dim=embedder.dim,
                          chunks=chunks, curated=len(curated), gaps=len(gaps),
                          seconds=round(time.perf_counter() - started, 3))
