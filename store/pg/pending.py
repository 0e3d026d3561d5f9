"""Chunks waiting for their vectors in a tenant's PostgreSQL schema: store/pending.py's functions,
with its arguments and `PendingChunk` results, on a connection from PgTenants.read or .write.

A pending chunk is in ``chunks`` with a NULL embedding (its tsvector is there: the lexical side
finds it; the dense side does not) and listed in ``chunk_pending``, whose row goes with the chunk
(ON DELETE CASCADE, SQLite's trigger). Each chunk row is one distinct text, so a text shared by
many pages is listed, and embedded, once."""

from __future__ import annotations

from collections.abc import Iterable

from store.pending import PendingChunk
from store.pg.connect import PgConnection
from store.pg.limits import sqlite_limit
from store.pg.nul import strip_nul
from store.pg.vectors import to_pg


def _pending(row: tuple) -> PendingChunk:
    return PendingChunk(int(row[0]), *row[1:])


def pending_chunks(conn: PgConnection, limit: int, after_id: int = 0) -> list[PendingChunk]:
    """Up to `limit` pending chunks with an id above `after_id`, oldest first."""
    rows = conn.execute(
        "SELECT c.id, c.hash, c.title, c.heading, c.text FROM chunk_pending p JOIN chunks c ON c.id = p.chunk_id "
        "WHERE p.chunk_id > %s ORDER BY p.chunk_id LIMIT %s", (after_id, sqlite_limit(limit))).fetchall()
    return [_pending(row) for row in rows]


def pending_rows(conn: PgConnection, chunk_ids: list[int]) -> list[PendingChunk]:
    """These chunks' embedding material, in the order given (ids that are gone left out)."""
    if not chunk_ids:
        return []
    rows = conn.execute("SELECT id, hash, title, heading, text FROM chunks WHERE id = ANY(%s)",
                        ([int(i) for i in chunk_ids],)).fetchall()
    found = {int(row[0]): _pending(row) for row in rows}
    return [found[i] for i in chunk_ids if i in found]


def has_pending(conn: PgConnection) -> bool:
    """Whether any chunk waits for its vector (one index probe: cheap enough for every question)."""
    return conn.execute("SELECT 1 FROM chunk_pending LIMIT 1").fetchone() is not None


def pending_count(conn: PgConnection) -> int:
    """How many chunks wait for a vector."""
    row = conn.execute("SELECT count(*) FROM chunk_pending").fetchone()
    assert row is not None  # an aggregate without GROUP BY returns one row
    return int(row[0])


def pending_among(conn: PgConnection, chunk_ids: Iterable[int]) -> set[int]:
    """Those of `chunk_ids` that have no vector yet."""
    wanted = [int(i) for i in dict.fromkeys(chunk_ids)]
    if not wanted:
        return set()
    return {int(r[0]) for r in conn.execute("SELECT chunk_id FROM chunk_pending WHERE chunk_id = ANY(%s)",
                                            (wanted,))}


def store_vectors(conn: PgConnection, vectors: Iterable[tuple[int, str, bytes]]) -> int:
    """Give pending chunks their vectors, as (chunk id, content hash, float32 bytes); returns how
    many went in. A chunk no longer pending (deleted with its page meanwhile, or given a vector
    already) is skipped, and so is one whose row now holds another text: a chunk never gets a
    second vector. Call inside a transaction (PgTenants.write): each chunk's vector and the end of
    its pending entry are one change.

    The pending entries are locked first (FOR UPDATE): a second writer giving the same chunks
    vectors waits, then finds them no longer pending, as SQLite's single writer would."""
    given = [(int(chunk_id), strip_nul(chunk_hash), blob) for chunk_id, chunk_hash, blob in vectors]
    if not given:
        return 0
    waiting = {int(chunk_id): chunk_hash for chunk_id, chunk_hash in conn.execute(
        "SELECT p.chunk_id, c.hash FROM chunk_pending p JOIN chunks c ON c.id = p.chunk_id "
        "WHERE p.chunk_id = ANY(%s) ORDER BY p.chunk_id FOR UPDATE OF p", ([i for i, _, _ in given],))}
    # In the order given, as SQLite's loop: the first vector of the right text for a chunk goes in.
    chosen: dict[int, bytes] = {}
    for chunk_id, chunk_hash, blob in given:
        if chunk_id not in chosen and waiting.get(chunk_id) == chunk_hash:
            chosen[chunk_id] = blob
    if not chosen:
        return 0
    ids = list(chosen)
    conn.execute("DELETE FROM chunk_pending WHERE chunk_id = ANY(%s)", (ids,))
    conn.execute(
        "UPDATE chunks c SET embedding = v.embedding::vector "
        "FROM unnest(%s::bigint[], %s::text[]) AS v(id, embedding) WHERE c.id = v.id",
        (ids, [to_pg(chosen[i]) for i in ids]))
    return len(chosen)
