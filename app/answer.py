"""The hot path: a visitor's question → a stream of typed events.

    curated? → retrieve (hybrid + page boost + page context as a source) → confidence
             → prompt → provider stream → citations, actions, done → persist (off the path)

`Answerer.stream()` is the one readable function; blocking work (embedding, SQLite) runs in
worker threads so the event loop only shuffles bytes. Persistence happens after the `done`
event (or the disconnect), in the background, so it never delays the visitor.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
import uuid
from collections.abc import AsyncGenerator, Callable

import anyio
import msgspec
import numpy as np

from app.answerability import AnswerSignals
from app.asks import NOT_A_SUBJECT
from app.cache import AnswerCache, normalize_question
from app.context import Context
from app.events import (
    ActionsEvent,
    ChatRequest,
    Citation,
    CitationsEvent,
    DoneEvent,
    Event,
    MetaEvent,
    PageContext,
    SuggestedAction,
    TokenEvent,
)
from app.extractive import select, term_weights
from app.followup import carried_subject
from app.grounding import opening
from app.metrics import Metrics
from app.prompt import Source, build_prompt, neutralise
from app.providers import Provider, word_pieces
from app.question import check_question, page_context_text, page_on_site, question_language
from app.refusal import Evidence, verdict
from app.site_words import in_site_words, known_besides_index
from app.sources import (
    cited_sources,
    drop_boilerplate,
    group_hits,
    insert_page_source,
    quoted_first,
    snippet,
)
from app.visitor_day import visitor_day
from ingest.embed import Embedder
from ingest.embed_stage import pending_embedder
from store.conversations import CitationRow, Turn
from store.curated import CuratedMatch
from store.tenants import Connection, Tenant
from store.words import TermCoverage, content_terms, coverage_from_counts, coverage_threshold

log = logging.getLogger(__name__)

CURATED_SIMILARITY = 0.86
"""Embedding similarity above which a curated question counts as the same question."""

STRONG_CONFIDENCE = 0.9
"""A passage this close answers even a question whose wording the site does not use (typos,
synonyms, another language); below it, the term-coverage check applies."""
STRONG_CONFIDENCE_NATIVE = 0.6
"""The same for a question in one of the model's own languages, where similarity is not inflated."""
WHOLE_PAGE_SOURCES = 2
"""The top sources whose whole page the extractive answer may quote (not only the retrieved chunk)."""
NOT_FOUND = {
    "en": "I could not find that on this site. These pages may help:",
    "es": "No he encontrado eso en este sitio. Estas páginas pueden ayudar:",
    "de": "Dazu habe ich auf dieser Website nichts gefunden. Diese Seiten könnten helfen:",
    "fr": "Je n'ai pas trouvé cela sur ce site. Ces pages peuvent aider :",
    "it": "Non ho trovato questa informazione su questo sito. Queste pagine potrebbero aiutare:",
    "pt": "Não encontrei isso neste site. Estas páginas podem ajudar:",
}
NOT_FOUND_NO_LINKS = {
    "en": "I could not find that on this site.",
    "es": "No he encontrado eso en este sitio.",
    "de": "Dazu habe ich auf dieser Website nichts gefunden.",
    "fr": "Je n'ai pas trouvé cela sur ce site.",
    "it": "Non ho trovato questa informazione su questo sito.",
    "pt": "Não encontrei isso neste site.",
}

_CONVERSATION_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")


def confidence_of(similarity: float, embedder: Embedder) -> float:
    """The model's cosine similarity on its own calibrated 0..1 confidence scale."""
    return float(min(1.0, max(0.0, (similarity - embedder.similarity_floor) / embedder.similarity_span)))


class Retrieval(msgspec.Struct, kw_only=True):
    """What the blocking half of the pipeline found, handed back to the event loop."""

    sources: list[Source]
    confidence: float
    answered: bool = True
    refused: str = ""
    """Why the site does not answer ('' when it does)."""
    best_similarity: float
    vector: bytes
    curated: CuratedMatch | None = None
    coverage: TermCoverage | None = None
    history: list[tuple[str, str]] = msgspec.field(default_factory=list)
    carried: str = ""
    """Earlier questions whose subject this follow-up continues ('' for a new subject)."""
    quotes: list[tuple[int, str, str]] = msgspec.field(default_factory=list)
    """The extractive answer: (source number, text, kind) in reading order."""
    support: float = 0.0
    sentence_similarity: float | None = None
    """The lead sentence's similarity to the question; None when it was not measured (it could
    not change the verdict, or the question was refused before it)."""
    signals: AnswerSignals | None = None
    """What the answerability check read (app/answerability.py)."""
    actions: list[SuggestedAction] = msgspec.field(default_factory=list)
    links: list[Source] = msgspec.field(default_factory=list)
    """The pages offered with a "not found" answer: the first sources (at most three) more similar to
    the question than the model's floor for unrelated text (a confidence above 0). None for a
    question nothing on the site is near: "what's the weather in Berlin?" was offered the guide's
    index page and two others. On the golden sets 18 of 83 refused off-topic questions lose their
    links and 2 of 58 near misses ("what's the wifi password?"); no answerable question refused
    does (`min_confidence` as the floor took the right page from the wheelchair question)."""
    retrieval_ms: float = 0.0


class TenantStats(msgspec.Struct, kw_only=True):
    generation: int
    chunks: int
    langs: set[str]


class AnswerResult(msgspec.Struct, kw_only=True):
    """A whole answer, for callers that do not stream (CLI, MCP, A2A, evaluation)."""

    answer: str = ""
    citations: list[Citation] = msgspec.field(default_factory=list)
    actions: list[SuggestedAction] = msgspec.field(default_factory=list)
    confidence: float = 0.0
    answered: bool = False
    source: str = ""
    lang: str = ""
    conversation_id: str = ""
    message_id: str = ""
    latency_ms: float = 0.0
    ttft_ms: float | None = None


class CachedAnswer(msgspec.Struct, kw_only=True):
    text: str
    confidence: float
    answered: bool
    citations: list[Citation]
    actions: list[SuggestedAction]


class Answerer:
    def __init__(self, ctx: Context, provider: Provider, cache: AnswerCache[CachedAnswer], metrics: Metrics) -> None:
        self.ctx = ctx
        self.provider = provider
        self.cache = cache
        self.metrics = metrics
        self._background: set[asyncio.Task] = set()
        self._tenant_stats: dict[str, TenantStats] = {}
        self._repeated: dict[tuple[str, int, str], bool] = {}
        self._term_counts: dict[tuple[str, int, str], int] = {}
        self._limiter: tuple[asyncio.AbstractEventLoop, anyio.CapacityLimiter] | None = None
        self._turn: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    def _retrieval_limiter(self) -> anyio.CapacityLimiter:
        """At most `settings.retrieval_threads` questions retrieved at once. Ten concurrent
        retrievals in one process cost ~25% more CPU each than one at a time (they hand the
        interpreter lock back and forth), so the queue moves faster when the rest wait their
        turn. One limiter per event loop: evaluation runs each set in a loop of its own."""
        loop = asyncio.get_running_loop()
        if self._limiter is None or self._limiter[0] is not loop:
            self._limiter = (loop, anyio.CapacityLimiter(self.ctx.settings.retrieval_threads))
        return self._limiter[1]

    def _on_loop(self, tenant: Tenant) -> bool:
        """Whether this tenant's questions are read and retrieved on the event loop itself, one at
        a time (`answer_threads` 0 on the SQLite files) rather than in worker threads."""
        return not self.ctx.settings.answer_threads and tenant.store.backend == "sqlite"

    def _retrieval_turn(self) -> asyncio.Lock:
        """The queue of questions retrieved on the event loop: asyncio's lock wakes its waiters in
        the order they came. One per event loop, as the limiter."""
        loop = asyncio.get_running_loop()
        if self._turn is None or self._turn[0] is not loop:
            self._turn = (loop, asyncio.Lock())
        return self._turn[1]

    async def _retrieve(self, tenant: Tenant, question: str, page: PageContext | None, lang: str,
                        conversation_id: str | None, history: list[tuple[str, str]]) -> Retrieval:
        """`retrieve`, off the event loop in a worker thread, or on the loop itself when that is
        faster and cannot stall it. On a SQLite file a retrieval is ~6 ms of Python that holds the
        interpreter lock: in a thread it took the lock from the loop (and the loop from it) while
        the loop streamed other answers. With 50 concurrent streams on two workers, the client's
        TTFT p95 was 371 ms with one retrieval thread and 294 ms on the loop (medians of seven
        runs; README, "Workers"), with ~10% more answers a second. A search that must first build the
        tenant's in-memory indexes (new content, a first question) still runs in a thread, in its
        turn, so that the loop is never held for a build."""
        args = (tenant, question, page, lang, conversation_id, history)
        if not self._on_loop(tenant):
            return await anyio.to_thread.run_sync(self.retrieve, *args, limiter=self._retrieval_limiter())
        async with self._retrieval_turn():  # free unless a retrieval is in a thread
            with tenant.reading() as conn:
                in_memory = tenant.store.search.searched_in_memory(conn)
            if in_memory:
                return self.retrieve(*args)
            return await anyio.to_thread.run_sync(self.retrieve, *args)

    # -- the blocking half: in a worker thread, or on the loop in its turn (`_retrieve`) ---------

    def retrieve(self, tenant: Tenant, question: str, page: PageContext | None, lang: str,
                 conversation_id: str | None, history: list[tuple[str, str]] | None = None) -> Retrieval:
        started = time.perf_counter()
        store = tenant.store
        with tenant.reading() as conn:  # one unit of work: on PostgreSQL each is a transaction
            config = tenant.config(conn)
            settings = config.answer
            embedder = self.ctx.tenant_embedder(tenant, conn)
            if history is None:
                history = store.conversations.history(conn, conversation_id) if conversation_id else []
            # A follow-up ("and on Saturdays?") is searched and answered with the subject it continues.
            carried = carried_subject(question, history)
            # "Christmas Eve", "where are you located?", "today" searched as the site writes them.
            words = in_site_words(question, carried, page, lang)
            query = words.query
            on_site = page_on_site(page, config)
            page_url = page.url.split("#")[0] if on_site and page else ""
            page_indexed = bool(page_url) and store.pages.is_active_page(conn, page_url)
        page_text = page_context_text(page) if on_site and page and not page_indexed else ""
        # The model runs outside a unit of work: a PostgreSQL connection is not held meanwhile.
        vectors = embedder.embed([query, page_text] if page_text else [query])
        vector = vectors[0]

        with tenant.reading() as conn:
            match = store.curated.match(conn, normalize_question(question), vector, CURATED_SIMILARITY)
            if match is not None:
                return Retrieval(sources=[], confidence=1.0, best_similarity=match.similarity,
                                 vector=vector.tobytes(), curated=match, history=history, carried=carried,
                                 retrieval_ms=(time.perf_counter() - started) * 1000)

            stats = self._stats(tenant, conn)
            multilingual = len(stats.langs) > 1
            result = store.search.search(
                conn, query, vector, k=max(settings.max_sources * 2, 8), mode="hybrid",
                boost_url=page_url or None, boost=settings.page_boost,
                prefer_lang=lang if multilingual else None, lang_boost=0.3 if multilingual else 0.0,
                embed_pending=pending_embedder(embedder),  # passages a running crawl has not embedded yet
            )
            sources = group_hits(result.hits, settings.max_sources)
            drop_boilerplate(sources, query, self._repeated_check(tenant, conn, stats))
            counts = self._document_counts(tenant, conn, stats, query)
            passages = {i: store.pages.page_passages(conn, s.url, vector=vector)
                        for i, s in enumerate(sources[:WHOLE_PAGE_SOURCES]) if s.chunk_id is not None}
        if page_text and page and len(vectors) > 1:
            page_source = Source(n=0, title=page.title or page_url, url=page_url, text=page_text,
                                 kind="prose", similarity=float(vectors[1] @ vector))
            sources = insert_page_source(sources, page_source, settings.max_sources)
        best = max((s.similarity for s in sources), default=0.0)
        confidence = confidence_of(best, embedder)
        surviving = [s for s in sources if confidence_of(s.similarity, embedder) >= settings.min_confidence]
        # Similarity alone cannot tell an off-topic question from an answerable one in every
        # language (MiniLM rates any two Spanish texts alike): a question whose content words
        # the site mostly never uses is not answered from it, unless a passage is a strong match.
        # Known besides the index: the visitor's page when not indexed, "located" where a passage
        # gives an address, "Wednesday" where the hours say "Tuesday to Friday"…
        known, spanned = known_besides_index(words, question, sources, page_text,
                                             (p.text for page in passages.values() for p in page))
        counts = {**counts, **{day: 1 for day in spanned if not counts.get(day)}}
        coverage = coverage_from_counts(words.covered, counts, coverage_threshold(stats.chunks), also_known=known,
                                        not_counted=NOT_A_SUBJECT)
        native = lang in embedder.native_languages
        strong = STRONG_CONFIDENCE_NATIVE if native else STRONG_CONFIDENCE
        # The answer itself: the sentences, rows, facts and code that answer this question.
        weights = term_weights(f"{question} {words.weighed}".rstrip(), counts, stats.chunks, carried=carried)
        selection = select(question, sources, weights, qvec=vector, embed=embedder.embed, passages=passages,
                           page_url=page_url)
        # Answer or refuse (app/refusal.py), the lead sentence embedded only where it can tell.
        decided = verdict(
            Evidence(question=question, lang=lang, confidence=confidence, strong=strong, native=native,
                     similar_passages=len(surviving), coverage=coverage, counts=counts, chunks=stats.chunks,
                     known=known, asking_where=words.asking_where, sources=sources, selection=selection),
            settings, functools.cache(lambda: float(embedder.embed([selection.lead])[0] @ vector)),
            lambda similarity: confidence_of(similarity, embedder))
        refused, confidence = decided.refused, decided.confidence
        sentence_similarity, signals = decided.sentence_similarity, decided.signals
        if refused:  # a refused answer reports a confidence below the tenant's threshold
            confidence = min(confidence, settings.min_confidence * 0.99)
        sources, quotes = quoted_first(sources, [(q.source, q.text, q.kind) for q in selection.quotes])
        links = [s for s in sources if confidence_of(s.similarity, embedder) > 0.0][:3]
        with tenant.reading() as conn:
            actions = self._actions(tenant, conn, sources, question)
        return Retrieval(sources=sources, confidence=confidence, answered=not refused, refused=refused,
                         best_similarity=best, vector=vector.tobytes(), coverage=coverage, history=history,
                         carried=carried, quotes=quotes,
                         support=selection.support, sentence_similarity=sentence_similarity,
                         signals=signals, actions=actions, links=links,
                         retrieval_ms=(time.perf_counter() - started) * 1000)

    def _repeated_check(self, tenant: Tenant, conn: Connection, stats: TenantStats) -> Callable[[str], bool]:
        """Whether a block is site boilerplate. Pages open with the same few blocks question after
        question: the verdicts are remembered (per content generation) rather than asked of FTS."""
        min_chunks = max(5, stats.chunks // 200)

        def repeated(block: str) -> bool:
            key = (tenant.identity, stats.generation, block[:300])
            verdict = self._repeated.get(key)
            if verdict is None:
                if len(self._repeated) >= 4096:
                    self._repeated.clear()
                verdict = self._repeated[key] = tenant.store.search.is_repeated(conn, block, min_chunks)
            return verdict

        return repeated

    def _document_counts(self, tenant: Tenant, conn: Connection, stats: TenantStats, text: str) -> dict[str, int]:
        """How many chunks use each of the question's words, remembered per content generation."""
        tenant_id = tenant.identity
        terms = content_terms(text)
        missing = [t for t in terms if (tenant_id, stats.generation, t) not in self._term_counts]
        if missing:
            if len(self._term_counts) >= 8192:
                self._term_counts.clear()
            for term, count in tenant.store.search.document_counts(conn, missing).items():
                self._term_counts[(tenant_id, stats.generation, term)] = count
        return {t: self._term_counts.get((tenant_id, stats.generation, t), 0) for t in terms}

    def _stats_current(self, tenant: Tenant) -> bool:
        """Whether `_stats` would answer from what it holds (one small read), not recount."""
        cached = self._tenant_stats.get(tenant.identity)
        if cached is None:
            return False
        with tenant.reading() as conn:
            return cached.generation == tenant.generation(conn)

    def _stats(self, tenant: Tenant, conn: Connection) -> TenantStats:
        """A tenant's chunk count and languages, recounted only when its content changes."""
        generation = tenant.generation(conn)
        cached = self._tenant_stats.get(tenant.identity)
        if cached is None or cached.generation != generation:
            search = tenant.store.search
            cached = self._tenant_stats[tenant.identity] = TenantStats(
                generation=generation, chunks=search.chunk_count(conn), langs=search.chunk_languages(conn))
        return cached

    def _actions(self, tenant: Tenant, conn: Connection, sources: list[Source], question: str) -> list[SuggestedAction]:
        urls = [s.url for s in sources[:3]]
        if not urls:
            return []
        rows = tenant.store.page_content.page_actions(conn, urls)
        words = {w.lower() for w in re.findall(r"\w{4,}", question)}
        manifest = tenant.store.manifests.site_actions(conn)
        rows += [r for r in manifest if words & {w.lower() for w in re.findall(r"\w{4,}", f"{r[0]} {r[1]}")}]
        seen, actions = set(), []
        for name, label, selector, url in rows:
            if name in seen:
                continue
            seen.add(name)
            actions.append(SuggestedAction(name=name, label=label or name, selector=selector, url=url))
        return actions[:3]

    # -- the event stream ---------------------------------------------------------------------

    async def stream(self, tenant: Tenant, request: ChatRequest, *, persist: bool = True,
                     use_cache: bool = True, history: list[tuple[str, str]] | None = None,
                     received: float | None = None) -> AsyncGenerator[Event, None]:
        """Answer one question as a stream of events. Raises before the first event on bad input.

        `history` — the conversation's earlier (question, answer) turns — is read from the tenant
        by the conversation id unless the caller gives it (evaluation replays conversations).
        `received`: when the request came (`time.perf_counter()`), if before this call: the
        answer's latency and TTFT count from then."""
        started = time.perf_counter() if received is None else received
        settings = self.ctx.settings
        question = check_question(request.question, settings.max_question_chars)
        known_id = (request.conversation_id
                    if request.conversation_id and _CONVERSATION_ID.fullmatch(request.conversation_id) else None)

        def read_state():
            with tenant.reading() as conn:
                turns = history if history is not None else (
                    tenant.store.conversations.history(conn, known_id) if known_id else [])
                stats = self._stats(tenant, conn)
                config = tenant.config(conn)
            carried = carried_subject(question, turns)
            lang = question_language(question, request.page, "", stats.langs,
                                     previous=question_language(carried, request.page, "", stats.langs) if carried else "")
            return config, turns, carried, lang, stats.generation

        # On the loop when retrieval is and nothing is recounted (a few reads and ~1 ms of
        # language identification), else in a thread.
        config, history, carried, lang, generation = (
            read_state() if self._on_loop(tenant) and self._stats_current(tenant)
            else await anyio.to_thread.run_sync(read_state))
        conversation_id = known_id or uuid.uuid4().hex
        message_id = uuid.uuid4().hex
        page_url = request.page.url if request.page and page_on_site(request.page, config) else ""
        turn = Turn(conversation_id=conversation_id, message_id=message_id, question=question, answer="",
                    confidence=0.0, lang=lang, source="retrieval", answered=True, page_url=page_url, completed=False)
        first_token_at: float | None = None
        pieces: list[str] = []

        def token(text: str) -> TokenEvent:
            nonlocal first_token_at
            if first_token_at is None:
                first_token_at = time.perf_counter()
            pieces.append(text)
            self.metrics.tokens.inc()
            return TokenEvent(text=text)

        try:
            # A follow-up means what it continues: "and on Saturdays?" is a different question in
            # every conversation.
            # "Are you open today?" is a different question each day.
            today = visitor_day(question, request.page, lang).day
            asked = "\n".join(part for part in (carried, question, today) if part)
            cache_key = self.cache.key(tenant.id, asked, page_url, lang)
            cached, needs_refresh = self.cache.get(cache_key, generation) if use_cache else (None, False)
            if use_cache:
                self.metrics.cache.inc(result="stale" if needs_refresh else "hit" if cached else "miss")
            if needs_refresh:
                self._refresh_later(tenant, request, cache_key)
            if cached is not None:
                turn.source, turn.confidence, turn.answered = "cache", cached.confidence, cached.answered
                if not cached.answered:  # still a knowledge gap, asked once more
                    turn.gap_normalized = normalize_question(question)
                yield MetaEvent(conversation_id=conversation_id, confidence=cached.confidence, lang=lang,
                                answered=cached.answered, source="cache")
                for piece in word_pieces(cached.text):
                    yield token(piece)
                turn.citations = [CitationRow(url=c.url, title=c.title) for c in cached.citations]
                yield CitationsEvent(citations=cached.citations)
                if cached.actions:
                    yield ActionsEvent(actions=cached.actions)
            else:
                found = await self._retrieve(tenant, question, request.page, lang, conversation_id, history)
                if found.curated is None and found.answered:
                    prompt = build_prompt(question, found.sources, config.answer, lang=lang,
                                          site_name=config.name, history=found.history,
                                          page_hint=request.page.title if request.page and page_url else "",
                                          quotes=found.quotes, with_messages=self.provider.reads_messages)
                    # The model's first sentence, once the grounding guard checked it: a reply that the
                    # sources do not answer is answered as not found (app/grounding.py).
                    generated = await opening(self.provider.stream(prompt))
                    if generated.not_on_site:
                        found.answered, found.refused = False, "the model found no answer in the sources"
                        found.confidence = min(found.confidence, config.answer.min_confidence * 0.99)
                turn.confidence = found.confidence
                turn.best_score = found.best_similarity
                if found.curated is not None:
                    turn.source = "curated"
                    item = found.curated.curated
                    yield MetaEvent(conversation_id=conversation_id, confidence=1.0, lang=lang, source="curated")
                    for piece in word_pieces(item.answer):
                        yield token(piece)
                    citations = [Citation(title=url, url=url, snippet="") for url in item.urls]
                    turn.citations = [CitationRow(url=c.url, title=c.title) for c in citations]
                    yield CitationsEvent(citations=citations)
                    actions: list[SuggestedAction] = []
                elif not found.answered:
                    turn.source, turn.answered = "not_found", False
                    turn.gap_normalized = normalize_question(question)
                    turn.gap_vector = found.vector
                    links = found.links
                    yield MetaEvent(conversation_id=conversation_id, confidence=found.confidence, lang=lang,
                                    answered=False, source="not_found")
                    message = (NOT_FOUND if links else NOT_FOUND_NO_LINKS).get(lang) or (NOT_FOUND if links else NOT_FOUND_NO_LINKS)["en"]
                    for piece in word_pieces(message):
                        yield token(piece)
                    citations = [Citation(title=s.title, url=s.url, snippet=snippet(s.text)) for s in links]
                    turn.citations = [CitationRow(url=c.url, title=c.title) for c in citations]
                    yield CitationsEvent(citations=citations)
                    actions = []
                else:
                    yield MetaEvent(conversation_id=conversation_id, confidence=round(found.confidence, 3), lang=lang)
                    async for piece in generated:
                        yield token(piece)
                    cited = cited_sources("".join(pieces), found.sources)
                    citations = [Citation(title=s.title, url=s.url, snippet=snippet(quoted_text(found.quotes, s.n) or s.text))
                                 for s in cited]
                    turn.citations = [CitationRow(url=s.url, title=s.title, chunk_id=s.chunk_id, score=s.score) for s in cited]
                    yield CitationsEvent(citations=citations)
                    actions = found.actions
                    if actions:
                        yield ActionsEvent(actions=actions)
                text = "".join(pieces)
                self.cache.put(cache_key, generation, CachedAnswer(
                    text=text, confidence=turn.confidence, answered=turn.answered,
                    citations=citations, actions=actions))
            now = time.perf_counter()
            turn.latency_ms = round((now - started) * 1000, 2)
            turn.ttft_ms = round(((first_token_at or now) - started) * 1000, 2)
            turn.completed = True
            self.metrics.answers.inc(source=turn.source)
            self.metrics.ttft_seconds.observe(turn.ttft_ms / 1000, source=turn.source)
            self.metrics.answer_seconds.observe(turn.latency_ms / 1000, source=turn.source)
            yield DoneEvent(message_id=message_id, latency_ms=turn.latency_ms, ttft_ms=turn.ttft_ms)
        finally:
            if not turn.completed:
                self.metrics.disconnects.inc()
            turn.answer = "".join(pieces)
            if persist:
                self._persist_later(tenant, turn)

    async def answer(self, tenant: Tenant, request: ChatRequest, *, persist: bool = True, use_cache: bool = True,
                     on_token: Callable[[str], None] | None = None,
                     history: list[tuple[str, str]] | None = None) -> AnswerResult:
        """Run the pipeline to the end and return the whole answer."""
        result = AnswerResult()
        pieces: list[str] = []
        async for event in self.stream(tenant, request, persist=persist, use_cache=use_cache, history=history):
            if isinstance(event, TokenEvent):
                pieces.append(event.text)
                if on_token is not None:
                    on_token(event.text)
            elif isinstance(event, MetaEvent):
                result.confidence, result.answered, result.source = event.confidence, event.answered, event.source
                result.lang, result.conversation_id = event.lang, event.conversation_id
            elif isinstance(event, CitationsEvent):
                result.citations = event.citations
            elif isinstance(event, ActionsEvent):
                result.actions = event.actions
            elif isinstance(event, DoneEvent):
                result.message_id, result.latency_ms, result.ttft_ms = event.message_id, event.latency_ms, event.ttft_ms
        result.answer = "".join(pieces).strip()
        return result

    def _refresh_later(self, tenant: Tenant, request: ChatRequest, cache_key: tuple) -> None:
        """Stale-while-revalidate: recompute a stale cached answer without a visitor waiting."""

        async def refresh() -> None:
            try:
                async for _ in self.stream(tenant, request, persist=False, use_cache=False):
                    pass
            except Exception:
                self.cache.refresh_failed(cache_key)
                log.warning("refreshing a cached answer for tenant %s failed", tenant.id, exc_info=True)

        self._spawn(refresh())

    def _persist_later(self, tenant: Tenant, turn: Turn) -> None:
        """Store the turn without making anyone wait; a failure is logged, never raised."""

        def write() -> None:
            try:
                with tenant.write() as conn:
                    tenant.store.conversations.save_turn(conn, turn)
            except Exception:
                log.exception("could not persist message %s of tenant %s", turn.message_id, tenant.id)

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            write()
            return
        self._spawn(anyio.to_thread.run_sync(write))

    def _spawn(self, coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def drain(self) -> None:
        """Wait for pending persistence (shutdown, tests)."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)


def quoted_text(quotes: list[tuple[int, str, str]], n: int) -> str:
    """What the answer quoted from source `n`: the citation's snippet shows what was used."""
    return " ".join(text for number, text, _ in quotes if number == n)


def vector_of(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


__all__ = ["Answerer", "CachedAnswer", "check_question", "neutralise"]
