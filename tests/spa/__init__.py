"""The fixture single-page app (index.html, app.js, data/*.json, sitemap.xml, robots.txt) and
`serve_spa()`, which serves it on 127.0.0.1 with the app shell answering every client-side route,
as a single-page app's server does."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from tests.sitesrv import SiteServer, serve_site

ROOT = Path(__file__).resolve().parent
#: The origin the fixture's absolute URLs (sitemap, robots) are written with.
ORIGIN = "http://127.0.0.1:8799"
#: Pages whose content the app builds from data/*.json: every one must be indexed.
CONTENT_PAGES = (
    "/", "/products/", "/products/aurora-lamp", "/products/halo-pendant", "/about", "/workshop",
    "/guides/", "/guides/getting-started", "/guides/lamp-care", "/contact",
    "/hostile/popups", "/hostile/away",
)
#: Pages whose scripts misbehave, and the reason each must fail with (None: handled, indexed).
HOSTILE_PAGES = {
    "/hostile/loop": "render_timeout",
    "/hostile/alerts": "render_dialog_spam",
    "/hostile/flood": "render_too_many_requests",
    "/hostile/crash": "render_crashed",
    "/hostile/popups": None,
    "/hostile/away": None,
}
#: Routes the server answers with the shell (robots.txt keeps the crawler out of /private/).
ROUTES = (*CONTENT_PAGES, *HOSTILE_PAGES, "/private/notes")


@contextlib.contextmanager
def serve_spa(root: Path = ROOT, routes: Iterable[str] = ()) -> Iterator[SiteServer]:
    """The app served from ``root`` (a copy a test may edit, or the fixture itself); ``routes``
    are more client-side routes to answer with the shell (a benchmark's extra products)."""
    with serve_site(root, ORIGIN) as server:
        shell = (root / "index.html").read_bytes()
        for route in dict.fromkeys([*ROUTES, *routes]):
            if route != "/":
                server.files[route] = shell
        yield server
