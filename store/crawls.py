"""What a crawl records as it runs: its row in ``crawl_runs`` (started, finished, summary), the
URLs it could not read (``crawl_errors``) and the site's sitemap list (``sitemap_urls``).
The owner's views of them are in store/analytics.py."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from itertools import islice

import apsw

MAX_ERRORS = 5000
"""Errors kept per run; a broken site can fail on every URL."""


def start_run(conn: apsw.Connection, kind: str) -> int:
    """Record a run of `kind` (delta, full …) as started now; returns its id."""
    conn.execute("INSERT INTO crawl_runs(kind, started_at) VALUES (?, ?)", (kind, time.time()))
    return conn.last_insert_rowid()


def finish_run(conn: apsw.Connection, run_id: int, status: str, summary_json: str,
               errors: Iterable[tuple[str, str, str]]) -> None:
    """Record a run's end, its status and JSON summary, and its first MAX_ERRORS (url, reason, message)."""
    now = time.time()
    conn.execute("UPDATE crawl_runs SET finished_at = ?, status = ?, summary = ? WHERE id = ?",
                 (now, status, summary_json, run_id))
    conn.executemany("INSERT INTO crawl_errors(run_id, url, reason, message, at) VALUES (?, ?, ?, ?, ?)",
                     [(run_id, url, reason, message, now) for url, reason, message in islice(errors, MAX_ERRORS)])


def replace_sitemap(conn: apsw.Connection, sitemap: Mapping[str, str | None]) -> None:
    """The site's sitemap URLs (url → lastmod) replace the last list."""
    now = time.time()
    conn.execute("DELETE FROM sitemap_urls")
    conn.executemany("INSERT OR REPLACE INTO sitemap_urls(url, lastmod, seen_at) VALUES (?, ?, ?)",
                     [(url, lastmod, now) for url, lastmod in sitemap.items()])
