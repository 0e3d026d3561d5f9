"""Chunks waiting for their vectors (``chunk_pending``): what the background embedding stage reads
and how its vectors go in, one short transaction per batch.

A pending chunk is in ``chunks`` and ``chunk_fts`` (BM25 finds it) but not in ``chunk_vec`` (the
dense side does not). Each chunk row is one distinct text (keyed by its hash), so a text shared
by many pages is listed, and embedded, once.
"""

from __future__ import annotations

from collections.abc import Iterable

import apsw
import msgspec

from store.connect import Row, one_row


class PendingChunk(msgspec.Struct, frozen=True):
    """What a pending chunk's embedding text is made from (ingest/chunk.py `embedding_text`)."""

    id: int
    hash: str
    """The chunk's content hash: its vector goes in only if the row still holds this text."""
    title: str
    heading: str
    """The heading path joined with " > " (store/pages.py)."""
    text: str


def pending_chunks(conn: apsw.Connection, limit: int, after_id: int = 0) -> list[PendingChunk]:
    """Up to `limit` pending chunks with an id above `after_id`, oldest first."""
    rows: list[Row] = conn.execute(
        "SELECT c.id, c.hash, c.title, c.heading, c.text FROM chunk_pending p JOIN chunks c ON c.id = p.chunk_id "
        "WHERE p.chunk_id > ? ORDER BY p.chunk_id LIMIT ?", (after_id, limit)).fetchall()
    return [PendingChunk(*row) for row in rows]


def pending_rows(conn: apsw.Connection, chunk_ids: list[int]) -> list[PendingChunk]:
    """These chunks' embedding material, in the order given (ids that are gone left out)."""
    if not chunk_ids:
        return []
    marks = ",".join("?" * len(chunk_ids))
    rows: list[Row] = conn.execute(
        f"SELECT id, hash, title, heading, text FROM chunks WHERE id IN ({marks})", chunk_ids).fetchall()
    found = {row[0]: PendingChunk(*row) for row in rows}
    return [found[i] for i in chunk_ids if i in found]


def has_pending(conn: apsw.Connection) -> bool:
    """Whether any chunk waits for its vector (one index probe: cheap enough for every question)."""
    return conn.execute("SELECT 1 FROM chunk_pending LIMIT 1").fetchone() is not None


def pending_count(conn: apsw.Connection) -> int:
    """How many chunks wait for a vector."""
    return int(one_row(conn.execute("SELECT count(*) FROM chunk_pending"))[0])


def pending_among(conn: apsw.Connection, chunk_ids: Iterable[int]) -> set[int]:
    """Those of `chunk_ids` that have no vector yet."""
    wanted = list(dict.fromkeys(chunk_ids))
    found: set[int] = set()
    for start in range(0, len(wanted), 500):
        batch = wanted[start : start + 500]
        marks = ",".join("?" * len(batch))
        rows = conn.execute(f"SELECT chunk_id FROM chunk_pending WHERE chunk_id IN ({marks})", batch)
        found.update(r[0] for r in rows)
    return found


def store_vectors(conn: apsw.Connection, vectors: Iterable[tuple[int, str, bytes]]) -> int:
    """Give pending chunks their vectors, as (chunk id, content hash, float32 bytes); returns how
    many went in. A chunk no longer pending (deleted with its page meanwhile, or given a vector by
    `frontdesk reindex`) is skipped: a chunk never gets a second vector; so is an id that now
    names another text (SQLite reuses the highest id after a delete). Call inside a transaction:
    each chunk's vector and the end of its pending entry are one change."""
    stored = 0
    for chunk_id, chunk_hash, blob in vectors:
        conn.execute("DELETE FROM chunk_pending WHERE chunk_id = ? AND EXISTS "
                     "(SELECT 1 FROM chunks WHERE id = ? AND hash = ?)", (chunk_id, chunk_id, chunk_hash))
        if not conn.changes():
            continue
        conn.execute("INSERT INTO chunk_vec(rowid, embedding, kind, lang) SELECT id, ?, kind, lang FROM chunks "
                     "WHERE id = ?", (blob, chunk_id))
        stored += 1
    return stored

