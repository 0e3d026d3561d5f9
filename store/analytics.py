"""What the site owner reads about a tenant: questions per day, answered and deflection rates,
thumbs, first-token latency percentiles, top questions, and coverage (sitemap pages missing from
the index and why, pages never cited)."""

from __future__ import annotations

import time

import apsw
import msgspec

from store.connect import Row, all_rows, one_row


class Day(msgspec.Struct, kw_only=True):
    day: str
    questions: int
    answered: int
    up: int
    down: int


class Summary(msgspec.Struct, kw_only=True):
    days: int
    questions: int
    conversations: int
    answered: int
    answered_rate: float | None
    deflection: float | None
    """Questions answered without a thumbs-down, as a share of all questions."""
    up: int
    down: int
    thumbs_ratio: float | None
    """Thumbs up as a share of all thumbs."""
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    curated: int
    """Questions answered by a curated answer."""


class TopQuestion(msgspec.Struct, kw_only=True):
    question: str
    count: int
    answered: int
    last_at: float


class MissingPage(msgspec.Struct, kw_only=True):
    url: str
    reason: str
    """gone: noindex / http_404 / removed_from_sitemap / canonical_elsewhere …; error: the crawl
    error's reason (timeout, http_500, blocked_private_address …); `indexed_as`; `not_reached`."""
    detail: str = ""


class PageUse(msgspec.Struct, kw_only=True):
    url: str
    title: str
    citations: int


def since(days: int, now: float | None = None) -> float:
    """The start of a window of `days` ending at `now` (by default the time now)."""
    return (time.time() if now is None else now) - days * 86400


def daily(conn: apsw.Connection, days: int = 30, now: float | None = None) -> list[Day]:
    """One row per day with questions (UTC days, oldest first; days without questions included)."""
    now = time.time() if now is None else now
    rows: list[Row] = conn.execute(
        "SELECT date(created_at, 'unixepoch') AS day, count(*), sum(answered), "
        "sum(feedback = 1), sum(feedback = -1) FROM messages WHERE created_at >= ? GROUP BY day",
        (since(days, now),)).fetchall()
    return days_of(rows, days, now)


def days_of(rows: list[Row], days: int, now: float) -> list[Day]:
    """`daily` from its (day, questions, answered, up, down) rows, one per day with questions:
    every day of the window, oldest first. Shared with store/pg/analytics.py."""
    found = {row[0]: Day(day=row[0], questions=row[1], answered=row[2] or 0, up=row[3] or 0, down=row[4] or 0)
             for row in rows}
    result = []
    for back in range(days - 1, -1, -1):
        day = time.strftime("%Y-%m-%d", time.gmtime(now - back * 86400))
        result.append(found.get(day) or Day(day=day, questions=0, answered=0, up=0, down=0))
    return result


def percentile(values: list[float], share: float) -> float | None:
    """The `share` percentile of `values`, interpolated between the two nearest ranks (numpy's
    default), to 0.1; None when there are none."""
    if not values:
        return None
    values = sorted(values)
    rank = share * (len(values) - 1)
    low = int(rank)
    high = min(low + 1, len(values) - 1)
    return round(values[low] + (values[high] - values[low]) * (rank - low), 1)


def summary(conn: apsw.Connection, days: int = 30, now: float | None = None) -> Summary:
    start = since(days, now)
    counts = one_row(conn.execute(
        "SELECT count(*), coalesce(sum(answered), 0), coalesce(sum(feedback = 1), 0), "
        "coalesce(sum(feedback = -1), 0), coalesce(sum(answered AND coalesce(feedback, 0) != -1), 0), "
        "coalesce(sum(source = 'curated'), 0), count(DISTINCT conversation_id) FROM messages WHERE created_at >= ?",
        (start,)))
    ttfts = [r[0] for r in conn.execute(
        "SELECT ttft_ms FROM messages WHERE created_at >= ? AND ttft_ms IS NOT NULL", (start,))]
    return summary_of(days, counts, ttfts)


def summary_of(days: int, counts: Row, ttfts: list[float]) -> Summary:
    """`summary` from its counts (questions, answered, up, down, deflected, curated,
    conversations) and first-token times: the rates and percentiles both backends compute alike."""
    questions, answered, up, down, deflected, curated, chats = counts
    return Summary(
        days=days, questions=questions, conversations=chats, answered=answered,
        answered_rate=round(answered / questions, 4) if questions else None,
        deflection=round(deflected / questions, 4) if questions else None,
        up=up, down=down, thumbs_ratio=round(up / (up + down), 4) if up + down else None,
        ttft_p50_ms=percentile(ttfts, 0.5), ttft_p95_ms=percentile(ttfts, 0.95), curated=curated,
    )


def top_questions(conn: apsw.Connection, days: int = 30, limit: int = 10,
                  now: float | None = None) -> list[TopQuestion]:
    """The most asked questions (case and surrounding space ignored), most asked first."""
    rows: list[Row] = conn.execute(
        "SELECT min(question), count(*), sum(answered), max(created_at) FROM messages WHERE created_at >= ? "
        "GROUP BY lower(trim(question)) ORDER BY count(*) DESC, max(created_at) DESC LIMIT ?",
        (since(days, now), limit)).fetchall()
    return [TopQuestion(question=r[0], count=r[1], answered=r[2] or 0, last_at=r[3]) for r in rows]


def missing_pages(conn: apsw.Connection, limit: int = 500) -> list[MissingPage]:
    """Sitemap URLs that are not an indexed page, each with the reason the crawler recorded."""
    rows: list[Row] = conn.execute(
        "SELECT s.url, p.status, p.gone_reason, p.http_status, "
        "(SELECT p2.url FROM pages p2 "
        " WHERE p2.fetched_url = s.url AND p2.status = 'active' AND p2.url != s.url LIMIT 1), "
        "(SELECT e.reason || char(31) || e.message FROM crawl_errors e WHERE e.url = s.url ORDER BY e.id DESC LIMIT 1) "
        "FROM sitemap_urls s LEFT JOIN pages p ON p.url = s.url "
        "WHERE p.id IS NULL OR p.status != 'active' ORDER BY s.url LIMIT ?", (limit,)).fetchall()
    return [missing_page(*row) for row in rows]


def missing_page(url: str, status: str | None, gone_reason: str | None, http_status: int | None,
                 indexed_as: str | None, error: str | None) -> MissingPage:
    """Why a sitemap URL is not an indexed page, from what the crawler recorded of it: another
    page it is indexed as, its tombstone, its last crawl error ("reason\x1fmessage"), else not
    reached. Shared with store/pg/analytics.py."""
    if indexed_as:
        return MissingPage(url=url, reason="indexed_as", detail=indexed_as)
    if status == "gone":
        return MissingPage(url=url, reason=gone_reason or "gone", detail=f"HTTP {http_status}" if http_status else "")
    if error:
        reason, _, message = error.partition("\x1f")
        return MissingPage(url=url, reason=reason, detail=message)
    return MissingPage(url=url, reason="not_reached")


def last_skipped(conn: apsw.Connection) -> dict[str, int]:
    """URLs the last finished crawl did not fetch, by reason (robots, noindex, calendar_trap …)."""
    row = conn.execute(
        "SELECT json_extract(summary, '$.skipped') FROM crawl_runs WHERE finished_at IS NOT NULL "
        "ORDER BY id DESC LIMIT 1").fetchone()
    if not row or not row[0]:
        return {}
    return {str(k): int(v) for k, v in msgspec.json.decode(row[0]).items()}


def sitemap_pages_never_cited(conn: apsw.Connection, limit: int = 500) -> list[PageUse]:
    """Sitemap pages that are indexed but no answer has ever cited."""
    rows: list[Row] = conn.execute(
        "SELECT s.url, coalesce(p.title, '') FROM sitemap_urls s JOIN pages p ON p.url = s.url AND p.status = 'active' "
        "WHERE NOT EXISTS (SELECT 1 FROM citations c WHERE c.url = s.url) ORDER BY s.url LIMIT ?",
        (limit,)).fetchall()
    return [PageUse(url=r[0], title=r[1], citations=0) for r in rows]


def languages(conn: apsw.Connection) -> dict[str, int]:
    """Active pages by language."""
    return dict(all_rows(conn.execute(
        "SELECT lang, count(*) FROM pages WHERE status = 'active' GROUP BY lang ORDER BY count(*) DESC")))


class CrawlRun(msgspec.Struct, kw_only=True):
    id: int
    kind: str
    started_at: float
    finished_at: float | None
    status: str
    summary: dict


class CrawlErrorRow(msgspec.Struct, kw_only=True):
    url: str
    reason: str
    message: str


def crawl_run(row: Row) -> CrawlRun:
    """A `CrawlRun` from its (id, kind, started_at, finished_at, status, summary JSON) row."""
    return CrawlRun(id=row[0], kind=row[1], started_at=row[2], finished_at=row[3], status=row[4],
                    summary=msgspec.json.decode(row[5] or "{}"))


def crawl_runs(conn: apsw.Connection, limit: int = 10) -> list[CrawlRun]:
    """The most recent crawl runs, newest first."""
    return [crawl_run(r) for r in conn.execute(
        "SELECT id, kind, started_at, finished_at, status, summary FROM crawl_runs ORDER BY id DESC LIMIT ?",
        (limit,))]


def crawl_errors(conn: apsw.Connection, run_id: int, limit: int = 100) -> list[CrawlErrorRow]:
    return [CrawlErrorRow(url=r[0], reason=r[1], message=r[2]) for r in conn.execute(
        "SELECT url, reason, message FROM crawl_errors WHERE run_id = ? ORDER BY id LIMIT ?", (run_id, limit))]


def last_done(conn: apsw.Connection) -> dict[str, float]:
    """When each kind of crawl (delta, full …) last finished successfully started."""
    return dict(all_rows(conn.execute(
        "SELECT kind, max(started_at) FROM crawl_runs WHERE status = 'done' GROUP BY kind")))


def last_run_errors(conn: apsw.Connection) -> dict[str, int]:
    """The most recent crawl run's errors, counted by reason."""
    return dict(all_rows(conn.execute(
        "SELECT reason, count(*) FROM crawl_errors WHERE run_id = (SELECT max(id) FROM crawl_runs) GROUP BY reason"
    )))
