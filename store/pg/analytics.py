"""What the site owner reads about a tenant, from its PostgreSQL schema: store/analytics.py's
functions, with its arguments and its `Day`, `Summary`, `TopQuestion`, `MissingPage`, `PageUse`,
`CrawlRun` and `CrawlErrorRow` results, on a connection from PgTenants.read. The rates,
percentiles and reasons are that module's own helpers, so both backends compute them alike.

Where PostgreSQL alone would give another result, this side does what SQLite does:
- a message's day is SQLite's `date(created_at, 'unixepoch')`: the time rounded to the
  millisecond the way SQLite rounds it, then its UTC day;
- questions are grouped by their text trimmed of spaces and with ASCII letters lowercased
  (SQLite's lower() and trim()), not by PostgreSQL's locale-aware lower();
- text is ordered and compared byte by byte (COLLATE "C"), SQLite's BINARY, whatever the
  database's locale; where SQLite's order of equal counts follows from its plan (the questions
  asked as often, the languages of as many pages), the same order is written out here;
- a negative LIMIT means no limit (store/pg/limits.py)."""

from __future__ import annotations

import time

from store.analytics import (
    CrawlErrorRow,
    CrawlRun,
    Day,
    MissingPage,
    PageUse,
    Summary,
    TopQuestion,
    crawl_run,
    days_of,
    missing_page,
    since,
    summary_of,
)
from store.pg.connect import PgConnection
from store.pg.limits import sqlite_limit

#: SQLite's date(created_at, 'unixepoch'): the time as a Julian day in milliseconds, rounded as
#: SQLite rounds it ((s * 1000 + 210866760000000) + 0.5, truncated: the same float8 operations),
#: then whole days since 1970-01-01, UTC.
_DAY = ("to_char(date '1970-01-01' + ((floor(created_at * 1000::float8 + 210866760000000::float8 + 0.5::float8)"
        "::bigint - 210866760000000) / 86400000)::integer, 'YYYY-MM-DD')")
#: SQLite's lower(trim(question)): spaces trimmed, ASCII letters alone lowercased.
_QUESTION_KEY = "btrim(translate(question, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), ' ')"


def daily(conn: PgConnection, days: int = 30, now: float | None = None) -> list[Day]:
    """One row per day with questions (UTC days, oldest first; days without questions included)."""
    now = time.time() if now is None else now
    rows = conn.execute(
        f"SELECT {_DAY} AS day, count(*), sum(answered), count(*) FILTER (WHERE feedback = 1), "
        "count(*) FILTER (WHERE feedback = -1) FROM messages WHERE created_at >= %s GROUP BY day",
        (since(days, now),)).fetchall()
    return days_of(rows, days, now)


def summary(conn: PgConnection, days: int = 30, now: float | None = None) -> Summary:
    start = since(days, now)
    counts = conn.execute(
        "SELECT count(*), coalesce(sum(answered), 0), count(*) FILTER (WHERE feedback = 1), "
        "count(*) FILTER (WHERE feedback = -1), "
        "count(*) FILTER (WHERE answered <> 0 AND coalesce(feedback, 0) <> -1), "
        "count(*) FILTER (WHERE source = 'curated'), count(DISTINCT conversation_id) "
        "FROM messages WHERE created_at >= %s", (start,)).fetchone()
    assert counts is not None  # an aggregate without GROUP BY returns one row
    ttfts = [r[0] for r in conn.execute(
        "SELECT ttft_ms FROM messages WHERE created_at >= %s AND ttft_ms IS NOT NULL", (start,))]
    return summary_of(days, tuple(int(n) for n in counts), ttfts)


def top_questions(conn: PgConnection, days: int = 30, limit: int = 10,
                  now: float | None = None) -> list[TopQuestion]:
    """The most asked questions (case and surrounding space ignored), most asked first; of those
    asked as often and as lately, in the order of their grouped text (SQLite's)."""
    rows = conn.execute(
        f'SELECT min(question COLLATE "C"), count(*), sum(answered), max(created_at) FROM messages '
        f"WHERE created_at >= %s GROUP BY {_QUESTION_KEY} "
        f'ORDER BY count(*) DESC, max(created_at) DESC, {_QUESTION_KEY} COLLATE "C" LIMIT %s',
        (since(days, now), sqlite_limit(limit))).fetchall()
    return [TopQuestion(question=r[0], count=int(r[1]), answered=int(r[2] or 0), last_at=r[3]) for r in rows]


def missing_pages(conn: PgConnection, limit: int = 500) -> list[MissingPage]:
    """Sitemap URLs that are not an indexed page, each with the reason the crawler recorded."""
    rows = conn.execute(
        "SELECT s.url, p.status, p.gone_reason, p.http_status, "
        # Of several pages fetched from the URL, the first written: the one SQLite's scan meets first.
        "(SELECT p2.url FROM pages p2 WHERE p2.fetched_url = s.url AND p2.status = 'active' AND p2.url <> s.url "
        " ORDER BY p2.id LIMIT 1), "
        "(SELECT e.reason || chr(31) || e.message FROM crawl_errors e WHERE e.url = s.url ORDER BY e.id DESC LIMIT 1) "
        "FROM sitemap_urls s LEFT JOIN pages p ON p.url = s.url "
        'WHERE p.id IS NULL OR p.status <> \'active\' ORDER BY s.url COLLATE "C" LIMIT %s',
        (sqlite_limit(limit),)).fetchall()
    return [missing_page(*row) for row in rows]


def last_skipped(conn: PgConnection) -> dict[str, int]:
    """URLs the last finished crawl did not fetch, by reason (robots, noindex, calendar_trap …)."""
    row = conn.execute(
        "SELECT summary::json -> 'skipped' FROM crawl_runs WHERE finished_at IS NOT NULL "
        "ORDER BY id DESC LIMIT 1").fetchone()
    if not row or not row[0]:
        return {}
    return {str(k): int(v) for k, v in row[0].items()}


def sitemap_pages_never_cited(conn: PgConnection, limit: int = 500) -> list[PageUse]:
    """Sitemap pages that are indexed but no answer has ever cited."""
    rows = conn.execute(
        "SELECT s.url, coalesce(p.title, '') FROM sitemap_urls s JOIN pages p ON p.url = s.url AND p.status = 'active' "
        'WHERE NOT EXISTS (SELECT 1 FROM citations c WHERE c.url = s.url) ORDER BY s.url COLLATE "C" LIMIT %s',
        (sqlite_limit(limit),)).fetchall()
    return [PageUse(url=r[0], title=r[1], citations=0) for r in rows]


def languages(conn: PgConnection) -> dict[str, int]:
    """Active pages by language, the most used first; languages of as many pages in reverse byte
    order, as SQLite's sort gives them."""
    return {lang: int(n) for lang, n in conn.execute(
        "SELECT lang, count(*) FROM pages WHERE status = 'active' GROUP BY lang "
        'ORDER BY count(*) DESC, lang COLLATE "C" DESC')}


def crawl_runs(conn: PgConnection, limit: int = 10) -> list[CrawlRun]:
    """The most recent crawl runs, newest first."""
    return [crawl_run(r) for r in conn.execute(
        "SELECT id, kind, started_at, finished_at, status, summary FROM crawl_runs ORDER BY id DESC LIMIT %s",
        (sqlite_limit(limit),))]


def crawl_errors(conn: PgConnection, run_id: int, limit: int = 100) -> list[CrawlErrorRow]:
    return [CrawlErrorRow(url=r[0], reason=r[1], message=r[2]) for r in conn.execute(
        "SELECT url, reason, message FROM crawl_errors WHERE run_id = %s ORDER BY id LIMIT %s",
        (run_id, sqlite_limit(limit)))]


def last_done(conn: PgConnection) -> dict[str, float]:
    """When each kind of crawl (delta, full …) last finished successfully started; kinds in byte
    order, as SQLite groups them."""
    return dict(conn.execute(
        "SELECT kind, max(started_at) FROM crawl_runs WHERE status = 'done' GROUP BY kind "
        'ORDER BY kind COLLATE "C"').fetchall())


def last_run_errors(conn: PgConnection) -> dict[str, int]:
    """The most recent crawl run's errors, counted by reason (reasons in byte order, as SQLite's)."""
    return {reason: int(n) for reason, n in conn.execute(
        "SELECT reason, count(*) FROM crawl_errors WHERE run_id = (SELECT max(id) FROM crawl_runs) "
        'GROUP BY reason ORDER BY reason COLLATE "C"')}

