"""SQLite's reading of a LIMIT, for the PostgreSQL twins: a negative LIMIT there means no limit,
which PostgreSQL refuses; NULL is PostgreSQL's "no limit"."""

from __future__ import annotations


def sqlite_limit(limit: int) -> int | None:
    """A LIMIT as SQLite reads it: a negative one is none (NULL to PostgreSQL)."""
    return None if limit < 0 else limit
