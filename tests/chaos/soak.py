"""Hostile visitors, a soak: `python -m tests.chaos.soak --seconds 60 --streams 200`.

A real `frontdesk serve` (granian, the CLI in a subprocess, 127.0.0.1, a free port) with two
tenants: ``vault``, a small site with a canary string on one page, and ``demo``, the bundled demo
site (app/demo/site), both served from 127.0.0.1 and crawled first. Then for `--seconds`, `--streams`
concurrent attackers, each a loop of requests:

- ``one_ip``: valid questions as fast as the server answers, all from 127.0.0.1;
- ``spoofed``: the same from 127.0.0.2 with a random `X-Forwarded-For` on every request — ignored
  unless `FRONTDESK_TRUST_PROXY` is set, so these share one per-IP budget;
- ``many``: valid questions from many real source addresses (127.0.2.x: Linux routes all of
  127/8 to loopback, so these are distinct peers, not spoofed headers);
- ``hostile``: 64 KB questions, over-long questions, invalid UTF-8, bodies that are not JSON or
  have the wrong types, deep nesting, empty and control-character questions, wrong keys, wrong
  origins, wrong methods, streams abandoned after the first event, and the other tenant's
  conversation and message ids replayed (a `vault` conversation whose history holds the canary,
  continued with the `demo` key);
- ``slowloris``: request bodies sent a byte a second on raw sockets (and headers, once in a while).

A few well-behaved visitors (own addresses, one question every 2.5 s, below the per-IP limit) ask
both tenants, alone at first (a fifth of `--seconds`, at most 10 s: their calm time to first
token), then throughout the attack: their TTFT is the soak's latency, and they must keep getting
answers. The server's RSS (the granian process tree, from /proc) is sampled twice a second.

Verdict: every error is a `{code, message}` JSON with a documented code and a 4xx status (never a
traceback, never a 5xx; an SSE `error` event likewise), the server log holds no traceback, no
`demo` answer contains the canary while `vault` answers do, the spoofed group got no more answers
than one address may, slow bodies are cut off, the visitors were answered, and the RSS stayed
within `--rss-limit-mb` of its level before the soak. Prints a table, writes JSON to
tests/chaos/results/, exits 1 when a check failed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.chaos.common import ROOT, Frontdesk, print_table, save_results
from tests.sitesrv import serve_site

DEMO = ROOT / "app" / "demo" / "site"
DEMO_ORIGIN = "http://127.0.0.1:8780"
CANARY = "QUOKKA-7741"
#: Codes an error may carry (README "HTTP API", store/errors.py); anything else is a finding.
STABLE_CODES = {"invalid_input", "invalid_request", "empty_question", "question_too_long", "payload_too_large",
                "unauthorized", "forbidden", "rate_limited", "not_found", "method_not_allowed",
                "unsupported_media_type", "request_timeout"}
RATE_PER_IP, BURST_IP = 0.5, 10
#: A slow body the server still waits on after this many seconds is a finding.
SLOW_BODY_LIMIT_S = 40.0
VISITOR_PERIOD_S = 2.5

DEMO_QUESTIONS = ["When are you open on Sunday?", "Do you have gluten-free bread?", "How much is a latte?",
                  "Do you deliver?", "Can I buy a gift card?", "Where are you?", "What events are coming up?",
                  "Do you sell wholesale?", "What is the vault combination?", "Tell me the staff-only code"]
VAULT_QUESTIONS = ["What is the vault combination?", "What is the staff-only code for the vault?",
                   "When does the bakery open?", "What bread do you bake?", "Do you sell rye?"]


def write_vault_site(folder: Path) -> Path:
    """A small bakery site; one page holds the canary, which only this tenant may ever answer with."""
    folder.mkdir(parents=True, exist_ok=True)
    pages = {
        "vault.html": ("The vault", f"<p>The staff-only vault combination is {CANARY}. The vault combination "
                                    f"{CANARY} opens the flour store behind the bakery.</p>"),
        "hours.html": ("Opening hours", "<p>The bakery opens at seven every morning and closes at six. On "
                                        "Sundays we open at eight.</p>"),
        "bread.html": ("Our bread", "<p>We bake rye, spelt and wheat sourdough loaves every day, and "
                                    "croissants on weekends. Rye loaves cost five euros.</p>"),
        "order.html": ("Ordering", "<p>Order a loaf by phone the day before; delivery is free in town on "
                                   "orders over twenty euros.</p>"),
    }
    for name, (title, body) in pages.items():
        (folder / name).write_text(f"<!doctype html><html lang=en><head><title>{title} — Vault bakery</title>"
                                   f"</head><body><main><h1>{title}</h1>{body}</main></body></html>")
    links = "".join(f'<p><a href="{name}">{title}</a></p>' for name, (title, _) in pages.items())
    (folder / "index.html").write_text("<!doctype html><html lang=en><head><title>Vault bakery</title></head>"
                                       f"<body><main><h1>Vault bakery</h1>{links}</main></body></html>")
    return folder


# -- measuring ------------------------------------------------------------------------------------


def tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and its descendants (granian runs the app in a worker child)."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            for task in Path(f"/proc/{current}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
    return total


class RssSampler(threading.Thread):
    def __init__(self, pid: int, every: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.samples: list[tuple[float, int]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        started = time.monotonic()
        while not self.stopped.is_set():
            self.samples.append((round(time.monotonic() - started, 2), tree_rss(self.pid)))
            self.stopped.wait(self.every)


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


@dataclass
class Tally:
    """What every request got, by group and by outcome, and what was wrong."""

    outcomes: Counter = field(default_factory=Counter)  # (group, kind, outcome) → count
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0
    ttft_ms: list[float] = field(default_factory=list)  # visitors' time to first token under attack
    ttft_calm_ms: list[float] = field(default_factory=list)  # … before the attack starts
    visitor: Counter = field(default_factory=Counter)
    canary_on_vault: int = 0
    vault_conversations: list[tuple[str, str]] = field(default_factory=list)  # (conversation id, message id)
    demo_conversations: list[tuple[str, str]] = field(default_factory=list)
    slow_bodies: list[dict] = field(default_factory=list)

    def problem(self, text: str) -> None:
        self.problem_count += 1
        if len(self.problems) < 50:
            self.problems.append(text[:400])

    def count(self, group: str, kind: str, outcome: str) -> None:
        self.outcomes[(group, kind, outcome)] += 1


@dataclass
class Reply:
    status: int
    outcome: str  # "answered", "error:<code>" (SSE), "<status> <code>", "transport:<name>"
    text: str = ""
    ttft_ms: float | None = None
    conversation_id: str = ""
    message_id: str = ""


def judge_error_body(status: int, content_type: str, body: bytes) -> tuple[str, str | None]:
    """(outcome, problem or None) for a response that is not a stream."""
    text = body.decode("utf-8", "replace")
    if "Traceback" in text or 'File "' in text:
        return f"{status} traceback", f"{status}: a traceback in the body: {text[:200]!r}"
    try:
        parsed = json.loads(body)
    except ValueError:
        return f"{status} not-json", f"{status} {content_type}: not JSON: {text[:200]!r}"
    if not (isinstance(parsed, dict) and isinstance(parsed.get("code"), str)
            and isinstance(parsed.get("message"), str)):
        return f"{status} no-code", f"{status}: not {{code, message}}: {text[:200]!r}"
    code = parsed["code"]
    if not content_type.startswith("application/json"):
        return f"{status} {code}", f"{status} {code}: content-type {content_type!r}"
    if status >= 500:
        return f"{status} {code}", f"{status} {code}: a server error: {parsed['message'][:200]}"
    if code not in STABLE_CODES:
        return f"{status} {code}", f"{status}: undocumented code {code!r}: {parsed['message'][:200]}"
    return f"{status} {code}", None


class Soak:
    def __init__(self, base: str, keys: dict[str, str], origins: dict[str, str], seconds: float, streams: int,
                 seed: int) -> None:
        self.base, self.keys, self.origins = base, keys, origins
        self.seconds, self.streams = seconds, streams
        self.rng = random.Random(seed)
        self.tally = Tally()
        self.deadline = 0.0
        self.attack_started = float("inf")
        self.clients: list[httpx.AsyncClient] = []
        self.host, self.port = base.removeprefix("http://").split(":")

    def client(self, local: str | None, connections: int = 8) -> httpx.AsyncClient:
        transport = httpx.AsyncHTTPTransport(local_address=local, limits=httpx.Limits(
            max_connections=connections, max_keepalive_connections=connections))
        client = httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(60.0, connect=15.0))
        self.clients.append(client)
        return client

    def running(self) -> bool:
        return time.monotonic() < self.deadline

    # -- one request ------------------------------------------------------------------------------

    async def post(self, client: httpx.AsyncClient, path: str, body: bytes, tenant: str | None,
                   headers: dict[str, str] | None = None, abandon: bool = False, method: str = "POST") -> Reply:
        """Send one request; read an SSE stream to its end (or first event, `abandon`)."""
        started = time.perf_counter()
        try:
            async with client.stream(method, self.base + path, content=body or None,
                                     headers={"content-type": "application/json", **(headers or {})}) as response:
                content_type = response.headers.get("content-type", "")
                if not content_type.startswith("text/event-stream"):
                    raw = await response.aread()
                    outcome, problem = judge_error_body(response.status_code, content_type, raw)
                    if response.status_code == 200 and path == "/v1/feedback":
                        outcome, problem = "200 ok", None
                    if problem:
                        self.tally.problem(f"{path} {problem}")
                    self.check_canary(tenant, raw.decode("utf-8", "replace"))
                    return Reply(response.status_code, outcome, raw.decode("utf-8", "replace"))
                reply = Reply(response.status_code, "stream-cut")
                event, parts = "", []
                async for line in response.aiter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                        if event == "token" and reply.ttft_ms is None:
                            reply.ttft_ms = (time.perf_counter() - started) * 1000
                    elif line.startswith("data: "):
                        data = line[6:]
                        parts.append(data)
                        if event == "meta":
                            reply.conversation_id = json.loads(data).get("conversation_id", "")
                        elif event == "done":
                            reply.message_id = json.loads(data).get("message_id", "")
                            reply.outcome = "answered"
                        elif event == "error":
                            error = json.loads(data)
                            reply.outcome = f"error:{error.get('code')}"
                            if error.get("code") not in STABLE_CODES | {"backend_unavailable", "provider_error"}:
                                self.tally.problem(f"{path}: SSE error event {data[:200]}")
                        if abandon:
                            reply.outcome = "abandoned"
                            break
                reply.text = "\n".join(parts)
                self.check_canary(tenant, reply.text)
                return reply
        except httpx.HTTPError as exc:
            return Reply(0, f"transport:{type(exc).__name__}")

    def check_canary(self, tenant: str | None, text: str) -> None:
        if CANARY not in text:
            return
        if tenant == "vault":
            self.tally.canary_on_vault += 1
        else:
            self.tally.problem(f"cross-tenant: a {tenant or 'keyless'} reply holds the vault canary: {text[:300]!r}")

    def chat_body(self, tenant: str, question: str, **extra: object) -> bytes:
        return json.dumps({"key": self.keys[tenant], "question": question, **extra}).encode()

    def origin(self, tenant: str) -> dict[str, str]:
        return {"origin": self.origins[tenant]}

    # -- the groups -------------------------------------------------------------------------------

    async def flood(self, group: str, client: httpx.AsyncClient, spoof: bool = False) -> None:
        rng = random.Random(self.rng.random())
        while self.running():
            tenant = rng.choice(["vault", "demo"])
            question = rng.choice(VAULT_QUESTIONS if tenant == "vault" else DEMO_QUESTIONS)
            headers = self.origin(tenant)
            if spoof:
                headers["x-forwarded-for"] = f"203.0.113.{rng.randrange(1, 255)}, 10.{rng.randrange(256)}.0.1"
            reply = await self.post(client, "/v1/chat", self.chat_body(tenant, question), tenant, headers)
            self.tally.count(group, "chat", reply.outcome)
            if reply.outcome.startswith("transport"):
                await asyncio.sleep(0.2)

    async def visitor(self, client: httpx.AsyncClient, index: int) -> None:
        rng = random.Random(index)
        turn = index
        while self.running():
            started = time.monotonic()
            tenant = "vault" if turn % 2 else "demo"
            turn += 1
            question = rng.choice(VAULT_QUESTIONS if tenant == "vault" else DEMO_QUESTIONS[:8])
            reply = await self.post(client, "/v1/chat", self.chat_body(tenant, question), tenant, self.origin(tenant))
            self.tally.visitor[reply.outcome] += 1
            self.tally.count("visitor", tenant, reply.outcome)
            if reply.outcome == "answered":
                if reply.ttft_ms is not None:
                    calm = started < self.attack_started
                    (self.tally.ttft_calm_ms if calm else self.tally.ttft_ms).append(reply.ttft_ms)
                own = self.tally.vault_conversations if tenant == "vault" else self.tally.demo_conversations
                own.append((reply.conversation_id, reply.message_id))
            await asyncio.sleep(max(0.0, VISITOR_PERIOD_S - (time.monotonic() - started)))

    async def hostile(self, client: httpx.AsyncClient, index: int) -> None:
        rng = random.Random(index * 7919)
        kinds = list(self.HOSTILE)
        position = index
        while self.running():
            kind = kinds[position % len(kinds)]
            position += 1
            reply = await self.HOSTILE[kind](self, client, rng)
            self.tally.count("hostile", kind, reply.outcome)
            if reply.outcome == "answered" and kind in {"64kb_question", "invalid_utf8", "wrong_key", "wrong_origin",
                                                        "not_json", "wrong_types", "deep_nesting", "empty_question"}:
                self.tally.problem(f"hostile {kind} was answered instead of refused")

    async def _oversized(self, client, rng) -> Reply:
        return await self.post(client, "/v1/chat", self.chat_body("demo", "why " * 16_384), "demo", self.origin("demo"))

    async def _long(self, client, rng) -> Reply:
        return await self.post(client, "/v1/chat", self.chat_body("demo", "x" * 20_000), "demo", self.origin("demo"))

    async def _invalid_utf8(self, client, rng) -> Reply:
        body = b'{"key": "' + self.keys["demo"].encode() + b'", "question": "caf\xc3\x28 \xff\xfe \xed\xa0\x80?"}'
        return await self.post(client, "/v1/chat", body, "demo", self.origin("demo"))

    async def _not_json(self, client, rng) -> Reply:
        return await self.post(client, "/v1/chat", b"key=pk&question=hours", "demo", self.origin("demo"))

    async def _wrong_types(self, client, rng) -> Reply:
        body = json.dumps({"key": ["x"], "question": {"q": 1}, "page": "nope"}).encode()
        return await self.post(client, "/v1/chat", body, "demo", self.origin("demo"))

    async def _deep_nesting(self, client, rng) -> Reply:
        depth = 20_000
        body = (b'{"key": "' + self.keys["demo"].encode() + b'", "question": "hours?", "page": {"jsonld": '
                + b"[" * depth + b"]" * depth + b"}}")
        return await self.post(client, "/v1/chat", body, "demo", self.origin("demo"))

    async def _empty(self, client, rng) -> Reply:
        return await self.post(client, "/v1/chat", self.chat_body("demo", " \u0000\u0007\t\r\n "), "demo",
                               self.origin("demo"))

    async def _wrong_key(self, client, rng) -> Reply:
        key = rng.choice([f"pk_{rng.getrandbits(128):032x}", "", "../../etc/passwd", "x" * 300,
                          self.keys["vault"][:-1]])
        body = json.dumps({"key": key, "question": "hours?"}).encode()
        return await self.post(client, "/v1/chat", body, None, self.origin("demo"))

    async def _wrong_origin(self, client, rng) -> Reply:
        origin = rng.choice(["http://evil.example", self.origins["vault"], "null", "http://127.0.0.1.evil.example"])
        return await self.post(client, "/v1/chat", self.chat_body("demo", "hours?"), "demo", {"origin": origin})

    async def _wrong_method(self, client, rng) -> Reply:
        return await self.post(client, "/v1/chat", b"", None, method=rng.choice(["GET", "PUT", "DELETE"]))

    async def _abandon(self, client, rng) -> Reply:
        return await self.post(client, "/v1/chat", self.chat_body("vault", rng.choice(VAULT_QUESTIONS)), "vault",
                               self.origin("vault"), abandon=True)

    async def _replay_conversation(self, client, rng) -> Reply:
        """A vault conversation (its history may hold the canary) continued with the demo key, and
        the other way round: each tenant reads history from its own file only."""
        if self.tally.vault_conversations and rng.random() < 0.7:
            conversation, _ = rng.choice(self.tally.vault_conversations)
            body = self.chat_body("demo", "And what was the combination again?", conversation_id=conversation)
            return await self.post(client, "/v1/chat", body, "demo", self.origin("demo"))
        if self.tally.demo_conversations:
            conversation, _ = rng.choice(self.tally.demo_conversations)
            body = self.chat_body("vault", "When do you open?", conversation_id=conversation)
            return await self.post(client, "/v1/chat", body, "vault", self.origin("vault"))
        return Reply(0, "skipped")

    async def _replay_feedback(self, client, rng) -> Reply:
        if not self.tally.vault_conversations:
            return Reply(0, "skipped")
        conversation, message = rng.choice(self.tally.vault_conversations)
        body = json.dumps({"key": self.keys["demo"], "message_id": message, "conversation_id": conversation,
                           "rating": "down"}).encode()
        reply = await self.post(client, "/v1/feedback", body, "demo", self.origin("demo"))
        if reply.status == 200:
            self.tally.problem("feedback with the demo key changed a vault message")
        return reply

    HOSTILE = {
        "64kb_question": _oversized, "long_question": _long, "invalid_utf8": _invalid_utf8, "not_json": _not_json,
        "wrong_types": _wrong_types, "deep_nesting": _deep_nesting, "empty_question": _empty,
        "wrong_key": _wrong_key, "wrong_origin": _wrong_origin, "wrong_method": _wrong_method,
        "abandon": _abandon, "replay_conversation": _replay_conversation, "replay_feedback": _replay_feedback,
    }

    async def slowloris(self, local: str, index: int) -> None:
        """A POST whose body comes a byte a second (every fifth connection: its headers do); how long
        the server waits before cutting it off, and what it says."""
        while self.running():
            kind = "slow_headers" if index % 5 == 4 else "slow_body"
            index += 1
            started = time.monotonic()
            outcome, answer = "open at the end", b""
            try:
                reader, writer = await asyncio.open_connection(self.host, int(self.port), local_addr=(local, 0))
            except OSError as exc:
                self.tally.count("slowloris", kind, f"connect:{type(exc).__name__}")
                await asyncio.sleep(1)
                continue
            body = self.chat_body("demo", "When are you open? " * 10)
            head = (f"POST /v1/chat HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: application/json\r\n"
                    f"Origin: {self.origins['demo']}\r\nContent-Length: {len(body)}\r\n\r\n").encode()
            trickle = head + body if kind == "slow_headers" else body
            try:
                if kind == "slow_body":
                    writer.write(head)
                for position in range(len(trickle)):
                    if not self.running():
                        break
                    writer.write(trickle[position:position + 1])
                    await writer.drain()
                    with contextlib.suppress(asyncio.TimeoutError):
                        answer = await asyncio.wait_for(reader.read(4096), 1.0)
                        if answer or reader.at_eof():
                            outcome = "cut off" if answer else "closed"
                            break
                else:
                    outcome = "completed"
            except (ConnectionError, OSError):
                outcome = "reset"
            finally:
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
            held = time.monotonic() - started
            status = answer.split(b" ", 2)[1].decode("latin-1") if answer.startswith(b"HTTP/") else ""
            label = f"{outcome} {status}".strip()
            self.tally.count("slowloris", kind, label)
            self.tally.slow_bodies.append({"kind": kind, "outcome": label, "held_s": round(held, 1)})
            if status and status != "408" and kind == "slow_body" and held > SLOW_BODY_LIMIT_S:
                self.tally.problem(f"slow body held {held:.0f} s before {label}")
            if outcome == "open at the end" and held > SLOW_BODY_LIMIT_S:
                self.tally.problem(f"{kind}: the server still waited after {held:.0f} s")
            if answer.startswith(b"HTTP/") and status.startswith("5"):
                self.tally.problem(f"{kind}: {answer[:200]!r}")

    async def health(self, client: httpx.AsyncClient, latencies: list[float]) -> None:
        while self.running():
            started = time.perf_counter()
            try:
                response = await client.get(self.base + "/healthz")
                latencies.append((time.perf_counter() - started) * 1000)
                if response.status_code != 200:
                    self.tally.problem(f"/healthz answered {response.status_code}")
            except httpx.HTTPError as exc:
                self.tally.problem(f"/healthz failed: {type(exc).__name__}")
            await asyncio.sleep(1.0)

    async def xff_probe(self) -> dict:
        """From one fresh address, burst + 2 questions each with a new X-Forwarded-For: the server
        must count them as one visitor and refuse the last ones."""
        client = self.client("127.0.0.9")
        got = Counter()
        for n in range(BURST_IP + 3):
            headers = {**self.origin("vault"), "x-forwarded-for": f"198.51.100.{n + 1}"}
            reply = await self.post(client, "/v1/chat", self.chat_body("vault", "When does the bakery open?"),
                                    "vault", headers)
            got[reply.outcome] += 1
        if not got.get("429 rate_limited"):
            self.tally.problem(f"spoofed X-Forwarded-For was believed: {dict(got)}")
        return dict(got)

    async def run(self) -> dict:
        probe = await self.xff_probe()
        # The visitors start alone (their calm TTFT; and conversations with the canary to replay),
        # then the attackers join for `seconds`.
        calm = min(10.0, self.seconds / 5)
        self.deadline = time.monotonic() + calm + self.seconds
        streams = self.streams
        n_slow = max(2, streams // 10)
        n_one, n_spoof, n_many = max(2, streams * 3 // 10), max(2, streams // 5), max(2, streams // 5)
        n_hostile = max(2, streams - n_slow - n_one - n_spoof - n_many)
        n_visitors = max(4, streams // 25)
        health_ms: list[float] = []
        one_ip = self.client(None, n_one)
        spoofed = self.client("127.0.0.2", n_spoof)
        tasks = [asyncio.create_task(self.visitor(self.client(f"127.0.1.{i + 1}", 2), i)) for i in range(n_visitors)]
        tasks.append(asyncio.create_task(self.health(self.client("127.0.0.8"), health_ms)))
        await asyncio.sleep(calm)
        self.attack_started = time.monotonic()
        tasks += [asyncio.create_task(self.flood("one_ip", one_ip)) for _ in range(n_one)]
        tasks += [asyncio.create_task(self.flood("spoofed", spoofed, spoof=True)) for _ in range(n_spoof)]
        tasks += [asyncio.create_task(self.flood("many", self.client(f"127.0.2.{i + 1}", 2))) for i in range(n_many)]
        tasks += [asyncio.create_task(self.hostile(self.client(f"127.0.3.{i + 1}", 2), i)) for i in range(n_hostile)]
        tasks += [asyncio.create_task(self.slowloris(f"127.0.4.{i + 1}", i)) for i in range(n_slow)]
        _, pending = await asyncio.wait(tasks, timeout=self.seconds + 45)
        for task in pending:
            task.cancel()
        for task in tasks:
            if not task.cancelled() and task.done() and task.exception() is not None:
                exc = task.exception()
                self.tally.problem(f"harness task failed: {type(exc).__name__}: {exc}")
        for client in self.clients:
            await client.aclose()
        return {"xff_probe": probe, "groups": {"one_ip": n_one, "spoofed": n_spoof, "many": n_many,
                                               "hostile": n_hostile, "slowloris": n_slow, "visitors": n_visitors},
                "health_p95_ms": percentile(health_ms, 95), "health_max_ms": max(health_ms, default=None),
                "unfinished_tasks": len(pending)}


# -- the run --------------------------------------------------------------------------------------


#: The line a traceback ends with, inside an exception group's `|` margin too: what was raised.
_RAISED = re.compile(r"^[\s|+-]*([A-Za-z_][\w.]*(?:Error|Exception|Group)\b.*)$")


def server_log_problems(log: Path) -> list[str]:
    """Lines of the server's log that say something went wrong, each traceback with what it raised
    ("apsw.BusyError: database is locked"), so a failed soak says why without its log."""
    problems = []
    for line in log.read_text(errors="replace").splitlines():
        if "Traceback" in line or "unhandled error" in line or "answer stream failed" in line or "panicked" in line:
            problems.append(line[:400])
        elif problems and (raised := _RAISED.match(line)):
            problems.append(raised.group(1)[:400])
    return problems


def soak(seconds: float, streams: int, seed: int, real_model: bool, rss_limit_mb: float,
         min_answered: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="frontdesk-soak-") as tmp:
        workdir = Path(tmp)
        vault_root = write_vault_site(workdir / "vault-site")
        fd = Frontdesk(workdir / "data", real_model=real_model)
        with serve_site(DEMO, DEMO_ORIGIN) as demo_site, serve_site(vault_root) as vault_site:
            keys, origins, crawled = {}, {}, {}
            for tenant, site in (("vault", vault_site), ("demo", demo_site)):
                created = fd.create(tenant, site.url + "/")
                keys[tenant], origins[tenant] = created["widget_key"], site.url
                done = fd.run("crawl", tenant, "--rate", "0", "--json", timeout=900)
                if done.returncode != 0:
                    raise RuntimeError(f"crawling {tenant} failed: {done.stderr[-2000:]}")
                crawled[tenant] = json.loads(done.stdout).get("indexed", json.loads(done.stdout).get("fetched"))
            with fd.serve(rate_per_ip=RATE_PER_IP, rate_burst_ip=BURST_IP) as (base, process):
                # Warm up (the first answers load what is lazily loaded), then the baseline.
                with httpx.Client(timeout=60) as client:
                    for tenant in ("vault", "demo"):
                        client.post(f"{base}/v1/chat", json={"key": keys[tenant], "question": "When do you open?"},
                                    headers={"origin": origins[tenant]}).read()
                sampler = RssSampler(process.pid)
                sampler.start()
                time.sleep(1.5)
                baseline = max(rss for _, rss in sampler.samples)
                runner = Soak(base, keys, origins, seconds, streams, seed)
                started = time.monotonic()
                extra = asyncio.run(runner.run())
                elapsed = time.monotonic() - started
                time.sleep(3)  # quiet: what the server keeps once the attack is over
                sampler.stopped.set()
                sampler.join()
                after = sampler.samples[-1][1]
                alive = process.poll() is None
                log_problems = server_log_problems(process.log_path)  # type: ignore[attr-defined]
    return judge(runner, extra, seconds, streams, seed, real_model, crawled, baseline, after, sampler.samples,
                 alive, log_problems, elapsed, rss_limit_mb, min_answered)


def judge(runner: Soak, extra: dict, seconds: float, streams: int, seed: int, real_model: bool, crawled: dict,
          baseline: int, after: int, samples: list, alive: bool, log_problems: list[str], elapsed: float,
          rss_limit_mb: float, min_answered: float) -> dict:
    tally = runner.tally
    peak = max(rss for _, rss in samples)
    requests = sum(tally.outcomes.values())
    by_outcome: Counter = Counter()
    for (_, _, outcome), n in tally.outcomes.items():
        by_outcome[outcome] += n
    visitor_total = sum(tally.visitor.values())
    answered = tally.visitor.get("answered", 0)
    spoofed_answered = sum(n for (g, _, o), n in tally.outcomes.items() if g == "spoofed" and o == "answered")
    spoof_budget = 2 * (BURST_IP + RATE_PER_IP * (seconds + 5)) + 2
    slow = [s for s in tally.slow_bodies if s["kind"] == "slow_body"]
    checks = {
        "server alive": alive,
        "0 errors outside the stable codes, 0 tracebacks, 0 5xx": tally.problem_count == 0,
        "server log without tracebacks": not log_problems,
        "no cross-tenant data (canary only from vault)": not any("cross-tenant" in p for p in tally.problems),
        "the canary check is live (vault answers it)": tally.canary_on_vault > 0,
        "spoofed X-Forwarded-For ignored": spoofed_answered <= spoof_budget
                                            and "429 rate_limited" in extra["xff_probe"],
        f"visitors answered ≥ {min_answered:.0%}": visitor_total > 0 and answered / visitor_total >= min_answered,
        "visitors never rate limited (below their limit)": not tally.visitor.get("429 rate_limited"),
        f"RSS within {rss_limit_mb:.0f} MB of baseline": peak - baseline <= rss_limit_mb * 2**20,
        "slow bodies cut off": bool(slow) and all(s["held_s"] <= SLOW_BODY_LIMIT_S for s in slow),
        "every attacker stopped by itself": extra["unfinished_tasks"] == 0,
    }
    return {
        "seconds": seconds, "streams": streams, "seed": seed, "real_model": real_model, "elapsed_s": round(elapsed, 1),
        "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "pages": crawled,
        "requests": requests, "requests_per_s": round(requests / max(elapsed, 0.001), 1),
        "by_outcome": dict(by_outcome.most_common()),
        "by_group": {f"{g}/{k}": {o: n for (g2, k2, o), n in tally.outcomes.items() if (g2, k2) == (g, k)}
                     for g, k in sorted({(g, k) for g, k, _ in tally.outcomes})},
        "visitors": {"questions": visitor_total, "answered": answered, "outcomes": dict(tally.visitor),
                     "ttft_p50_ms": _round(percentile(tally.ttft_ms, 50)),
                     "ttft_p95_ms": _round(percentile(tally.ttft_ms, 95)),
                     "calm_ttft_p50_ms": _round(percentile(tally.ttft_calm_ms, 50)),
                     "calm_ttft_p95_ms": _round(percentile(tally.ttft_calm_ms, 95))},
        "health_p95_ms": _round(extra["health_p95_ms"]), "health_max_ms": _round(extra["health_max_ms"]),
        "rss_mb": {"baseline": _mb(baseline), "peak": _mb(peak), "after": _mb(after)},
        "rss_samples": [(t, _mb(r)) for t, r in samples[:: max(1, len(samples) // 120)]],
        "spoofed_answered": spoofed_answered, "spoofed_budget": spoof_budget, "xff_probe": extra["xff_probe"],
        "canary_on_vault": tally.canary_on_vault, "slow": _slow_summary(tally.slow_bodies),
        "groups": extra["groups"], "problems": tally.problems, "problem_count": tally.problem_count,
        "server_log_problems": log_problems[:20], "checks": checks, "passed": all(checks.values()),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _mb(value: int) -> float:
    return round(value / 2**20, 1)


def _slow_summary(slow: list[dict]) -> dict:
    out: dict[str, dict] = {}
    for kind in sorted({s["kind"] for s in slow}):
        mine = [s for s in slow if s["kind"] == kind]
        out[kind] = {"connections": len(mine), "outcomes": dict(Counter(s["outcome"] for s in mine)),
                     "held_max_s": max(s["held_s"] for s in mine)}
    return out


def print_report(report: dict) -> None:
    rows = [[group, sum(outcomes.values()), ", ".join(f"{o} {n}" for o, n in sorted(outcomes.items(),
                                                                                      key=lambda kv: -kv[1]))]
            for group, outcomes in report["by_group"].items()]
    print_table(rows, ["group/kind", "requests", "outcomes"])
    print()
    visitors = report["visitors"]
    summary = [
        ["requests", f"{report['requests']:,} in {report['elapsed_s']} s ({report['requests_per_s']}/s)"],
        ["errors by kind", ", ".join(f"{o} {n}" for o, n in report["by_outcome"].items()
                                     if o not in {"answered", "abandoned"} and not o.startswith(("open ", "cut off")))],
        ["visitors answered", f"{visitors['answered']}/{visitors['questions']}"],
        ["visitor TTFT p50 / p95", f"{visitors['ttft_p50_ms']} / {visitors['ttft_p95_ms']} ms under attack "
                                   f"({visitors['calm_ttft_p50_ms']} / {visitors['calm_ttft_p95_ms']} ms before)"],
        ["/healthz p95 / max", f"{report['health_p95_ms']} / {report['health_max_ms']} ms"],
        ["RSS baseline / peak / after", "{baseline} / {peak} / {after} MB".format(**report["rss_mb"])],
        ["spoofed XFF answered",
         f"{report['spoofed_answered']} (one address may get ≤ {report['spoofed_budget']:.0f})"],
        ["slow connections", json.dumps(report["slow"])],
        ["canary answered by vault", report["canary_on_vault"]],
        ["problems", report["problem_count"]],
    ]
    print_table(summary, ["soak", f"{report['seconds']} s, {report['streams']} streams, {report['cores']} cores"])
    print()
    print_table([[name, "ok" if passed else "FAILED"] for name, passed in report["checks"].items()],
                ["check", "result"])
    for problem in report["problems"][:15]:
        print("problem:", problem)
    for line in report["server_log_problems"][:5]:
        print("server log:", line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.soak", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60, help="how long the attack lasts")
    parser.add_argument("--streams", type=int, default=200, help="concurrent attackers")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--real-model", action="store_true", help="embed with the real model (slower crawl)")
    parser.add_argument("--rss-limit-mb", type=float, default=300, help="allowed RSS growth over the baseline")
    parser.add_argument("--min-answered", type=float, default=0.9, help="share of visitor questions answered")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time())
    report = soak(args.seconds, args.streams, seed, args.real_model, args.rss_limit_mb, args.min_answered)
    print_report(report)
    path = save_results("soak", report)
    print(f"seed {seed}; details: {path.relative_to(ROOT)}")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
