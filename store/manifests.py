"""The site's actions.json manifests: their validators and state (``site_manifest``) and the site-wide
actions they list (``actions`` rows without a page, each naming its manifest in its JSON data).

A manifest's actions are replaced as a whole when its content changes, so an action the site drops
from the file disappears from answers with the next crawl.
"""

from __future__ import annotations

import json
import time

import apsw
import msgspec

from store.connect import Row, all_rows


class ManifestState(msgspec.Struct):
    """What the crawler needs to re-fetch a manifest conditionally."""

    url: str
    etag: str | None
    last_modified: str | None
    content_hash: str | None
    status: str
    actions: int


def manifest_states(conn: apsw.Connection) -> dict[str, ManifestState]:
    rows: list[Row] = conn.execute(
        "SELECT url, etag, last_modified, content_hash, status, actions FROM site_manifest"
    ).fetchall()
    return {row[0]: ManifestState(*row) for row in rows}


def _delete_actions(conn: apsw.Connection, url: str) -> int:
    conn.execute(
        "DELETE FROM actions WHERE page_id IS NULL AND source = 'manifest' AND json_extract(data, '$.manifest') = ?",
        (url,),
    )
    return conn.changes()


def action_row(action: dict, manifest_url: str) -> tuple[str, str, str, str, str]:
    """(name, label, selector, url, data) of a manifest's action as `actions` stores it: the data
    is the action's JSON naming the manifest it came from."""
    return (action.get("name", ""), action.get("label", ""), action.get("selector", ""), action.get("url", ""),
            json.dumps({**action, "manifest": manifest_url}, ensure_ascii=False))


def write_manifest(conn: apsw.Connection, url: str, actions: list[dict], *, etag: str | None,
                   last_modified: str | None, content_hash: str, status: str = "active",
                   flags: list[dict] | None = None) -> None:
    """Replace a manifest's actions and record its validators. Call inside a transaction.

    ``status`` is ``active``, or ``invalid`` for a file that could not be read as a manifest (it
    then has no actions); ``flags`` are passages kept out as prompt injection."""
    _delete_actions(conn, url)
    for action in actions:
        conn.execute(
            "INSERT INTO actions(page_id, name, label, selector, url, source, data) "
            "VALUES (NULL, ?, ?, ?, ?, 'manifest', ?)",
            action_row(action, url),
        )
    conn.execute(
        "INSERT INTO site_manifest(url, etag, last_modified, content_hash, actions, status, fetched_at, flags) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(url) DO UPDATE SET etag = excluded.etag, "
        "last_modified = excluded.last_modified, content_hash = excluded.content_hash, actions = excluded.actions, "
        "status = excluded.status, fetched_at = excluded.fetched_at, flags = excluded.flags",
        (url, etag, last_modified, content_hash, len(actions), status, time.time(),
         json.dumps(flags or [], ensure_ascii=False)),
    )


def touch_manifest(conn: apsw.Connection, url: str, *, etag: str | None, last_modified: str | None) -> None:
    """A 304 or unchanged content: new validators and fetch time, nothing else."""
    conn.execute(
        "UPDATE site_manifest SET etag = COALESCE(?, etag), last_modified = COALESCE(?, last_modified), "
        "fetched_at = ? WHERE url = ?",
        (etag, last_modified, time.time(), url),
    )


def remove_manifest(conn: apsw.Connection, url: str) -> int:
    """The manifest is gone (404/410): its actions go too. Returns how many."""
    removed = _delete_actions(conn, url)
    conn.execute(
        "UPDATE site_manifest SET status = 'gone', actions = 0, etag = NULL, last_modified = NULL, "
        "content_hash = NULL, fetched_at = ? WHERE url = ?",
        (time.time(), url),
    )
    return removed


def manifest_actions(conn: apsw.Connection) -> list[dict]:
    """Every site-wide action, as stored (with the manifest it came from)."""
    rows = conn.execute("SELECT data FROM actions WHERE page_id IS NULL AND source = 'manifest' ORDER BY id")
    return [json.loads(data) for (data,) in rows]


def manifest_flags(conn: apsw.Connection) -> list[dict]:
    """Manifests with passages kept out as prompt injection: {"url", "flags": [...]}."""
    rows: list[Row] = conn.execute("SELECT url, flags FROM site_manifest WHERE flags != '[]' ORDER BY url").fetchall()
    return [{"url": url, "flags": json.loads(flags)} for url, flags in rows]


def site_actions(conn: apsw.Connection) -> list[tuple[str, str, str, str]]:
    """(name, label, selector, url) of every site-wide action (those on no page)."""
    return all_rows(conn.execute("SELECT name, label, selector, url FROM actions WHERE page_id IS NULL"))
