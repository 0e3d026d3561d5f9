"""The site's actions.json manifest in a crawl: discovery (``/actions.json`` at the site's root, and
the manifests its pages point at with ``<link rel="actions">``), fetching through the crawl's own
guarded fetcher (robots.txt, the SSRF guard, allowed hosts, a size cap), cleaning (prompt
injection, personal data), and the delta rules: a 304 or unchanged content keeps the stored
actions, 404/410 removes them, changed content replaces them (an action the site dropped is gone).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable
from urllib.parse import urljoin

import msgspec

from ingest.actions import MANIFEST_PATH, MAX_MANIFEST_BYTES, parse_actions_manifest
from ingest.clean import clean_actions
from ingest.crawl.fetch import Fetcher
from ingest.crawl.urls import normalize_url
from store.config import CleanSettings
from store.errors import FetchError
from store.manifests import ManifestState
from store.tenants import Connection, Tenant

log = logging.getLogger(__name__)

#: What a manifest may be served as (some servers send .json as text/plain).
MANIFEST_ACCEPT = "application/json,text/json,application/manifest+json,text/plain"


class ManifestSummary(msgspec.Struct, kw_only=True):
    fetched: int = 0
    not_modified: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: int = 0
    actions: int = 0
    """Site-wide actions stored after the refresh."""


def manifest_urls(site: str, hints: Iterable[str], known: Iterable[str], fetcher: Fetcher) -> list[str]:
    """The manifests to fetch: the root's, those pages point at, and those stored before (so one
    that disappears is noticed). Only URLs on the site's allowed hosts."""
    candidates = [urljoin(site, MANIFEST_PATH), *sorted(hints), *sorted(known)]
    urls = dict.fromkeys(u for u in (normalize_url(c) for c in candidates) if u and fetcher.policy.on_site(u))
    return list(urls)


def _is_json(body: bytes) -> bool:
    try:
        json.loads(body)
    except (ValueError, RecursionError):
        return False
    return True


async def refresh_manifests(tenant: Tenant, fetcher: Fetcher, settings: CleanSettings, site: str,
                            hints: Iterable[str], *, full: bool = False) -> ManifestSummary:
    """Fetch each manifest conditionally and store what changed. Never raises for a bad manifest."""
    summary = ManifestSummary()
    states: dict[str, ManifestState] = await tenant.read(tenant.store.manifests.manifest_states)
    known = [url for url, state in states.items() if state.status != "gone"]
    for url in manifest_urls(site, hints, known, fetcher):
        state = states.get(url)
        try:
            await _refresh_one(tenant, fetcher, settings, url, state, full, summary)
        except FetchError as exc:
            summary.failed += 1  # an error says nothing about what the site offers: keep what we have
            log.info("manifest %s not fetched: %s", url, exc.reason)
    summary.actions = await tenant.read(lambda conn: _active_actions(tenant, conn))
    return summary


def _active_actions(tenant: Tenant, conn: Connection) -> int:
    """Site-wide actions in the tenant's active manifests."""
    states: dict[str, ManifestState] = tenant.store.manifests.manifest_states(conn)
    return sum(s.actions for s in states.values() if s.status == "active")


async def _refresh_one(tenant: Tenant, fetcher: Fetcher, settings: CleanSettings, url: str,
                       state: ManifestState | None, full: bool, summary: ManifestSummary) -> None:
    manifests = tenant.store.manifests
    conditional = state is not None and state.status != "gone" and not full
    result = await fetcher.get(url, accept=MANIFEST_ACCEPT, max_bytes=MAX_MANIFEST_BYTES,
                               etag=state.etag if conditional and state else None,
                               last_modified=state.last_modified if conditional and state else None)
    etag, last_modified = result.headers.get("etag"), result.headers.get("last-modified")
    if result.status == 304:
        summary.not_modified += 1
        await tenant.write(lambda conn: manifests.touch_manifest(conn, url, etag=etag, last_modified=last_modified))
        return
    if result.status in (404, 410):
        if state is not None and state.status != "gone":
            def gone(conn: Connection) -> None:
                manifests.remove_manifest(conn, url)
                tenant.bump_generation(conn)

            await tenant.write(gone)
            summary.removed += 1
        return
    summary.fetched += 1
    valid = _is_json(result.body)
    actions, flags = clean_actions(parse_actions_manifest(result.body, result.final_url) if valid else [], settings)
    rows = [msgspec.to_builtins(a) for a in actions]
    content_hash = hashlib.blake2b(msgspec.json.encode([valid, rows]), digest_size=16).hexdigest()
    if state is not None and state.status != "gone" and state.content_hash == content_hash:
        summary.unchanged += 1
        await tenant.write(lambda conn: manifests.touch_manifest(conn, url, etag=etag, last_modified=last_modified))
        return

    def store(conn: Connection) -> None:
        manifests.write_manifest(conn, url, rows, etag=etag, last_modified=last_modified,
                                 content_hash=content_hash, status="active" if valid else "invalid",
                                 flags=[msgspec.to_builtins(f) for f in flags])
        tenant.bump_generation(conn)

    await tenant.write(store)
