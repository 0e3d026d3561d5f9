"""The side table `frontdesk reindex` stages new vectors in (``reindex_vectors``), and the swap that
puts them in place of ``chunk_vec`` with the curated and gap vectors in one transaction.

Staged rows carry the embedder's fingerprint, so an interrupted run resumes with the same model
and a run with another model starts over.
"""

from __future__ import annotations

from collections.abc import Iterable

import apsw

from store.connect import Row, all_rows, one_row
from store.migrations import create_chunk_vec

ChunkText = tuple[int, str, str, str]
"""(chunk id, title, heading, text): what a chunk's embedding text is made from."""


def begin_staging(conn: apsw.Connection, fingerprint: str) -> None:
    """Make the side table if needed and drop rows staged by another model."""
    conn.execute("CREATE TABLE IF NOT EXISTS reindex_vectors "
                 "(chunk_id INTEGER PRIMARY KEY, model TEXT NOT NULL, embedding BLOB NOT NULL)")
    conn.execute("DELETE FROM reindex_vectors WHERE model != ?", (fingerprint,))


def stage_vectors(conn: apsw.Connection, fingerprint: str, vectors: Iterable[tuple[int, bytes]]) -> None:
    """Stage (chunk id, float32 bytes) rows."""
    conn.executemany(
        "INSERT OR REPLACE INTO reindex_vectors(chunk_id, model, embedding) VALUES (?, ?, ?)",
        [(chunk_id, fingerprint, blob) for chunk_id, blob in vectors],
    )


def staging_progress(conn: apsw.Connection) -> tuple[int, int]:
    """(chunks in the file, chunks with a staged vector)."""
    total = one_row(conn.execute("SELECT count(*) FROM chunks"))[0]
    done = one_row(conn.execute("SELECT count(*) FROM reindex_vectors r JOIN chunks c ON c.id = r.chunk_id"))[0]
    return total, done


def unstaged_chunks(conn: apsw.Connection, after_id: int, limit: int) -> list[ChunkText]:
    """The next `limit` chunks after `after_id`, in id order, that have no staged vector."""
    return all_rows(conn.execute(
        "SELECT c.id, c.title, c.heading, c.text FROM chunks c WHERE c.id > ? AND NOT EXISTS "
        "(SELECT 1 FROM reindex_vectors r WHERE r.chunk_id = c.id) ORDER BY c.id LIMIT ?", (after_id, limit)
    ))


def all_unstaged_chunks(conn: apsw.Connection) -> list[ChunkText]:
    """Every chunk without a staged vector (those a crawl added while the batches ran)."""
    return all_rows(conn.execute("SELECT c.id, c.title, c.heading, c.text FROM chunks c WHERE NOT EXISTS "
                        "(SELECT 1 FROM reindex_vectors r WHERE r.chunk_id = c.id)"))


def lock_chunks(conn: apsw.Connection) -> None:
    """Nothing to do: the caller's write transaction already keeps every other writer out (on
    PostgreSQL this locks the chunks table; store/pg/reindex.py)."""


def questions_to_embed(conn: apsw.Connection) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(id, question) of every curated answer, and of every gap that has a vector."""
    curated: list[Row] = conn.execute("SELECT id, question FROM curated").fetchall()
    gaps: list[Row] = conn.execute("SELECT id, question FROM gaps WHERE embedding IS NOT NULL").fetchall()
    return curated, gaps


def swap_in(conn: apsw.Connection, dim: int, curated: Iterable[tuple[int, bytes]],
            gaps: Iterable[tuple[int, bytes]]) -> int:
    """Replace ``chunk_vec`` (at dimension `dim`) with the staged vectors and set the curated and
    gap vectors, given as (id, float32 bytes). Call inside a transaction with every chunk staged;
    returns the number of chunk vectors."""
    conn.execute("DROP TABLE chunk_vec")
    create_chunk_vec(conn, dim)
    conn.execute("INSERT INTO chunk_vec(rowid, embedding, kind, lang) SELECT c.id, r.embedding, c.kind, c.lang "
                 "FROM chunks c JOIN reindex_vectors r ON r.chunk_id = c.id")
    # Pending chunks (written by a crawl before their vectors) were staged like the rest: the
    # embedding stage must not give them a second vector from the old model.
    conn.execute("DELETE FROM chunk_pending WHERE chunk_id IN (SELECT chunk_id FROM reindex_vectors)")
    chunks = one_row(conn.execute("SELECT count(*) FROM chunk_vec"))[0]
    conn.executemany("UPDATE curated SET embedding = ? WHERE id = ?", [(blob, i) for i, blob in curated])
    conn.executemany("UPDATE gaps SET embedding = ? WHERE id = ?", [(blob, i) for i, blob in gaps])
    return chunks


def end_staging(conn: apsw.Connection) -> None:
    conn.execute("DROP TABLE reindex_vectors")
