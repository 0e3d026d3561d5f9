"""Index a folder of HTML files as if it were published at a base URL (no network, no crawler).

Useful for local sites, tests and benchmarks; robots.txt at the folder root is honoured.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import msgspec

from ingest.embed import Embedder
from ingest.extract import extract
from ingest.indexer import PageIndexer
from store.tenants import Tenant


class FolderSummary(msgspec.Struct):
    files: int
    indexed: int
    skipped: int
    chunks_embedded: int
    chunks_deleted: int
    seconds: float


def _robots_disallowed(root: Path) -> list[str]:
    robots = root / "robots.txt"
    if not robots.exists():
        return []
    prefixes, applies = [], False
    for line in robots.read_text(errors="replace").splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.split("#")[0].strip()
        if key == "user-agent":
            applies = value == "*"
        elif key == "disallow" and applies and value:
            prefixes.append(value)
    return prefixes


def html_files(root: Path) -> list[Path]:
    disallowed = _robots_disallowed(root)
    files = []
    for path in sorted(root.rglob("*.html")):
        rel = "/" + path.relative_to(root).as_posix()
        if not any(rel.startswith(prefix) for prefix in disallowed):
            files.append(path)
    return files


def _names_a_file(canonical: str, base: str, root: Path) -> bool:
    """Whether a page's canonical URL is one of the folder's files published at `base`: a saved page
    may name a path that is not there ("page_files/copy_002.html"), and its citations would lead
    nowhere."""
    if not canonical.startswith(base):
        return False
    rel = unquote(urlsplit(canonical).path[len(urlsplit(base).path):])
    target = root / rel
    return (bool(rel) and not rel.endswith("/") and target.is_file()) or (target / "index.html").is_file()


def index_folder(
    tenant: Tenant,
    embedder: Embedder,
    root: Path,
    base_url: str,
    on_progress: Callable[[int, int, str], None] | None = None,
) -> FolderSummary:
    import time

    started = time.perf_counter()
    config = tenant.config()
    indexer = PageIndexer(tenant, embedder, config.clean)
    base = base_url.rstrip("/") + "/"
    files = html_files(root)
    indexed = skipped = embedded = deleted = 0
    for number, path in enumerate(files, start=1):
        rel = path.relative_to(root).as_posix()
        url = urljoin(base, rel)
        html = path.read_bytes()
        doc = extract(html, url)
        if not _names_a_file(doc.canonical_url, base, root):
            doc.canonical_url = url  # a canonical off the base URL or to no file is not this copy's identity
        if doc.noindex:
            skipped += 1
        else:
            stats = indexer.index(doc, html=html)
            indexed += 1
            embedded += stats.chunks_added
            deleted += stats.chunks_deleted
        if on_progress:
            on_progress(number, len(files), url)
    indexer.compact()
    return FolderSummary(
        files=len(files),
        indexed=indexed,
        skipped=skipped,
        chunks_embedded=embedded,
        chunks_deleted=deleted,
        seconds=round(time.perf_counter() - started, 3),
    )
