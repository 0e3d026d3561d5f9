"""POST /a2a/invoke on the real server (granian on 127.0.0.1): answers with citations, confidence,
latency and trace id for the server or tenant admin token; JSON errors for every bad token or body."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from app.context import Context
from app.settings import Settings
from ingest.document import Document, Fact, Section
from ingest.indexer import PageIndexer
from tests.conftest import _MODEL_CACHE
from tests.server import run_server

ADMIN_TOKEN = "server-admin-token-for-tests"
TOPICS = {"bakery": "sourdough bread and croissants", "garage": "brake pads and oil changes"}


def build_tenants(data: Path) -> dict[str, str]:
    """Two tenants with their own pages; returns each tenant's admin token."""
    ctx = Context(Settings(data_dir=str(data)))
    tokens = {}
    try:
        for tenant_id, topic in TOPICS.items():
            tenant, tokens[tenant_id] = ctx.create_tenant(tenant_id, f"https://{tenant_id}.test/")
            indexer = PageIndexer(tenant, ctx.tenant_embedder(tenant))
            for n in range(3):
                url = f"https://{tenant_id}.test/p{n}"
                indexer.index(Document(
                    url=url, canonical_url=url, title=f"{tenant_id} page {n}", lang="en",
                    sections=[Section(heading_path=(f"{tenant_id} page {n}",),
                                      text=f"We sell {topic}. Page {n} lists our {topic} with prices from {n + 2} euros.")],
                    facts=[Fact(type="FAQPage", kind="faq",
                                text=f"Q: Do you open on Sunday? A: The {tenant_id} opens at {n + 8} am on Sundays.")],
                ))
    finally:
        ctx.close()
    return tokens


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    data = tmp_path_factory.mktemp("a2a") / "data"
    data.mkdir()
    _MODEL_CACHE.mkdir(parents=True, exist_ok=True)
    (data / "models").symlink_to(_MODEL_CACHE, target_is_directory=True)
    tokens = build_tenants(data)
    with run_server(data, admin_token=ADMIN_TOKEN) as base_url, httpx.Client(base_url=base_url, timeout=30) as client:
        yield client, tokens


def invoke(client: httpx.Client, token: str | None, tenant: str = "bakery", question: str = "Do you sell sourdough bread?",
           **extra) -> httpx.Response:
    body = {"agent": "docs", "task": {"question": question}, "params": {"tenant": tenant}}
    body.update(extra)
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return client.post("/a2a/invoke", json=body, headers=headers)


@pytest.mark.parametrize("who", ["server admin", "tenant admin"])
def test_a_good_token_gets_a_cited_answer(served, who):
    client, tokens = served
    response = invoke(client, ADMIN_TOKEN if who == "server admin" else tokens["bakery"])
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) >= {"answer", "citations", "confidence", "latency_ms", "trace_id"}
    assert "sourdough" in body["answer"].lower()
    assert body["citations"] and all(c["url"].startswith("https://bakery.test/") for c in body["citations"])
    assert 0 < body["confidence"] <= 1 and body["answered"] is True
    assert body["latency_ms"] > 0
    assert body["trace_id"] and body["trace_id"] == response.headers["x-trace-id"]


def test_page_url_and_an_unanswerable_question(served):
    client, tokens = served
    on_page = invoke(client, tokens["bakery"], question="What do you sell on this page?",
                     params={"tenant": "bakery", "page_url": "https://bakery.test/p2"})
    assert on_page.status_code == 200, on_page.text
    assert on_page.json()["citations"][0]["url"] == "https://bakery.test/p2"
    unknown = invoke(client, tokens["bakery"], question="Who won the football world cup in 1986?")
    assert unknown.status_code == 200
    assert unknown.json()["answered"] is False


def test_answers_never_cross_tenants(served):
    client, _ = served
    body = invoke(client, ADMIN_TOKEN, tenant="garage", question="Do you sell sourdough bread?").json()
    assert all(c["url"].startswith("https://garage.test/") for c in body["citations"])
    assert "sourdough" not in body["answer"].lower()


@pytest.mark.parametrize(("case", "status", "code"), [
    ("no token", 401, "unauthorized"),
    ("not bearer", 401, "unauthorized"),
    ("wrong token", 401, "unauthorized"),
    ("other tenant's token", 401, "unauthorized"),
    ("tenant token, unknown tenant", 401, "unauthorized"),
    ("admin token, unknown tenant", 404, "tenant_not_found"),
])
def test_bad_tokens_are_refused_as_json(served, case, status, code):
    client, tokens = served
    if case == "not bearer":
        response = client.post("/a2a/invoke", headers={"Authorization": f"Basic {tokens['bakery']}"},
                               json={"agent": "docs", "task": {"question": "hi"}, "params": {"tenant": "bakery"}})
    else:
        token, tenant = {
            "no token": (None, "bakery"),
            "wrong token": (ADMIN_TOKEN + "x", "bakery"),
            "other tenant's token": (tokens["garage"], "bakery"),
            "tenant token, unknown tenant": (tokens["bakery"], "nosuch"),
            "admin token, unknown tenant": (ADMIN_TOKEN, "nosuch"),
        }[case]
        response = invoke(client, token, tenant=tenant)
    assert response.status_code == status
    body = response.json()
    assert body["code"] == code and body["message"]
    assert "Traceback" not in response.text


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"agent": "sales", "task": {"question": "hi"}, "params": {"tenant": "bakery"}}, 400, "invalid_input"),
    ({"agent": "docs", "task": {"question": "hi"}, "params": {"tenant": "../../etc/passwd"}}, 400, "invalid_tenant_id"),
    ({"agent": "docs", "task": {"question": "   "}, "params": {"tenant": "bakery"}}, 400, "empty_question"),
    ({"agent": "docs", "task": {"question": "why? " * 1000}, "params": {"tenant": "bakery"}}, 413, "question_too_long"),
    ({"agent": "docs", "params": {"tenant": "bakery"}}, 400, "invalid_input"),
    ({"agent": "docs", "task": {"question": 42}, "params": {"tenant": "bakery"}}, 400, "invalid_input"),
    ("not json", 400, "invalid_input"),
])
def test_bad_bodies_are_refused_as_json(served, body, status, code):
    client, _ = served
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    if isinstance(body, str):
        response = client.post("/a2a/invoke", content=body, headers={**headers, "Content-Type": "application/json"})
    else:
        response = client.post("/a2a/invoke", json=body, headers=headers)
    assert response.status_code == status, response.text
    assert response.json()["code"] == code
