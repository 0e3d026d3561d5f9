"""Conversations, messages with citations, feedback, knowledge gaps and usage counters in a tenant's
PostgreSQL schema: store/conversations.py's functions, with its arguments and results (its Structs
and dicts), on a connection from PgTenants.read or .write. Same upserts, same orderings; times are
the caller's clock (`time.time()`), as on SQLite, not the database's.

Where PostgreSQL alone would give another result, this side does what SQLite does:
- a repeated gap is counted by an UPDATE before any INSERT, because an INSERT … ON CONFLICT takes
  an id from the identity even when it updates, and gap ids would then skip where SQLite's do not;
- a negative LIMIT means no limit and a negative OFFSET none, as SQLite reads them (PostgreSQL
  refuses both);
- the counters of a day come in byte order (COLLATE "C"), SQLite's, whatever the database's locale.
`conversations` reads messages and citations in one query each, not one per conversation and per
message as SQLite does: the same result in three round trips.

Visitor text goes in without U+0000 (store/pg/nul.py), and the ids looked up are read the same
way, so a conversation id with a NUL finds its conversation. Two gap questions that differ only
by NULs are one gap here and two on SQLite."""

from __future__ import annotations

import time

from psycopg import sql

from store.connect import Row
from store.conversations import (
    FEEDBACK_LABELS,
    CitationRow,
    ConversationView,
    Gap,
    GapRow,
    MessageView,
    Turn,
    group_gaps,
)
from store.errors import NotFound
from store.pg.connect import PgConnection
from store.pg.limit import sqlite_limit
from store.pg.nul import strip_nul, without_nul


def save_turn(conn: PgConnection, turn: Turn) -> None:
    now = time.time()
    conversation_id, message_id, page_url, lang = without_nul(
        (turn.conversation_id, turn.message_id, turn.page_url, turn.lang))
    conn.execute(
        "INSERT INTO conversations(id, created_at, last_at, page_url, lang) VALUES (%s, %s, %s, %s, %s) "
        "ON CONFLICT (id) DO UPDATE SET last_at = excluded.last_at, page_url = excluded.page_url",
        (conversation_id, now, now, page_url, lang),
    )
    conn.execute(
        "INSERT INTO messages(id, conversation_id, question, answer, confidence, lang, source, answered, "
        "latency_ms, ttft_ms, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (message_id, conversation_id, *without_nul((turn.question, turn.answer)), turn.confidence, lang,
         strip_nul(turn.source), int(turn.answered), turn.latency_ms, turn.ttft_ms, now),
    )
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO citations(message_id, rank, url, title, chunk_id, score) VALUES (%s, %s, %s, %s, %s, %s)",
            [(message_id, rank, *without_nul((citation.url, citation.title)), citation.chunk_id, citation.score)
             for rank, citation in enumerate(turn.citations, start=1)],
        )
    if turn.gap_normalized:
        _count_gap(conn, turn, now)
    day = time.strftime("%Y-%m-%d", time.gmtime(now))
    counters = {"questions": 1, "answered": int(turn.answered), "unanswered": int(not turn.answered),
                f"source_{strip_nul(turn.source)}": 1}
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO usage(day, counter, value) VALUES (%s, %s, %s) "
            "ON CONFLICT (day, counter) DO UPDATE SET value = usage.value + excluded.value",
            [(day, name, value) for name, value in counters.items()],
        )


def _count_gap(conn: PgConnection, turn: Turn, now: float) -> None:
    """The turn's question as a knowledge gap: a new one, or one more time an old one was asked.
    UPDATE first: an INSERT … ON CONFLICT would take an identity value even when it updates."""
    question, normalized, lang, page_url = without_nul((turn.question, turn.gap_normalized, turn.lang, turn.page_url))
    counted = conn.execute(
        "UPDATE gaps SET count = count + 1, last_at = %s, question = %s, best_score = %s WHERE normalized = %s",
        (now, question, turn.best_score, normalized),
    )
    if counted.rowcount:
        return
    # Still an upsert: another transaction may have recorded this question since the UPDATE.
    conn.execute(
        "INSERT INTO gaps(question, normalized, lang, count, best_score, page_url, first_at, last_at, embedding) "
        "VALUES (%s, %s, %s, 1, %s, %s, %s, %s, %s) ON CONFLICT (normalized) DO UPDATE SET "
        "count = gaps.count + 1, last_at = excluded.last_at, question = excluded.question, "
        "best_score = excluded.best_score",
        (question, normalized, lang, turn.best_score, page_url, now, now, turn.gap_vector),
    )


def set_feedback(conn: PgConnection, message_id: str, rating: int, conversation_id: str | None = None) -> None:
    cursor = conn.execute(
        "UPDATE messages SET feedback = %(rating)s, feedback_at = %(at)s WHERE id = %(message)s "
        "AND (%(conversation)s::text IS NULL OR conversation_id = %(conversation)s)",
        {"rating": rating, "at": time.time(), "message": strip_nul(message_id),
         "conversation": None if conversation_id is None else strip_nul(conversation_id)},
    )
    if cursor.rowcount == 0:
        raise NotFound(f"message {message_id} does not exist")


def history(conn: PgConnection, conversation_id: str, limit: int = 3) -> list[tuple[str, str]]:
    rows = conn.execute(
        "SELECT question, answer FROM messages WHERE conversation_id = %s ORDER BY created_at DESC LIMIT %s",
        (strip_nul(conversation_id), sqlite_limit(limit)),
    ).fetchall()
    return [(q, a) for q, a in reversed(rows)]


def gaps(conn: PgConnection, *, limit: int = 100, group_threshold: float = 0.8) -> list[Gap]:
    """Unanswered questions, similar ones grouped (embedding cosine ≥ threshold), most asked first."""
    rows = conn.execute(
        "SELECT question, count, last_at, first_at, lang, best_score, embedding FROM gaps "
        "ORDER BY last_at DESC LIMIT 2000"
    ).fetchall()
    return group_gaps(rows, limit=limit, group_threshold=group_threshold)


def _citations_by_message(conn: PgConnection, message_ids: list[str]) -> dict[str, list[Row]]:
    """(url, title, chunk_id, score) of each message's citations, by rank."""
    found: dict[str, list[Row]] = {}
    for message_id, *citation in conn.execute(
            "SELECT message_id, url, title, chunk_id, score FROM citations WHERE message_id = ANY(%s) "
            "ORDER BY message_id, rank", (message_ids,)):
        found.setdefault(message_id, []).append(tuple(citation))
    return found


def conversations(conn: PgConnection, *, limit: int = 50, offset: int = 0) -> list[dict]:
    rows = conn.execute(
        "SELECT id, created_at, last_at, page_url, lang FROM conversations ORDER BY last_at DESC LIMIT %s OFFSET %s",
        (sqlite_limit(limit), max(offset, 0)),
    ).fetchall()
    result: list[dict] = []
    messages_of: dict[str, list[dict]] = {}
    for conversation_id, created_at, last_at, page_url, lang in rows:
        messages_of[conversation_id] = []
        result.append({"id": conversation_id, "created_at": created_at, "last_at": last_at, "page_url": page_url,
                       "lang": lang, "messages": messages_of[conversation_id]})
    if not result:
        return result
    messages = conn.execute(
        "SELECT conversation_id, id, question, answer, confidence, source, answered, feedback, created_at "
        "FROM messages WHERE conversation_id = ANY(%s) ORDER BY created_at", (list(messages_of),)).fetchall()
    citations = _citations_by_message(conn, [m[1] for m in messages])
    for conversation_id, mid, question, answer, confidence, source, answered, feedback, created in messages:
        messages_of[conversation_id].append({
            "id": mid, "question": question, "answer": answer, "confidence": confidence, "source": source,
            "answered": bool(answered), "feedback": FEEDBACK_LABELS.get(feedback), "created_at": created,
            "citations": [{"url": url, "title": title} for url, title, _, _ in citations.get(mid, [])]})
    return result


def usage(conn: PgConnection, days: int = 30) -> dict[str, dict[str, int]]:
    if days < 0:  # SQLite's date('now', '--5 days') is NULL, which no day is on or after
        return {}
    since = time.strftime("%Y-%m-%d", time.gmtime(time.time() - days * 86400))
    out: dict[str, dict[str, int]] = {}
    for day, counter, value in conn.execute(
        'SELECT day, counter, value FROM usage WHERE day >= %s ORDER BY day COLLATE "C", counter COLLATE "C"',
        (since,),
    ):
        out.setdefault(day, {})[counter] = int(value)
    return out


# -- the console: open gaps to cluster and resolve, conversations filtered, a message by id ----


_GAP_COLUMNS = "id, question, count, lang, page_url, first_at, last_at, best_score, embedding"


def _gap_row(r: Row) -> GapRow:
    return GapRow(id=int(r[0]), question=r[1], count=int(r[2]), lang=r[3], page_url=r[4], first_at=r[5],
                  last_at=r[6], best_score=r[7], vector=r[8])


def open_gaps(conn: PgConnection, limit: int = 1000) -> list[GapRow]:
    """Unresolved gaps (and resolved ones asked again, unanswered, after they were resolved)."""
    rows = conn.execute(
        f"SELECT {_GAP_COLUMNS} FROM gaps "
        "WHERE resolved_at IS NULL OR last_at > resolved_at ORDER BY count DESC, last_at DESC LIMIT %s",
        (sqlite_limit(limit),)).fetchall()
    return [_gap_row(r) for r in rows]


def gaps_by_id(conn: PgConnection, ids: list[int]) -> list[GapRow]:
    wanted = [int(i) for i in ids][:1000]
    if not wanted:
        return []
    rows = conn.execute(
        f"SELECT {_GAP_COLUMNS} FROM gaps WHERE id = ANY(%s) ORDER BY count DESC, last_at DESC",
        (wanted,)).fetchall()
    return [_gap_row(r) for r in rows]


def set_gap_vectors(conn: PgConnection, vectors: dict[int, bytes]) -> None:
    """Store vectors for gaps recorded without one (a cached refusal carries none)."""
    if not vectors:
        return
    conn.execute(
        "UPDATE gaps g SET embedding = v.blob FROM unnest(%s::bigint[], %s::bytea[]) AS v(id, blob) "
        "WHERE g.id = v.id AND g.embedding IS NULL",
        ([int(i) for i in vectors], list(vectors.values())),
    )


def resolve_gaps(conn: PgConnection, ids: list[int], curated_id: int | None = None) -> int:
    """Mark gaps resolved (by a curated answer, or dismissed when `curated_id` is None)."""
    conn.execute("UPDATE gaps SET resolved_at = %s, curated_id = %s WHERE id = ANY(%s)",
                 (time.time(), curated_id, [int(i) for i in ids]))
    return len(ids)


_MESSAGE_COLUMNS = "conversation_id, id, question, answer, confidence, source, answered, feedback, created_at, ttft_ms"


def _message_view(row: Row) -> MessageView:
    return MessageView(id=row[1], question=row[2], answer=row[3], confidence=row[4], source=row[5],
                       answered=bool(row[6]), feedback=FEEDBACK_LABELS.get(row[7]), created_at=row[8],
                       ttft_ms=row[9])


def conversation_views(conn: PgConnection, *, unanswered: bool = False, thumbs_down: bool = False,
                       limit: int = 25, offset: int = 0) -> tuple[list[ConversationView], int]:
    """Conversations newest first, optionally only those with an unanswered question or a
    thumbs-down; with the total count matching the filter."""
    conditions = [sql.SQL(text) for text, wanted in (
        ("EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.answered = 0)", unanswered),
        ("EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.feedback = -1)", thumbs_down),
    ) if wanted]
    where = sql.SQL(" AND ").join(conditions) if conditions else sql.SQL("true")
    counted = conn.execute(sql.SQL("SELECT count(*) FROM conversations c WHERE {}").format(where)).fetchone()
    assert counted is not None  # an aggregate without GROUP BY returns one row
    found = [ConversationView(id=r[0], created_at=r[1], last_at=r[2], page_url=r[3], lang=r[4]) for r in conn.execute(
        sql.SQL("SELECT id, created_at, last_at, page_url, lang FROM conversations c WHERE {} "
                "ORDER BY last_at DESC LIMIT %s OFFSET %s").format(where), (sqlite_limit(limit), max(offset, 0)))]
    total = int(counted[0])
    by_id = {c.id: c for c in found}
    if not by_id:
        return [], total
    messages: dict[str, MessageView] = {}
    for row in conn.execute(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ANY(%s) ORDER BY created_at",
            (list(by_id),)):
        view = _message_view(row)
        messages[view.id] = view
        by_id[row[0]].messages.append(view)
    for message_id, cited in _citations_by_message(conn, list(messages)).items():
        messages[message_id].citations = [CitationRow(url=url, title=title, chunk_id=chunk_id, score=score)
                                          for url, title, chunk_id, score in cited]
    return found, total


def message_view(conn: PgConnection, message_id: str) -> tuple[str, MessageView] | None:
    """A message with its conversation id (for the feedback.negative webhook)."""
    row = conn.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id = %s", (strip_nul(message_id),)).fetchone()
    if row is None:
        return None
    view = _message_view(row)
    # url and title only, as store/conversations.py gives them here.
    cited = _citations_by_message(conn, [view.id]).get(view.id, [])
    view.citations = [CitationRow(url=url, title=title) for url, title, _, _ in cited]
    return row[0], view
