"""Warming: what the first question would otherwise load on the request path (language profiles,
a tenant's reader connection, statistics, prepared statements and term counts, the extractive
scorer's caches, the postings of the tenant's frequent words), done before `/readyz` says ready
and, for a tenant whose content changes later, in a background thread rather than in its next
visitor's request. A tenant with chunks a killed or cancelled crawl left without vectors gets them
in another background thread (ingest/embed_stage.py)."""

from __future__ import annotations

import contextlib
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from app.answer import Answerer
from app.context import Context
from app.workers import release_free_memory
from ingest.embed_stage import EmbedStage
from ingest.lang import detect_language
from store.errors import FrontdeskError

log = logging.getLogger(__name__)

#: Asked of every tenant once, answered and thrown away: it runs the whole retrieval half of the
#: answer path (nothing is persisted, no metric counted).
WARM_QUESTION = "How do I get started, and who do I contact for help?"


class Warmer:
    def __init__(self, ctx: Context, answerer: Answerer) -> None:
        self.ctx = ctx
        self.answerer = answerer
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        # One thread for the later warm-ups: it keeps one read connection per tenant, where a
        # thread each time would leave one behind every time.
        self._later = ThreadPoolExecutor(max_workers=1, thread_name_prefix="frontdesk-warm")
        # One thread embeds what crawls left pending, tenant after tenant, off the request path.
        self._embedding = ThreadPoolExecutor(max_workers=1, thread_name_prefix="frontdesk-embed")
        self._embedding_queued: set[str] = set()
        self._stop = threading.Event()

    def warm_process(self) -> None:
        """What every tenant shares: the model's first run and langdetect's language profiles
        (read from ~55 JSON files on first use, ~0.8 s)."""
        self.ctx.embedder().warm_up()
        detect_language("how do I get started with this site", default="en", min_words=3)

    def warm_tenant(self, tenant_id: str) -> None:
        """Retrieve an answer for `WARM_QUESTION` from the tenant on this thread; a tenant that
        cannot be opened is left to `/readyz` to report."""
        try:
            tenant = self.ctx.tenant(tenant_id)
            embedder = self.ctx.tenant_embedder(tenant)
            embedder.warm_up()
            self.answerer.retrieve(tenant, WARM_QUESTION, None, "en", None, [])
            with tenant.reading() as conn:  # the frequent words' postings (store/text_index.py)
                tenant.store.search.warm_text_index(conn)
            stage = EmbedStage(tenant, embedder)
            if stage.pending():
                self._resume_embedding(tenant_id, stage)
        except FrontdeskError as exc:
            log.warning("could not warm tenant %s: %s", tenant_id, exc.code)
        except Exception:  # warming is an optimisation: never the reason a server does not start
            log.exception("warming tenant %s failed", tenant_id)

    def warm_all(self) -> None:
        self.warm_process()
        for tenant_id in self.ctx.registry.ids():
            self.warm_tenant(tenant_id)
        release_free_memory()

    def warm_later(self, tenant_id: str) -> None:
        """Warm one tenant in the background thread (after a crawl changed it, say); a tenant
        already waiting there is not queued twice."""
        with self._lock:
            if tenant_id in self._pending:
                return
            self._pending.add(tenant_id)

        def run() -> None:
            with self._lock:
                self._pending.discard(tenant_id)
            self.warm_tenant(tenant_id)
            release_free_memory()  # what the tenant's previous index and the crawl left free

        with contextlib.suppress(RuntimeError):  # shutting down: nothing left to warm for
            self._later.submit(run)

    def _resume_embedding(self, tenant_id: str, stage: EmbedStage) -> None:
        """Embed the chunks a killed or cancelled crawl left pending, in the background thread. A
        crawl started meanwhile runs its own stage: the two take turns batch by batch."""
        with self._lock:
            if tenant_id in self._embedding_queued:
                return
            self._embedding_queued.add(tenant_id)

        def run() -> None:
            with self._lock:
                self._embedding_queued.discard(tenant_id)
            try:
                done = stage.drain(self._stop)
                log.info("embedded %d pending chunks of tenant %s", done, tenant_id)
            except FrontdeskError as exc:
                log.warning("could not embed pending chunks of tenant %s: %s", tenant_id, exc.code)
            except Exception:  # the next crawl or start tries again
                log.exception("embedding pending chunks of tenant %s failed", tenant_id)

        with contextlib.suppress(RuntimeError):  # shutting down
            self._embedding.submit(run)

    def close(self) -> None:
        self._stop.set()  # the batch in hand goes in; the rest waits for the next start or crawl
        self._embedding.shutdown(wait=True, cancel_futures=True)
        self._later.shutdown(wait=True, cancel_futures=True)
