"""LIMIT as SQLite reads it, for the PostgreSQL twins that keep SQLite's results: a negative
LIMIT there means no limit, where PostgreSQL refuses it."""

from __future__ import annotations


def sqlite_limit(limit: int) -> int | None:
    """A LIMIT parameter: a negative one is none (NULL to PostgreSQL)."""
    return None if limit < 0 else limit
