"""The HTTP app on PostgreSQL: `create_app` over a Context whose settings name a database (a real
embedded PostgreSQL 18 with pgvector, tests/pg.py), driven in-process through Litestar's TestClient.

The flows that need no crawl: tenants made and listed through the admin API, a curated answer
added there and served to the widget over SSE, the stats endpoint, the console's sign-in and its
pages, and webhook endpoints added, listed and tested against a receiver on 127.0.0.1, with a
thumbs-down on a kept answer turned into a feedback.negative delivery. Indexing a site's pages
goes through ingest/ and is left to the crawl tests."""

from __future__ import annotations

import http.server
import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from litestar.testing import TestClient

from app.answer import Answerer
from app.asgi import create_app
from app.cache import AnswerCache, normalize_question
from app.context import Context
from app.metrics import Metrics
from app.settings import Settings
from app.warm import Warmer
from app.webhooks import verify
from store.conversations import Turn
from store.errors import StoreError
from store.pg.registry import PgTenantRegistry

# In-process, Litestar's warnings about the handlers' parameter style reach pytest (as in tests/test_warm.py).
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::litestar.exceptions.LitestarDeprecationWarning")]

ADMIN = "pg-admin-token"
MODEL_CACHE = Path.home() / ".cache" / "frontdesk-tests"  # the session's model cache (tests/conftest.py)
SITE = "https://bakery.example/"
QUESTION = "Do you bake gluten-free bread?"
ANSWER = "Yes: a gluten-free loaf every Friday, baked in a separate oven."


class Receiver:
    """A webhook receiver on 127.0.0.1 that answers 200 to every POST and keeps what it got."""

    def __init__(self) -> None:
        self.received: list[dict] = []
        received = self.received

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                received.append({"event": self.headers.get("X-Frontdesk-Event", ""), "body": body,
                                 "signature": self.headers.get("X-Frontdesk-Signature", "")})
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def wait_for(self, event: str, timeout: float = 20.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for item in self.received:
                if item["event"] == event:
                    return item
            time.sleep(0.05)
        raise AssertionError(f"no {event} in {timeout} s; got {[r['event'] for r in self.received]}")

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class App(msgspec.Struct):
    client: TestClient
    ctx: Context
    receiver: Receiver


@pytest.fixture(scope="module")
def app(tmp_path_factory, pg_url) -> Iterator[App]:
    data = tmp_path_factory.mktemp("pg_app") / "data"
    data.mkdir()
    MODEL_CACHE.mkdir(parents=True, exist_ok=True)
    (data / "models").symlink_to(MODEL_CACHE, target_is_directory=True)
    settings = Settings.from_env({}, data_dir=data, database_url=pg_url, admin_token=ADMIN, scheduler=False,
                                 rate_per_ip=100, rate_burst_ip=1000, webhook_retry_base=0.2)
    ctx = Context(settings)
    receiver = Receiver()
    try:
        assert isinstance(ctx.registry, PgTenantRegistry)
        with TestClient(create_app(settings, ctx=ctx), timeout=60) as client:
            yield App(client, ctx, receiver)
    finally:
        receiver.close()
        ctx.close()


def admin(app: App, method: str, path: str, token: str = ADMIN, **kwargs):
    return app.client.request(method, path, headers={"Authorization": f"Bearer {token}"}, **kwargs)


def chat(app: App, key: str, question: str) -> dict:
    """The widget's SSE stream, its events by name (tokens joined)."""
    events: dict = {"names": []}
    with app.client.stream("POST", "/v1/chat", json={"key": key, "question": question}) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in response.iter_lines():
            if line.startswith("event:"):
                name = line.split(":", 1)[1].strip()
                events["names"].append(name)
            elif line.startswith("data:") and name:
                data = json.loads(line.split(":", 1)[1])
                if name == "token":
                    events["text"] = events.get("text", "") + data["text"]
                else:
                    events[name] = data
    return events


def keep_turn(app: App, question: str, answer: str, *, gap: bool = False) -> Turn:
    """A turn stored as the answer path stores one after its stream (through the tenant's modules);
    `gap`: an unanswered one, recorded as a knowledge gap without a vector (the console embeds it)."""
    tenant = app.ctx.registry.get("bakery")
    turn = Turn(conversation_id=uuid.uuid4().hex, message_id=uuid.uuid4().hex, question=question, answer=answer,
                confidence=0.1 if gap else 1.0, lang="en", source="not_found" if gap else "curated",
                answered=not gap, gap_normalized=normalize_question(question) if gap else None)
    with tenant.write() as conn:
        tenant.store.conversations.save_turn(conn, turn)
    return turn


def test_tenants_are_made_and_listed_through_the_admin_api(app):
    created = admin(app, "POST", "/admin/tenants", json={"id": "bakery", "site": SITE, "name": "Harbor Bakery",
                                                          "allow_private_network": True})
    assert created.status_code == 201, created.text
    bakery = created.json()
    assert bakery["admin_token"].startswith("fdt_") and bakery["widget_key"].startswith("pk_")
    other = admin(app, "POST", "/admin/tenants", json={"id": "other", "site": "https://other.example/"})
    assert other.status_code == 201, other.text
    assert admin(app, "POST", "/admin/tenants", json={"id": "bakery", "site": SITE}).status_code == 409

    listed = admin(app, "GET", "/admin/tenants").json()["tenants"]
    assert {t["id"] for t in listed} == {"bakery", "other"}
    info = admin(app, "GET", "/admin/tenants/bakery", token=bakery["admin_token"]).json()
    assert info["widget_key"] == bakery["widget_key"] and info["site"] == SITE and info["embedder_dim"] > 0
    # A tenant's token reaches its own tenant only.
    assert admin(app, "GET", "/admin/tenants/other", token=bakery["admin_token"]).status_code == 403
    assert admin(app, "GET", "/admin/tenants", token=bakery["admin_token"]).status_code == 403
    assert app.ctx.registry.tenants.exists("bakery")  # a schema in the database, no tenant file
    assert not list(Path(app.ctx.settings.data_dir).glob("tenants/*.db"))

    patched = admin(app, "PATCH", "/admin/tenants/bakery/config", json={"answer": {"persona": "Pip"}})
    assert patched.status_code == 200 and patched.json()["answer"]["persona"] == "Pip"
    assert admin(app, "GET", "/admin/tenants/bakery/config").json()["answer"]["persona"] == "Pip"

    assert admin(app, "DELETE", "/admin/tenants/other").json() == {"deleted": "other"}
    assert admin(app, "GET", "/admin/tenants/other").status_code == 404
    assert {t["id"] for t in admin(app, "GET", "/admin/tenants").json()["tenants"]} == {"bakery"}


def test_curated_answers_through_the_admin_api(app):
    created = admin(app, "POST", "/admin/tenants/bakery/curated", json={
        "question": QUESTION, "answer": ANSWER, "urls": [SITE + "bread"], "lang": "en"})
    assert created.status_code == 201, created.text
    item = created.json()
    assert item["question"] == QUESTION and item["answer"] == ANSWER and item["urls"] == [SITE + "bread"]
    listed = admin(app, "GET", "/admin/tenants/bakery/curated").json()["curated"]
    assert [c["id"] for c in listed] == [item["id"]]
    scratch = admin(app, "POST", "/admin/tenants/bakery/curated", json={"question": "Scratch?", "answer": "x"}).json()
    assert admin(app, "DELETE", f"/admin/tenants/bakery/curated/{scratch['id']}").json() == {"deleted": scratch["id"]}
    assert admin(app, "DELETE", f"/admin/tenants/bakery/curated/{scratch['id']}").status_code == 404
    assert [c["id"] for c in admin(app, "GET", "/admin/tenants/bakery/curated").json()["curated"]] == [item["id"]]


def test_a_curated_answer_from_the_admin_api_is_served_to_the_widget(app):
    item = admin(app, "GET", "/admin/tenants/bakery/curated").json()["curated"][0]
    key = admin(app, "GET", "/admin/tenants/bakery").json()["widget_key"]
    answer = chat(app, key, "do you bake gluten-free bread")
    assert answer["names"][0] == "meta" and answer["names"][-1] == "done", answer
    assert answer["meta"]["source"] == "curated" and answer["meta"]["answered"] is True
    assert answer["text"] == ANSWER
    assert answer["done"]["message_id"]

    # The turn is kept in the tenant's schema.
    deadline = time.monotonic() + 10
    conversations: list = []
    while time.monotonic() < deadline and not conversations:
        conversations = admin(app, "GET", "/admin/tenants/bakery/conversations").json()["conversations"]
        time.sleep(0.1)
    assert conversations and conversations[0]["messages"][0]["answer"] == ANSWER
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert admin(app, "GET", "/admin/tenants/bakery/stats").json()["usage"][today]["source_curated"] >= 1

    # Changing and deleting it through the API is seen by the next question (the cache follows the generation).
    changed = admin(app, "PUT", f"/admin/tenants/bakery/curated/{item['id']}", json={
        "question": QUESTION, "answer": ANSWER + " Order by Thursday."})
    assert changed.status_code == 200 and changed.json()["answer"].endswith("Thursday.")
    assert chat(app, key, QUESTION)["text"].endswith("Order by Thursday.")


def test_stats_on_postgres(app):
    stats = admin(app, "GET", "/admin/tenants/bakery/stats")
    assert stats.status_code == 200, stats.text
    data = stats.json()
    assert data["pages"] == 0 and data["chunks"] == 0 and data["coverage"] is None
    assert data["file_bytes"] > 0  # the schema's tables and indexes
    assert data["errors_by_reason"] == {} and isinstance(data["usage"], dict)
    assert "junk" in data and "render" in data
    assert admin(app, "GET", "/admin/tenants/nosuch/stats").status_code == 404


def test_a_postgres_tenant_is_warmed_without_a_text_index(app, caplog):
    """Warming (app/warm.py) reads a SQLite tenant's frequent words' postings ahead; on PostgreSQL
    the database ranks, so there is nothing to read, and warming the tenant logs no failure."""
    tenant = app.ctx.registry.get("bakery")
    with tenant.reading() as conn:
        assert tenant.store.search.warm_text_index(conn) == 0
    warmer = Warmer(app.ctx, Answerer(app.ctx, None, AnswerCache(8), Metrics()))
    try:
        with caplog.at_level("WARNING", logger="app.warm"):
            warmer.warm_tenant("bakery")
        assert not [r for r in caplog.records if r.name == "app.warm"]
    finally:
        warmer.close()


def sign_in(app: App, token: str) -> None:
    form = app.client.get("/console/login")
    assert form.status_code == 200
    csrf = re.search(r'name="_csrf" value="([^"]+)"', form.text).group(1)
    signed = app.client.post("/console/login", data={"_csrf": csrf, "token": token, "next": "/console"},
                             follow_redirects=False)
    assert signed.status_code == 303, signed.text


def test_console_sign_in_and_pages(app):
    keep_turn(app, "Do you sell rye bread?", "Rye on Saturdays.")
    keep_turn(app, "Do you deliver to the islands?", "I could not find that on this site.", gap=True)
    sign_in(app, ADMIN)
    home = app.client.get("/console", follow_redirects=False)
    assert home.status_code == 200, home.text
    assert "bakery" in home.text
    for path in ("/console/t/bakery", "/console/t/bakery/conversations", "/console/t/bakery/analytics",
                 "/console/t/bakery/coverage", "/console/t/bakery/gaps", "/console/t/bakery/curated",
                 "/console/t/bakery/crawl", "/console/t/bakery/config", "/console/t/bakery/webhooks"):
        page = app.client.get(path, follow_redirects=False)
        assert page.status_code == 200, (path, page.text[-2000:])
    overview = app.client.get("/console/t/bakery").text
    assert "Harbor Bakery" in overview or "bakery" in overview
    assert ANSWER in app.client.get("/console/t/bakery/curated").text
    assert "Do you sell rye bread?" in app.client.get("/console/t/bakery/conversations").text

    # A curated answer added from the console is served like one from the API.
    page = app.client.get("/console/t/bakery/curated")
    csrf = re.search(r'name="_csrf" value="([^"]+)"', page.text).group(1)
    saved = app.client.post("/console/t/bakery/curated", follow_redirects=False, data={
        "_csrf": csrf, "question": "Is there parking?", "answer": "Free parking behind the bakery.", "urls": ""})
    assert saved.status_code == 303, saved.text
    curated = admin(app, "GET", "/admin/tenants/bakery/curated").json()["curated"]
    assert "Is there parking?" in {c["question"] for c in curated}
    tested = app.client.get("/console/t/bakery/curated", params={"q": "is there parking"})
    assert "Answered by a curated answer" in tested.text and "Free parking behind the bakery." in tested.text

    # Knowledge gaps: grouped (their vectors made and kept on first view), then dismissed.
    assert [g["question"] for g in admin(app, "GET", "/admin/tenants/bakery/gaps").json()["gaps"]] == [
        "Do you deliver to the islands?"]
    gaps = app.client.get("/console/t/bakery/gaps")
    assert "Do you deliver to the islands?" in gaps.text
    gap_id = re.search(r"/console/t/bakery/gaps/(\d+)/dismiss", gaps.text).group(1)
    csrf = re.search(r'name="_csrf" value="([^"]+)"', gaps.text).group(1)
    dismissed = app.client.post(f"/console/t/bakery/gaps/{gap_id}/dismiss", data={"_csrf": csrf},
                                follow_redirects=False)
    assert dismissed.status_code == 303, dismissed.text
    assert "Do you deliver to the islands?" not in app.client.get("/console/t/bakery/gaps").text


def test_webhook_endpoints_are_added_listed_and_tested(app):
    assert admin(app, "GET", "/admin/tenants/bakery/webhooks").json() == {"webhooks": []}
    refused = admin(app, "POST", "/admin/tenants/bakery/webhooks", json={"url": "http://169.254.169.254/latest"})
    assert refused.status_code == 400 and refused.json()["field"] == "url"
    created = admin(app, "POST", "/admin/tenants/bakery/webhooks", json={"url": app.receiver.url,
                                                                         "description": "ops"})
    assert created.status_code == 201, created.text
    secret, endpoint = created.json()["secret"], created.json()["endpoint"]
    assert secret.startswith("whsec_") and endpoint["url"] == app.receiver.url
    listed = admin(app, "GET", "/admin/tenants/bakery/webhooks")
    assert [e["id"] for e in listed.json()["webhooks"]] == [endpoint["id"]] and secret not in listed.text

    changed = admin(app, "PATCH", f"/admin/tenants/bakery/webhooks/{endpoint['id']}",
                    json={"events": ["feedback.negative", "crawl.failed"]})
    assert changed.status_code == 200 and set(changed.json()["events"]) == {"feedback.negative", "crawl.failed"}
    sent = admin(app, "POST", f"/admin/tenants/bakery/webhooks/{endpoint['id']}/test")
    assert sent.status_code == 202 and len(sent.json()["deliveries"]) == 1
    delivered = app.receiver.wait_for("webhook.test")
    assert verify(secret, delivered["signature"], delivered["body"])
    assert json.loads(delivered["body"])["tenant"] == "bakery"

    # A thumbs-down on a kept answer becomes feedback.negative through the tenant's outbox.
    key = admin(app, "GET", "/admin/tenants/bakery").json()["widget_key"]
    turn = keep_turn(app, QUESTION, ANSWER)
    feedback = app.client.post("/v1/feedback", json={"key": key, "message_id": turn.message_id,
                                                     "conversation_id": turn.conversation_id, "rating": "down"})
    assert feedback.status_code == 200 and feedback.json() == {"ok": True}
    negative = json.loads(app.receiver.wait_for("feedback.negative")["body"])
    assert negative["data"]["message_id"] == turn.message_id and negative["data"]["answer"] == ANSWER
    assert negative["data"]["conversation_id"] == turn.conversation_id
    rated = admin(app, "GET", "/admin/tenants/bakery/conversations").json()["conversations"]
    assert any(m["id"] == turn.message_id and m["feedback"] == "down" for c in rated for m in c["messages"]), rated

    deadline = time.monotonic() + 10
    log: list = []
    while time.monotonic() < deadline and {d["status"] for d in log} != {"delivered"}:
        log = admin(app, "GET", f"/admin/tenants/bakery/webhooks/{endpoint['id']}/deliveries").json()["deliveries"]
        time.sleep(0.1)
    assert {d["event"] for d in log} == {"webhook.test", "feedback.negative"}
    assert all(d["status"] == "delivered" and d["attempts"] == 1 for d in log), log
    assert "webhook.test" in app.client.get(f"/console/t/bakery/webhooks/{endpoint['id']}").text

    rotated = admin(app, "POST", f"/admin/tenants/bakery/webhooks/{endpoint['id']}/secret").json()["secret"]
    assert rotated.startswith("whsec_") and rotated != secret
    deleted = admin(app, "DELETE", f"/admin/tenants/bakery/webhooks/{endpoint['id']}")
    assert deleted.json() == {"deleted": endpoint["id"]}
    assert admin(app, "GET", "/admin/tenants/bakery/webhooks").json() == {"webhooks": []}


def test_a_connection_kept_past_its_unit_of_work_refuses_to_run(app):
    """A pooled connection serves another tenant's transaction next: a reference kept by mistake
    (a lazy generator, a closure) fails loudly instead of running a statement there."""
    created = admin(app, "POST", "/admin/tenants", json={"id": "kept-conn", "site": "https://kept.example/"})
    assert created.status_code == 201, created.text
    tenant = app.ctx.registry.get("kept-conn")
    try:
        with tenant.reading() as conn:
            assert tenant.store.search.chunk_count(conn) == 0
        with pytest.raises(StoreError, match="used after its unit of work ended"):
            tenant.store.search.chunk_count(conn)
        with tenant.write() as written:
            tenant.bump_generation(written)
        with pytest.raises(StoreError, match="used after its unit of work ended"):
            written.execute("SELECT 1")
        # The pool's connections are fine for the next unit of work.
        assert tenant.generation() == 1
    finally:
        app.ctx.registry.delete("kept-conn")
