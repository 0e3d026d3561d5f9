"""Golden question sets: page retrieval and the full answer pipeline (`Answerer.stream`) on a
tenant, one question or one conversation a line, scored by kind, category and language.
"""

from __future__ import annotations

import asyncio
import functools
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal
from urllib.parse import urljoin

import msgspec

from app.context import Context
from app.eval.metrics import ndcg_at_k, percentiles, unique
from app.providers import Provider, provider_from_settings
from ingest.embed import Embedder
from store.errors import InvalidInput
from store.search import DEFAULT_FUSION, FusionParams, Mode
from store.tenants import Tenant

Progress = Callable[[int, int, str], None]



class GoldenItem(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    q: str = ""
    turns: list[str] = msgspec.field(default_factory=list)
    """A conversation instead of one question: asked in order, scored on the last turn."""
    expect_url: list[str] = msgspec.field(default_factory=list)
    """Pages that answer the question (any one suffices); relative URLs resolve against the site."""
    a_contains: list[str] = msgspec.field(default_factory=list)
    """Strings the answer must all contain (case-insensitive)."""
    a_contains_any: list[str] = msgspec.field(default_factory=list)
    """Alternatives, one of which the answer must contain (case-insensitive), beside `a_contains`:
    "martes" or "Tuesdays" where either language's page answers, "15:00" or "3:00 pm"."""
    lang: str = ""
    kind: Literal["answerable", "unanswerable"] = "answerable"
    category: Literal["", "answerable", "near_miss", "off_topic", "multi_turn"] = ""
    """What the question tests (reported separately): a near miss is unanswerable in the site's
    own vocabulary, an off-topic one shares only a word with it."""

    @property
    def question(self) -> str:
        """The question that is scored: the last turn of a conversation."""
        return self.turns[-1] if self.turns else self.q

    @property
    def earlier_turns(self) -> list[str]:
        return self.turns[:-1]


def load_golden(path: Path) -> list[GoldenItem]:
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"golden set {path} does not exist")
    items = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip() or line.lstrip().startswith("//"):
                continue
            try:
                item = msgspec.json.decode(line, type=GoldenItem)
            except msgspec.DecodeError as exc:
                raise InvalidInput(f"{path.name} line {number}: {exc}") from None
            if item.kind == "answerable" and not item.expect_url:
                raise InvalidInput(f"{path.name} line {number}: an answerable question needs expect_url")
            if bool(item.q) == bool(item.turns):
                raise InvalidInput(f"{path.name} line {number}: give either q or turns")
            items.append(item)
    if not items:
        raise InvalidInput(f"golden set {path} has no questions")
    return items


def normalise_url(url: str) -> str:
    url = url.split("#", 1)[0]
    return url[: -len("index.html")] if url.endswith("/index.html") else url


class GoldenRow(msgspec.Struct, kw_only=True):
    q: str
    kind: str
    lang: str
    detected_lang: str
    expect_url: list[str]
    rank: int | None
    """Rank of the first expected page among the retrieved pages (None: not in the top 10)."""
    top_urls: list[str]
    answered: bool
    contains_ok: bool | None
    confidence: float
    answer_precision: float | None = None
    """Share of the answer's sentences quoted from an expected page (answered, answerable only)."""
    category: str = ""
    retrieval_ms: float
    ttft_ms: float
    answer: str = ""


class GoldenReport(msgspec.Struct, kw_only=True, omit_defaults=True):
    tenant: str
    golden: str
    questions: int
    answerable: int
    unanswerable: int
    metrics: dict[str, float]
    by_lang: dict[str, dict[str, float]]
    by_category: dict[str, dict[str, float]]
    retrieval_ms: dict[str, float]
    ttft_ms: dict[str, float]
    misses: list[GoldenRow]
    rows: list[GoldenRow] | None = None


def answer_precision(answer: str, cited_urls: Sequence[str], expected: set[str]) -> float | None:
    """Share of the answer's sentences that cite an expected page: the text before each marker
    [n] is quoted from citation n. None when the answer has no marked sentence."""
    from ingest.chunk import split_sentences

    hits = total = 0
    for segment, marker in re.findall(r"(.*?)\[(\d{1,2})\]", answer, flags=re.S):
        number = int(marker)
        sentences = len(split_sentences(segment)) or 1
        total += sentences
        if 1 <= number <= len(cited_urls) and normalise_url(cited_urls[number - 1]) in expected:
            hits += sentences
    return round(hits / total, 4) if total else None


def contains_expected(answer: str, item: GoldenItem) -> bool:
    """Whether `answer` contains every `a_contains` string and one of `a_contains_any` (case and
    runs of white space aside)."""
    text = " ".join(answer.casefold().split())

    def has(needle: str) -> bool:
        return " ".join(needle.casefold().split()) in text

    return all(map(has, item.a_contains)) and (not item.a_contains_any or any(map(has, item.a_contains_any)))


def tenant_languages(tenant: Tenant) -> set[str]:
    with tenant.reading() as conn:
        return set(tenant.store.search.chunk_languages(conn))


#: The language preference `Answerer.retrieve` applies on multilingual tenants.
ANSWER_LANG_BOOST = 0.3


def rank_pages(tenant: Tenant, embedder: Embedder | None, question: str, lang: str, *, multilingual: bool,
               mode: Mode = "hybrid", k_chunks: int = 30, params: FusionParams = DEFAULT_FUSION,
               lang_boost: float = ANSWER_LANG_BOOST) -> list[str]:
    """Pages in the order the answer pipeline takes its sources: search with the same language
    preference as `Answerer.retrieve`, chunks grouped by page (a page ranks by its best chunk).
    30 chunks give at least 10 distinct pages on the sites measured."""
    vector = embedder.embed_query(question) if mode != "bm25" and embedder is not None else None
    with tenant.reading() as conn:
        hits = tenant.store.search.search(
            conn, question, vector, k=k_chunks, mode=mode, params=params,
            prefer_lang=lang if multilingual else None, lang_boost=lang_boost if multilingual else 0.0).hits
    return unique(normalise_url(hit.url) for hit in hits)


def _expected(site: str, item: GoldenItem) -> set[str]:
    return {normalise_url(urljoin(site, u)) for u in item.expect_url}


def _first_rank(pages: Sequence[str], expected: set[str], k: int = 10) -> int | None:
    return next((i for i, url in enumerate(pages[:k], start=1) if url in expected), None)


RETRIEVAL_METRICS = ("hit_at_1", "recall_at_5", "recall_at_10", "mrr", "ndcg_at_10")


def golden_retrieval(tenant: Tenant, embedder: Embedder, items: Sequence[GoldenItem], *,
                     mode: Mode = "hybrid", params: FusionParams = DEFAULT_FUSION,
                     lang_boost: float = ANSWER_LANG_BOOST) -> dict[str, dict[str, float]]:
    """Page-retrieval metrics of a golden set without running answers (bake-offs, fusion tuning):
    {"all": {...}, "<lang>": {...}} over the answerable questions."""
    from app.question import question_language

    site = tenant.config().site
    site_langs = tenant_languages(tenant)
    multilingual = len(site_langs) > 1
    rows = []
    for item in items:
        if item.kind != "answerable":
            continue
        lang = question_language(item.question, None, "", site_langs)
        pages = rank_pages(tenant, embedder, item.question, lang, multilingual=multilingual, mode=mode, params=params,
                           lang_boost=lang_boost)
        expected = _expected(site, item)
        rows.append(GoldenRow(q=item.question, kind=item.kind, lang=item.lang, detected_lang=lang,
                              expect_url=sorted(expected), rank=_first_rank(pages, expected), top_urls=pages[:10],
                              answered=True, contains_ok=None, confidence=0.0, retrieval_ms=0.0, ttft_ms=0.0,
                              answer=""))
    out = {"all": golden_metrics(rows)}
    out.update({lang: golden_metrics([r for r in rows if r.lang == lang])
                for lang in sorted({r.lang for r in rows if r.lang})})
    return {group: {k: v for k, v in metrics.items() if k in RETRIEVAL_METRICS} for group, metrics in out.items()}


def _rate(flags: Sequence[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def golden_metrics(rows: Sequence[GoldenRow]) -> dict[str, float]:
    """The metrics of any rows: one set's, or several sets' pooled."""
    answerable = [r for r in rows if r.kind == "answerable"]
    unanswerable = [r for r in rows if r.kind == "unanswerable"]
    with_needles = [r for r in answerable if r.contains_ok is not None]
    relevance = [({normalise_url(u): 1 for u in r.expect_url}, r) for r in answerable]
    precisions = [r.answer_precision for r in answerable if r.answered and r.answer_precision is not None]
    return {
        "hit_at_1": _rate([r.rank == 1 for r in answerable]),
        "recall_at_5": _rate([r.rank is not None and r.rank <= 5 for r in answerable]),
        "recall_at_10": _rate([r.rank is not None and r.rank <= 10 for r in answerable]),
        "mrr": round(sum(1 / r.rank for r in answerable if r.rank) / len(answerable), 4) if answerable else 0.0,
        "ndcg_at_10": round(sum(ndcg_at_k(r.top_urls, rel, 10) for rel, r in relevance) / len(relevance), 4)
        if relevance else 0.0,
        "answer_contains": _rate([bool(r.contains_ok) for r in with_needles]),
        "answer_precision": round(sum(precisions) / len(precisions), 4) if precisions else 0.0,
        "honest_refusal": _rate([not r.answered for r in unanswerable]),
        "false_refusal": _rate([not r.answered for r in answerable]),
        "lang_detected": _rate([r.detected_lang == r.lang for r in rows if r.lang]),
    }


def _is_miss(row: GoldenRow) -> bool:
    if row.kind == "unanswerable":
        return row.answered
    return row.rank is None or row.rank > 5 or not row.answered or row.contains_ok is False


async def _golden_rows(ctx: Context, tenant: Tenant, items: Sequence[GoldenItem],
                       provider: Provider, on_progress: Progress | None,
                       params: FusionParams) -> list[GoldenRow]:
    from app.events import ChatRequest
    from app.followup import carried_subject
    from app.question import question_language
    from app.stack import answer_stack

    answerer = answer_stack(ctx, provider=provider).answerer
    site = tenant.config().site
    embedder = ctx.tenant_embedder(tenant)
    site_langs = tenant_languages(tenant)
    multilingual = len(site_langs) > 1
    rows = []
    for number, item in enumerate(items, start=1):
        # A conversation's earlier turns are answered first; their answers are its history.
        history: list[tuple[str, str]] = []
        for earlier in item.earlier_turns:
            before = await answerer.answer(tenant, ChatRequest(key=tenant.widget_key, question=earlier),
                                           persist=False, use_cache=False, history=list(history))
            history.append((earlier, before.answer))
        question = item.question
        carried = carried_subject(question, history)
        query = f"{carried} {question}" if carried else question
        lang = question_language(question, None, "", site_langs,
                                 previous=question_language(carried, None, "", site_langs) if carried else "")
        started = time.perf_counter()
        pages = await asyncio.to_thread(
            functools.partial(rank_pages, tenant, embedder, query, lang, multilingual=multilingual, params=params))
        retrieval_ms = (time.perf_counter() - started) * 1000
        expected = _expected(site, item)
        rank = _first_rank(pages, expected)
        request = ChatRequest(key=tenant.widget_key, question=question)
        # No cache and no persistence: an evaluation must neither be served from nor leave
        # conversations and knowledge gaps in the tenant it measures.
        found = await answerer.answer(tenant, request, persist=False, use_cache=False, history=history)
        answered, confidence, answer = found.answered, found.confidence, found.answer
        ttft = found.ttft_ms or found.latency_ms
        contains = precision = None
        if item.kind == "answerable" and (item.a_contains or item.a_contains_any):
            contains = answered and contains_expected(answer, item)
        if item.kind == "answerable" and answered:
            precision = answer_precision(answer, [c.url for c in found.citations], expected)
        rows.append(GoldenRow(
            q=" → ".join([*item.earlier_turns, question]), kind=item.kind, lang=item.lang, detected_lang=lang,
            expect_url=sorted(expected), rank=rank, top_urls=pages[:10], answered=answered, contains_ok=contains,
            confidence=round(confidence, 3), answer_precision=precision, category=item.category,
            retrieval_ms=round(retrieval_ms, 2), ttft_ms=round(ttft, 2), answer=answer[:400]))
        if on_progress:
            on_progress(number, len(items), question[:60])
    await answerer.drain()
    return rows


def run_golden(ctx: Context, tenant: Tenant, items: Sequence[GoldenItem], *, golden_name: str = "",
               provider_factory: Callable[[], Provider] | None = None, keep_rows: bool = False,
               params: FusionParams = DEFAULT_FUSION, on_progress: Progress | None = None) -> GoldenReport:
    """Ask every golden question: page retrieval metrics, then the full answer pipeline with the
    provider the server would use (an LLM if FRONTDESK_LLM_BASE_URL is set, else extractive)."""

    async def run():
        provider = provider_factory() if provider_factory else provider_from_settings(ctx.settings)
        try:
            return await _golden_rows(ctx, tenant, items, provider, on_progress, params)
        finally:
            await provider.aclose()

    rows = asyncio.run(run())
    by_lang = {lang: golden_metrics([r for r in rows if r.lang == lang])
               for lang in sorted({r.lang for r in rows if r.lang})}
    return GoldenReport(
        tenant=tenant.id, golden=golden_name, questions=len(rows),
        answerable=sum(r.kind == "answerable" for r in rows),
        unanswerable=sum(r.kind == "unanswerable" for r in rows),
        metrics=golden_metrics(rows), by_lang=by_lang,
        by_category={category: golden_metrics([r for r in rows if r.category == category])
                     for category in sorted({r.category for r in rows if r.category})},
        retrieval_ms=percentiles([r.retrieval_ms for r in rows]),
        ttft_ms=percentiles([r.ttft_ms for r in rows]),
        misses=[r for r in rows if _is_miss(r)], rows=rows if keep_rows else None)


_GOLDEN_LABELS = {
    "hit_at_1": "hit@1", "recall_at_5": "recall@5", "recall_at_10": "recall@10", "mrr": "MRR@10",
    "ndcg_at_10": "nDCG@10", "answer_contains": "answer contains", "answer_precision": "answer precision",
    "honest_refusal": "honest refusal (unanswerable)",
    "false_refusal": "false refusal (answerable)", "lang_detected": "question language detected",
}


def golden_markdown(report: GoldenReport) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    langs = list(report.by_lang)
    lines = [f"### {report.golden or 'golden set'} on tenant `{report.tenant}`", "",
             f"{report.questions} questions: {report.answerable} answerable, {report.unanswerable} unanswerable.", "",
             "| metric | all | " + " | ".join(langs) + " |",
             "| --- | --- | " + " | ".join("---" for _ in langs) + " |"]
    for key, label in _GOLDEN_LABELS.items():
        values = [report.metrics[key], *(report.by_lang[lang][key] for lang in langs)]
        lines.append(f"| {label} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    for name, stats in (("retrieval ms", report.retrieval_ms), ("time to first token ms", report.ttft_ms)):
        lines.append(f"| {name} p50 / p95 / p99 | {stats['p50']:.1f} / {stats['p95']:.1f} / {stats['p99']:.1f} |"
                     + " |" * len(langs))
    if report.misses:
        lines += ["", "Misses:", "", "| question | lang | kind | rank | answered | contains | confidence | expected | got |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for row in report.misses:
            lines.append(
                f"| {cell(row.q)} | {row.lang} | {row.kind} | {row.rank or '-'} | {'yes' if row.answered else 'no'} | "
                f"{'-' if row.contains_ok is None else 'yes' if row.contains_ok else 'no'} | {row.confidence:.2f} | "
                f"{cell(', '.join(row.expect_url)) or '-'} | {cell(', '.join(row.top_urls[:3]))} |")
    return "\n".join(lines)
