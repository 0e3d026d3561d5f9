"""Curated answers: the site owner's own answers to the questions that matter most."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

import apsw
import msgspec
import numpy as np

from store.errors import InvalidInput, NotFound

T = TypeVar("T")


class Curated(msgspec.Struct, kw_only=True):
    id: int
    question: str
    answer: str
    urls: list[str] = msgspec.field(default_factory=list)
    lang: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0


class CuratedMatch(msgspec.Struct):
    curated: Curated
    similarity: float
    exact: bool


def _row(row) -> Curated:
    return Curated(id=row[0], question=row[1], answer=row[2], urls=json.loads(row[3]), lang=row[4],
                   created_at=row[5], updated_at=row[6])


_COLUMNS = "id, question, answer, urls, lang, created_at, updated_at"


def check_texts(question: str, answer: str) -> None:
    """The rules a curated answer's texts keep on either backend (store/pg/curated.py too)."""
    if not question.strip() or not answer.strip():
        raise InvalidInput("a curated answer needs a question and an answer", field="question" if not question.strip() else "answer")
    if len(question) > 2000 or len(answer) > 10000:
        raise InvalidInput("curated question (max 2000) or answer (max 10000 characters) too long")


def add(conn: apsw.Connection, *, question: str, normalized: str, answer: str, urls: list[str], lang: str,
        vector: np.ndarray | None) -> int:
    check_texts(question, answer)
    now = time.time()
    conn.execute(
        "INSERT INTO curated(question, normalized, answer, urls, lang, embedding, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (question, normalized, answer, json.dumps(urls), lang,
         None if vector is None else np.asarray(vector, dtype=np.float32).tobytes(), now, now),
    )
    return conn.last_insert_rowid()


def update(conn: apsw.Connection, curated_id: int, *, question: str, normalized: str, answer: str,
           urls: list[str], lang: str, vector: np.ndarray | None) -> None:
    check_texts(question, answer)
    conn.execute(
        "UPDATE curated SET question = ?, normalized = ?, answer = ?, urls = ?, lang = ?, embedding = ?, "
        "updated_at = ? WHERE id = ?",
        (question, normalized, answer, json.dumps(urls), lang,
         None if vector is None else np.asarray(vector, dtype=np.float32).tobytes(), time.time(), curated_id),
    )
    if conn.changes() == 0:
        raise NotFound(f"curated answer {curated_id} does not exist")


def delete(conn: apsw.Connection, curated_id: int) -> None:
    conn.execute("DELETE FROM curated WHERE id = ?", (curated_id,))
    if conn.changes() == 0:
        raise NotFound(f"curated answer {curated_id} does not exist")


def get(conn: apsw.Connection, curated_id: int) -> Curated:
    row = conn.execute(f"SELECT {_COLUMNS} FROM curated WHERE id = ?", (curated_id,)).fetchone()
    if row is None:
        raise NotFound(f"curated answer {curated_id} does not exist")
    return _row(row)


def all_curated(conn: apsw.Connection) -> list[Curated]:
    return [_row(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM curated ORDER BY id")]


def match(conn: apsw.Connection, normalized: str, vector: np.ndarray | None, threshold: float) -> CuratedMatch | None:
    """An exact normalised-text match, else the most similar curated question above `threshold`."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM curated WHERE normalized = ? LIMIT 1", (normalized,)).fetchone()
    if row is not None:
        return CuratedMatch(_row(row), 1.0, True)
    if vector is None:
        return None
    rows = conn.execute(f"SELECT {_COLUMNS}, embedding FROM curated WHERE embedding IS NOT NULL")
    found = most_similar(((r, r[7]) for r in rows), vector, threshold)
    return CuratedMatch(_row(found[0]), found[1], False) if found is not None else None


def most_similar(candidates: Iterable[tuple[T, bytes]], vector: np.ndarray,
                 threshold: float) -> tuple[T, float] | None:
    """The candidate whose stored float32 vector is most similar to `vector` (the dot product:
    both are unit length), if at least `threshold`; of equals, the last. Shared with
    store/pg/curated.py so both backends pick the same answer."""
    best: tuple[T, float] | None = None
    query = np.asarray(vector, dtype=np.float32)
    for candidate, blob in candidates:
        stored = np.frombuffer(blob, dtype=np.float32)
        if stored.shape != query.shape:  # a vector of another model
            continue
        similarity = float(stored @ query)
        if similarity >= (threshold if best is None else best[1]):
            best = (candidate, similarity)
    return best


def curated_vectors(conn: apsw.Connection) -> Iterator[tuple[Curated, np.ndarray]]:
    """Every curated answer that has a vector, with it."""
    items = {item.id: item for item in all_curated(conn)}
    for curated_id, blob in conn.execute("SELECT id, embedding FROM curated WHERE embedding IS NOT NULL"):
        if curated_id in items:
            yield items[curated_id], np.frombuffer(blob, dtype=np.float32)
