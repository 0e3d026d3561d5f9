"""Outgoing webhooks: events written to the tenant's outbox (crawl.finished, crawl.failed, gap.new
in batches, feedback.negative), delivered by one background task — HMAC-SHA256 signed over
`timestamp.body`, retried with exponential backoff, through the crawler's SSRF guard — and the
admin API that configures a tenant's endpoints and reads the delivery log.

Receivers verify `X-Frontdesk-Signature: t=<unix seconds>,v1=<hex>` where
`hex = HMAC-SHA256(secret, f"{t}." + raw body)`, and refuse a `t` older than a few minutes
(a replayed request carries an old timestamp, and changing it breaks the signature).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import ipaddress
import logging
import secrets
import socket
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import msgspec
from litestar import Controller, Request, delete, get, patch, post

from app.routes.admin import ERROR_RESPONSES, authorized_tenant
from app.routes.common import read_json
from app.settings import Settings

# The crawler's SSRF guard: it resolves the host itself, refuses loopback, private, link-local
# and cloud-metadata addresses (metadata even when private networks are allowed) and connects to
# the address it vetted, so DNS rebinding cannot slip through between check and connect.
from ingest.crawl.netguard import GuardedTransport, address_block_reason
from store import webhooks as outbox
from store.errors import FetchError, FrontdeskError, InvalidInput
from store.tenants import Connection, Registry, Tenant

log = logging.getLogger("frontdesk.webhooks")

SIGNATURE_HEADER = "X-Frontdesk-Signature"
EVENT_HEADER = "X-Frontdesk-Event"
DELIVERY_HEADER = "X-Frontdesk-Delivery"
TEST_EVENT = "webhook.test"
#: How long a sender holds a claimed delivery before another process may take it over.
LEASE_SECONDS = 120.0
#: How often the dispatcher looks again for tenants with endpoints (other processes add some).
RESCAN_SECONDS = 60.0
MAX_RETRY_DELAY = 3600.0


class WebhookEvent(msgspec.Struct, kw_only=True):
    """The JSON body of every delivery."""

    id: str
    type: str
    tenant: str
    created_at: float
    data: dict[str, Any]


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(24)


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for `body` sent at `timestamp`."""
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify(secret: str, header: str, body: bytes, *, tolerance: float = 300.0, now: float | None = None) -> bool:
    """What a receiver does: the signature matches and the timestamp is recent (no replays)."""
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    try:
        timestamp = int(parts.get("t", ""))
    except ValueError:
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    expected = sign(secret, timestamp, body).split("v1=", 1)[1]
    return hmac.compare_digest(expected, parts.get("v1", ""))


def event(tenant_id: str, kind: str, data: dict[str, Any]) -> WebhookEvent:
    return WebhookEvent(id="evt_" + uuid.uuid4().hex[:20], type=kind, tenant=tenant_id,
                        created_at=round(time.time(), 3), data=data)


def check_url_shape(url: str) -> str:
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput("the webhook URL must be an http(s) URL with a host", field="url")
    if parts.username or parts.password:
        raise InvalidInput("put no user name or password in the webhook URL (the signature authenticates)", field="url")
    if len(url) > 2000:
        raise InvalidInput("the webhook URL is too long", field="url")
    return url


async def check_target(url: str, allow_private: bool) -> str:
    """Refuse a URL whose host is, or resolves to, an address the crawler may not reach."""
    url = check_url_shape(url)
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        ipaddress.ip_address(host.strip("[]"))
        addresses = [host.strip("[]")]
    except ValueError:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, parts.port or (443 if parts.scheme == "https" else 80),
                                           type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise InvalidInput(f"cannot resolve {host}: {exc.strerror}", field="url") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    for address in addresses:
        if address_block_reason(address, allow_private) is not None:
            hint = "" if allow_private else " (private networks are refused unless the tenant allows them)"
            raise InvalidInput(f"{host} is (or resolves to) {address}, which webhooks may not reach{hint}",
                               field="url")
    return url


def retry_delay(base: float, attempt: int) -> float:
    """Seconds to wait after failed attempt number `attempt` (1, 2, …): base, 2×base, 4×base …"""
    return min(MAX_RETRY_DELAY, base * 2 ** (attempt - 1))


class WebhookDispatcher:
    """The one background task of a process that sends due deliveries of every tenant."""

    def __init__(self, registry: Registry, settings: Settings, *, poll_seconds: float = 1.0) -> None:
        self.registry = registry
        self.settings = settings
        self.poll_seconds = poll_seconds
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._watched: set[str] = set()
        self._due: dict[str, float] = {}
        self._gaps_checked: dict[str, float] = {}
        self._busy: set[str] = set()
        self._rescanned = 0.0
        self._clients: dict[bool, httpx.AsyncClient] = {}
        self._background: set[asyncio.Task] = set()

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._background:
            await asyncio.wait(list(self._background), timeout=self.settings.webhook_timeout + 1)
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()

    def watch(self, tenant_id: str) -> None:
        """Look at this tenant's outbox now (its endpoints or events just changed)."""
        self._watched.add(tenant_id)
        self._due[tenant_id] = 0.0
        self._wake.set()

    # -- events -------------------------------------------------------------------------------

    async def emit(self, tenant: Tenant, kind: str, data: dict[str, Any], *,
                   endpoint_id: int | None = None) -> list[int]:
        """Queue an event for the tenant's endpoints subscribed to it; returns the delivery ids."""
        item = event(tenant.id, kind, data)
        body = msgspec.json.encode(item).decode()

        ids = await tenant.write(lambda conn: tenant.store.webhooks.enqueue(conn, kind, item.id, body,
                                                                            endpoint_id=endpoint_id))
        if ids:
            self.watch(tenant.id)
        return ids

    def _spawn(self, coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def crawl_ended(self, info) -> None:
        """Scheduler callback (an ingest.scheduler.JobInfo): crawl.finished or crawl.failed."""
        kind = "crawl.failed" if info.status == "failed" else "crawl.finished"
        data = {"job": msgspec.to_builtins(info)}

        async def send() -> None:
            try:
                tenant = await anyio.to_thread.run_sync(self.registry.get, info.tenant_id)
                await self.emit(tenant, kind, data)
            except FrontdeskError as exc:  # the tenant was deleted meanwhile
                log.warning("no %s webhook for tenant %s: %s", kind, info.tenant_id, exc.message)

        self._spawn(send())

    async def feedback_negative(self, tenant: Tenant, message_id: str) -> None:
        """Queue feedback.negative for a thumbs-down; never raises (the visitor's feedback is saved)."""
        try:
            found = await tenant.read(lambda conn: tenant.store.conversations.message_view(conn, message_id))
            if found is None:
                return
            conversation_id, message = found
            await self.emit(tenant, "feedback.negative", {
                "conversation_id": conversation_id, "message_id": message.id, "question": message.question,
                "answer": message.answer, "confidence": message.confidence, "answered": message.answered,
                "source": message.source, "citations": [{"url": c.url, "title": c.title} for c in message.citations],
            })
        except Exception:
            log.exception("could not queue feedback.negative for tenant %s", tenant.id)

    # -- delivery -----------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:  # one bad tenant file must not stop every tenant's webhooks
                log.exception("webhook dispatcher tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.poll_seconds)
            self._wake.clear()

    async def tick(self, now: float | None = None) -> None:
        now = time.time() if now is None else now
        if now - self._rescanned >= RESCAN_SECONDS:
            self._rescanned = now
            found = await anyio.to_thread.run_sync(self._tenants_with_endpoints)
            for tenant_id in found - self._watched:
                self.watch(tenant_id)
        for tenant_id in list(self._watched):
            if tenant_id in self._busy:
                continue
            gaps_due = now - self._gaps_checked.get(tenant_id, 0.0) >= self.settings.webhook_gap_batch_seconds
            if gaps_due or self._due.get(tenant_id, float("inf")) <= now:
                self._busy.add(tenant_id)
                self._spawn(self._serve_tenant(tenant_id, gaps_due))

    def _tenants_with_endpoints(self) -> set[str]:
        found = set()
        for tenant_id in self.registry.ids():
            with contextlib.suppress(FrontdeskError):
                tenant = self.registry.get(tenant_id)
                with tenant.reading() as conn:
                    if tenant.store.webhooks.has_endpoints(conn):
                        found.add(tenant_id)
        return found

    async def _serve_tenant(self, tenant_id: str, gaps_due: bool) -> None:
        try:
            tenant = await anyio.to_thread.run_sync(self.registry.get, tenant_id)
            if gaps_due:
                self._gaps_checked[tenant_id] = time.time()
                await anyio.to_thread.run_sync(self._batch_gaps, tenant)
            store = tenant.store
            allow_private = (await tenant.read(tenant.config)).crawl.allow_private_network
            due: list[outbox.DueDelivery] = await tenant.write(
                lambda conn: store.webhooks.claim_due(conn, now=time.time(), lease_seconds=LEASE_SECONDS))
            if due:
                await asyncio.gather(*(self._deliver(tenant, allow_private, item) for item in due))
            next_at = await tenant.read(store.webhooks.next_due)
            self._due[tenant_id] = next_at if next_at is not None else float("inf")
            if next_at is None and not await tenant.read(store.webhooks.has_endpoints):
                self._watched.discard(tenant_id)
        except FrontdeskError as exc:
            log.warning("webhooks of tenant %s skipped: %s", tenant_id, exc.message)
            self._watched.discard(tenant_id)
        finally:
            self._busy.discard(tenant_id)
            if self._due.get(tenant_id, float("inf")) <= time.time():
                self._wake.set()

    def _batch_gaps(self, tenant: Tenant) -> None:
        """New knowledge gaps since each gap.new endpoint's cursor, as one event per endpoint."""
        webhooks = tenant.store.webhooks
        with tenant.write() as conn:
            for endpoint_id in webhooks.gap_endpoints(conn):
                gaps = webhooks.new_gaps(conn, endpoint_id)
                if not gaps:
                    continue
                item = event(tenant.id, "gap.new", {"count": len(gaps), "gaps": [
                    {"question": g.question, "lang": g.lang, "asked": g.count, "page_url": g.page_url,
                     "first_at": g.first_at} for g in gaps]})
                webhooks.enqueue(conn, "gap.new", item.id, msgspec.json.encode(item).decode(), endpoint_id=endpoint_id)
                webhooks.advance_gap_cursor(conn, endpoint_id, gaps[-1].id)
                self._due[tenant.id] = 0.0

    def _client(self, allow_private: bool) -> httpx.AsyncClient:
        client = self._clients.get(allow_private)
        if client is None:
            client = self._clients[allow_private] = httpx.AsyncClient(
                transport=GuardedTransport(allow_private), timeout=self.settings.webhook_timeout,
                follow_redirects=False, trust_env=False, headers={"User-Agent": "frontdesk-webhooks/0.1"})
        return client

    async def _deliver(self, tenant: Tenant, allow_private: bool, item: outbox.DueDelivery) -> None:
        body = item.body.encode()
        timestamp = int(time.time())
        headers = {"Content-Type": "application/json", EVENT_HEADER: item.event, DELIVERY_HEADER: item.event_id,
                   SIGNATURE_HEADER: sign(item.secret, timestamp, body)}
        started = time.perf_counter()
        status: int | None = None
        error, permanent = "", False
        try:
            check_url_shape(item.url)
            async with asyncio.timeout(self.settings.webhook_timeout), \
                    self._client(allow_private).stream("POST", item.url, content=body, headers=headers) as response:
                status = response.status_code  # the receiver's body is never read
            if not 200 <= status < 300:
                error = f"HTTP {status}" + (" (redirects are not followed)" if 300 <= status < 400 else "")
        except FetchError as exc:  # the SSRF guard refused the address: retrying cannot help
            error, permanent = f"refused: {exc.message}", exc.reason == "blocked_private_address"
        except InvalidInput as exc:
            error, permanent = exc.message, True
        except (httpx.HTTPError, TimeoutError, OSError) as exc:
            error = f"{type(exc).__name__}: {exc}"[:300] if str(exc) else type(exc).__name__
        ms = round((time.perf_counter() - started) * 1000, 1)
        delivered = not error
        attempt = item.attempts + 1
        retry_at = None
        if not delivered and not permanent and attempt < self.settings.webhook_max_attempts:
            retry_at = time.time() + retry_delay(self.settings.webhook_retry_base, attempt)

        await tenant.write(lambda conn: tenant.store.webhooks.record_attempt(
            conn, item.id, response_status=status, error=error, ms=ms, delivered=delivered, retry_at=retry_at))
        if not delivered:
            log.warning("webhook %s to %s failed (attempt %d): %s", item.event, item.url, attempt, error,
                        extra={"tenant": tenant.id, "delivery": item.id})


# -- shared by the admin API and the console ----------------------------------------------------


async def create_endpoint(dispatcher: WebhookDispatcher | None, tenant: Tenant, *, url: str, events: list[str],
                          description: str = "") -> tuple[outbox.Endpoint, str]:
    """A checked new endpoint and its signing secret (shown once)."""
    config = await tenant.read(tenant.config)
    url = await check_target(url, config.crawl.allow_private_network)
    secret = new_secret()
    store = tenant.store

    def write(conn: Connection) -> outbox.Endpoint:
        endpoint_id = store.webhooks.add_endpoint(conn, url=url, events=events, secret=secret, description=description)
        return store.webhooks.endpoint(conn, endpoint_id)

    created = await tenant.write(write)
    if dispatcher is not None:
        dispatcher.watch(tenant.id)
    return created, secret


async def change_endpoint(tenant: Tenant, endpoint_id: int, *, url: str | None = None,
                          events: list[str] | None = None, active: bool | None = None,
                          description: str | None = None) -> outbox.Endpoint:
    if url is not None:
        config = await tenant.read(tenant.config)
        url = await check_target(url, config.crawl.allow_private_network)
    store = tenant.store

    def write(conn: Connection) -> outbox.Endpoint:
        store.webhooks.update_endpoint(conn, endpoint_id, url=url, events=events, active=active,
                                       description=description)
        return store.webhooks.endpoint(conn, endpoint_id)

    return await tenant.write(write)


async def rotate_secret(tenant: Tenant, endpoint_id: int) -> str:
    secret = new_secret()

    await tenant.write(lambda conn: tenant.store.webhooks.set_secret(conn, endpoint_id, secret))
    return secret


async def remove_endpoint(tenant: Tenant, endpoint_id: int) -> None:
    await tenant.write(lambda conn: tenant.store.webhooks.delete_endpoint(conn, endpoint_id))


async def send_test(dispatcher: WebhookDispatcher | None, tenant: Tenant, endpoint_id: int) -> list[int]:
    await tenant.read(lambda conn: tenant.store.webhooks.endpoint(conn, endpoint_id))  # NotFound if none
    if dispatcher is None:
        return []
    return await dispatcher.emit(tenant, TEST_EVENT, {"message": "a test delivery from the frontdesk console"},
                                 endpoint_id=endpoint_id)


# -- the admin API ------------------------------------------------------------------------------


class EndpointCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    url: str
    events: list[str] = msgspec.field(default_factory=lambda: list(outbox.EVENTS))
    description: str = ""


class EndpointChange(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    url: str | None = None
    events: list[str] | None = None
    active: bool | None = None
    description: str | None = None


class EndpointCreated(msgspec.Struct):
    endpoint: outbox.Endpoint
    secret: str
    """The signing secret, shown once (rotate it to get a new one)."""


class EndpointList(msgspec.Struct):
    webhooks: list[outbox.Endpoint]


class DeliveryList(msgspec.Struct):
    deliveries: list[outbox.Delivery]


async def _authorized(request: Request, tenant_id: str) -> Tenant:
    return await anyio.to_thread.run_sync(authorized_tenant, request, tenant_id)


def _dispatcher(request: Request) -> WebhookDispatcher | None:
    return getattr(request.app.state, "webhooks", None)


class WebhooksController(Controller):
    path = "/admin/tenants/{tenant_id:str}/webhooks"
    tags = ["admin", "webhooks"]

    @get("/", summary="The tenant's webhook endpoints", responses=ERROR_RESPONSES)
    async def list_endpoints(self, request: Request, tenant_id: str) -> EndpointList:
        tenant = await _authorized(request, tenant_id)
        return EndpointList(await tenant.read(tenant.store.webhooks.endpoints))

    @post("/", status_code=201, summary="Add an endpoint (SSRF-checked); its signing secret is shown once",
          responses=ERROR_RESPONSES)
    async def add(self, request: Request, tenant_id: str) -> EndpointCreated:
        tenant = await _authorized(request, tenant_id)
        body = await read_json(request, EndpointCreate, 16_000)
        created, secret = await create_endpoint(_dispatcher(request), tenant, url=body.url, events=body.events,
                                                description=body.description)
        return EndpointCreated(created, secret)

    @patch("/{endpoint_id:int}", summary="Change an endpoint's URL, events or active flag", responses=ERROR_RESPONSES)
    async def change(self, request: Request, tenant_id: str, endpoint_id: int) -> outbox.Endpoint:
        tenant = await _authorized(request, tenant_id)
        body = await read_json(request, EndpointChange, 16_000)
        return await change_endpoint(tenant, endpoint_id, url=body.url, events=body.events, active=body.active,
                                     description=body.description)

    @delete("/{endpoint_id:int}", status_code=200, summary="Delete an endpoint and its delivery log",
            responses=ERROR_RESPONSES)
    async def remove(self, request: Request, tenant_id: str, endpoint_id: int) -> dict[str, int]:
        tenant = await _authorized(request, tenant_id)
        await remove_endpoint(tenant, endpoint_id)
        return {"deleted": endpoint_id}

    @post("/{endpoint_id:int}/secret", status_code=200, summary="Rotate the signing secret (shown once)",
          responses=ERROR_RESPONSES)
    async def rotate(self, request: Request, tenant_id: str, endpoint_id: int) -> dict[str, str]:
        tenant = await _authorized(request, tenant_id)
        return {"secret": await rotate_secret(tenant, endpoint_id)}

    @post("/{endpoint_id:int}/test", status_code=202, summary="Send a webhook.test event", responses=ERROR_RESPONSES)
    async def test(self, request: Request, tenant_id: str, endpoint_id: int) -> dict[str, list[int]]:
        tenant = await _authorized(request, tenant_id)
        return {"deliveries": await send_test(_dispatcher(request), tenant, endpoint_id)}

    @get("/{endpoint_id:int}/deliveries", summary="The delivery log: every event, its attempts and outcome",
         responses=ERROR_RESPONSES)
    async def log(self, request: Request, tenant_id: str, endpoint_id: int, limit: int = 50) -> DeliveryList:
        tenant = await _authorized(request, tenant_id)
        if not 1 <= limit <= 500:
            raise InvalidInput("limit must be between 1 and 500", field="limit")

        webhooks = tenant.store.webhooks

        def read(conn: Connection) -> list[outbox.Delivery]:
            webhooks.endpoint(conn, endpoint_id)  # NotFound if there is no such endpoint
            return webhooks.deliveries(conn, endpoint_id, limit=limit)

        return DeliveryList(await tenant.read(read))


ROUTES = [WebhooksController]
