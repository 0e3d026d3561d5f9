"""Rebuild a tenant's vectors with its model, or switch it to another model (`frontdesk reindex`)."""

from __future__ import annotations

import time
from collections.abc import Callable

import msgspec

from app.context import Context
from ingest.chunk import embedding_text
from ingest.embed import MODELS
from store import reindex as staging
from store.errors import InvalidConfig
from store.migrations import read_meta, set_meta
from store.tenants import TenantFile


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
    if not isinstance(tenant, TenantFile):
        raise InvalidConfig("reindex runs on the SQLite backend only in this build; on PostgreSQL, export the "
                            "tenant (`frontdesk tenant export`), reindex the file and import it again")
    config = tenant.config()
    model = model or config.model
    if model not in MODELS:
        raise InvalidConfig(f"unknown model {model!r}; choose one of {', '.join(MODELS)}", field="model")
    embedder = ctx.embedder(model)
    previous = read_meta(tenant.reader()).get("embedder_id", "")
    with tenant.write() as conn:
        staging.begin_staging(conn, embedder.fingerprint)

    def stage(conn, rows: list[staging.ChunkText]) -> None:
        # chunks.heading is the heading path joined with " > " (store/pages.py); split back, it
        # gives the text ingestion embedded. With the same model a rebuilt vector matches the
        # original up to int8 activation quantisation, which depends on what shares the batch.
        vectors = embedder.embed([embedding_text(title, heading.split(" > "), text)
                                  for _, title, heading, text in rows])
        staging.stage_vectors(conn, embedder.fingerprint,
                              [(row[0], vector.tobytes()) for row, vector in zip(rows, vectors, strict=True)])

    reader = tenant.reader()
    total, done = staging.staging_progress(reader)
    last_id = 0
    while rows := staging.unstaged_chunks(reader, last_id, batch):
        with tenant.write() as conn:
            stage(conn, rows)
        last_id, done = rows[-1][0], done + len(rows)
        if on_progress is not None:
            on_progress(done, total)

    curated, gaps = staging.questions_to_embed(reader)
    curated_vectors = embedder.embed([question for _, question in curated])
    gap_vectors = embedder.embed([question for _, question in gaps])
    with tenant.write() as conn:
        # Chunks a crawl added while the batches ran have no staged vector yet.
        late = staging.all_unstaged_chunks(conn)
        if late:
            stage(conn, late)
        chunks = staging.swap_in(
            conn, embedder.dim,
            curated=[(row[0], v.tobytes()) for row, v in zip(curated, curated_vectors, strict=True)],
            gaps=[(row[0], v.tobytes()) for row, v in zip(gaps, gap_vectors, strict=True)])
        set_meta(conn, embedder_id=embedder.id, embedder_dim=embedder.dim,
                 embedder_fingerprint=embedder.fingerprint)
        tenant.set_config(msgspec.structs.replace(config, model=model))  # joins this transaction
        tenant.bump_generation(conn)
        staging.end_staging(conn)
    tenant.embedder_id, tenant.embedder_dim = embedder.id, embedder.dim
    return ReindexSummary(tenant_id=tenant_id, model=embedder.id, previous_model=previous, dim=embedder.dim,
                          chunks=chunks, curated=len(curated), gaps=len(gaps),
                          seconds=round(time.perf_counter() - started, 3))


