"""The hot path: a visitor's question → a stream of typed events.

    curated? → retrieve (hybrid + page boost + page context as a source) → confidence
             → prompt → provider stream → citations, actions, done → persist (off the path)

`Answerer.stream()` is the one readable function; blocking work (embedding, SQLite) runs in
worker threads so the event loop only shuffles bytes. Persistence happens after the `done`
event (or the disconnect), in the background, so it never delays the visitor.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable, Collection
from urllib.parse import urlsplit

import anyio
import msgspec
import numpy as np

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
from app.metrics import Metrics
from app.prompt import Source, build_prompt, neutralise
from app.providers import Provider
from ingest.embed import Embedder
from ingest.lang import detect_language, primary_subtag
from store import conversations, curated
from store.config import SiteConfig
from store.conversations import CitationRow, Turn
from store.errors import EmptyQuestion, QuestionTooLong
from store.search import (
    TermCoverage,
    chunk_count,
    chunk_languages,
    content_terms,
    coverage_threshold,
    is_repeated,
    search,
    term_coverage,
)
from store.tenants import Tenant

log = logging.getLogger(__name__)

CURATED_SIMILARITY = 0.86
"""Embedding similarity above which a curated question counts as the same question."""

STRONG_CONFIDENCE = 0.9
"""A passage this close answers even a question whose wording the site does not use (typos,
synonyms, another language); below it, the term-coverage check applies."""
STRONG_CONFIDENCE_NATIVE = 0.6
"""The same for a question in one of the model's own languages, where similarity is not inflated."""

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
_CITE = re.compile(r"\[(\d{1,2})\]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def confidence_of(similarity: float, embedder: Embedder) -> float:
    """The model's cosine similarity on its own calibrated 0..1 confidence scale."""
    return float(min(1.0, max(0.0, (similarity - embedder.similarity_floor) / embedder.similarity_span)))


class Retrieval(msgspec.Struct, kw_only=True):
    """What the blocking half of the pipeline found, handed back to the event loop."""

    sources: list[Source]
    confidence: float
    best_similarity: float
    vector: bytes
    curated: curated.CuratedMatch | None = None
    coverage: TermCoverage | None = None
    history: list[tuple[str, str]] = msgspec.field(default_factory=list)
    actions: list[SuggestedAction] = msgspec.field(default_factory=list)
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


def check_question(question: str, max_chars: int) -> str:
    """Clean the visitor's text; refuse what cannot be a question."""
    question = _CONTROL.sub(" ", question).strip()
    if not question:
        raise EmptyQuestion("the question is empty")
    if len(question) > max_chars:
        raise QuestionTooLong(f"the question is longer than {max_chars} characters; please shorten it")
    return question


def page_on_site(page: PageContext | None, config: SiteConfig) -> bool:
    """Only a page of this tenant's own site may boost results or act as a source."""
    if page is None or not page.url:
        return False
    host = (urlsplit(page.url).hostname or "").lower()
    return bool(host) and (host == config.host or host in {h.lower() for h in config.crawl.allowed_hosts})


def page_context_text(page: PageContext) -> str:
    """The visitor's page as a source: title, description, headings and its JSON-LD facts."""
    from ingest.facts import facts_from_jsonld

    parts = [page.title, page.description, *page.headings[:20]]
    try:
        facts = facts_from_jsonld(page.jsonld[:20])
    except Exception:  # hostile JSON-LD must never break an answer
        log.warning("page context JSON-LD could not be read", exc_info=True)
        facts = []
    parts += [f.text for f in facts]
    text = "\n\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
    return re.sub(r"<[^>]*>", " ", text)[:3000]


def question_language(question: str, page: PageContext | None, config_lang: str = "",
                      site_langs: Collection[str] = ()) -> str:
    """The visitor's language: detected, with the site's languages (and the page's) preferred when
    the detector hesitates between close ones; the page's language when the text is too short."""
    page_lang = primary_subtag(page.lang if page else "")
    fallback = page_lang or config_lang or "en"
    prefer = {*site_langs, page_lang} - {""}
    return detect_language(question, default=fallback, min_words=3, min_prob=0.9, prefer=prefer)


class Answerer:
    def __init__(self, ctx: Context, provider: Provider, cache: AnswerCache[CachedAnswer], metrics: Metrics) -> None:
        self.ctx = ctx
        self.provider = provider
        self.cache = cache
        self.metrics = metrics
        self._background: set[asyncio.Task] = set()
        self._tenant_stats: dict[str, TenantStats] = {}
        self._repeated: dict[tuple[str, int, str], bool] = {}

    # -- the blocking half: runs in a worker thread -------------------------------------------

    def retrieve(self, tenant: Tenant, question: str, page: PageContext | None, lang: str,
                 conversation_id: str | None) -> Retrieval:
        started = time.perf_counter()
        config = tenant.config()
        settings = config.answer
        embedder = self.ctx.tenant_embedder(tenant)
        conn = tenant.reader()
        on_site = page_on_site(page, config)
        page_url = page.url.split("#")[0] if on_site and page else ""
        page_indexed = bool(page_url) and conn.execute(
            "SELECT 1 FROM pages WHERE url = ? AND status = 'active'", (page_url,)
        ).fetchone() is not None
        page_text = page_context_text(page) if on_site and page and not page_indexed else ""
        vectors = embedder.embed([question, page_text] if page_text else [question])
        vector = vectors[0]

        match = curated.match(conn, normalize_question(question), vector, CURATED_SIMILARITY)
        history = conversations.history(conn, conversation_id) if conversation_id else []
        if match is not None:
            return Retrieval(sources=[], confidence=1.0, best_similarity=match.similarity,
                             vector=vector.tobytes(), curated=match, history=history,
                             retrieval_ms=(time.perf_counter() - started) * 1000)

        stats = self._stats(tenant)
        multilingual = len(stats.langs) > 1
        result = search(
            conn, question, vector, k=max(settings.max_sources * 2, 8), mode="hybrid",
            boost_url=page_url or None, boost=settings.page_boost,
            prefer_lang=lang if multilingual else None, lang_boost=0.3 if multilingual else 0.0,
        )
        sources: list[Source] = []
        seen_urls: dict[str, int] = {}
        for hit in result.hits:
            # Several chunks of one page are one source (one citation), up to two passages each.
            if hit.url in seen_urls:
                source = sources[seen_urls[hit.url]]
                if source.text.count("\n\n") < 1 and hit.similarity > 0.2:
                    source.text += "\n\n" + hit.text
                    source.context += " " + " ".join(hit.heading_path)
                continue
            if len(sources) >= settings.max_sources:
                continue
            seen_urls[hit.url] = len(sources)
            sources.append(Source(n=len(sources) + 1, title=hit.title, url=hit.url, text=hit.text, kind=hit.kind,
                                  context=" ".join(hit.heading_path), score=hit.score,
                                  similarity=hit.similarity, chunk_id=hit.chunk_id))
        self._drop_boilerplate(conn, tenant.id, stats, sources, question)
        if page_text and page and len(vectors) > 1:
            similarity = float(vectors[1] @ vector)
            page_source = Source(n=0, title=page.title or page_url, url=page_url, text=page_text,
                                 kind="prose", similarity=similarity)
            position = sum(1 for s in sources if s.similarity > similarity + 0.05)
            sources.insert(position, page_source)
            sources = sources[: settings.max_sources]
            for n, source in enumerate(sources, start=1):
                source.n = n
        best = max((s.similarity for s in sources), default=0.0)
        surviving = [s for s in sources if confidence_of(s.similarity, embedder) >= settings.min_confidence]
        confidence = confidence_of(best, embedder)
        if len(surviving) < max(1, settings.min_chunks):
            confidence = min(confidence, settings.min_confidence * 0.99)
        # Similarity alone cannot tell an off-topic question from an answerable one in every
        # language (MiniLM rates any two Spanish texts alike): a question whose content words
        # the site mostly never uses is not answered from it, unless a passage is a strong match.
        coverage = None
        strong = STRONG_CONFIDENCE_NATIVE if lang in embedder.native_languages else STRONG_CONFIDENCE
        if settings.min_term_coverage > 0 and confidence < strong:
            coverage = term_coverage(conn, question, coverage_threshold(stats.chunks), also_known=page_text)
            if coverage.share < settings.min_term_coverage:
                confidence = min(confidence, settings.min_confidence * 0.99)
        return Retrieval(sources=sources, confidence=confidence, best_similarity=best, vector=vector.tobytes(),
                         coverage=coverage, history=history, actions=self._actions(conn, sources, question),
                         retrieval_ms=(time.perf_counter() - started) * 1000)

    def _drop_boilerplate(self, conn, tenant_id: str, stats: TenantStats, sources: list[Source],
                          question: str) -> None:
        """Leave out a source's opening blocks that the site repeats on many pages (a translation
        notice, a banner): they would be quoted as the answer's first sentence. A block that uses
        a word of the question is kept without asking (and most first blocks do)."""
        min_chunks = max(5, stats.chunks // 200)
        terms = [t for t in content_terms(question) if len(t) > 2]

        def repeated(block: str) -> bool:
            folded = block.lower()
            if any(term in folded for term in terms):
                return False
            # Pages open with the same few blocks question after question: remember the verdicts
            # (per content generation) rather than asking FTS each time.
            key = (tenant_id, stats.generation, block[:300])
            verdict = self._repeated.get(key)
            if verdict is None:
                if len(self._repeated) >= 4096:
                    self._repeated.clear()
                verdict = self._repeated[key] = is_repeated(conn, block, min_chunks)
            return verdict

        for source in sources:
            blocks = source.text.split("\n\n")
            start = 0
            while start < min(len(blocks) - 1, 6) and repeated(blocks[start]):
                start += 1
            if start:
                source.text = "\n\n".join(blocks[start:])

    def _stats(self, tenant: Tenant) -> TenantStats:
        """A tenant's chunk count and languages, recounted only when its content changes."""
        generation = tenant.generation()
        cached = self._tenant_stats.get(tenant.id)
        if cached is None or cached.generation != generation:
            conn = tenant.reader()
            cached = self._tenant_stats[tenant.id] = TenantStats(
                generation=generation, chunks=chunk_count(conn), langs=chunk_languages(conn))
        return cached

    def _actions(self, conn, sources: list[Source], question: str) -> list[SuggestedAction]:
        urls = [s.url for s in sources[:3]]
        if not urls:
            return []
        marks = ",".join("?" * len(urls))
        rows = conn.execute(
            f"SELECT a.name, a.label, a.selector, a.url FROM actions a JOIN pages p ON p.id = a.page_id "
            f"WHERE p.url IN ({marks}) AND p.status = 'active' LIMIT 10", urls
        ).fetchall()
        words = {w.lower() for w in re.findall(r"\w{4,}", question)}
        manifest = conn.execute("SELECT name, label, selector, url FROM actions WHERE page_id IS NULL").fetchall()
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
                     use_cache: bool = True) -> AsyncIterator[Event]:
        """Answer one question as a stream of events. Raises before the first event on bad input."""
        started = time.perf_counter()
        settings = self.ctx.settings
        question = check_question(request.question, settings.max_question_chars)
        config, stats = await anyio.to_thread.run_sync(lambda: (tenant.config(), self._stats(tenant)))
        lang = question_language(question, request.page, "", stats.langs)
        conversation_id = request.conversation_id if request.conversation_id and _CONVERSATION_ID.fullmatch(request.conversation_id) else uuid.uuid4().hex
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
            generation = await anyio.to_thread.run_sync(tenant.generation)
            cache_key = self.cache.key(tenant.id, question, page_url, lang)
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
                for piece in re.findall(r"\S+\s*|\s+", cached.text):
                    yield token(piece)
                turn.citations = [CitationRow(url=c.url, title=c.title) for c in cached.citations]
                yield CitationsEvent(citations=cached.citations)
                if cached.actions:
                    yield ActionsEvent(actions=cached.actions)
            else:
                found = await anyio.to_thread.run_sync(
                    self.retrieve, tenant, question, request.page, lang, request.conversation_id
                )
                turn.confidence = found.confidence
                turn.best_score = found.best_similarity
                if found.curated is not None:
                    turn.source = "curated"
                    item = found.curated.curated
                    yield MetaEvent(conversation_id=conversation_id, confidence=1.0, lang=lang, source="curated")
                    for piece in re.findall(r"\S+\s*|\s+", item.answer):
                        yield token(piece)
                    citations = [Citation(title=url, url=url, snippet="") for url in item.urls]
                    turn.citations = [CitationRow(url=c.url, title=c.title) for c in citations]
                    yield CitationsEvent(citations=citations)
                    actions: list[SuggestedAction] = []
                elif found.confidence < config.answer.min_confidence:
                    turn.source, turn.answered = "not_found", False
                    turn.gap_normalized = normalize_question(question)
                    turn.gap_vector = found.vector
                    links = found.sources[:3]
                    yield MetaEvent(conversation_id=conversation_id, confidence=found.confidence, lang=lang,
                                    answered=False, source="not_found")
                    message = (NOT_FOUND if links else NOT_FOUND_NO_LINKS).get(lang) or (NOT_FOUND if links else NOT_FOUND_NO_LINKS)["en"]
                    for piece in re.findall(r"\S+\s*|\s+", message):
                        yield token(piece)
                    citations = [Citation(title=s.title, url=s.url, snippet=snippet(s.text)) for s in links]
                    turn.citations = [CitationRow(url=c.url, title=c.title) for c in citations]
                    yield CitationsEvent(citations=citations)
                    actions = []
                else:
                    yield MetaEvent(conversation_id=conversation_id, confidence=round(found.confidence, 3), lang=lang)
                    prompt = build_prompt(question, found.sources, config.answer, lang=lang,
                                          site_name=config.name, history=found.history,
                                          page_hint=request.page.title if request.page and page_url else "")
                    async for piece in self.provider.stream(prompt):
                        yield token(piece)
                    cited = cited_sources("".join(pieces), found.sources)
                    citations = [Citation(title=s.title, url=s.url, snippet=snippet(s.text)) for s in cited]
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
                     on_token: Callable[[str], None] | None = None) -> AnswerResult:
        """Run the pipeline to the end and return the whole answer."""
        result = AnswerResult()
        pieces: list[str] = []
        async for event in self.stream(tenant, request, persist=persist, use_cache=use_cache):
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
                    conversations.save_turn(conn, turn)
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


def snippet(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def cited_sources(answer: str, sources: list[Source]) -> list[Source]:
    """The citation list, in source-number order so that marker [n] is the n-th link: every
    source up to the highest number the answer cites (the top three if it cites none)."""
    numbers = {int(m.group(1)) for m in _CITE.finditer(answer)} & {s.n for s in sources}
    if not numbers:
        return sources[:3]
    return [s for s in sorted(sources, key=lambda s: s.n) if s.n <= max(numbers)]


def vector_of(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


__all__ = ["Answerer", "CachedAnswer", "check_question", "neutralise"]
