"""`frontdesk reindex` on a tenant schema: store/reindex.py's staging table and swap, in PostgreSQL.

Staged vectors wait in ``reindex_vectors`` as pgvector values of any dimension (the new model's
may differ from the column's). The swap, in the caller's transaction with the curated and gap
vectors, copies them into ``chunks.embedding``: with the same dimension as a plain update
(searches read the old vectors until it commits), with another one after dropping the HNSW index
and retyping the column, then building the index again (the table is held exclusively until
commit). Either way searches see the old vectors or the new, never a mix.
"""

from __future__ import annotations

from collections.abc import Iterable

from psycopg import sql

from store.pg.connect import PgConnection
from store.pg.migrations import SEARCH_INDEXES
from store.pg.vectors import to_pg
from store.reindex import ChunkText


def begin_staging(conn: PgConnection, fingerprint: str) -> None:
    """Make the side table if needed and drop rows staged by another model."""
    conn.execute("CREATE TABLE IF NOT EXISTS reindex_vectors "
                 "(chunk_id bigint PRIMARY KEY, model text NOT NULL, embedding vector NOT NULL)")
    conn.execute("DELETE FROM reindex_vectors WHERE model <> %s", (fingerprint,))


def stage_vectors(conn: PgConnection, fingerprint: str, vectors: Iterable[tuple[int, bytes]]) -> None:
    """Stage (chunk id, float32 bytes) rows."""
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO reindex_vectors(chunk_id, model, embedding) VALUES (%s, %s, %s::vector) "
            "ON CONFLICT (chunk_id) DO UPDATE SET model = excluded.model, embedding = excluded.embedding",
            [(chunk_id, fingerprint, to_pg(blob)) for chunk_id, blob in vectors])


def staging_progress(conn: PgConnection) -> tuple[int, int]:
    """(chunks in the tenant, chunks with a staged vector)."""
    row = conn.execute("SELECT (SELECT count(*) FROM chunks), "
                       "(SELECT count(*) FROM reindex_vectors r JOIN chunks c ON c.id = r.chunk_id)").fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def unstaged_chunks(conn: PgConnection, after_id: int, limit: int) -> list[ChunkText]:
    """The next `limit` chunks after `after_id`, in id order, that have no staged vector."""
    rows = conn.execute(
        "SELECT c.id, c.title, c.heading, c.text FROM chunks c WHERE c.id > %s AND NOT EXISTS "
        "(SELECT 1 FROM reindex_vectors r WHERE r.chunk_id = c.id) ORDER BY c.id LIMIT %s", (after_id, limit)
    ).fetchall()
    return [(int(r[0]), r[1], r[2], r[3]) for r in rows]


def all_unstaged_chunks(conn: PgConnection) -> list[ChunkText]:
    """Every chunk without a staged vector (those a crawl added while the batches ran)."""
    rows = conn.execute("SELECT c.id, c.title, c.heading, c.text FROM chunks c WHERE NOT EXISTS "
                        "(SELECT 1 FROM reindex_vectors r WHERE r.chunk_id = c.id) ORDER BY c.id").fetchall()
    return [(int(r[0]), r[1], r[2], r[3]) for r in rows]


def lock_chunks(conn: PgConnection) -> None:
    """Hold off every other writer of the tenant's chunks (another node's crawl) until the
    caller's transaction ends, so no chunk arrives between staging the last ones and the swap.
    Readers go on. (On SQLite the write transaction is already the only writer.)"""
    conn.execute("LOCK TABLE chunks IN SHARE ROW EXCLUSIVE MODE")


def questions_to_embed(conn: PgConnection) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(id, question) of every curated answer, and of every gap that has a vector."""
    curated = [(int(r[0]), r[1]) for r in conn.execute("SELECT id, question FROM curated ORDER BY id")]
    gaps = [(int(r[0]), r[1]) for r in conn.execute(
        "SELECT id, question FROM gaps WHERE embedding IS NOT NULL ORDER BY id")]
    return curated, gaps


def swap_in(conn: PgConnection, dim: int, curated: Iterable[tuple[int, bytes]],
            gaps: Iterable[tuple[int, bytes]]) -> int:
    """Put the staged vectors in ``chunks.embedding`` (now of dimension `dim`) and set the curated
    and gap vectors, given as (id, float32 bytes). Call inside a transaction with every chunk
    staged; returns the number of chunk vectors."""
    row = conn.execute("SELECT atttypmod FROM pg_attribute WHERE attrelid = 'chunks'::regclass "
                       "AND attname = 'embedding'").fetchone()
    retype = row is None or int(row[0]) != int(dim)
    if retype:
        # Another dimension: the column and its index are made anew, which holds the table
        # exclusively until commit (the tenant's searches wait). The same dimension (the same
        # model rebuilt) is a plain update: searches go on reading the old vectors meanwhile.
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier("chunks_embedding")))
        conn.execute(sql.SQL("ALTER TABLE chunks ALTER COLUMN embedding TYPE vector({dim}) USING NULL")
                     .format(dim=sql.Literal(int(dim))))
        # A new type takes the type's storage again; vectors belong inline (migration 3).
        conn.execute("ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE PLAIN")
    cursor = conn.execute(sql.SQL("UPDATE chunks c SET embedding = r.embedding::vector({dim}) "
                                  "FROM reindex_vectors r WHERE r.chunk_id = c.id").format(dim=sql.Literal(int(dim))))
    chunks = cursor.rowcount
    if retype:
        conn.execute(SEARCH_INDEXES["chunks_embedding"])
    # Pending chunks (written by a crawl before their vectors) were staged like the rest: the
    # embedding stage must not give them a second vector from the old model.
    conn.execute("DELETE FROM chunk_pending WHERE chunk_id IN (SELECT chunk_id FROM reindex_vectors)")
    with conn.cursor() as many:
        many.executemany("UPDATE curated SET embedding = %s WHERE id = %s", [(blob, i) for i, blob in curated])
        many.executemany("UPDATE gaps SET embedding = %s WHERE id = %s", [(blob, i) for i, blob in gaps])
    return int(chunks)


def end_staging(conn: PgConnection) -> None:
    conn.execute("DROP TABLE reindex_vectors")
