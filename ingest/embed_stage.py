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
import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable

import anyio
import numpy as np

from ingest.chunk import embedding_text
from ingest.embed import Embedder
from store.pages import vector_bytes
from store.pending import PendingChunk
from store.tenants import Tenant

#: Chunks embedded per write transaction: large enough to keep the model's batches full, small
#: enough that a batch is a couple of seconds on two busy cores (the dense side fills in steadily,
#: and a cancelled crawl stops soon).
BATCH = 64

#: How long the stage waits, while pages are still being fetched, when nothing is pending or the
#: page path is busy.
IDLE_S = 0.1

# Two stages on one tenant (a crawl's and the one `frontdesk serve` starts for what a killed crawl
# left) take turns batch by batch, so neither embeds what the other just did.
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _tenant_lock(tenant: Tenant) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(tenant.identity, threading.Lock())


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
            with self.tenant.reading() as conn:  # given back before the model runs
                chunks: list[PendingChunk] = self.tenant.store.pending.pending_chunks(conn, self.batch)
            if not chunks:
                return 0
            vectors = self._vectors(chunks)
            rows = [(c.id, c.hash, vector_bytes(v)) for c, v in zip(chunks, vectors, strict=True)]
            with self.tenant.write() as conn:
                stored: int = self.tenant.store.pending.store_vectors(conn, rows)
                if stored:  # the dense side changed: caches keyed by the generation go stale
                    self.tenant.bump_generation(conn)
            self.embedded += stored
            return len(chunks)

    def _vectors(self, chunks: list[PendingChunk]) -> list[np.ndarray]:
        """The chunks' vectors: those a visitor's question already measured in this process
        (`pending_embedder`: the same text and model) taken from there instead of embedded twice,
        the rest embedded now. A question asked during a crawl measures up to
        `store.search.PENDING_CANDIDATES` passages."""
        fingerprint = self.embedder.fingerprint
        with _measured_lock:
            measured = [_measured.pop((fingerprint, c.hash), None) for c in chunks]
        missing = [c for c, vector in zip(chunks, measured, strict=True) if vector is None]
        fresh = iter(self.embedder.embed([chunk_embedding_text(c) for c in missing]) if missing else [])
        return [vector if vector is not None else next(fresh) for vector in measured]

    def pending(self) -> int:
        with self.tenant.reading() as conn:
            return int(self.tenant.store.pending.pending_count(conn))

    def drain(self, stop: threading.Event | None = None, on_batch: Callable[[], None] | None = None) -> int:
        """Step until nothing is pending (or `stop` is set); returns the vectors written."""
        before = self.embedded
        while not (stop is not None and stop.is_set()) and self.step():
            if on_batch is not None:
                on_batch()
        return self.embedded - before

    async def run(self, fetching_done: asyncio.Event, stopped: Callable[[], bool],
                  on_batch: Callable[[int], None] | None = None, busy: Callable[[], bool] | None = None) -> None:
        """Embed pending chunks while a crawl fetches, in the gaps its page path leaves (`busy()`
        false), and after it (`fetching_done`) until none is left; stop after the batch in hand
        once `stopped()`. `on_batch` gets the count left.

        The page path comes first: run flat out beside it, the model's threads took both cores
        and fetching 120 fastapi pages with politeness off went from 20 to 72 s; at half the time
        (the rule before this one) 13–20% fewer pages a minute were searchable than now (README,
        "The page path first"). A polite crawl leaves gaps between pages; one without politeness is
        embedded once fetching ends, while a visitor's question embeds the few passages it ranks
        (store.search.PENDING_CANDIDATES)."""
        while not stopped():
            finishing = fetching_done.is_set()  # read before the step: a page written after it is seen next time
            if not finishing and busy is not None and busy():
                with contextlib.suppress(TimeoutError):  # fetching ending ends the wait
                    await asyncio.wait_for(fetching_done.wait(), IDLE_S)
                continue
            taken = await anyio.to_thread.run_sync(self.step)
            if taken:
                if on_batch is not None:
                    on_batch(await anyio.to_thread.run_sync(self.pending))
                continue
            if finishing:
                return
            await asyncio.sleep(IDLE_S)


#: Vectors measured at query time for chunks still pending, by (model fingerprint, chunk hash): a
#: crawl's early visitors ask about the same few pages, and each is embedded once, not per question.
QUERY_TIME_CACHE = 4096
_measured: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_measured_lock = threading.Lock()


def pending_embedder(embedder: Embedder) -> Callable[[list[PendingChunk]], np.ndarray]:
    """What `store.search.search(embed_pending=...)` calls for the best BM25 candidates that have
    no vector yet: their vectors, embedded now with the tenant's model (cached)."""

    def embed(chunks: list[PendingChunk]) -> np.ndarray:
        keys = [(embedder.fingerprint, c.hash) for c in chunks]
        with _measured_lock:
            known = {key: _measured[key] for key in keys if key in _measured}
        missing = [c for c, key in zip(chunks, keys, strict=True) if key not in known]
        if missing:
            fresh = embedder.embed([chunk_embedding_text(c) for c in missing])
            with _measured_lock:
                for chunk, vector in zip(missing, fresh, strict=True):
                    known[(embedder.fingerprint, chunk.hash)] = _measured[(embedder.fingerprint, chunk.hash)] = vector
                while len(_measured) > QUERY_TIME_CACHE:
                    _measured.popitem(last=False)
        return np.stack([known[key] for key in keys]) if keys else np.zeros((0, embedder.dim), dtype=np.float32)

    return embed
