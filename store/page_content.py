"""Reading indexed pages back: one page's text and facts in order (MCP `kb.get`), the actions the
pages an answer cites offer, and which pages each chunk appears on (evaluation runs)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import apsw
import msgspec

from store.connect import Row, all_rows


class ContentChunk(msgspec.Struct, kw_only=True):
    heading_path: list[str]
    kind: str
    text: str


class ContentFact(msgspec.Struct, kw_only=True):
    type: str
    kind: str
    text: str
    data: Any


class PageContent(msgspec.Struct, kw_only=True):
    url: str
    title: str
    description: str
    lang: str
    updated: str | None
    chunks: list[ContentChunk]
    facts: list[ContentFact]


def page_content(conn: apsw.Connection, urls: Iterable[str]) -> PageContent | None:
    """The first of `urls` that is an active page: its chunks in page order and its facts."""
    for url in urls:
        row = conn.execute(
            "SELECT id, url, title, description, lang, updated FROM pages WHERE url = ? AND status = 'active'",
            (url,),
        ).fetchone()
        if row is not None:
            break
    else:
        return None
    return page_content_of(
        row,
        conn.execute("SELECT pc.heading_path, c.kind, c.text FROM page_chunks pc JOIN chunks c ON c.id = pc.chunk_id "
                     "WHERE pc.page_id = ? ORDER BY pc.position", (row[0],)),
        conn.execute("SELECT type, kind, text, data FROM facts WHERE page_id = ? ORDER BY id", (row[0],)),
    )


def page_content_of(page: Row, chunks: Iterable[Row], facts: Iterable[Row]) -> PageContent:
    """`page_content`'s result from the page's row (id, url, title, description, lang, updated),
    its chunks' rows (heading path JSON, kind, text) in page order and its facts' rows (type,
    kind, text, data JSON). Shared with store/pg/page_content.py."""
    return PageContent(
        url=page[1], title=page[2], description=page[3], lang=page[4], updated=page[5],
        chunks=[ContentChunk(heading_path=json.loads(path), kind=kind, text=text) for path, kind, text in chunks],
        facts=[ContentFact(type=kind_of, kind=kind, text=text, data=json.loads(data))
               for kind_of, kind, text, data in facts],
    )


def page_actions(conn: apsw.Connection, urls: list[str], limit: int = 10) -> list[tuple[str, str, str, str]]:
    """(name, label, selector, url) of the actions found on these active pages, at most `limit`:
    pages in the order they were first written, each page's actions as written. (Without the
    ORDER BY the plan chose it: URL order for one or two URLs, this order for more.)"""
    if not urls:
        return []
    marks = ",".join("?" * len(urls))
    return all_rows(conn.execute(
        f"SELECT a.name, a.label, a.selector, a.url FROM actions a JOIN pages p ON p.id = a.page_id "
        f"WHERE p.url IN ({marks}) AND p.status = 'active' ORDER BY p.id, a.id LIMIT ?", [*urls, limit]
    ))


def chunk_pages(conn: apsw.Connection) -> list[tuple[int, str]]:
    """(chunk id, page url) for every chunk of every active page, pages in id order."""
    return all_rows(conn.execute(
        "SELECT pc.chunk_id, p.url FROM page_chunks pc JOIN pages p ON p.id = pc.page_id "
        "WHERE p.status = 'active' ORDER BY p.id"))
