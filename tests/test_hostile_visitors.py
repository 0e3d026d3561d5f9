"""Widget API under abuse (issue 13, item 5), what the soak (tests/chaos/soak.py) found, pinned
against the real server on 127.0.0.1: bodies with invalid UTF-8 or deep nesting were 500s, a
request body sent a byte at a time held its connection for as long as the sender liked, and behind
a trusted proxy the client-written left end of X-Forwarded-For chose the rate-limit bucket."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import httpx
import pytest

from app.context import Context
from app.routes.common import BODY_TIMEOUT_S
from app.settings import Settings
from tests.server import run_server

pytestmark = pytest.mark.slow

MODEL_CACHE = Path.home() / ".cache" / "frontdesk-tests"
ORIGIN = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def tenant_dir(tmp_path_factory) -> tuple[Path, str]:
    """A data dir with one tenant (nothing indexed: every question gets an honest refusal)."""
    data = tmp_path_factory.mktemp("hostile") / "data"
    data.mkdir()
    MODEL_CACHE.mkdir(parents=True, exist_ok=True)
    (data / "models").symlink_to(MODEL_CACHE, target_is_directory=True)
    context = Context(Settings(data_dir=str(data)))
    try:
        tenant, _ = context.create_tenant("t", ORIGIN + "/")
        key = tenant.widget_key
    finally:
        context.close()
    return data, key


def chat(base: str, body: bytes | dict, headers: dict[str, str] | None = None) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{base}/v1/chat", content=content, timeout=30,
                      headers={"Content-Type": "application/json", "Origin": ORIGIN, **(headers or {})})


def assert_stable_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["code"] == code and isinstance(body["message"], str) and body["message"]
    assert "Traceback" not in response.text


def test_invalid_utf8_and_deep_nesting_are_invalid_input_not_500(tenant_dir):
    data, key = tenant_dir
    with run_server(data) as base:
        invalid = b'{"key": "' + key.encode() + b'", "question": "caf\xc3\x28 \xff\xfe?"}'
        assert_stable_error(chat(base, invalid), 400, "invalid_input")
        deep = (b'{"key": "' + key.encode() + b'", "question": "hours?", "page": {"jsonld": '
                + b"[" * 20_000 + b"]" * 20_000 + b"}}")
        assert_stable_error(chat(base, deep), 400, "invalid_input")
        # The feedback route reads its body the same way.
        assert_stable_error(httpx.post(f"{base}/v1/feedback", content=b'{"key": "\xff"}', timeout=30),
                            400, "invalid_input")
        # And the server still answers.
        assert chat(base, {"key": key, "question": "When are you open?"}).status_code == 200


def test_admin_config_bodies_and_invisible_questions_get_stable_errors(tenant_dir):
    """The admin config routes read their bodies like the widget's: invalid UTF-8 and deep nesting
    are 400s, not 500s; a question of nothing but zero-width characters is an empty question."""
    data, key = tenant_dir
    with run_server(data, admin_token="admin-secret") as base:
        auth = {"Authorization": "Bearer admin-secret", "Content-Type": "application/json"}
        config = f"{base}/admin/tenants/t/config"
        for method in ("PATCH", "PUT"):
            bad = httpx.request(method, config, content=b'{"name": "caf\xc3\x28 \xff"}', headers=auth, timeout=30)
            assert bad.status_code == 400 and bad.json()["code"] in ("invalid_input", "invalid_config"), bad.text
            deep = httpx.request(method, config, content=b'{"name": ' + b"[" * 20_000 + b"]" * 20_000 + b"}",
                                 headers=auth, timeout=30)
            assert deep.status_code == 400 and "Traceback" not in deep.text, deep.text
        assert_stable_error(chat(base, {"key": key, "question": "\u200b\u200d\ufeff \u2060"}), 400, "empty_question")
        assert httpx.get(config, headers=auth, timeout=30).json()["site"] == ORIGIN + "/"  # nothing was changed


def test_a_body_that_trickles_in_is_cut_off_with_408(tenant_dir):
    data, key = tenant_dir
    with run_server(data) as base:
        host, port = base.removeprefix("http://").split(":")
        body = json.dumps({"key": key, "question": "When are you open?"}).encode()
        started = time.monotonic()
        with socket.create_connection((host, int(port)), timeout=BODY_TIMEOUT_S + 20) as conn:
            conn.sendall(f"POST /v1/chat HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:5])
            answer = b""
            conn.settimeout(1.0)
            for position in range(5, len(body)):  # a byte a second, as long as the server listens
                try:
                    answer += conn.recv(65536)
                except TimeoutError:
                    conn.sendall(body[position:position + 1])
                    continue
                break
            conn.settimeout(5.0)
            while b"\r\n\r\n" in answer and b'"message"' not in answer:
                more = conn.recv(65536)
                if not more:
                    break
                answer += more
        held = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
        assert BODY_TIMEOUT_S - 1 <= held <= BODY_TIMEOUT_S + 10
        error = json.loads(answer.split(b"\r\n\r\n", 1)[1])
        assert error["code"] == "request_timeout" and error["message"]
        assert httpx.get(f"{base}/healthz").status_code == 200


def ask_statuses(base: str, key: str, forwarded: list[str]) -> list[int]:
    return [chat(base, {"key": key, "question": "When are you open?"}, {"X-Forwarded-For": value}).status_code
            for value in forwarded]


def test_spoofed_forwarded_for_is_ignored_unless_the_proxy_is_trusted(tenant_dir):
    data, key = tenant_dir
    with run_server(data, rate_per_ip=0.01, rate_burst_ip=2) as base:
        # No trusted proxy: three "different" visitors are one peer, and its burst is two.
        assert ask_statuses(base, key, ["198.51.100.1", "198.51.100.2", "198.51.100.3"]) == [200, 200, 429]
    with run_server(data, rate_per_ip=0.01, rate_burst_ip=2, trust_proxy="true") as base:
        # Behind a trusted proxy the visitor is the entry the proxy appended (the last); what the
        # client wrote to its left changes nothing.
        spoofed = [f"203.0.113.{n}, 198.51.100.7" for n in range(3)]
        assert ask_statuses(base, key, spoofed) == [200, 200, 429]
        # A different visitor behind the same proxy has a budget of its own; junk is the peer.
        assert ask_statuses(base, key, ["198.51.100.8"]) == [200]
        assert ask_statuses(base, key, ["not-an-ip", "also junk", "x"]) == [200, 200, 429]
