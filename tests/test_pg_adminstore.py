"""The admin and analytics side of the store on both backends (store/analytics.py, contacts.py,
page_content.py, webhooks.py and search.py's is_repeated / chunk_languages against their
PostgreSQL twins in store/pg/), on a real PostgreSQL 18 (tests/pg.py) and a real tenant file: each
behaviour through one parametrised fixture, and the same calls on both giving equal results.

Tables are filled through the store's own functions (pages, conversations); crawl runs through
store/crawls.py on SQLite and by plain INSERTs on PostgreSQL (its twin is written elsewhere).
Each side reads the time from its own clock (tests/test_pg_store.py's), so results compare whole.
Chunk vectors are small hand-made ones: these modules only store them."""

from __future__ import annotations

import json
import threading
import time
import zlib
from types import ModuleType

import numpy as np
import pytest

from store import analytics as sqlite_analytics
from store import contacts as sqlite_contacts
from store import conversations as sqlite_conversations
from store import crawls as sqlite_crawls
from store import page_content as sqlite_page_content
from store import pages as sqlite_pages
from store import search as sqlite_search
from store import webhooks as sqlite_webhooks
from store.analytics import MissingPage
from store.errors import InvalidInput, NotFound
from store.pages import ChunkRow, PageWrite
from store.pg import analytics as pg_analytics
from store.pg import contacts as pg_contacts
from store.pg import conversations as pg_conversations
from store.pg import crawls as pg_crawls
from store.pg import page_content as pg_page_content
from store.pg import pages as pg_pages
from store.pg import search as pg_search
from store.pg import webhooks as pg_webhooks
from tests import pgsides
from tests.pgsides import DIM, SITE, START, side_fixtures
from tests.test_pg_store import no_nul, turn, unit

pytestmark = pytest.mark.slow

DAY = 86400.0


class _Crawls:
    """The crawl rows the analytics read, written by the side's own store/crawls twin."""

    crawls: ModuleType

    def start_run(self, conn, kind: str) -> int:
        return self.crawls.start_run(conn, kind)

    def finish_run(self, conn, run_id: int, status: str, summary: str, errors: list[tuple[str, str, str]]) -> None:
        self.crawls.finish_run(conn, run_id, status, summary, errors)

    def replace_sitemap(self, conn, urls: list[str]) -> None:
        self.crawls.replace_sitemap(conn, dict.fromkeys(urls))


class SqliteSide(_Crawls, pgsides.SqliteSide):
    analytics = sqlite_analytics
    contacts = sqlite_contacts
    conversations = sqlite_conversations
    crawls = sqlite_crawls
    page_content = sqlite_page_content
    pages = sqlite_pages
    search = sqlite_search
    webhooks = sqlite_webhooks
    clocked = (sqlite_contacts, sqlite_conversations, sqlite_pages, sqlite_webhooks, sqlite_crawls)


class PgSide(_Crawls, pgsides.PgSide):
    analytics = pg_analytics
    contacts = pg_contacts
    conversations = pg_conversations
    crawls = pg_crawls
    page_content = pg_page_content
    pages = pg_pages
    search = pg_search
    webhooks = pg_webhooks
    clocked = (pg_contacts, pg_conversations, pg_pages, pg_webhooks, pg_crawls)


Side = SqliteSide | PgSide
side, sides = side_fixtures(SqliteSide, PgSide)


def chunk(text: str, position: int, *, lang: str = "en", heading: tuple[str, ...] = ()) -> ChunkRow:
    vector = unit(*np.random.default_rng(zlib.crc32(text.encode())).normal(size=DIM)).tobytes()
    return ChunkRow(hash=f"h-{text}", kind="prose", lang=lang, text=text, heading_path=heading, position=position,
                    uid=f"u{position}", tokens=len(text.split()), vector=vector)


def page(path: str, *texts: str, lang: str = "en", **kw) -> PageWrite:
    return PageWrite(url=f"{SITE}{path}", title=kw.pop("title", f"Title of {path}"), lang=lang,
                     content_hash=f"c-{path}-{len(texts)}",
                     chunks=[chunk(text, n, lang=lang, heading=("Top", path)) for n, text in enumerate(texts)], **kw)


def write_pages(side: Side, *pages: PageWrite) -> None:
    for one in pages:
        with side.write() as conn:
            side.pages.write_page(conn, one)


def save(side: Side, *turns) -> None:
    for one in turns:
        with side.write() as conn:
            side.conversations.save_turn(conn, one)


# -- analytics ---------------------------------------------------------------------------------


def fill_analytics(side: Side) -> float:
    """Pages, a sitemap, crawl runs, and questions over three days; returns the time `now`."""
    write_pages(
        side,
        page("/", "Welcome to the bakery."),
        page("/hours", "We open at seven.", lang="de"),
        page("/about", "About us.", lang="fr"),
        page("/team", "Our team.", lang="fr", fetched_url=f"{SITE}/old-team"),
        page("/team-copy", "Our team too.", lang="de", fetched_url=f"{SITE}/old-team"),
        page("/gone", "Soon gone."),
        page("/zebra", "Zebra.", lang=""),
    )
    with side.write() as conn:
        side.pages.tombstone_page(conn, f"{SITE}/gone", "http_404", 404)
        side.replace_sitemap(conn, [f"{SITE}/{p}" for p in (
            "", "hours", "about", "gone", "old-team", "broken", "never", "Upper", "émile", "zebra")])
        first = side.start_run(conn, "full")
        side.finish_run(conn, first, "done", json.dumps({"pages": 5, "skipped": {"robots": 2, "noindex": 1}}),
                        [(f"{SITE}/broken", "timeout", "no answer in 30 s"), (f"{SITE}/émile", "http_500", "")])
        second = side.start_run(conn, "delta")
        side.finish_run(conn, second, "failed", json.dumps({"pages": 0}),
                        [(f"{SITE}/broken", "http_500", "server\x1ferror"), (f"{SITE}/x", "http_500", "again"),
                         (f"{SITE}/y", "blocked_private_address", "10.0.0.1")])
        third = side.start_run(conn, "full")
        side.finish_run(conn, third, "done", json.dumps({"skipped": {}}), [])
        side.start_run(conn, "delta")  # still running: no errors yet
    # Three days of questions: the day before yesterday, yesterday, and today, the first one a
    # fraction of a millisecond before midnight (SQLite rounds it into the next day).
    midnight = (START // DAY - 1) * DAY
    side.clock.now = midnight - 2 * DAY - 1 - 0.0004
    save(side, turn("c0", "m0", "Opening hours?", ttft_ms=80.0))
    side.clock.now = midnight - DAY - 1 - 0.0004
    save(side, turn("c1", "m1", "Opening hours?", ttft_ms=120.0),
         turn("c1", "m2", "  opening HOURS?", ttft_ms=200.0, source="curated",
              citations=[sqlite_conversations.CitationRow(url=f"{SITE}/hours", title="Hours")]),
         turn("c2", "m3", "Parking?", answered=False))
    side.clock.now = midnight + 3600
    save(side, turn("c3", "m4", "Éclairs?", ttft_ms=95.5), turn("c3", "m5", "éclairs?", answered=False),
         turn("c4", "m6", "Bread?", ttft_ms=310.25, source="curated"), turn("c4", "m7", "Cake?"),
         turn("c5", "m8", "Opening hours?"), turn("c5", "m9", "Croissants?", ttft_ms=101.0))
    for n, question in enumerate(("Zucchini?", "mango?", "Apple pie?")):  # asked as often, as lately
        side.clock.now = midnight + 5000
        save(side, turn(f"c6{n}", f"m6{n}", question, answered=n != 1))
    with side.write() as conn:
        side.conversations.set_feedback(conn, "m1", 1)
        side.conversations.set_feedback(conn, "m2", -1)
        side.conversations.set_feedback(conn, "m4", -1)
        side.conversations.set_feedback(conn, "m6", 1)
        side.conversations.set_feedback(conn, "m5", 1)
    return midnight + 7200


def analytics_of(side: Side, now: float) -> dict[str, object]:
    a = side.analytics
    with side.read() as conn:
        runs = a.crawl_runs(conn)
        return {
            "daily": [a.daily(conn, days, now) for days in (1, 3, 30, 0)],
            "summary": [a.summary(conn, days, now) for days in (1, 2, 3, 30)],
            "top": [a.top_questions(conn, days, limit, now) for days in (1, 30) for limit in (10, 2, 0, -1)],
            "missing": [a.missing_pages(conn), a.missing_pages(conn, limit=2), a.missing_pages(conn, limit=-1)],
            "skipped": a.last_skipped(conn),
            "never_cited": [a.sitemap_pages_never_cited(conn), a.sitemap_pages_never_cited(conn, 1)],
            "languages": json.dumps(a.languages(conn)),  # as JSON: the order too
            "runs": [runs, a.crawl_runs(conn, 2), a.crawl_runs(conn, -1)],
            "errors": [a.crawl_errors(conn, run.id, limit) for run in runs for limit in (100, 1)],
            "last_done": json.dumps(a.last_done(conn)),
            "last_run_errors": json.dumps(a.last_run_errors(conn)),
        }


def test_analytics_agree_on_both_backends(sides):
    now = fill_analytics(sides[0])
    assert fill_analytics(sides[1]) == now
    sqlite, postgres = (analytics_of(one, now) for one in sides)
    for key in sqlite:
        assert sqlite[key] == postgres[key], key

    # What both gave is what the calls mean.
    daily = sqlite["daily"][1]
    assert [(d.day, d.questions, d.answered, d.up, d.down) for d in daily] == [
        (day(now - 2 * DAY), 1, 1, 0, 0),  # 0.4 ms before midnight: the next day, as SQLite rounds
        (day(now - DAY), 3, 2, 1, 1), (day(now), 9, 7, 2, 1)]
    assert sqlite["daily"][3] == []
    month = sqlite["summary"][3]
    assert (month.questions, month.conversations, month.answered, month.up, month.down, month.curated) == (
        13, 9, 10, 3, 2, 2)
    assert (month.answered_rate, month.deflection, month.thumbs_ratio) == (0.7692, 0.6154, 0.6)
    assert (month.ttft_p50_ms, month.ttft_p95_ms) == (110.5, 282.7)
    top = sqlite["top"][4]
    assert [(q.question, q.count, q.answered) for q in top[:4]] == [
        ("  opening HOURS?", 4, 4), ("Apple pie?", 1, 1), ("mango?", 1, 0), ("Zucchini?", 1, 1)]
    assert {"Éclairs?", "éclairs?"} <= {q.question for q in top}  # not one group: ASCII letters only
    assert sqlite["top"][6] == [] and sqlite["top"][7] == top
    assert sqlite["missing"][0] == [
        MissingPage(url=f"{SITE}/Upper", reason="not_reached"),
        MissingPage(url=f"{SITE}/broken", reason="http_500", detail="server\x1ferror"),
        MissingPage(url=f"{SITE}/gone", reason="http_404", detail="HTTP 404"),
        MissingPage(url=f"{SITE}/never", reason="not_reached"),
        MissingPage(url=f"{SITE}/old-team", reason="indexed_as", detail=f"{SITE}/team"),
        MissingPage(url=f"{SITE}/émile", reason="http_500"),
    ]
    assert [p.url.removeprefix(SITE) for p in sqlite["never_cited"][0]] == ["/", "/about", "/zebra"]
    assert sqlite["skipped"] == {} and json.loads(sqlite["languages"]) == {"fr": 2, "de": 2, "en": 1, "": 1}
    runs = sqlite["runs"][0]
    assert [(r.kind, r.status) for r in runs] == [("delta", "running"), ("full", "done"), ("delta", "failed"),
                                                  ("full", "done")]
    assert [len(errors) for errors in sqlite["errors"]] == [0, 0, 0, 0, 3, 1, 2, 1]
    assert json.loads(sqlite["last_done"]) == {"full": runs[1].started_at}
    assert json.loads(sqlite["last_run_errors"]) == {}  # the running crawl has none yet


def day(at: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(at))


def test_the_last_finished_run_says_what_was_skipped_and_the_last_run_its_errors(side):
    with side.write() as conn:
        run = side.start_run(conn, "full")
        side.finish_run(conn, run, "done", json.dumps({"skipped": {"robots": 3, "calendar_trap": 1}}),
                        [(f"{SITE}/a", "timeout", ""), (f"{SITE}/b", "http_404", ""), (f"{SITE}/c", "timeout", "")])
    with side.read() as conn:
        assert side.analytics.last_skipped(conn) == {"robots": 3, "calendar_trap": 1}
        assert json.dumps(side.analytics.last_run_errors(conn)) == '{"http_404": 1, "timeout": 2}'
        assert side.analytics.last_done(conn) == {"full": START + 1}


def test_an_empty_tenant_has_empty_analytics(sides):
    results = [analytics_of(one, START) for one in sides]
    assert results[0] == results[1]
    assert results[0]["summary"][0].answered_rate is None and results[0]["summary"][0].ttft_p50_ms is None


# -- contacts ----------------------------------------------------------------------------------


def test_site_contacts_are_learned_listed_and_forgotten(side):
    with side.write() as conn:
        assert side.contacts.learn_site_contacts(
            conn, [("hello@acme.test", "email"), ("+1-207-555-0148", "phone"), ("hello@acme.test", "email")],
            f"{SITE}/contact") == ["hello@acme.test", "+1-207-555-0148"]
        assert side.contacts.learn_site_contacts(
            conn, [("Zoe@acme.test", "email"), ("+1-207-555-0148", "phone"), ("émile@acme.test", "email")],
            f"{SITE}/team") == ["Zoe@acme.test", "émile@acme.test"]
    with side.read() as conn:
        assert side.contacts.site_contacts(conn) == [
            "+1-207-555-0148", "Zoe@acme.test", "hello@acme.test", "émile@acme.test"]
    with side.write() as conn:
        assert side.contacts.forget_site_contacts(conn) == 4
        assert side.contacts.forget_site_contacts(conn) == 0
    with side.read() as conn:
        assert side.contacts.site_contacts(conn) == []


def test_pages_with_placeholders_are_the_active_ones_whose_text_was_scrubbed(sides):
    found = []
    for one in sides:
        write_pages(one, page("/b", "Call [phone] today."), page("/a", "Mail [EMAIL] or come by."),
                    page("/c", "Nothing scrubbed here."), page("/d", "Write to [Email]."),
                    page("/e", "Call [phone] now."), page("/f", "A [phöne] is not one; [phone number] neither."),
                    page("/B", "Shared: call [Phone]."))
        with one.write() as conn:
            one.pages.tombstone_page(conn, f"{SITE}/e", "noindex")
        with one.read() as conn:
            found.append(one.contacts.pages_with_placeholders(conn))
    assert found[0] == found[1] == [f"{SITE}/B", f"{SITE}/a", f"{SITE}/b", f"{SITE}/d"]


def test_contact_points_lose_their_nuls_on_postgres_only(sides):
    found = []
    for one in sides:
        with one.write() as conn:
            new = one.contacts.learn_site_contacts(conn, [("hel\x00lo@acme.test", "email")], f"{SITE}/\x00")
        with one.read() as conn:
            found.append((new, one.contacts.site_contacts(conn)))
    assert found[0] == (["hel\x00lo@acme.test"], ["hel\x00lo@acme.test"])
    assert found[1] == no_nul(found[0])


# -- page content ------------------------------------------------------------------------------


def test_page_content_actions_and_chunk_pages_agree(sides):
    results = []
    for one in sides:
        write_pages(
            one,
            page("/menu", "Sourdough loaf.", "Rye bread.", "Sourdough loaf.", title="Menu", description="What we bake",
                 updated="2026-01-02", facts=[{"type": "Product", "kind": "price", "text": "Loaf: $5",
                                               "data": {"price": 5}}, {"type": "Opening", "text": "7 to 6"}],
                 actions=[{"name": "order", "label": "Order", "selector": "#order", "url": "/order"},
                          {"name": "call", "label": "Call", "selector": "a.tel"}]),
            page("/about", "Rye bread.", "Since 1990.",
                 actions=[{"name": "visit", "label": "Visit", "url": "/map"}]),
            page("/gone", "Soon gone.", actions=[{"name": "gone", "label": "Gone"}]),
        )
        with one.write() as conn:
            one.pages.tombstone_page(conn, f"{SITE}/gone", "http_410", 410)
        urls = [f"{SITE}/menu", f"{SITE}/about", f"{SITE}/gone", f"{SITE}/none"]
        with one.read() as conn:
            content = one.page_content
            results.append({
                "content": [content.page_content(conn, [f"{SITE}/none", f"{SITE}/gone", f"{SITE}/menu"]),
                            content.page_content(conn, [f"{SITE}/about", f"{SITE}/menu"]),
                            content.page_content(conn, [f"{SITE}/gone"]), content.page_content(conn, [])],
                "actions": [content.page_actions(conn, urls), content.page_actions(conn, urls, 2),
                            content.page_actions(conn, list(reversed(urls)), -1), content.page_actions(conn, []),
                            content.page_actions(conn, [f"{SITE}/about", f"{SITE}/about"])],
                "chunk_pages": content.chunk_pages(conn),
            })
    sqlite, postgres = results
    for key in sqlite:
        assert sqlite[key] == postgres[key], key
    menu = sqlite["content"][0]
    assert menu is not None and (menu.url, menu.title, menu.description, menu.updated) == (
        f"{SITE}/menu", "Menu", "What we bake", "2026-01-02")
    assert [(c.text, c.heading_path) for c in menu.chunks] == [
        ("Sourdough loaf.", ["Top", "/menu"]), ("Rye bread.", ["Top", "/menu"]),
        ("Sourdough loaf.", ["Top", "/menu"])]
    assert [(f.type, f.kind, f.data) for f in menu.facts] == [
        ("Product", "price", {"price": 5}), ("Opening", "fact", {})]
    assert sqlite["content"][2] is None and sqlite["content"][3] is None
    assert [a[0] for a in sqlite["actions"][0]] == ["order", "call", "visit"]  # pages as written, then actions
    assert [a[0] for a in sqlite["actions"][1]] == ["order", "call"]
    assert sqlite["actions"][4] == [("visit", "Visit", "", "/map")]
    assert [url.removeprefix(SITE) for _, url in sqlite["chunk_pages"]] == ["/menu"] * 3 + ["/about"] * 2


# -- webhooks ----------------------------------------------------------------------------------


def webhook_story(side: Side) -> dict[str, object]:
    """Endpoints made, changed and deleted; events queued, claimed, attempted and retried."""
    hooks = side.webhooks
    got: dict[str, object] = {}
    save(side, turn("c1", "m1", "Bikes?", answered=False))  # a gap before any endpoint
    with side.write() as conn:
        first = hooks.add_endpoint(conn, url="https://hooks.test/a", events=["gap.new", "crawl.finished"],
                                   secret="whsec_a", description="ops " * 80)
        second = hooks.add_endpoint(conn, url="https://hooks.test/b", events=["feedback.negative"], secret="whsec_b")
        third = hooks.add_endpoint(conn, url="https://hooks.test/c", events=["crawl.finished", "gap.new"],
                                   secret="whsec_c")
    with side.read() as conn:
        got["made"] = [hooks.endpoints(conn), hooks.has_endpoints(conn), hooks.gap_endpoints(conn)]
    with side.write() as conn:
        hooks.update_endpoint(conn, second, active=False)
        hooks.update_endpoint(conn, third, url="https://hooks.test/c2", events=["crawl.failed", "gap.new"],
                              description="changed")
        hooks.update_endpoint(conn, first)  # nothing changed
        hooks.set_secret(conn, first, "whsec_a2")
    with side.read() as conn:
        got["changed"] = [hooks.endpoints(conn), hooks.endpoint(conn, third), hooks.gap_endpoints(conn)]
    save(side, turn("c1", "m2", "Parking?", answered=False), turn("c1", "m3", "Cake?", answered=False))
    with side.read() as conn:
        got["new_gaps"] = [hooks.new_gaps(conn, first), hooks.new_gaps(conn, first, 1), hooks.new_gaps(conn, 99)]
    with side.write() as conn:
        hooks.advance_gap_cursor(conn, first, 2)
        hooks.advance_gap_cursor(conn, first, 1)  # never back
    with side.read() as conn:
        got["after_cursor"] = hooks.new_gaps(conn, first)
    base = START + 1000
    with side.write() as conn:
        got["enqueued"] = [
            hooks.enqueue(conn, "crawl.finished", "evt-1", '{"run": 1}', now=base),
            hooks.enqueue(conn, "gap.new", "evt-2", '{"gaps": [2]}', now=base + 5),
            hooks.enqueue(conn, "feedback.negative", "evt-3", "{}", now=base),  # its endpoint is off
            hooks.enqueue(conn, "webhook.test", "evt-4", "{}", endpoint_id=third, now=base + 5),
            hooks.enqueue(conn, "webhook.test", "evt-5", "{}", endpoint_id=second, now=base),
            hooks.enqueue(conn, "crawl.failed", "evt-6", "{}", now=base + 1),
        ]
    with side.read() as conn:
        got["next_due"] = [hooks.next_due(conn)]
    with side.write() as conn:
        got["claimed"] = [hooks.claim_due(conn, now=base - 1, lease_seconds=30),
                          hooks.claim_due(conn, now=base + 1, lease_seconds=30, limit=2),
                          hooks.claim_due(conn, now=base + 5, lease_seconds=30)]
    with side.read() as conn:
        got["next_due"].append(hooks.next_due(conn))
    with side.write() as conn:
        hooks.record_attempt(conn, 1, response_status=200, error="", ms=12.5, delivered=True, retry_at=None,
                             now=base + 6)
        hooks.record_attempt(conn, 2, response_status=500, error="server error " * 60, ms=40.0, delivered=False,
                             retry_at=base + 60, now=base + 6)
        hooks.record_attempt(conn, 3, response_status=None, error="timeout", ms=None, delivered=False, retry_at=None,
                             now=base + 7)
        hooks.record_attempt(conn, 99, response_status=200, error="", ms=1.0, delivered=True, retry_at=None)
    with side.read() as conn:
        got["next_due"].append(hooks.next_due(conn))
    with side.write() as conn:
        # The senders of 4 and 5 died: each is claimed again once its lease runs out.
        got["reclaimed"] = [hooks.claim_due(conn, now=base + 34, lease_seconds=30),
                            hooks.claim_due(conn, now=base + 60.5, lease_seconds=30)]
    with side.write() as conn:
        hooks.record_attempt(conn, 2, response_status=200, error="", ms=9.0, delivered=True, retry_at=None,
                             now=base + 61)
    with side.read() as conn:
        got["log"] = [hooks.deliveries(conn), hooks.deliveries(conn, first), hooks.deliveries(conn, limit=2),
                      hooks.deliveries(conn, with_attempts=False), hooks.deliveries(conn, limit=-1)]
        got["next_due"].append(hooks.next_due(conn))
    with side.write() as conn:
        hooks.delete_endpoint(conn, third)
    with side.read() as conn:
        got["deleted"] = [hooks.endpoints(conn), hooks.deliveries(conn), hooks.next_due(conn)]
    return got


def test_webhook_endpoints_and_deliveries_agree_on_both_backends(sides):
    sqlite, postgres = (webhook_story(one) for one in sides)
    for key in sqlite:
        assert sqlite[key] == postgres[key], key

    made, changed = sqlite["made"], sqlite["changed"]
    assert [(e.id, e.events, e.active) for e in made[0]] == [
        (1, ["crawl.finished", "gap.new"], True), (2, ["feedback.negative"], True),
        (3, ["crawl.finished", "gap.new"], True)]
    assert len(made[0][0].description) == 200 and made[1:] == [True, [1, 3]]
    assert changed[1].url == "https://hooks.test/c2" and changed[1].description == "changed"
    assert changed[2] == [1, 3] and not changed[0][1].active
    assert [g.question for g in sqlite["new_gaps"][0]] == ["Parking?", "Cake?"] and sqlite["new_gaps"][2] == []
    assert [g.id for g in sqlite["after_cursor"]] == [3]
    assert sqlite["enqueued"] == [[1], [2, 3], [], [4], [], [5]]
    claimed = sqlite["claimed"]
    assert claimed[0] == [] and [d.id for d in claimed[1]] == [1, 5] and [d.id for d in claimed[2]] == [2, 3, 4]
    assert (claimed[1][0].url, claimed[1][0].secret) == ("https://hooks.test/a", "whsec_a2")
    base = START + 1000
    assert sqlite["next_due"] == [base, base + 31, base + 31, base + 64]
    assert [[d.id for d in batch] for batch in sqlite["reclaimed"]] == [[5], [4, 2]]
    log = sqlite["log"][0]
    assert [(d.id, d.status, d.attempts) for d in log] == [
        (5, "sending", 0), (4, "sending", 0), (3, "failed", 1), (2, "delivered", 2), (1, "delivered", 1)]
    assert [(a.attempt, a.response_status, len(a.error)) for a in log[3].log] == [(1, 500, 500), (2, 200, 0)]
    assert sqlite["log"][3][3].log == []
    assert [d.endpoint_id for d in sqlite["deleted"][1]] == [1, 1]


def test_of_deliveries_due_as_early_the_pending_are_claimed_before_expired_leases(sides):
    found = []
    for one in sides:
        hooks = one.webhooks
        with one.write() as conn:
            hooks.add_endpoint(conn, url="https://hooks.test/", events=["gap.new"], secret="s")
            for n in range(4):
                hooks.enqueue(conn, "gap.new", f"evt-{n}", "{}", now=START)
            first = hooks.claim_due(conn, now=START, lease_seconds=10, limit=2)
            again = hooks.claim_due(conn, now=START + 11, lease_seconds=10, limit=3)
            rest = hooks.claim_due(conn, now=START + 11, lease_seconds=10)
        found.append([[d.id for d in batch] for batch in (first, again, rest)])
    assert found[0] == found[1] == [[1, 2], [3, 4, 1], [2]]


def test_webhook_endpoint_errors_are_the_same(side):
    hooks = side.webhooks
    with pytest.raises(InvalidInput) as unknown, side.write() as conn:
        hooks.add_endpoint(conn, url="https://hooks.test/", events=["gap.new", "nope"], secret="s")
    assert unknown.value.details.get("field") == "events"
    with pytest.raises(InvalidInput), side.write() as conn:
        hooks.add_endpoint(conn, url="https://hooks.test/", events=[], secret="s")
    with side.write() as conn:
        kept = hooks.add_endpoint(conn, url="https://hooks.test/", events=["gap.new"], secret="s")
    with pytest.raises(InvalidInput), side.write() as conn:
        hooks.update_endpoint(conn, kept, events=["nope"])
    for call in (lambda c: hooks.update_endpoint(c, 99, url="x"), lambda c: hooks.set_secret(c, 99, "s"),
                 lambda c: hooks.delete_endpoint(c, 99), lambda c: hooks.endpoint(c, 99)):
        with pytest.raises(NotFound), side.write() as conn:
            call(conn)
    with side.read() as conn:
        assert [e.events for e in hooks.endpoints(conn)] == [["gap.new"]]
        assert hooks.deliveries(conn) == [] and hooks.next_due(conn) is None


def test_two_claimers_at_once_never_claim_one_delivery_twice(pg, monkeypatch):
    """Several app processes on one database: claims that overlap in time take disjoint rows, and
    a claimer does not wait for another's locked rows (SKIP LOCKED)."""
    one = PgSide(pg, monkeypatch)
    try:
        hooks = one.webhooks
        with one.write() as conn:
            endpoint = hooks.add_endpoint(conn, url="https://hooks.test/", events=["gap.new"], secret="s")
            for n in range(60):
                hooks.enqueue(conn, "gap.new", f"evt-{n}", "{}", now=START + n % 7)
        now = START + 100
        claimed: list[list[int]] = [[], []]
        holding = threading.Barrier(2)
        waited: list[float] = []

        def claim(worker: int) -> None:
            first = True
            while True:
                with one.write() as conn:
                    batch = hooks.claim_due(conn, now=now, lease_seconds=300, limit=7)
                    if first:  # both hold their first batch's locks at once before committing
                        started = time.perf_counter()
                        holding.wait(timeout=10)
                        waited.append(time.perf_counter() - started)
                        first = False
                claimed[worker].extend(d.id for d in batch)
                if not batch:
                    return

        workers = [threading.Thread(target=claim, args=(n,)) for n in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=30)
        assert not any(worker.is_alive() for worker in workers)
        assert len(waited) == 2 and max(waited) < 5  # neither waited for the other's locks
        assert claimed[0] and claimed[1]
        assert not set(claimed[0]) & set(claimed[1])
        assert sorted(claimed[0] + claimed[1]) == list(range(1, 61))
        with one.read() as conn:
            assert {d.status for d in hooks.deliveries(conn, endpoint, limit=-1)} == {"sending"}
            assert hooks.claim_due(conn, now=now + 299, lease_seconds=300) == []  # leased
    finally:
        one.close()


def test_webhook_text_loses_its_nuls_on_postgres_only(sides):
    found = []
    for one in sides:
        hooks = one.webhooks
        with one.write() as conn:
            endpoint = hooks.add_endpoint(conn, url="https://hooks.test/\x00", events=["gap.new"], secret="s\x00",
                                          description="o\x00ps")
            (delivery,) = hooks.enqueue(conn, "gap.new", "evt\x00", '{"q": "a\x00"}', now=START)
            claimed = hooks.claim_due(conn, now=START, lease_seconds=30)
            hooks.record_attempt(conn, delivery, response_status=None, error="re\x00fused", ms=None, delivered=False,
                                 retry_at=None, now=START + 1)
        with one.read() as conn:
            found.append((hooks.endpoint(conn, endpoint), claimed, hooks.deliveries(conn)))
    assert found[0][0].description == "o\x00ps"
    assert no_nul(found[1]) == found[1] and no_nul(found[0]) == found[1]


# -- search helpers ----------------------------------------------------------------------------

NOTICE = "This page was translated automatically and may contain mistakes"


def test_is_repeated_and_chunk_languages_agree(sides):
    found = []
    for one in sides:
        write_pages(one, *(page(f"/p{n}", f"{NOTICE}. Page {n} is about bread number {n}.", lang="en")
                           for n in range(5)),
                    page("/de", "Diese Seite wurde automatisch übersetzt und kann Fehler enthalten.", lang="de"),
                    page("/x", "Untagged boilerplate words here repeated nowhere else.", lang=""))
        with one.read() as conn:
            search = one.search
            found.append({
                "repeated": [search.is_repeated(conn, block, n) for block in (
                    NOTICE, NOTICE.upper(), NOTICE + " today and more words after the tenth",
                    "This page was translated",
                    "page was translated automatically", "page translated was automatically", "This page",
                    '"" NEAR( * ^', "automatically and may contain", "Untagged boilerplate words here",
                    "Diese Seite wurde automatisch") for n in (-1, 0, 1, 4, 5, 6)],
                "short": search.is_repeated(conn, NOTICE, 5, max_words=3),
                "languages": search.chunk_languages(conn),
            })
    assert found[0] == found[1]
    repeated = found[0]["repeated"]
    assert repeated[0:6] == [True, True, True, True, True, False]   # five pages carry the notice
    assert repeated[30:36] == [True, True, False, False, False, False]  # words out of order
    assert repeated[36:42] == [False] * 6  # too short to tell, whatever the count
    assert found[0]["short"] is False and found[0]["languages"] == {"en", "de"}


def test_a_repeated_phrase_takes_any_stop_word_in_place_of_one_on_postgres_only(side):
    # PostgreSQL's english configuration keeps no stop words, only their places: "by a machine"
    # and "by the machine" are one phrase there, two for SQLite's FTS5 (which keeps every word).
    # A stop word at the end of the phrase is no word at all there.
    write_pages(side, *(page(f"/p{n}", f"Translated by a machine for page {n}.") for n in range(3)))
    postgres = side.name == "postgres"
    with side.read() as conn:
        assert side.search.is_repeated(conn, "Translated by a machine for", 3)
        assert side.search.is_repeated(conn, "Translated by the machine for", 3) == postgres
        assert side.search.is_repeated(conn, "by a machine for page 1 and", 1) == postgres
        assert not side.search.is_repeated(conn, "by a machine for page 1 bread", 1)
