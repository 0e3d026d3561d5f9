"""The bike-club fixture: a small cycling club's site (tests/sites/bikeclub/) served by the real
test server, with the generated parts a real club site has and a crawler can get lost in.

Static pages: home, group-ride roles, workshop repairs with prices, about, a blog with dated
posts and monthly archives, a five-part maintenance guide paginated with ``?page=N``.
Generated on request:
- ``/events/``: the events page, linking to this month's calendar page;
- ``/events/YYYY/MM/``: a calendar page for every month from 1990 to two years ahead, each
  linking to the previous and the next month (the chain a crawler follows forever);
- ``/shop/``: the club shop with faceted filters (``?color=&size=&sort=``), every filtered
  page linking to further combinations.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import html
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.sitesrv import Fault, SiteServer, serve_site

ROOT = Path(__file__).resolve().parent / "sites" / "bikeclub"
FIRST_MONTH = dt.date(1990, 1, 1)

#: Real pages of the site, by path: what a crawl must index.
REAL_PAGES = [
    "/", "/rides/roles/", "/repairs/", "/about/", "/events/", "/blog/", "/guide/",
    "/guide/?page=2", "/guide/?page=3", "/guide/?page=4", "/guide/?page=5", "/shop/",
    "/blog/2025/03/15/spring-opener/", "/blog/2025/04/27/mountain-day/",
    "/blog/2025/06/08/century-ride/", "/blog/2025/09/21/gravel-weekend/",
    "/blog/2025/10/05/new-members-evening/",
    "/blog/2025/03/", "/blog/2025/04/", "/blog/2025/06/", "/blog/2025/09/", "/blog/2025/10/",
]  # fmt: skip

PRODUCTS = [
    ("Club jersey", "red", "m", 65), ("Club jersey", "red", "l", 65),
    ("Club jersey", "blue", "s", 65), ("Winter jacket", "black", "m", 120),
    ("Winter jacket", "black", "l", 120), ("Bib shorts", "black", "s", 70),
    ("Cycling cap", "blue", "m", 18), ("Water bottle", "white", "m", 9),
]  # fmt: skip
COLORS = ("red", "blue", "black", "white")
SIZES = ("s", "m", "l")
SORTS = ("price", "name", "newest")

_NAV = [("/", "Home"), ("/rides/roles/", "Group rides"), ("/repairs/", "Repairs"),
        ("/events/", "Events"), ("/blog/", "Blog"), ("/guide/", "Maintenance guide"),
        ("/shop/", "Shop"), ("/about/", "About")]  # fmt: skip


def layout(title: str, body: str, description: str = "") -> str:
    """A page of the club's site: header and navigation, the main content, the footer."""
    nav = "".join(f'<li><a href="{href}">{label}</a></li>' for href, label in _NAV)
    meta = f'<meta name="description" content="{html.escape(description)}">' if description else ""
    return f"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>{html.escape(title)} | Riverside Wheelers</title>{meta}</head>
<body>
<header><p class="logo">Riverside Wheelers cycling club</p><nav><ul>{nav}</ul></nav></header>
<main>
{body}
</main>
<footer><p>Riverside Wheelers, c/o Old Mill Bikes, 4 Canal Street. Club rides leave the shop car
park. Follow the club on the community board at the shop.</p></footer>
</body>
</html>
"""


def month_page(month: dt.date) -> bytes:
    """One generated calendar month: the same words every month, only the dates change."""
    previous = (month - dt.timedelta(days=1)).replace(day=1)
    following = (month + dt.timedelta(days=32)).replace(day=1)
    saturdays = [month + dt.timedelta(days=d) for d in range(31)
                 if (month + dt.timedelta(days=d)).month == month.month
                 and (month + dt.timedelta(days=d)).weekday() == 5]
    rides = "".join(f"<li>{day:%A %d %B %Y}: Saturday club ride, 9 am from the shop car park</li>"
                    for day in saturdays)
    body = f"""
<h1>Club calendar: {month:%B %Y}</h1>
<p>Club rides, workshops and social evenings for {month:%B %Y}. Group rides leave the shop car park.
Every group ride on the calendar has a ride leader, a sweep and corner markers, and new riders are
introduced to them at the start. Events are added here when the committee confirms them, so check
back before you set out.</p>
<ul>{rides}</ul>
<p>No other events have been announced for {month:%B %Y} yet.</p>
<p><a href="/events/{previous:%Y/%m}/">&laquo; {previous:%B %Y}</a> |
<a href="/events/{following:%Y/%m}/">{following:%B %Y} &raquo;</a></p>
"""
    return layout(f"Club calendar: {month:%B %Y}", body).encode()


def events_page(today: dt.date) -> bytes:
    body = f"""
<h1>Events</h1>
<p>The club calendar lists every club ride, workshop evening and social. Group rides run all year;
the spring opener, the mountain day and the club century are the highlights of the season.</p>
<p>See <a href="/events/{today:%Y/%m}/">this month's calendar</a>.</p>
"""
    return layout("Events", body).encode()


def shop_page(target: str) -> bytes:
    """The shop, filtered by ``color``/``size`` and sorted by ``sort``; links to more filters."""
    query = {name: values[0] for name, values in parse_qs(urlsplit(target).query).items()}
    items = [p for p in PRODUCTS
             if query.get("color") in (None, p[1]) and query.get("size") in (None, p[2])]
    if query.get("sort") == "price":
        items.sort(key=lambda p: p[3])
    elif query.get("sort") == "name":
        items.sort(key=lambda p: p[0])
    rows = "".join(f"<li>{name}, {color}, size {size.upper()}: ${price}</li>"
                   for name, color, size, price in items)

    def link(**change: str) -> str:
        return "/shop/?" + urlencode(sorted({**query, **change}.items()))

    facets = "".join(f'<a href="{link(color=c)}">{c}</a> ' for c in COLORS)
    facets += "".join(f'<a href="{link(size=s)}">{s.upper()}</a> ' for s in SIZES)
    facets += "".join(f'<a href="{link(sort=s)}">sort by {s}</a> ' for s in SORTS)
    chosen = ", ".join(f"{k} {v}" for k, v in sorted(query.items()))
    body = f"""
<h1>Club shop{': ' + chosen if chosen else ''}</h1>
<p>Club kit is sold at the Old Mill shop counter; members pay the prices below.</p>
<p>Filter: {facets}</p>
<ul>{rows}</ul>
"""
    return layout("Club shop", body).encode()


def guide_page(target: str) -> bytes:
    """The maintenance guide: part 1 at ``/guide/``, part N at ``/guide/?page=N``."""
    page = parse_qs(urlsplit(target).query).get("page", ["1"])[0]
    name = "index.html" if page == "1" else f"page-{page}.html"
    path = ROOT / "guide" / name
    if not page.isdigit() or not path.is_file():
        return layout("Not found", "<h1>No such page</h1>").encode()
    return path.read_bytes()


@contextlib.contextmanager
def serve_bikeclub(today: dt.date | None = None) -> Iterator[SiteServer]:
    """Serve the bike-club site on 127.0.0.1, calendar and shop generated as they are asked for."""
    today = today or dt.datetime.now(dt.UTC).date()
    with serve_site(ROOT) as server:
        server.files["/events/"] = events_page(today)
        month = FIRST_MONTH
        last = (today + dt.timedelta(days=730)).replace(day=1)
        while month <= last:
            server.files[f"/events/{month:%Y/%m}/"] = month_page(month)
            month = (month + dt.timedelta(days=32)).replace(day=1)
        server.faults["/shop/"] = Fault(body=shop_page)
        server.faults["/guide/"] = Fault(body=guide_page)
        yield server


def calendar_hits(server: SiteServer) -> list[str]:
    """Calendar month pages the server was asked for."""
    return [hit.path for hit in server.hits() if hit.path.startswith("/events/") and hit.path != "/events/"]
