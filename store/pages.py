"""Pages and their chunks: write a page in one transaction, tombstone a page, read page state.

A chunk row is keyed by its content hash and shared by every page it appears on; the
`page_chunks` link carries the per-page facts (position, heading path, stable uid). When a page
changes or goes away, chunks no page links to any more are deleted with their vectors.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Iterable

import apsw
import msgspec
import numpy as np

from store.connect import Row, all_rows, one_row
from store.manifests import manifest_flags
from store.search import cosine_similarities


class ChunkRow(msgspec.Struct):
    hash: str
    kind: str
    lang: str
    text: str
    heading_path: tuple[str, ...]
    position: int
    uid: str
    tokens: int
    vector: bytes | None = None
    """float32 bytes, or None: a chunk new to the file without one is written pending (searchable
    by its text at once; store/pending.py lists it until the embedding stage gives it a vector)."""


class PageWrite(msgspec.Struct, kw_only=True):
    url: str
    fetched_url: str = ""
    title: str = ""
    description: str = ""
    lang: str = ""
    breadcrumbs: list[str] = msgspec.field(default_factory=list)
    updated: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    sitemap_lastmod: str | None = None
    content_hash: str = ""
    http_status: int = 200
    html: bytes | None = None
    encoding: str | None = None
    chunks: list[ChunkRow] = msgspec.field(default_factory=list)
    facts: list[dict] = msgspec.field(default_factory=list)
    forms: list[dict] = msgspec.field(default_factory=list)
    actions: list[dict] = msgspec.field(default_factory=list)
    flags: list[dict] = msgspec.field(default_factory=list)
    """Passages kept out of the index as prompt injection: {"reason", "text", "where"}."""


class WriteStats(msgspec.Struct):
    page_id: int
    changed: bool
    chunks_added: int
    chunks_deleted: int
    chunks_pending: int = 0
    """Of `chunks_added`, those written without a vector (pending)."""


class PageState(msgspec.Struct):
    """What the crawler needs to decide whether and how to re-fetch a page."""

    id: int
    url: str
    status: str
    etag: str | None
    last_modified: str | None
    sitemap_lastmod: str | None
    content_hash: str | None


def missing_hashes(conn: apsw.Connection, hashes: Iterable[str]) -> set[str]:
    """The content hashes not yet stored: only these chunks need embedding."""
    wanted = list(dict.fromkeys(hashes))
    if not wanted:
        return set()
    found: set[str] = set()
    for start in range(0, len(wanted), 500):
        batch = wanted[start : start + 500]
        marks = ",".join("?" * len(batch))
        found.update(r[0] for r in conn.execute(f"SELECT hash FROM chunks WHERE hash IN ({marks})", batch))
    return set(wanted) - found


def _delete_orphans(conn: apsw.Connection, chunk_ids: Iterable[int]) -> int:
    deleted = 0
    for chunk_id in set(chunk_ids):
        linked = conn.execute("SELECT 1 FROM page_chunks WHERE chunk_id = ? LIMIT 1", (chunk_id,)).fetchone()
        if linked is None:
            conn.execute("DELETE FROM chunks WHERE id = ?", (chunk_id,))  # trigger drops fts + vec
            deleted += 1
    return deleted


def _upsert_page(conn: apsw.Connection, page: PageWrite, now: float) -> tuple[int, bool]:
    row = conn.execute("SELECT id, content_hash, status FROM pages WHERE url = ?", (page.url,)).fetchone()
    fields = dict(
        url=page.url,
        fetched_url=page.fetched_url or page.url,
        title=page.title,
        description=page.description,
        lang=page.lang,
        breadcrumbs=json.dumps(page.breadcrumbs, ensure_ascii=False),
        updated=page.updated,
        etag=page.etag,
        last_modified=page.last_modified,
        sitemap_lastmod=page.sitemap_lastmod,
        content_hash=page.content_hash,
        http_status=page.http_status,
        fetched_at=now,
    )
    if row is None:
        fields["changed_at"] = now
        names = ", ".join(fields)
        marks = ", ".join(f":{n}" for n in fields)
        conn.execute(f"INSERT INTO pages({names}) VALUES ({marks})", fields)
        return conn.last_insert_rowid(), True
    page_id, old_hash, status = row
    changed = old_hash != page.content_hash or status != "active"
    assignments = ", ".join(f"{n} = :{n}" for n in fields)
    conn.execute(
        f"UPDATE pages SET {assignments}, status = 'active', gone_reason = NULL, removed_at = NULL"
        + (", changed_at = :now" if changed else "")
        + " WHERE id = :id",
        {**fields, "id": page_id, "now": now},
    )
    return page_id, changed


def write_page(conn: apsw.Connection, page: PageWrite) -> WriteStats:
    """Write one page with its chunks (and their FTS rows), facts, forms and actions. Call inside a
    transaction. A chunk new to the file is stored with its vector, or pending without one."""
    now = time.time()
    page_id, changed = _upsert_page(conn, page, now)
    old_ids = [r[0] for r in conn.execute("SELECT chunk_id FROM page_chunks WHERE page_id = ?", (page_id,))]
    conn.execute("DELETE FROM page_chunks WHERE page_id = ?", (page_id,))
    added = pending = 0
    new_ids: list[int] = []
    for chunk in page.chunks:
        row = conn.execute("SELECT id FROM chunks WHERE hash = ?", (chunk.hash,)).fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO chunks(hash, kind, lang, text, title, heading, tokens, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (chunk.hash, chunk.kind, chunk.lang, chunk.text, page.title,
                 " > ".join(chunk.heading_path), chunk.tokens, now),
            )
            chunk_id = conn.last_insert_rowid()
            if chunk.vector is None:  # searchable by its text now; its vector comes later
                conn.execute("INSERT INTO chunk_pending(chunk_id, queued_at) VALUES (?, ?)", (chunk_id, now))
                pending += 1
            else:
                conn.execute(
                    "INSERT INTO chunk_vec(rowid, embedding, kind, lang) VALUES (?, ?, ?, ?)",
                    (chunk_id, chunk.vector, chunk.kind, chunk.lang),
                )
            added += 1
        else:
            chunk_id = row[0]
        new_ids.append(chunk_id)
        conn.execute(
            "INSERT OR REPLACE INTO page_chunks(page_id, position, chunk_id, uid, heading_path) VALUES (?, ?, ?, ?, ?)",
            (page_id, chunk.position, chunk_id, chunk.uid, json.dumps(list(chunk.heading_path), ensure_ascii=False)),
        )
    deleted = _delete_orphans(conn, set(old_ids) - set(new_ids))

    conn.execute("DELETE FROM facts WHERE page_id = ?", (page_id,))
    for fact in page.facts:
        conn.execute(
            "INSERT INTO facts(page_id, type, kind, text, data) VALUES (?, ?, ?, ?, ?)",
            (page_id, fact.get("type", ""), fact.get("kind", "fact"), fact.get("text", ""),
             json.dumps(fact.get("data", {}), ensure_ascii=False, default=str)),
        )
    conn.execute("DELETE FROM forms WHERE page_id = ?", (page_id,))
    for form in page.forms:
        conn.execute("INSERT INTO forms(page_id, data) VALUES (?, ?)", (page_id, json.dumps(form, ensure_ascii=False)))
    conn.execute("DELETE FROM actions WHERE page_id = ?", (page_id,))
    for action in page.actions:
        conn.execute(
            "INSERT INTO actions(page_id, name, label, selector, url, source, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (page_id, action.get("name", ""), action.get("label", ""), action.get("selector", ""),
             action.get("url", ""), action.get("source", "data-action"), json.dumps(action, ensure_ascii=False)),
        )
    conn.execute("DELETE FROM page_flags WHERE page_id = ?", (page_id,))
    conn.executemany(
        "INSERT INTO page_flags(page_id, reason, location, text, at) VALUES (?, ?, ?, ?, ?)",
        [(page_id, flag.get("reason", ""), flag.get("where", ""), flag.get("text", ""), now) for flag in page.flags],
    )
    if page.html is not None:
        # The caller scrubbed it (ingest/rawhtml.py scrub_html): the cache holds what the index does.
        conn.execute(
            "INSERT INTO page_html(page_id, encoding, html, scrubbed) VALUES (?, ?, ?, 1) "
            "ON CONFLICT(page_id) DO UPDATE SET encoding = excluded.encoding, html = excluded.html, scrubbed = 1",
            (page_id, page.encoding, zlib.compress(page.html, 6)),
        )
    return WriteStats(page_id=page_id, changed=changed or bool(added or deleted), chunks_added=added,
                      chunks_deleted=deleted, chunks_pending=pending)


def tombstone_page(conn: apsw.Connection, url: str, reason: str, http_status: int | None = None) -> int:
    """Remove a page from search (status 'gone'); delete the chunks only it had. Returns chunks deleted."""
    row = conn.execute("SELECT id FROM pages WHERE url = ? AND status = 'active'", (url,)).fetchone()
    if row is None:
        return 0
    page_id = row[0]
    old_ids = [r[0] for r in conn.execute("SELECT chunk_id FROM page_chunks WHERE page_id = ?", (page_id,))]
    conn.execute("DELETE FROM page_chunks WHERE page_id = ?", (page_id,))
    for table in ("facts", "forms", "actions", "page_html", "page_flags"):
        conn.execute(f"DELETE FROM {table} WHERE page_id = ?", (page_id,))
    conn.execute(
        "UPDATE pages SET status = 'gone', gone_reason = ?, http_status = COALESCE(?, http_status), "
        "removed_at = ?, etag = NULL, last_modified = NULL, sitemap_lastmod = NULL, content_hash = NULL WHERE id = ?",
        (reason, http_status, time.time(), page_id),
    )
    return _delete_orphans(conn, old_ids)


def mark_fetched(conn: apsw.Connection, url: str, *, etag: str | None, last_modified: str | None,
                 sitemap_lastmod: str | None) -> None:
    """A 304 or an unchanged body: refresh the validators and fetch time, nothing else."""
    conn.execute(
        "UPDATE pages SET etag = COALESCE(?, etag), last_modified = COALESCE(?, last_modified), "
        "sitemap_lastmod = COALESCE(?, sitemap_lastmod), fetched_at = ? WHERE url = ?",
        (etag, last_modified, sitemap_lastmod, time.time(), url),
    )


def page_states(conn: apsw.Connection) -> dict[str, PageState]:
    rows: list[Row] = conn.execute(
        "SELECT id, url, status, etag, last_modified, sitemap_lastmod, content_hash FROM pages"
    ).fetchall()
    return {r[1]: PageState(*r) for r in rows}


def page_html(conn: apsw.Connection, page_id: int) -> tuple[bytes, str | None] | None:
    row = conn.execute("SELECT html, encoding FROM page_html WHERE page_id = ?", (page_id,)).fetchone()
    return (zlib.decompress(row[0]), row[1]) if row else None


def unscrubbed_html(conn: apsw.Connection, limit: int = 100) -> list[tuple[int, bytes, str | None]]:
    """Raw-cache rows written before the cache was scrubbed (schema 5): (page id, html, encoding)."""
    rows: list[Row] = conn.execute(
        "SELECT page_id, html, encoding FROM page_html WHERE scrubbed = 0 ORDER BY page_id LIMIT ?", (limit,)
    ).fetchall()
    return [(page_id, zlib.decompress(html), encoding) for page_id, html, encoding in rows]


def replace_html(conn: apsw.Connection, rows: Iterable[tuple[int, bytes, str | None]]) -> None:
    """Store re-scrubbed raw HTML in place of the old. Call inside a transaction.

    SQLite's secure_delete is on while the old rows are overwritten, so the pages they freed are
    zeroed rather than left in the file (and in every later backup) for anyone to read."""
    previous = one_row(conn.execute("PRAGMA secure_delete"))[0]
    conn.execute("PRAGMA secure_delete = 1")
    try:
        conn.executemany(
            "UPDATE page_html SET html = ?, encoding = ?, scrubbed = 1 WHERE page_id = ?",
            [(zlib.compress(html, 6), encoding, page_id) for page_id, html, encoding in rows],
        )
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(previous)}")


def vector_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


class Stats(msgspec.Struct):
    pages: int
    pages_gone: int
    chunks: int
    chunk_links: int
    facts: int
    forms: int
    actions: int
    by_kind: dict[str, int]
    by_lang: dict[str, int]
    file_bytes: int
    last_crawl: dict | None
    sitemap_urls: int
    sitemap_covered: int
    flagged: dict = msgspec.field(default_factory=dict)
    """Pages with passages kept out of the index as prompt injection (`flagged_pages`)."""
    chunks_pending: int = 0
    """Chunks searchable by their text but still waiting for their vectors (a crawl is embedding,
    or one was cancelled or killed: the next crawl or server start embeds them)."""


def crawl_view(row: Row) -> dict:
    """A `crawl_runs` row (id, kind, started_at, finished_at, status, summary) as `Stats.last_crawl`."""
    return {"id": row[0], "kind": row[1], "started_at": row[2], "finished_at": row[3], "status": row[4],
            "summary": json.loads(row[5])}


def stats(conn: apsw.Connection, file_bytes: int = 0) -> Stats:
    one = lambda sql: one_row(conn.execute(sql))[0]  # noqa: E731
    last = conn.execute(
        "SELECT id, kind, started_at, finished_at, status, summary FROM crawl_runs ORDER BY id DESC LIMIT 1"
    ).fetchone()
    return Stats(
        pages=one("SELECT count(*) FROM pages WHERE status = 'active'"),
        pages_gone=one("SELECT count(*) FROM pages WHERE status = 'gone'"),
        chunks=one("SELECT count(*) FROM chunks"),
        chunk_links=one("SELECT count(*) FROM page_chunks"),
        facts=one("SELECT count(*) FROM facts"),
        forms=one("SELECT count(*) FROM forms"),
        actions=one("SELECT count(*) FROM actions"),
        by_kind=dict(all_rows(conn.execute("SELECT kind, count(*) FROM chunks GROUP BY kind"))),
        by_lang=dict(all_rows(conn.execute("SELECT lang, count(*) FROM chunks GROUP BY lang"))),
        file_bytes=file_bytes,
        last_crawl=crawl_view(last) if last else None,
        sitemap_urls=one("SELECT count(*) FROM sitemap_urls"),
        sitemap_covered=one(
            "SELECT count(*) FROM sitemap_urls s JOIN pages p ON p.url = s.url AND p.status = 'active'"
        ),
        flagged={**flagged_pages(conn), "manifests": manifest_flags(conn)},
        chunks_pending=one("SELECT count(*) FROM chunk_pending"),
    )


def flagged_pages(conn: apsw.Connection, limit: int = 50) -> dict:
    """For the site owner: active pages with passages kept out of the index as prompt injection,
    how many by reason, and the pages (most flags first) with each passage and where it was."""
    live = "FROM page_flags f JOIN pages p ON p.id = f.page_id AND p.status = 'active'"
    rows: list[Row] = conn.execute(
        f"SELECT p.id, p.url, p.title, f.reason, f.location, f.text {live} "
        "ORDER BY (SELECT count(*) FROM page_flags g WHERE g.page_id = p.id) DESC, p.url, f.id"
    ).fetchall()
    reasons = [r[0] for r in conn.execute(f"SELECT f.reason {live}")]
    return flag_summary(rows, reasons, one_row(conn.execute(f"SELECT count(DISTINCT f.page_id) {live}"))[0], limit)


def flag_summary(rows: list[Row], reasons: Iterable[str], pages: int, limit: int) -> dict:
    """`flagged_pages`'s result from its rows (page id, url, title, reason, location, text; most
    flagged pages first), every flag's reasons (comma-separated) and the count of flagged pages."""
    shown: dict[int, dict] = {}
    for page_id, url, title, reason, location, text in rows:
        page = shown.get(page_id)
        if page is None:
            if len(shown) >= limit:
                continue
            page = shown[page_id] = {"url": url, "title": title, "flags": []}
        page["flags"].append({"reason": reason, "where": location, "text": text})
    by_reason: dict[str, int] = {}
    for joined in reasons:
        for reason in joined.split(","):
            by_reason[reason] = by_reason.get(reason, 0) + 1
    return {"pages": pages, "flags": len(rows), "by_reason": by_reason, "flagged_pages": list(shown.values())}


def is_active_page(conn: apsw.Connection, url: str) -> bool:
    """Whether `url` is an indexed, searchable page of the tenant."""
    return conn.execute("SELECT 1 FROM pages WHERE url = ? AND status = 'active'", (url,)).fetchone() is not None


class PagePassage(msgspec.Struct):
    text: str
    kind: str
    heading_path: list[str]
    chunk_id: int = 0
    similarity: float | None = None
    """The passage's cosine similarity to the question (when a query vector was given)."""


def page_passage_rows(rows: Iterable[Row]) -> list[PagePassage]:
    """Passages from (chunk id, text, kind, heading path JSON) rows, in their order."""
    return [PagePassage(text=text, kind=kind, heading_path=json.loads(path or "[]"), chunk_id=chunk_id)
            for chunk_id, text, kind, path in rows]


def page_passages(conn: apsw.Connection, url: str, limit: int = 40,
                  vector: np.ndarray | None = None) -> list[PagePassage]:
    """An active page's chunks in page order: the whole page an answer may quote from when one of
    its passages was retrieved. With the question's `vector`, each passage carries its similarity
    to it (from the stored vectors: no embedding), so the answer knows which section is about it."""
    rows: list[Row] = conn.execute(
        "SELECT c.id, c.text, c.kind, pc.heading_path FROM pages p JOIN page_chunks pc ON pc.page_id = p.id "
        "JOIN chunks c ON c.id = pc.chunk_id WHERE p.url = ? AND p.status = 'active' "
        "ORDER BY pc.position LIMIT ?", (url, limit)).fetchall()
    passages = page_passage_rows(rows)
    if vector is not None and passages:
        similarity = cosine_similarities(conn, vector, [p.chunk_id for p in passages])
        for passage in passages:
            passage.similarity = similarity.get(passage.chunk_id)
    return passages


class RenderDecision(msgspec.Struct, kw_only=True):
    """How the crawler read one page (``crawl.render``): as served, or rendered in Chromium."""

    url: str
    mode: str
    """The tenant's crawl.render when it was decided: never | auto | always."""
    decision: str
    """static | rendered | render_discarded (rendered, added nothing) | render_failed."""
    reason: str = ""
    render_ms: float | None = None
    requests: int = 0
    blocked: list[str] = msgspec.field(default_factory=list)
    at: float = 0.0


def record_render_decisions(conn: apsw.Connection, decisions: Iterable[RenderDecision]) -> None:
    """Upsert the latest decision per URL. Call inside a transaction."""
    conn.executemany(
        "INSERT INTO render_decisions(url, mode, decision, reason, render_ms, requests, blocked, at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(url) DO UPDATE SET mode = excluded.mode, "
        "decision = excluded.decision, reason = excluded.reason, render_ms = excluded.render_ms, "
        "requests = excluded.requests, blocked = excluded.blocked, at = excluded.at",
        [decision_row(d) for d in decisions],
    )


def render_stats(conn: apsw.Connection, limit: int = 100) -> dict:
    """Which pages needed a browser: counts by decision and reason (pages that are gone left
    out), and the rendered or failed pages themselves, newest first, up to ``limit``."""
    live = ("FROM render_decisions r LEFT JOIN pages p ON p.url = r.url "
            "WHERE p.status IS NULL OR p.status = 'active'")
    rows: list[Row] = conn.execute(
        f"SELECT r.url, r.decision, r.reason, r.render_ms, r.requests, r.blocked {live} "
        "AND r.decision != 'static' ORDER BY r.at DESC LIMIT ?", (limit,)).fetchall()
    return render_summary(all_rows(conn.execute(f"SELECT r.decision, count(*) {live} GROUP BY r.decision")),
                          all_rows(conn.execute(f"SELECT r.reason, count(*) {live} GROUP BY r.reason")), rows)


def decision_row(decision: RenderDecision) -> tuple:
    """A decision as `render_decisions` stores it: the first 20 blocked requests, a time if it had none."""
    return (decision.url, decision.mode, decision.decision, decision.reason, decision.render_ms, decision.requests,
            json.dumps(decision.blocked[:20], ensure_ascii=False), decision.at or time.time())


def render_summary(by_decision: Iterable[Row], by_reason: Iterable[Row], pages: Iterable[Row]) -> dict:
    """`render_stats`'s result: (decision, count) and (reason, count) rows, and the pages' rows
    (url, decision, reason, render_ms, requests, blocked JSON)."""
    return {
        "by_decision": dict(by_decision),
        "by_reason": dict(by_reason),
        "pages": [{"url": url, "decision": decision, "reason": reason, "render_ms": ms, "requests": requests,
                   "blocked": json.loads(blocked)} for url, decision, reason, ms, requests, blocked in pages],
    }


class JunkUrl(msgspec.Struct, frozen=True):
    """A URL the crawler kept out of the index as generated junk, and why."""

    url: str
    family: str
    """The URL family, e.g. ``example.com/events/{date}/{date}/``."""
    reason: str
    """``junk_calendar`` | ``junk_query`` | ``junk_template``."""
    detail: str = ""
    fetched: bool = True
    """False: refused unfetched once its family was judged junk."""


def record_junk(conn: apsw.Connection, run_id: int, urls: Iterable[JunkUrl], indexed: Iterable[str],
                *, replace: bool = False) -> None:
    """Record a crawl's junk URLs. URLs now indexed lose their record; with `replace` (a crawl
    that saw the whole site) records of earlier runs go. Call inside a transaction."""
    now = time.time()
    if replace:
        conn.execute("DELETE FROM junk_urls WHERE run_id IS NOT ?", (run_id,))
    conn.executemany(
        "INSERT OR REPLACE INTO junk_urls(url, family, reason, detail, fetched, run_id, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(u.url, u.family, u.reason, u.detail, int(u.fetched), run_id, now) for u in urls],
    )
    conn.executemany("DELETE FROM junk_urls WHERE url = ?", [(url,) for url in indexed])


class JunkFamily(msgspec.Struct):
    family: str
    reason: str
    urls: int
    fetched: int
    detail: str
    example: str


class JunkSummary(msgspec.Struct):
    """What the crawler kept out as junk, for `frontdesk stats` and the admin stats API."""

    total: int
    by_reason: dict[str, int]
    families: list[JunkFamily]
    """The largest families first."""


def junk_summary(conn: apsw.Connection, families: int = 10) -> JunkSummary:
    by_reason: dict[str, int] = dict(all_rows(conn.execute("SELECT reason, count(*) FROM junk_urls GROUP BY reason")))
    rows: list[Row] = conn.execute(
        "SELECT family, reason, count(*), sum(fetched), max(detail), min(url) FROM junk_urls "
        "GROUP BY family, reason ORDER BY count(*) DESC, family LIMIT ?", (families,)).fetchall()
    return junk_summary_of(by_reason, rows)


def junk_summary_of(by_reason: dict[str, int], families: Iterable[Row]) -> JunkSummary:
    """A JunkSummary from the counts by reason and the largest families' rows (family, reason,
    URLs, URLs fetched, a detail, an example URL)."""
    return JunkSummary(
        total=sum(by_reason.values()),
        by_reason=by_reason,
        families=[JunkFamily(family=f, reason=r, urls=n, fetched=k or 0, detail=d or "", example=e)
                  for f, r, n, k, d, e in families],
    )


def junk_reason(conn: apsw.Connection, url: str) -> JunkUrl | None:
    """Why `url` was kept out of the index as junk, or None."""
    row = conn.execute("SELECT url, family, reason, detail, fetched FROM junk_urls WHERE url = ?", (url,)).fetchone()
    return junk_url(row) if row else None


def junk_url(row: Row) -> JunkUrl:
    """A `junk_urls` row (url, family, reason, detail, fetched)."""
    return JunkUrl(url=row[0], family=row[1], reason=row[2], detail=row[3], fetched=bool(row[4]))


def junk_families(conn: apsw.Connection) -> dict[str, str]:
    """Family → reason of every URL family recorded as junk: a delta crawl refuses their URLs
    without fetching them again (a full crawl judges afresh)."""
    return dict(all_rows(conn.execute("SELECT family, min(reason) FROM junk_urls GROUP BY family")))
