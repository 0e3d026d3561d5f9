"""Curated answers in a tenant's PostgreSQL schema: store/curated.py's functions, with its
arguments, errors and `Curated` / `CuratedMatch` results, on a connection from PgTenants.read or
.write.

A curated question's vector is kept as SQLite keeps it, float32 bytes (a bytea: it is of whatever
model wrote it, see store/pg/migrations.py m002), and matched by store/curated.py's own
`most_similar` over the fetched vectors, so both backends pick the same answer: a tenant has tens
of curated answers, not the millions an index would be for.

Text goes in without U+0000 (store/pg/nul.py), and so does the normalised question a match looks
for, so a question with a NUL finds the answer stored without it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import numpy as np

from store.curated import Curated, CuratedMatch, check_texts, most_similar
from store.errors import NotFound
from store.pg.connect import PgConnection
from store.pg.nul import strip_nul, without_nul

_COLUMNS = "id, question, answer, urls, lang, created_at, updated_at"


def _curated(row: tuple) -> Curated:
    return Curated(id=int(row[0]), question=row[1], answer=row[2], urls=json.loads(row[3]), lang=row[4],
                   created_at=row[5], updated_at=row[6])


def _check(question: str, answer: str) -> None:
    check_texts(question, answer)
    # Once its NULs are taken out a text may be empty: refused here, as an empty text is, rather
    # than stored as an empty question (SQLite keeps the NULs, so it has no such case).
    check_texts(strip_nul(question), strip_nul(answer))


def _blob(vector: np.ndarray | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype=np.float32).tobytes()


def add(conn: PgConnection, *, question: str, normalized: str, answer: str, urls: list[str], lang: str,
        vector: np.ndarray | None) -> int:
    _check(question, answer)
    now = time.time()
    row = conn.execute(
        "INSERT INTO curated(question, normalized, answer, urls, lang, embedding, created_at, updated_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
        (*without_nul((question, normalized, answer, json.dumps(urls), lang)), _blob(vector), now, now),
    ).fetchone()
    assert row is not None  # INSERT … RETURNING always returns the row
    return int(row[0])


def update(conn: PgConnection, curated_id: int, *, question: str, normalized: str, answer: str,
           urls: list[str], lang: str, vector: np.ndarray | None) -> None:
    _check(question, answer)
    cursor = conn.execute(
        "UPDATE curated SET question = %s, normalized = %s, answer = %s, urls = %s, lang = %s, embedding = %s, "
        "updated_at = %s WHERE id = %s",
        (*without_nul((question, normalized, answer, json.dumps(urls), lang)), _blob(vector), time.time(),
         curated_id),
    )
    if cursor.rowcount == 0:
        raise NotFound(f"curated answer {curated_id} does not exist")


def delete(conn: PgConnection, curated_id: int) -> None:
    cursor = conn.execute("DELETE FROM curated WHERE id = %s", (curated_id,))
    if cursor.rowcount == 0:
        raise NotFound(f"curated answer {curated_id} does not exist")


def get(conn: PgConnection, curated_id: int) -> Curated:
    row = conn.execute(f"SELECT {_COLUMNS} FROM curated WHERE id = %s", (curated_id,)).fetchone()
    if row is None:
        raise NotFound(f"curated answer {curated_id} does not exist")
    return _curated(row)


def all_curated(conn: PgConnection) -> list[Curated]:
    return [_curated(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM curated ORDER BY id")]


def match(conn: PgConnection, normalized: str, vector: np.ndarray | None, threshold: float) -> CuratedMatch | None:
    """An exact normalised-text match, else the most similar curated question at or above `threshold`."""
    # Of several with one normalised text, the first made: the one SQLite's index gives.
    row = conn.execute(f"SELECT {_COLUMNS} FROM curated WHERE normalized = %s ORDER BY id LIMIT 1",
                       (strip_nul(normalized),)).fetchone()
    if row is not None:
        return CuratedMatch(_curated(row), 1.0, True)
    if vector is None:
        return None
    # In id order, SQLite's table order: of equally similar answers, both pick the last.
    rows = conn.execute(f"SELECT {_COLUMNS}, embedding FROM curated WHERE embedding IS NOT NULL ORDER BY id")
    found = most_similar(((r, r[7]) for r in rows), vector, threshold)
    return CuratedMatch(_curated(found[0]), found[1], False) if found is not None else None


def curated_vectors(conn: PgConnection) -> Iterator[tuple[Curated, np.ndarray]]:
    """Every curated answer that has a vector, with it, in id order."""
    rows = conn.execute(
        f"SELECT {_COLUMNS}, embedding FROM curated WHERE embedding IS NOT NULL ORDER BY id").fetchall()
    for row in rows:
        yield _curated(row), np.frombuffer(row[7], dtype=np.float32)
