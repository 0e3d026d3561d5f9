"""The background embedding stage: gives a tenant's pending chunks (written by a crawl with their
text, before their vectors; store/pending.py) their vectors, a batch at a time, each batch's
vectors in one short write transaction, so fetching never waits for the model.

Each chunk row is one distinct text, so a text on many pages is embedded once. A batch's vectors
go in together or not at all: a crash or kill leaves every chunk with its vector or still pending,
and whoever runs the stage next (the next crawl, `frontdesk serve` opening the tenant) goes on
from there.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence

import anyio
import numpy as np

from ingest.chunk import embedding_text
from ingest.embed import Embedder
from store.pages import vector_bytes
from store.pending import PendingChunk, pending_chunks, pending_count, store_vectors
from store.search import Hit
from store.tenants import Tenant

#: Chunks embedded per write transaction: large enough to keep the model's batches full, small
#: enough that a batch is a couple of seconds on two busy cores (the dense side fills in steadily,
#: and a cancelled crawl stops soon).
BATCH = 64

#: How long the stage sleeps when nothing is pending while pages are still being fetched.
IDLE_S = 0.1

# Two stages on one tenant (a crawl's and the one `frontdesk serve` starts for what a killed crawl
# left) take turns batch by batch, so neither embeds what the other just did.
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _tenant_lock(tenant: Tenant) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(str(tenant.path), threading.Lock())


def chunk_embedding_text(chunk: PendingChunk) -> str:
    """What ingestion embeds for this chunk: `chunks.heading` is the heading path joined with
    " > " (store/pages.py), split back here as `frontdesk reindex` does."""
    return embedding_text(chunk.title, chunk.heading.split(" > "), chunk.text)


class EmbedStage:
    """Embeds one tenant's pending chunks. `step` is one batch (call it in a worker thread);
    `drain` steps until none is left; `run` is the loop a crawl job runs beside its fetchers."""

    def __init__(self, tenant: Tenant, embedder: Embedder, *, batch: int = BATCH) -> None:
        self.tenant = tenant
        self.embedder = embedder
        self.batch = batch
        self.embedded = 0
        """Vectors this stage wrote."""

    def step(self) -> int:
        """Embed up to one batch of pending chunks and write their vectors in one transaction.
        Returns how many pending chunks it took (0: none was pending)."""
        with _tenant_lock(self.tenant):
            chunks = pending_chunks(self.tenant.reader(), self.batch)
            if not chunks:
                return 0
            vectors = self.embedder.embed([chunk_embedding_text(c) for c in chunks])
            with self.tenant.write() as conn:
                stored = store_vectors(conn, [(c.id, vector_bytes(v)) for c, v in zip(chunks, vectors, strict=True)])
                if stored:  # the dense side changed: caches keyed by the generation go stale
                    self.tenant.bump_generation(conn)
            self.embedded += stored
            return len(chunks)

    def pending(self) -> int:
        return pending_count(self.tenant.reader())

    def drain(self, stop: threading.Event | None = None, on_batch: Callable[[], None] | None = None) -> int:
        """Step until nothing is pending (or `stop` is set); returns the vectors written."""
        before = self.embedded
        while not (stop is not None and stop.is_set()) and self.step():
            if on_batch is not None:
                on_batch()
        return self.embedded - before

    async def run(self, fetching_done: asyncio.Event, stopped: Callable[[], bool],
                  on_batch: Callable[[int], None] | None = None) -> None:
        """Embed pending chunks while a crawl fetches, and after it (`fetching_done`) until none is
        left; stop after the batch in hand once `stopped()`. `on_batch` gets the count left."""
        while not stopped():
            finishing = fetching_done.is_set()  # read before the step: a page written after it is seen next time
            taken = await anyio.to_thread.run_sync(self.step)
            if taken:
                if on_batch is not None:
                    on_batch(await anyio.to_thread.run_sync(self.pending))
                continue
            if finishing:
                return
            await asyncio.sleep(IDLE_S)


def measure_pending_hits(hits: Sequence[Hit], vector: np.ndarray, embedder: Embedder) -> None:
    """Give hits whose chunks have no vector yet (BM25 found them; a crawl is embedding) their
    cosine similarity to the query `vector`, embedding their texts now: confidence and the
    answer's choice of passages read `similarity`, and 0.0 would mean "off topic"."""
    waiting = [hit for hit in hits if not hit.embedded]
    if not waiting:
        return
    vectors = embedder.embed([embedding_text(h.title, h.heading_path, h.text) for h in waiting])
    query = np.asarray(vector, dtype=np.float32)
    for hit, chunk_vector in zip(waiting, vectors, strict=True):
        hit.similarity = float(np.asarray(chunk_vector, dtype=np.float32) @ query)
