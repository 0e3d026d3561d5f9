"""Knowledge gaps grouped by meaning (the tenant's own embedder), and curated-answer drafts made
from the site's closest passages by the answer pipeline's retrieval — or the plain statement that
the site has nothing on the question."""

from __future__ import annotations

import msgspec
import numpy as np

from app.answer import Answerer, confidence_of
from app.context import Context
from app.sources import snippet
from store.conversations import GapRow
from store.tenants import Tenant

#: Gap questions join a group when their similarity to its centre reaches the model's calibrated
#: confidence of this much (paraphrases of one question score ~0.55–0.7 with MiniLM, unrelated
#: questions on one site below ~0.5).
GROUP_CONFIDENCE = 0.7
#: Below this calibrated confidence no passage of the site is about the question at all.
NOTHING_BELOW = 0.1


class GapQuestion(msgspec.Struct, kw_only=True):
    id: int
    question: str
    count: int
    lang: str
    last_at: float


class GapCluster(msgspec.Struct, kw_only=True):
    """Gap questions that mean the same thing; `id` (its most asked gap) names it in URLs."""

    id: int
    question: str
    count: int
    first_at: float
    last_at: float
    langs: list[str]
    questions: list[GapQuestion]

    @property
    def ids(self) -> list[int]:
        return [q.id for q in self.questions]


class Passage(msgspec.Struct, kw_only=True):
    title: str
    url: str
    text: str
    confidence: float


class Draft(msgspec.Struct, kw_only=True):
    question: str
    answer: str
    urls: list[str]
    passages: list[Passage]
    nothing: bool
    """True when the site has nothing on the question: the owner writes the answer."""
    curated_question: str = ""
    """Set when a curated answer already matches the question."""


def group_threshold(tenant_embedder) -> float:
    return tenant_embedder.similarity_floor + GROUP_CONFIDENCE * tenant_embedder.similarity_span


def group(rows: list[GapRow], threshold: float) -> list[GapCluster]:
    """Most asked first, each question joins the group whose centre it is closest to (if close
    enough), and the centre moves to the mean of its questions."""
    clusters: list[GapCluster] = []
    centres: list[np.ndarray] = []
    sums: list[np.ndarray] = []
    for row in sorted(rows, key=lambda r: (-r.count, -r.last_at)):
        vector = np.frombuffer(row.vector, dtype=np.float32) if row.vector else None
        question = GapQuestion(id=row.id, question=row.question, count=row.count, lang=row.lang, last_at=row.last_at)
        best = -1
        if vector is not None and centres:
            sims = [float(c @ vector) if c.shape == vector.shape else -1.0 for c in centres]
            best = int(np.argmax(sims)) if max(sims) >= threshold else -1
        if best < 0:
            clusters.append(GapCluster(id=row.id, question=row.question, count=0, first_at=row.first_at,
                                       last_at=row.last_at, langs=[], questions=[]))
            sums.append(vector.copy() if vector is not None else np.zeros(0, dtype=np.float32))
            centres.append(vector if vector is not None else np.zeros(0, dtype=np.float32))
            best = len(clusters) - 1
        elif vector is not None:
            sums[best] = sums[best] + vector
            norm = float(np.linalg.norm(sums[best])) or 1.0
            centres[best] = sums[best] / norm
        cluster = clusters[best]
        cluster.questions.append(question)
        cluster.count += row.count
        cluster.first_at = min(cluster.first_at, row.first_at)
        cluster.last_at = max(cluster.last_at, row.last_at)
        if row.lang and row.lang not in cluster.langs:
            cluster.langs.append(row.lang)
    clusters.sort(key=lambda c: (-c.count, -c.last_at))
    return clusters


def clusters(ctx: Context, tenant: Tenant, limit: int = 1000) -> list[GapCluster]:
    """The tenant's open gaps grouped by meaning (blocking: call from a worker thread). Gaps
    recorded without a vector are embedded now, once, and their vectors kept."""
    embedder = ctx.tenant_embedder(tenant)
    with tenant.reading() as conn:
        rows = tenant.store.conversations.open_gaps(conn, limit=limit)
    lacking = [r for r in rows if not r.vector or len(r.vector) != 4 * embedder.dim]
    if lacking:
        vectors = embedder.embed([r.question for r in lacking])
        blobs = {r.id: np.asarray(v, dtype=np.float32).tobytes() for r, v in zip(lacking, vectors, strict=True)}
        with tenant.write() as conn:
            tenant.store.conversations.set_gap_vectors(conn, blobs)
        for row in lacking:
            row.vector = blobs[row.id]
    return group(rows, group_threshold(embedder))


def cluster_of(ctx: Context, tenant: Tenant, gap_id: int) -> GapCluster | None:
    return next((c for c in clusters(ctx, tenant) if gap_id in c.ids), None)


def draft(answerer: Answerer, ctx: Context, tenant: Tenant, cluster: GapCluster) -> Draft:
    """A curated-answer draft for the cluster's question from the passages the answer pipeline
    retrieves and quotes for it (blocking: call from a worker thread)."""
    embedder = ctx.tenant_embedder(tenant)
    lang = cluster.langs[0] if cluster.langs else ""
    found = answerer.retrieve(tenant, cluster.question, None, lang or "en", None, history=[])
    if found.curated is not None:
        item = found.curated.curated
        return Draft(question=cluster.question, answer=item.answer, urls=item.urls, passages=[], nothing=False,
                     curated_question=item.question)
    passages = [Passage(title=s.title, url=s.url, text=snippet(s.text, 400),
                        confidence=round(confidence_of(s.similarity, embedder), 2)) for s in found.sources[:5]]
    best = max((p.confidence for p in passages), default=0.0)
    if best < NOTHING_BELOW or not found.quotes:
        return Draft(question=cluster.question, answer="", urls=[], passages=passages, nothing=True)
    by_number = {s.n: s.url for s in found.sources}
    quotes = found.quotes[:4]
    urls = list(dict.fromkeys(by_number[n] for n, _, _ in quotes if n in by_number))
    answer = " ".join(text.strip() for _, text, _ in quotes if text.strip())
    return Draft(question=cluster.question, answer=answer, urls=urls, passages=passages, nothing=False)
