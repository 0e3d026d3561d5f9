"""The admin API on the real server: tokens, tenant lifecycle, config validation, a real crawl of
the sample site with SSE progress, stats, search debug, curated answers, gaps, conversations,
the refresh webhook, /metrics — and every response checked against the served OpenAPI schema."""

from __future__ import annotations

import json
import time

import httpx
import jsonschema
import pytest
from prometheus_client.parser import text_string_to_metric_families
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from app.demo.server import DemoSite
from tests.server import run_server

pytestmark = pytest.mark.slow

ADMIN = "admin-secret-token"


class Checked:
    """An HTTP client that validates every JSON response against the server's OpenAPI schema."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.client = httpx.Client(base_url=base, timeout=60)
        self.schema = self.client.get("/schema/openapi.json").json()
        components = DRAFT202012.create_resource({"components": self.schema.get("components", {})})
        self.registry = Registry().with_resource("urn:openapi", components)
        self.validated = 0

    def request(self, method: str, path: str, token: str | None = ADMIN, **kwargs) -> httpx.Response:
        headers = kwargs.pop("headers", {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        response = self.client.request(method, path, headers=headers, **kwargs)
        self._validate(method, path, response)
        return response

    def _validate(self, method: str, path: str, response: httpx.Response) -> None:
        if not response.headers.get("content-type", "").startswith("application/json"):
            return
        template = self._template(path.split("?")[0])
        operation = self.schema["paths"][template][method.lower()]
        spec = operation["responses"].get(str(response.status_code))
        assert spec is not None, f"{method} {template} answered {response.status_code}, which the schema does not list"
        schema = spec["content"]["application/json"]["schema"]
        rooted = json.loads(json.dumps(schema).replace('"#/components/', '"urn:openapi#/components/'))
        jsonschema.Draft202012Validator(rooted, registry=self.registry).validate(response.json())
        self.validated += 1

    def _template(self, path: str) -> str:
        parts = path.strip("/").split("/")
        for template in self.schema["paths"]:
            pieces = template.strip("/").split("/")
            if len(pieces) == len(parts) and all(p.startswith("{") or p == q for p, q in zip(pieces, parts, strict=True)):
                return template
        raise AssertionError(f"{path} is not in the OpenAPI schema")


@pytest.fixture(scope="module")
def admin(tmp_path_factory):
    data = tmp_path_factory.mktemp("admin") / "data"
    site = DemoSite().start()
    try:
        with run_server(data, admin_token=ADMIN, rate_per_ip=50, rate_burst_ip=200) as base:
            site.frontdesk_origin = base
            api = Checked(base)
            yield api, site
            api.client.close()
    finally:
        site.close()


def test_tokens_are_required_and_scoped(admin):
    api, site = admin
    created = api.request("POST", "/admin/tenants", json={"id": "shop", "site": site.url + "/",
                                                           "allow_private_network": True})
    assert created.status_code == 201, created.text
    shop = created.json()
    other = api.request("POST", "/admin/tenants", json={"id": "other", "site": "https://other.test/"}).json()
    assert shop["admin_token"] and shop["widget_key"]

    assert api.request("GET", "/admin/tenants", token=None).status_code == 401
    assert api.request("GET", "/admin/tenants", token="wrong").status_code == 403
    assert api.request("GET", "/admin/tenants", token=shop["admin_token"]).status_code == 403  # server admin only
    assert api.request("GET", "/admin/tenants/shop", token=shop["admin_token"]).status_code == 200
    refused = api.request("GET", "/admin/tenants/shop/stats", token=other["admin_token"])
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    assert api.request("GET", "/admin/tenants/nosuch", token=other["admin_token"]).status_code == 403
    assert api.request("GET", "/admin/tenants/nosuch").status_code == 404
    assert api.request("GET", "/admin/tenants/..%2Fetc").status_code in (400, 404)
    listed = api.request("GET", "/admin/tenants").json()["tenants"]
    assert {t["id"] for t in listed} == {"shop", "other"}
    assert api.request("POST", "/admin/tenants", json={"id": "shop", "site": "https://x.test/"}).status_code == 409
    bad = api.request("POST", "/admin/tenants", json={"id": "../x", "site": "https://x.test/"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_tenant_id"
    assert api.request("DELETE", "/admin/tenants/other").json() == {"deleted": "other"}


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"surprise": 1}, "surprise"),
        ({"crawl": {"max_pages": "many"}}, "crawl.max_pages"),
        ({"crawl": {"max_pages": -5}}, "crawl.max_pages"),
        ({"crawl": {"seeds": ["https://elsewhere.example/"]}}, "crawl.seeds[0]"),
        ({"crawl": {"deny": ["(unclosed"]}}, "crawl.deny[0]"),
        ({"answer": {"min_confidence": 7}}, "answer.min_confidence"),
        ({"model": "use-multilingual-v3"}, "model"),
    ],
)
def test_bad_config_is_refused_with_the_field_named_and_nothing_changes(admin, patch, field):
    api, _ = admin
    before = api.request("GET", "/admin/tenants/shop/config").json()
    response = api.request("PATCH", "/admin/tenants/shop/config", json=patch)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] in ("invalid_config", "invalid_input") and body.get("field") == field, body
    assert api.request("GET", "/admin/tenants/shop/config").json() == before


def test_config_validate_put_and_patch(admin):
    api, site = admin
    config = api.request("GET", "/admin/tenants/shop/config").json()
    assert config["site"] == site.url + "/"
    assert api.request("POST", "/admin/tenants/shop/config:validate", json=config).json()["valid"] is True
    patched = api.request("PATCH", "/admin/tenants/shop/config",
                          json={"name": "Harbor & Pine", "crawl": {"rate": 0}, "allowed_origins": ["https://www.example.com"]})
    assert patched.status_code == 200 and patched.json()["crawl"]["rate"] == 0
    assert patched.json()["crawl"]["allow_private_network"] is True  # the rest is kept
    config = patched.json()
    config["answer"]["persona"] = "Pip, the Harbor & Pine helper"
    assert api.request("PUT", "/admin/tenants/shop/config", json=config).json()["answer"]["persona"].startswith("Pip")


def test_only_the_server_admin_may_open_the_private_network(admin):
    """crawl.allow_private_network opens the server's own network to a tenant's crawler and
    webhooks: a tenant's admin token may change anything else in its config, never that."""
    api, _ = admin
    created = api.request("POST", "/admin/tenants", json={"id": "lan", "site": "https://lan.example/"}).json()
    token = created["admin_token"]
    path = "/admin/tenants/lan/config"
    opened = {"crawl": {"allow_private_network": True}}
    for method, body in (("PATCH", opened), ("PUT", None), ("POST", None)):
        if body is None:
            body = api.request("GET", path, token=token).json()
            body["crawl"]["allow_private_network"] = True
        target = path + ":validate" if method == "POST" else path
        refused = api.request(method, target, token=token, json=body)
        assert refused.status_code == 403, (method, refused.text)
        assert refused.json()["code"] == "forbidden"
        assert refused.json()["field"] == "crawl.allow_private_network"
        assert "server admin token" in refused.json()["message"]
    assert api.request("GET", path, token=token).json()["crawl"]["allow_private_network"] is False
    # Everything else stays the tenant's to change, the flag included in a full PUT as it is.
    renamed = api.request("PATCH", path, token=token, json={"name": "LAN shop", "crawl": {"rate": 1}})
    assert renamed.status_code == 200 and renamed.json()["name"] == "LAN shop"
    config = renamed.json()
    config["answer"]["tone"] = "brief"
    assert api.request("PUT", path, token=token, json=config).status_code == 200
    # The server admin may open it, and then the tenant may not close it either.
    assert api.request("PATCH", path, json=opened).json()["crawl"]["allow_private_network"] is True
    closed = api.request("PATCH", path, token=token, json={"crawl": {"allow_private_network": False}})
    assert closed.status_code == 403
    assert api.request("DELETE", "/admin/tenants/lan").status_code == 200


def test_crawl_with_progress_then_stats_and_search_debug(admin):
    api, site = admin
    started = api.request("POST", "/admin/tenants/shop/crawl", json={})
    assert started.status_code == 202 and started.json()["status"] == "running"
    assert api.request("POST", "/admin/tenants/shop/crawl", json={}).status_code == 409  # one job per tenant
    events = []
    with api.client.stream("GET", "/admin/tenants/shop/crawl/progress", headers={"Authorization": f"Bearer {ADMIN}"}) as stream:
        name = None
        for line in stream.iter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                events.append((name, json.loads(line[5:])))
    assert events[-1][0] == "done" and events[-1][1]["status"] == "done", events[-1]
    progress = [data for name, data in events if name == "progress"]
    assert progress and progress[-1]["fetched"] >= 15
    summary = events[-1][1]["summary"]
    assert summary["failed"] == 0 and summary["skipped"].get("noindex") == 1
    stats = api.request("GET", "/admin/tenants/shop/stats").json()
    assert stats["pages"] == 20 and stats["coverage"] == 1.0
    assert stats["facts"] > 10 and stats["actions"] >= 3 and stats["forms"] >= 1
    debug = api.request("POST", "/admin/tenants/shop/search", json={"query": "shipping cost", "k": 5}).json()
    assert debug["hits"] and debug["trace"]["fts_query"] == '"shipping" OR "cost"'
    assert debug["trace"]["dense"] and debug["trace"]["bm25"] and debug["trace"]["timings_ms"]
    assert debug["coverage"] == {"terms": ["shipping", "cost"], "unknown": [], "share": 1.0}
    off_topic = api.request("POST", "/admin/tenants/shop/search", json={"query": "paella valenciana", "k": 3}).json()
    assert off_topic["coverage"]["unknown"] == ["paella", "valenciana"] and off_topic["coverage"]["share"] == 0.0
    assert api.request("POST", "/admin/tenants/shop/search", json={"query": "x", "k": 0}).status_code == 400
    assert api.request("POST", "/admin/tenants/shop/search", json={"query": "x", "mode": "magic"}).status_code == 400
    job = api.request("GET", "/admin/tenants/shop/crawl").json()["job"]
    assert job["status"] == "done" and job["summary"]["pages_found"] >= 20


def test_curated_answers_crud(admin):
    api, _ = admin
    created = api.request("POST", "/admin/tenants/shop/curated", json={
        "question": "Can I bring my dog?", "answer": "Dogs are welcome on the terrace.", "urls": []})
    assert created.status_code == 201
    item = created.json()
    updated = api.request("PUT", f"/admin/tenants/shop/curated/{item['id']}", json={
        "question": "Can I bring my dog?", "answer": "Dogs are welcome on the terrace and in the bookshop."})
    assert updated.json()["answer"].endswith("bookshop.")
    assert len(api.request("GET", "/admin/tenants/shop/curated").json()["curated"]) == 1
    assert api.request("POST", "/admin/tenants/shop/curated", json={"question": "", "answer": "x"}).status_code == 400
    assert api.request("DELETE", f"/admin/tenants/shop/curated/{item['id']}").status_code == 200
    assert api.request("DELETE", f"/admin/tenants/shop/curated/{item['id']}").status_code == 404


def test_gaps_conversations_and_cache(admin):
    api, site = admin
    key = api.request("GET", "/admin/tenants/shop").json()["widget_key"]
    # The second is the first again, typed differently: a cache hit that still counts as a gap.
    for question in ("Do you sell bicycles?", "do you sell BICYCLES", "Do you open on Sundays?"):
        with api.client.stream("POST", "/v1/chat", json={"key": key, "question": question},
                               headers={"Origin": site.url}) as response:
            assert response.status_code == 200
            response.read()
    deadline = time.monotonic() + 10
    gaps = []
    while time.monotonic() < deadline and sum(g["count"] for g in gaps) < 2:  # persisted after each stream
        gaps = api.request("GET", "/admin/tenants/shop/gaps").json()["gaps"]
        time.sleep(0.1)
    assert gaps and gaps[0]["count"] == 2 and "bicycles" in gaps[0]["question"].lower()
    conversations = api.request("GET", "/admin/tenants/shop/conversations?limit=10").json()["conversations"]
    assert len(conversations) == 3 and conversations[0]["messages"][0]["question"]
    assert api.request("GET", "/admin/tenants/shop/conversations?limit=0").status_code == 400
    assert api.request("DELETE", "/admin/tenants/shop/cache").json()["cleared"] >= 1


def test_refresh_webhook(admin):
    api, site = admin
    bad = api.request("POST", "/admin/tenants/shop/pages:refresh", json={"urls": ["https://evil.example/x"]})
    assert bad.status_code == 400 and bad.json()["field"] == "urls[0]"
    assert api.request("POST", "/admin/tenants/shop/pages:refresh", json={"urls": []}).status_code == 400
    job = api.request("POST", "/admin/tenants/shop/pages:refresh", json={"urls": [site.url + "/faq.html"]})
    assert job.status_code == 202 and job.json()["kind"] == "refresh"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = api.request("GET", "/admin/tenants/shop/crawl").json()["job"]
        if state["status"] != "running":
            break
        time.sleep(0.2)
    assert state["status"] == "done" and state["summary"]["pages_found"] == 1


def test_metrics_parse_after_real_traffic(admin):
    api, _ = admin
    text = api.client.get("/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert {"frontdesk_http_requests", "frontdesk_answer_ttft_seconds", "frontdesk_cache_requests",
            "frontdesk_pages_crawled", "frontdesk_chunks_embedded", "frontdesk_errors"} <= set(families)
    crawled = sum(s.value for s in families["frontdesk_pages_crawled"].samples)
    assert crawled >= 20
    ttft = [s for s in families["frontdesk_answer_ttft_seconds"].samples if s.name.endswith("_count")]
    assert sum(s.value for s in ttft) >= 3
    assert any(s.labels.get("code") == "forbidden" for s in families["frontdesk_errors"].samples)
    assert api.client.get("/healthz").json() == {"status": "ok"}
    ready = api.client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"


def test_every_json_response_matched_the_openapi_schema(admin):
    api, _ = admin
    assert api.validated >= 40
    assert "/admin/tenants/{tenant_id}/search" in api.schema["paths"]
