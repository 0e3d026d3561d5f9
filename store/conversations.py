"""Conversations, messages with citations, feedback, knowledge gaps and usage counters."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable

import apsw
import msgspec
import numpy as np

from store.connect import Row, one_row
from store.errors import NotFound


class CitationRow(msgspec.Struct):
    url: str
    title: str
    chunk_id: int | None = None
    score: float | None = None


class Turn(msgspec.Struct, kw_only=True):
    """One answered question, as persisted after its stream closed."""

    conversation_id: str
    message_id: str
    question: str
    answer: str
    confidence: float
    lang: str
    source: str
    answered: bool
    page_url: str = ""
    latency_ms: float | None = None
    ttft_ms: float | None = None
    citations: list[CitationRow] = msgspec.field(default_factory=list)
    gap_normalized: str | None = None
    """Set when the question was not answered: it is recorded as a knowledge gap."""
    gap_vector: bytes | None = None
    best_score: float | None = None
    completed: bool = True


def save_turn(conn: apsw.Connection, turn: Turn) -> None:
    now = time.time()
    conn.execute(
        "INSERT INTO conversations(id, created_at, last_at, page_url, lang) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET last_at = excluded.last_at, page_url = excluded.page_url",
        (turn.conversation_id, now, now, turn.page_url, turn.lang),
    )
    conn.execute(
        "INSERT INTO messages(id, conversation_id, question, answer, confidence, lang, source, answered, "
        "latency_ms, ttft_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (turn.message_id, turn.conversation_id, turn.question, turn.answer, turn.confidence, turn.lang,
         turn.source, int(turn.answered), turn.latency_ms, turn.ttft_ms, now),
    )
    for rank, citation in enumerate(turn.citations, start=1):
        conn.execute(
            "INSERT INTO citations(message_id, rank, url, title, chunk_id, score) VALUES (?, ?, ?, ?, ?, ?)",
            (turn.message_id, rank, citation.url, citation.title, citation.chunk_id, citation.score),
        )
    if turn.gap_normalized:
        conn.execute(
            "INSERT INTO gaps(question, normalized, lang, count, best_score, page_url, first_at, last_at, embedding) "
            "VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?) ON CONFLICT(normalized) DO UPDATE SET count = count + 1, "
            "last_at = excluded.last_at, question = excluded.question, best_score = excluded.best_score",
            (turn.question, turn.gap_normalized, turn.lang, turn.best_score, turn.page_url, now, now, turn.gap_vector),
        )
    day = time.strftime("%Y-%m-%d", time.gmtime(now))
    counters = {"questions": 1, "answered": int(turn.answered), "unanswered": int(not turn.answered),
                f"source_{turn.source}": 1}
    for name, value in counters.items():
        conn.execute(
            "INSERT INTO usage(day, counter, value) VALUES (?, ?, ?) "
            "ON CONFLICT(day, counter) DO UPDATE SET value = value + excluded.value",
            (day, name, value),
        )


#: A message's stored rating as the console and the admin API show it (None: not rated).
FEEDBACK_LABELS = {1: "up", -1: "down"}


def set_feedback(conn: apsw.Connection, message_id: str, rating: int, conversation_id: str | None = None) -> None:
    conn.execute(
        "UPDATE messages SET feedback = ?, feedback_at = ? WHERE id = ? AND (? IS NULL OR conversation_id = ?)",
        (rating, time.time(), message_id, conversation_id, conversation_id),
    )
    if conn.changes() == 0:
        raise NotFound(f"message {message_id} does not exist")


def history(conn: apsw.Connection, conversation_id: str, limit: int = 3) -> list[tuple[str, str]]:
    rows: list[Row] = conn.execute(
        "SELECT question, answer FROM messages WHERE conversation_id = ? ORDER BY created_at DESC LIMIT ?",
        (conversation_id, limit),
    ).fetchall()
    return [(q, a) for q, a in reversed(rows)]


class Gap(msgspec.Struct, kw_only=True):
    question: str
    count: int
    last_at: float
    first_at: float
    lang: str
    best_score: float | None
    similar: list[str] = msgspec.field(default_factory=list)


def gaps(conn: apsw.Connection, *, limit: int = 100, group_threshold: float = 0.8) -> list[Gap]:
    """Unanswered questions, similar ones grouped (embedding cosine ≥ threshold), most asked first."""
    rows: list[Row] = conn.execute(
        "SELECT question, count, last_at, first_at, lang, best_score, embedding FROM gaps ORDER BY last_at DESC LIMIT 2000"
    ).fetchall()
    return group_gaps(rows, limit=limit, group_threshold=group_threshold)


def group_gaps(rows: Iterable[Row], *, limit: int, group_threshold: float) -> list[Gap]:
    """`gaps` from its rows (question, count, last_at, first_at, lang, best_score, embedding),
    newest first: each joins the first group whose first vector is similar enough. Shared with
    store/pg/conversations.py so both backends group alike."""
    groups: list[tuple[Gap, np.ndarray | None]] = []
    for question, count, last_at, first_at, lang, best, blob in rows:
        vector = np.frombuffer(blob, dtype=np.float32) if blob else None
        for gap, centre in groups:
            if vector is not None and centre is not None and centre.shape == vector.shape and float(centre @ vector) >= group_threshold:
                gap.count += count
                gap.similar.append(question)
                gap.last_at = max(gap.last_at, last_at)
                gap.first_at = min(gap.first_at, first_at)
                break
        else:
            groups.append((Gap(question=question, count=count, last_at=last_at, first_at=first_at, lang=lang,
                               best_score=best), vector))
    result = [g for g, _ in groups]
    result.sort(key=lambda g: (-g.count, -g.last_at))
    return result[:limit]


def conversations(conn: apsw.Connection, *, limit: int = 50, offset: int = 0) -> list[dict]:
    rows: list[Row] = conn.execute(
        "SELECT id, created_at, last_at, page_url, lang FROM conversations ORDER BY last_at DESC LIMIT ? OFFSET ?",
        (limit, offset),
    ).fetchall()
    result = []
    for conversation_id, created_at, last_at, page_url, lang in rows:
        messages = []
        for mid, question, answer, confidence, source, answered, feedback, created in conn.execute(
            "SELECT id, question, answer, confidence, source, answered, feedback, created_at FROM messages "
            "WHERE conversation_id = ? ORDER BY created_at", (conversation_id,)
        ):
            cites = [{"url": u, "title": t} for u, t in conn.execute(
                "SELECT url, title FROM citations WHERE message_id = ? ORDER BY rank", (mid,))]
            messages.append({"id": mid, "question": question, "answer": answer, "confidence": confidence,
                             "source": source, "answered": bool(answered),
                             "feedback": FEEDBACK_LABELS.get(feedback), "created_at": created,
                             "citations": cites})
        result.append({"id": conversation_id, "created_at": created_at, "last_at": last_at,
                       "page_url": page_url, "lang": lang, "messages": messages})
    return result


def usage(conn: apsw.Connection, days: int = 30) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for day, counter, value in conn.execute(
        "SELECT day, counter, value FROM usage WHERE day >= date('now', ?) ORDER BY day", (f"-{days} days",)
    ):
        out.setdefault(day, {})[counter] = value
    return out


def dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


# -- the console: open gaps to cluster and resolve, conversations filtered, a message by id ----


class GapRow(msgspec.Struct, kw_only=True):
    """One recorded gap question, with the query vector it was asked with (if any)."""

    id: int
    question: str
    count: int
    lang: str
    page_url: str
    first_at: float
    last_at: float
    best_score: float | None
    vector: bytes | None = None


_GAP_COLUMNS = "id, question, count, lang, page_url, first_at, last_at, best_score, embedding"


def _gap_row(r) -> GapRow:
    return GapRow(id=r[0], question=r[1], count=r[2], lang=r[3], page_url=r[4], first_at=r[5], last_at=r[6],
                  best_score=r[7], vector=r[8])


def open_gaps(conn: apsw.Connection, limit: int = 1000) -> list[GapRow]:
    """Unresolved gaps (and resolved ones asked again, unanswered, after they were resolved)."""
    rows: list[Row] = conn.execute(
        f"SELECT {_GAP_COLUMNS} FROM gaps "
        "WHERE resolved_at IS NULL OR last_at > resolved_at ORDER BY count DESC, last_at DESC LIMIT ?",
        (limit,)).fetchall()
    return [_gap_row(r) for r in rows]


def gaps_by_id(conn: apsw.Connection, ids: list[int]) -> list[GapRow]:
    wanted = [int(i) for i in ids][:1000]
    if not wanted:
        return []
    marks = ",".join("?" * len(wanted))
    rows: list[Row] = conn.execute(
        f"SELECT {_GAP_COLUMNS} FROM gaps "
        f"WHERE id IN ({marks}) ORDER BY count DESC, last_at DESC", wanted).fetchall()
    return [_gap_row(r) for r in rows]


def set_gap_vectors(conn: apsw.Connection, vectors: dict[int, bytes]) -> None:
    """Store vectors for gaps recorded without one (a cached refusal carries none)."""
    conn.executemany("UPDATE gaps SET embedding = ? WHERE id = ? AND embedding IS NULL",
                     [(blob, gap_id) for gap_id, blob in vectors.items()])


def resolve_gaps(conn: apsw.Connection, ids: list[int], curated_id: int | None = None) -> int:
    """Mark gaps resolved (by a curated answer, or dismissed when `curated_id` is None)."""
    now = time.time()
    conn.executemany("UPDATE gaps SET resolved_at = ?, curated_id = ? WHERE id = ?",
                     [(now, curated_id, int(i)) for i in ids])
    return len(ids)


class MessageView(msgspec.Struct, kw_only=True):
    id: str
    question: str
    answer: str
    confidence: float
    source: str
    answered: bool
    feedback: str | None
    created_at: float
    ttft_ms: float | None = None
    citations: list[CitationRow] = msgspec.field(default_factory=list)


class ConversationView(msgspec.Struct, kw_only=True):
    id: str
    created_at: float
    last_at: float
    page_url: str
    lang: str
    messages: list[MessageView] = msgspec.field(default_factory=list)


_MESSAGE_COLUMNS = "conversation_id, id, question, answer, confidence, source, answered, feedback, created_at, ttft_ms"


def _message_view(row) -> MessageView:
    return MessageView(id=row[1], question=row[2], answer=row[3], confidence=row[4], source=row[5],
                       answered=bool(row[6]), feedback=FEEDBACK_LABELS.get(row[7]), created_at=row[8],
                       ttft_ms=row[9])


def conversation_views(conn: apsw.Connection, *, unanswered: bool = False, thumbs_down: bool = False,
                       limit: int = 25, offset: int = 0) -> tuple[list[ConversationView], int]:
    """Conversations newest first, optionally only those with an unanswered question or a
    thumbs-down; with the total count matching the filter."""
    where = " AND ".join(filter(None, [
        "EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.answered = 0)" if unanswered else "",
        "EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.feedback = -1)" if thumbs_down else "",
    ])) or "1"
    total = one_row(conn.execute(f"SELECT count(*) FROM conversations c WHERE {where}"))[0]
    found = [ConversationView(id=r[0], created_at=r[1], last_at=r[2], page_url=r[3], lang=r[4]) for r in conn.execute(
        f"SELECT id, created_at, last_at, page_url, lang FROM conversations c WHERE {where} "
        "ORDER BY last_at DESC LIMIT ? OFFSET ?", (limit, offset))]
    by_id = {c.id: c for c in found}
    if not by_id:
        return [], total
    marks = ",".join("?" * len(by_id))
    messages: dict[str, MessageView] = {}
    for row in conn.execute(
        f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE conversation_id IN ({marks}) ORDER BY created_at", list(by_id)):
        view = _message_view(row)
        messages[view.id] = view
        by_id[row[0]].messages.append(view)
    for message_id, url, title, chunk_id, score in conn.execute(
        f"SELECT message_id, url, title, chunk_id, score FROM citations WHERE message_id IN "
        f"(SELECT id FROM messages WHERE conversation_id IN ({marks})) ORDER BY message_id, rank", list(by_id)):
        messages[message_id].citations.append(CitationRow(url=url, title=title, chunk_id=chunk_id, score=score))
    return found, total


def message_view(conn: apsw.Connection, message_id: str) -> tuple[str, MessageView] | None:
    """A message with its conversation id (for the feedback.negative webhook)."""
    row = conn.execute(
        f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id = ?", (message_id,)).fetchone()
    if row is None:
        return None
    view = _message_view(row)
    view.citations = [CitationRow(url=u, title=t) for u, t in conn.execute(
        "SELECT url, title FROM citations WHERE message_id = ? ORDER BY rank", (message_id,))]
    return row[0], view
