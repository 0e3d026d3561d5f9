"""What a crawl records as it runs, in a tenant's PostgreSQL schema: store/crawls.py's functions,
with its arguments and results, on a connection from PgTenants.write. Its row in ``crawl_runs``,
the URLs it could not read (``crawl_errors``, the first MAX_ERRORS) and the site's sitemap list
(``sitemap_urls``). Text goes in without U+0000 (store/pg/nul.py)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from itertools import islice

from store.crawls import MAX_ERRORS
from store.pg.connect import PgConnection
from store.pg.nul import strip_nul, without_nul


def start_run(conn: PgConnection, kind: str) -> int:
    """Record a run of `kind` (delta, full …) as started now; returns its id."""
    row = conn.execute("INSERT INTO crawl_runs(kind, started_at) VALUES (%s, %s) RETURNING id",
                       (strip_nul(kind), time.time())).fetchone()
    assert row is not None  # INSERT … RETURNING always returns the row
    return int(row[0])


def finish_run(conn: PgConnection, run_id: int, status: str, summary_json: str,
               errors: Iterable[tuple[str, str, str]]) -> None:
    """Record a run's end, its status and JSON summary, and its first MAX_ERRORS (url, reason, message)."""
    now = time.time()
    conn.execute("UPDATE crawl_runs SET finished_at = %s, status = %s, summary = %s WHERE id = %s",
                 (now, *without_nul((status, summary_json)), run_id))
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO crawl_errors(run_id, url, reason, message, at) VALUES (%s, %s, %s, %s, %s)",
            [(run_id, *without_nul((url, reason, message)), now)
             for url, reason, message in islice(errors, MAX_ERRORS)])


def replace_sitemap(conn: PgConnection, sitemap: Mapping[str, str | None]) -> None:
    """The site's sitemap URLs (url → lastmod) replace the last list."""
    now = time.time()
    conn.execute("DELETE FROM sitemap_urls")
    with conn.cursor() as cursor:
        # An upsert, as SQLite's INSERT OR REPLACE: two URLs that differ only by NULs are one here.
        cursor.executemany(
            "INSERT INTO sitemap_urls(url, lastmod, seen_at) VALUES (%s, %s, %s) "
            "ON CONFLICT (url) DO UPDATE SET lastmod = excluded.lastmod, seen_at = excluded.seen_at",
            [(*without_nul((url, lastmod)), now) for url, lastmod in sitemap.items()])
