"""Outgoing webhooks against real receivers on 127.0.0.1: signatures a receiver can verify (and
replays it can refuse), a 500 retried with backoff, every event type, the delivery log, and the
SSRF guard refusing 169.254.169.254 both when the endpoint is configured and at delivery time."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import time
from pathlib import Path

import httpx
import msgspec
import pytest

from app.context import Context
from app.settings import Settings
from app.webhooks import WebhookDispatcher, check_target, sign, verify
from ingest.scheduler import JobInfo
from store import webhooks as outbox
from store.errors import InvalidInput
from tests.server import run_server

SITE_PAGE = b"""<!doctype html><html lang="en"><head><title>Harbor Bakery</title></head><body><main>
<h1>Harbor Bakery</h1><p>We bake sourdough bread every morning. The bakery opens Monday to Friday from
7 am to 6 pm. Our sourdough loaf costs five dollars.</p></main></body></html>"""


class Receiver:
    """A webhook receiver and a one-page site on 127.0.0.1. `fail_first` names events whose first
    attempt gets a 500."""

    def __init__(self) -> None:
        self.received: list[dict] = []
        self.fail_first: set[str] = set()
        self.failed: set[str] = set()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                body, status = (SITE_PAGE, 200) if self.path == "/" else (b"not found", 404)
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                event = self.headers.get("X-Frontdesk-Event", "")
                delivery = self.headers.get("X-Frontdesk-Delivery", "")
                status = 200
                if event in receiver.fail_first and delivery not in receiver.failed:
                    receiver.failed.add(delivery)
                    status = 500
                receiver.received.append({"event": event, "delivery": delivery, "status": status, "body": body,
                                          "signature": self.headers.get("X-Frontdesk-Signature", ""),
                                          "at": time.time()})
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def wait_for(self, event: str, status: int = 200, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for item in self.received:
                if item["event"] == event and item["status"] == status:
                    return item
            time.sleep(0.05)
        raise AssertionError(f"no {event} answered {status} in {timeout} s; got {[r['event'] for r in self.received]}")

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


# -- signatures --------------------------------------------------------------------------------


def test_signature_verifies_and_refuses_tampering_and_replays():
    body = b'{"type":"gap.new"}'
    now = int(time.time())
    header = sign("whsec_k", now, body)
    assert header.startswith(f"t={now},v1=") and len(header.split("v1=")[1]) == 64
    assert verify("whsec_k", header, body)
    assert not verify("whsec_k", header, body + b" ")  # the body was changed
    assert not verify("whsec_other", header, body)  # another endpoint's secret
    old = sign("whsec_k", now - 3600, body)
    assert not verify("whsec_k", old, body)  # a replay an hour later
    forged = old.replace(f"t={now - 3600}", f"t={now}")
    assert not verify("whsec_k", forged, body)  # a fresh timestamp breaks the signature
    assert not verify("whsec_k", "garbage", body) and not verify("whsec_k", "t=x,v1=y", body)


# -- the SSRF guard on the target --------------------------------------------------------------


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data", "http://[fd00:ec2::254]/",
                                 "http://100.100.100.200/"])
def test_metadata_addresses_are_refused_even_with_private_networks_allowed(url):
    for allow_private in (False, True):
        with pytest.raises(InvalidInput) as refused:
            asyncio.run(check_target(url, allow_private))
        assert refused.value.details["field"] == "url"


def test_private_addresses_need_the_tenant_to_allow_them():
    for url in ("http://127.0.0.1:9/hook", "http://10.1.2.3/hook", "http://[::1]/hook", "http://localhost/hook"):
        with pytest.raises(InvalidInput, match="private networks are refused"):
            asyncio.run(check_target(url, False))
    assert asyncio.run(check_target("http://127.0.0.1:9/hook", True)) == "http://127.0.0.1:9/hook"
    for url in ("ftp://example.com/x", "http://user:pw@127.0.0.1/", "/relative"):
        with pytest.raises(InvalidInput):
            asyncio.run(check_target(url, True))


# -- the dispatcher in-process: crawl.failed, retries, and the guard at delivery time ---------


def test_dispatcher_delivers_retries_and_never_connects_to_metadata(data_dir, receiver):
    ctx = Context(Settings(data_dir=str(data_dir)))
    try:
        tenant, _ = ctx.create_tenant("hooks", receiver.url + "/", allow_private_network=True)
        with tenant.write() as conn:
            good = outbox.add_endpoint(conn, url=receiver.url + "/hook", events=["crawl.failed"], secret="whsec_a")
            # Stored without the configuration-time check, as if DNS had changed since: only the
            # guard in the transport stands between this delivery and the metadata service.
            bad = outbox.add_endpoint(conn, url="http://169.254.169.254/latest/meta-data", events=["crawl.failed"],
                                      secret="whsec_b")
        receiver.fail_first = {"crawl.failed"}
        settings = Settings(data_dir=str(data_dir), webhook_retry_base=0.2, webhook_max_attempts=3)

        async def run() -> None:
            dispatcher = WebhookDispatcher(ctx.registry, settings, poll_seconds=0.05)
            await dispatcher.start()
            try:
                dispatcher.crawl_ended(JobInfo(id="job1", tenant_id="hooks", kind="delta", status="failed",
                                               started_at=time.time(), error="the site is down"))
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    states = {d.endpoint_id: d.status for d in outbox.deliveries(tenant.reader())}
                    if states.get(good) == "delivered" and states.get(bad) == "failed":
                        break
                    await asyncio.sleep(0.05)
            finally:
                await dispatcher.stop()

        asyncio.run(run())
        log = {d.endpoint_id: d for d in outbox.deliveries(tenant.reader())}
        assert log[good].status == "delivered" and log[good].attempts == 2
        assert [a.response_status for a in log[good].log] == [500, 200]
        gap = log[good].log[1].at - log[good].log[0].at
        assert gap >= 0.2  # the retry waited for the backoff
        assert log[bad].status == "failed" and log[bad].attempts == 1  # refused for good, never retried
        assert "refused" in log[bad].error and "169.254.169.254" in log[bad].error
        delivered = receiver.wait_for("crawl.failed")
        assert verify("whsec_a", delivered["signature"], delivered["body"])
        body = json.loads(delivered["body"])
        assert body["type"] == "crawl.failed" and body["tenant"] == "hooks"
        assert body["data"]["job"]["error"] == "the site is down"
        assert all(r["event"] == "crawl.failed" for r in receiver.received)
    finally:
        ctx.close()


# -- end to end: the real server, the admin API and every event --------------------------------


def _chat(client: httpx.Client, key: str, question: str) -> dict:
    events: dict = {}
    with client.stream("POST", "/v1/chat", json={"key": key, "question": question}) as response:
        assert response.status_code == 200
        name = None
        for line in response.iter_lines():
            if line.startswith("event:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and name:
                events[name] = json.loads(line.split(":", 1)[1])
    return events


@pytest.mark.slow
def test_events_reach_a_local_receiver_signed_and_retried(data_dir, receiver):
    ctx = Context(Settings(data_dir=str(data_dir)))
    try:
        tenant, _ = ctx.create_tenant("bakery", receiver.url + "/", allow_private_network=True)
        key = tenant.widget_key
    finally:
        ctx.close()
    receiver.fail_first = {"crawl.finished"}
    with run_server(data_dir, admin_token="adm", webhook_retry_base=0.3, webhook_gap_batch_seconds=0.5,
                    rate_per_ip=100, rate_burst_ip=100) as base, \
            httpx.Client(base_url=base, timeout=30, headers={"Authorization": "Bearer adm"}) as api:
        refused = api.post("/admin/tenants/bakery/webhooks", json={"url": "http://169.254.169.254/latest/meta-data"})
        assert refused.status_code == 400 and refused.json()["field"] == "url"
        bad_event = api.post("/admin/tenants/bakery/webhooks", json={"url": receiver.url + "/hook", "events": ["nope"]})
        assert bad_event.status_code == 400 and bad_event.json()["field"] == "events"
        created = api.post("/admin/tenants/bakery/webhooks", json={"url": receiver.url + "/hook"})
        assert created.status_code == 201, created.text
        secret, endpoint = created.json()["secret"], created.json()["endpoint"]
        assert secret.startswith("whsec_") and endpoint["events"] == list(outbox.EVENTS)
        assert secret not in api.get("/admin/tenants/bakery/webhooks").text  # shown once, never listed

        assert api.post("/admin/tenants/bakery/crawl", json={}).status_code == 202
        finished = receiver.wait_for("crawl.finished")
        body = json.loads(finished["body"])
        assert body["data"]["job"]["status"] == "done" and body["data"]["job"]["summary"]["fetched"] == 1

        chat = httpx.Client(base_url=base, timeout=30)
        answer = _chat(chat, key, "Do you repair bicycles and electric scooters?")
        assert answer["meta"]["answered"] is False
        gap = receiver.wait_for("gap.new")
        assert json.loads(gap["body"])["data"]["gaps"][0]["question"] == "Do you repair bicycles and electric scooters?"

        answered = _chat(chat, key, "When does the bakery open?")
        assert answered["meta"]["answered"] is True
        feedback = chat.post("/v1/feedback", json={"key": key, "message_id": answered["done"]["message_id"],
                                                   "rating": "down"})
        assert feedback.status_code == 200
        negative = json.loads(receiver.wait_for("feedback.negative")["body"])
        assert negative["data"]["question"] == "When does the bakery open?"
        assert negative["data"]["message_id"] == answered["done"]["message_id"]

        for item in receiver.received:  # every delivery, retried or not, is signed for its own moment
            assert verify(secret, item["signature"], item["body"]), item["event"]
            assert msgspec.json.decode(item["body"])["tenant"] == "bakery"
        tries = [r for r in receiver.received if r["event"] == "crawl.finished"]
        assert [r["status"] for r in tries] == [500, 200] and tries[0]["delivery"] == tries[1]["delivery"]
        assert tries[1]["at"] - tries[0]["at"] >= 0.3

        log = api.get(f"/admin/tenants/bakery/webhooks/{endpoint['id']}/deliveries").json()["deliveries"]
        by_event = {d["event"]: d for d in log}
        assert set(by_event) == {"crawl.finished", "gap.new", "feedback.negative"}
        assert by_event["crawl.finished"]["attempts"] == 2 and by_event["crawl.finished"]["status"] == "delivered"
        assert [a["response_status"] for a in by_event["crawl.finished"]["log"]] == [500, 200]
        chat.close()


def test_webhook_api_needs_the_tenants_token(data_dir):
    ctx = Context(Settings(data_dir=str(data_dir)))
    try:
        _, token_a = ctx.create_tenant("alpha", "https://alpha.example/")
        ctx.create_tenant("beta", "https://beta.example/")
    finally:
        ctx.close()
    with run_server(data_dir, admin_token="adm") as base, httpx.Client(base_url=base, timeout=30) as client:
        assert client.get("/admin/tenants/alpha/webhooks").status_code == 401
        own = client.get("/admin/tenants/alpha/webhooks", headers={"Authorization": f"Bearer {token_a}"})
        assert own.status_code == 200 and own.json() == {"webhooks": []}
        other = client.get("/admin/tenants/beta/webhooks", headers={"Authorization": f"Bearer {token_a}"})
        assert other.status_code == 403
        spec = client.get("/schema/openapi.json").json()
        assert "/admin/tenants/{tenant_id}/webhooks" in spec["paths"]
        assert not any(path.startswith("/console") for path in spec["paths"])


def test_settings_document_the_webhook_knobs():
    fields = Settings.__struct_fields__
    for name in ("webhook_timeout", "webhook_max_attempts", "webhook_retry_base", "webhook_gap_batch_seconds",
                 "console_session_hours", "console_secret"):
        assert name in fields
    assert Path(__file__).resolve().parents[1].joinpath("README.md").read_text().count("FRONTDESK_WEBHOOK_") >= 4
