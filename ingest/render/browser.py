"""Headless Chromium for one crawl job: Playwright for Python driving Debian's chromium, a small
pool of pages, every request answered by ``BrowserNetwork``, hostile pages contained.

Imported only when a page is to be rendered (``stage.py``), so a tenant with ``render: never``
never loads Playwright. Nothing is downloaded: the browser is the system's ``chromium``.

What a page can do, and what it gets:

- Chromium's own network goes nowhere (a dead proxy for every host, loopback included, and no
  name resolution): each request reaches the route handler, which answers the crawler's own
  document from the bytes the Fetcher already got (robots.txt, Crawl-delay, conditional GET
  and the size cap applied there) and everything else through ``BrowserNetwork`` or not at all.
  WebSockets are closed, WebRTC gets no UDP, service workers are blocked.
- A navigation the crawler did not start (``location.href = …``, a popup, a form) is answered
  with 204 No Content, which leaves the page where it is; its target is kept as a link.
  ``window.open`` opens nothing (any other popup is closed), dialogs are dismissed; nothing is
  clicked, no form submitted.
- The wait after DOMContentLoaded ends when the network has been quiet for a moment and no
  short timer is pending (a price fetched 250 ms after load is still seen), within a bound.
- One deadline per page (the crawl's ``timeout``), a request budget, a cap on dialogs, a V8 heap
  cap per renderer: a page that loops, floods, spams alerts or allocates without end fails with
  a reason and the browser is recycled. So is a browser whose memory passes the ceiling.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import secrets
import shutil
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
from playwright.async_api import (
    Browser,
    BrowserContext,
    Page,
    Playwright,
    ProxySettings,
    Request,
    Route,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError

from ingest.crawl.urls import UrlPolicy, normalize_url
from ingest.render.network import SECURITY_REASONS, BrowserNetwork, PageBudget
from store.config import CrawlSettings
from store.errors import FetchError

log = logging.getLogger(__name__)

DEFAULT_CHROMIUM = "/usr/bin/chromium"
#: Chromium without the services it dials on its own (the server may have no internet), and
#: without a network of its own: the dead proxy (port 9, discard) catches every connection,
#: loopback included, and no name resolves. The renderer runs without Chromium's sandbox
#: (containers rarely allow it), which is why its network is cut instead.
CHROMIUM_ARGS = (
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-default-apps", "--disable-extensions",
    "--disable-dev-shm-usage", "--mute-audio", "--disable-notifications", "--deny-permission-prompts",
    "--disable-breakpad", "--disable-crash-reporter", "--disable-client-side-phishing-detection",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--host-resolver-rules=MAP * ~NOTFOUND",
)  # fmt: skip
DEAD_PROXY: ProxySettings = {"server": "http://127.0.0.1:9"}
_MARKER = "--frontdesk-render="


class RenderLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds of the browser path (the per-page deadline and size cap are the crawl's own)."""

    pages: int = 2
    """Pages rendered at once (one browser per job): the machine has two cores."""
    settle_ms: int = 500
    """Network idle: this long without a request in flight (and no short timer pending) ends
    the wait…"""
    settle_max_s: float = 5.0
    """…which never lasts longer than this after DOMContentLoaded."""
    max_requests: int = 200
    """fetch()/XMLHttpRequest calls one page may make; past it the page fails (too_many_requests).
    Counted in the page, so a flood stops at once; the network counts too, as a backstop."""
    max_network_requests: int = 1000
    """Requests of any kind (refused ones included) the browser may issue for one page."""
    max_dialogs: int = 20
    """alert/confirm/prompt calls one page may make (each dismissed); past it the page fails."""
    memory_mb: int = 1536
    """Restart the browser when its processes' proportional set size passes this."""
    js_heap_mb: int = 256
    """V8 old-space cap per renderer: endless allocation crashes that renderer, nothing else."""
    page_bytes_factor: int = 4
    """Everything one page loads: at most this many times the crawl's max_bytes."""
    executable: str = DEFAULT_CHROMIUM
    launch_timeout_s: float = 30.0
    close_timeout_s: float = 5.0


class Rendered(msgspec.Struct, kw_only=True):
    html: str
    """The rendered DOM, serialised (page.content())."""
    url: str
    routes: list[str]
    """Same-site URLs the page showed through the History API or tried to navigate to."""
    requests: int
    blocked: list[str]
    """"reason url" of each refused request worth an owner's attention (first 50)."""
    blocked_count: int
    ms: float


def chromium_executable(preferred: str = DEFAULT_CHROMIUM) -> str | None:
    """``preferred`` if it exists; else, for the default path only, chromium on PATH; else None."""
    if Path(preferred).exists():
        return preferred
    if preferred != DEFAULT_CHROMIUM:
        return None
    return shutil.which("chromium") or shutil.which("chromium-browser")


class _PageState:
    """One render in progress on one pool page."""

    def __init__(self, url: str, document: bytes, content_type: str, budget: PageBudget) -> None:
        self.url = url
        self.document = document
        self.content_type = content_type
        self.budget = budget
        self.document_served = False
        self.routes: dict[str, None] = {}
        self.blocked: list[str] = []
        self.blocked_count = 0
        self.dialogs = 0
        self.failure: tuple[str, str] | None = None
        self.failed = asyncio.Event()
        self.in_flight = 0
        self.last_activity = time.monotonic()
        self.closed = False

    def fail(self, reason: str, message: str) -> None:
        if self.failure is None:
            self.failure = (reason, message)
        self.failed.set()

    def block(self, reason: str, url: str) -> None:
        self.blocked_count += 1
        if (reason in SECURITY_REASONS or reason.startswith("popup_")) and len(self.blocked) < 50:
            self.blocked.append(f"{reason} {url}")


class BrowserSession:
    """One browser for one crawl job: a fresh context (no cookies or storage from anyone else),
    ``limits.pages`` pages rendering at once, recycled after a hostile page or past the memory
    ceiling. ``render`` never leaves a page half-done: it returns the DOM or raises FetchError."""

    def __init__(self, config: CrawlSettings, policy: UrlPolicy, limits: RenderLimits | None = None) -> None:
        self.config = config
        self.policy = policy
        self.limits = limits or RenderLimits()
        self.network = BrowserNetwork(config, policy)
        self.launches = 0
        self.recycles: dict[str, int] = {}
        self.popups_blocked = 0
        self.websockets_refused = 0
        self.peak_mb = 0.0
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._context: BrowserContext | None = None
        self._browser_pid: int | None = None
        self._marker = ""
        self._idle: list[Page] = []
        self._own_pages: set[Page] = set()
        self._popups: set[Page] = set()
        self._states: dict[Page, _PageState] = {}
        self._slots = asyncio.Semaphore(self.limits.pages)
        self._lock = asyncio.Condition()
        self._active = 0
        self._recycle_reason: str | None = None

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the Playwright driver and the browser now rather than at the first render;
        FetchError(render_unavailable) if the system has no chromium or it does not start."""
        async with self._lock:
            if self._browser is None:
                await self._launch()

    async def close(self) -> None:
        await self._shutdown_browser()
        if self._playwright is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._playwright.stop(), self.limits.close_timeout_s)
            self._playwright = None
        await self.network.aclose()

    async def _launch(self) -> None:
        """Start the browser (and the driver, the first time). Called with ``_lock`` held."""
        executable = chromium_executable(self.limits.executable)
        if executable is None:
            raise FetchError(f"no chromium at {self.limits.executable} or on PATH (apt-get install chromium)",
                             reason="render_unavailable")
        try:
            if self._playwright is None:
                self._playwright = await async_playwright().start()
            self._marker = secrets.token_hex(8)
            args = [*CHROMIUM_ARGS, f"--js-flags=--max-old-space-size={self.limits.js_heap_mb}",
                    f"{_MARKER}{self._marker}"]
            self._browser = await self._playwright.chromium.launch(
                executable_path=executable, headless=True, args=args, proxy=DEAD_PROXY,
                timeout=self.limits.launch_timeout_s * 1000, handle_sigint=False, handle_sigterm=False,
                handle_sighup=False)
            self._context = await self._browser.new_context(
                service_workers="block", user_agent=self.config.user_agent, accept_downloads=False,
                java_script_enabled=True, viewport={"width": 1280, "height": 900})
        except Exception as exc:  # the driver or the browser would not start: say so, once
            await self._shutdown_browser()
            first = (str(exc) or repr(exc)).splitlines()[0]
            raise FetchError(f"chromium did not start: {first}", reason="render_unavailable") from None
        self._context.set_default_timeout(self.config.timeout * 1000)
        self._context.on("page", self._on_page)
        await self._context.expose_binding("__frontdeskBudgetSpent", self._on_budget_spent)
        await self._context.expose_binding("__frontdeskPopup", self._on_window_open)
        await self._context.add_init_script(_GUARD_SCRIPT.replace("LIMIT", str(self.limits.max_requests)))
        await self._context.route("**/*", self._route)
        await self._context.route_web_socket("**/*", self._refuse_websocket)
        self._browser_pid = _find_browser_pid(self._marker)
        self.launches += 1
        log.info("chromium started (pid %s)", self._browser_pid)

    async def _shutdown_browser(self) -> None:
        self._idle.clear()
        self._own_pages.clear()
        self._popups.clear()
        browser, self._browser, self._context = self._browser, None, None
        if browser is None:
            return
        try:
            await asyncio.wait_for(browser.close(), self.limits.close_timeout_s)
        except (TimeoutError, PlaywrightError):
            log.warning("chromium did not close in time: killing pid %s", self._browser_pid)
        if self._browser_pid is not None and _find_browser_pid(self._marker) == self._browser_pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self._browser_pid, signal.SIGKILL)
        self._browser_pid = None

    def _recycle(self, reason: str) -> None:
        """Restart the browser once the pages rendering on it are done."""
        if self._recycle_reason is None:
            self._recycle_reason = reason

    @contextlib.asynccontextmanager
    async def _lease(self) -> AsyncIterator[Page]:
        async with self._slots:
            async with self._lock:
                while self._recycle_reason is not None and self._active > 0:
                    await self._lock.wait()
                if self._recycle_reason is not None and self._browser is not None:
                    reason = self._recycle_reason
                    self.recycles[reason] = self.recycles.get(reason, 0) + 1
                    log.info("recycling chromium (%s)", reason)
                    await self._shutdown_browser()
                self._recycle_reason = None
                if self._browser is None:
                    await self._launch()
                self._active += 1
            page: Page | None = None
            try:
                page = self._idle.pop() if self._idle else await self._new_page()
                yield page
            finally:
                async with self._lock:
                    self._active -= 1
                    self._check_memory()
                    self._lock.notify_all()

    async def _new_page(self) -> Page:
        assert self._context is not None
        try:
            page = await self._context.new_page()
        except PlaywrightError as exc:
            self._recycle("new_page_failed")
            raise FetchError(f"chromium could not open a page: {exc.message.splitlines()[0]}",
                             reason="render_failed") from None
        self._own_pages.add(page)
        page.on("close", self._forget_page)
        page.on("dialog", self._on_dialog)
        page.on("crash", self._on_crash)
        page.on("framenavigated", self._on_navigated)
        page.on("request", self._on_request)
        page.on("popup", functools.partial(self._on_popup, page))
        return page

    def _forget_page(self, page: Page) -> None:
        self._own_pages.discard(page)

    def _check_memory(self) -> None:
        mb = process_tree_mb(self._browser_pid)
        self.peak_mb = max(self.peak_mb, mb)
        if mb > self.limits.memory_mb:
            self._recycle("memory_ceiling")

    # -- one page --------------------------------------------------------------------------

    async def render(self, url: str, document: bytes, content_type: str = "text/html") -> Rendered:
        """Render ``url`` from the bytes the crawler fetched; FetchError(reason) on failure."""
        async with self._lease() as page:
            started = time.monotonic()  # the deadline counts from here: waiting for a page is not rendering
            deadline = started + self.config.timeout
            budget = PageBudget(self.limits.max_network_requests,
                                self.config.max_bytes * self.limits.page_bytes_factor, deadline)
            state = _PageState(url, document, content_type, budget)
            self._states[page] = state
            clean = False
            try:
                html = await self._run(page, state, deadline)
                clean = True
            finally:
                state.closed = True
                self._states.pop(page, None)
                await self._release_page(page, clean)
        return Rendered(html=html, url=url, routes=list(state.routes), requests=budget.requests,
                        blocked=state.blocked, blocked_count=state.blocked_count,
                        ms=round((time.monotonic() - started) * 1000, 1))

    async def _run(self, page: Page, state: _PageState, deadline: float) -> str:
        html = ""
        try:
            async with asyncio.timeout_at(_loop_time(deadline)):
                await _unless_failed(state, page.goto(state.url, wait_until="domcontentloaded"))
                await _unless_failed(state, self._settle(page, state))
                size = await _unless_failed(state, page.evaluate(_DOM_SIZE))
                if size > self.config.max_bytes:
                    state.fail("render_too_large",
                               f"the rendered page is {size} characters, over {self.config.max_bytes}")
                    raise _PageFailed
                html = await _unless_failed(state, page.content())
        except _PageFailed:
            pass
        except TimeoutError:
            state.fail("render_timeout", f"not rendered within {self.config.timeout:g} s")
        except PlaywrightError as exc:
            message = (exc.message or repr(exc)).splitlines()[0]
            state.fail("render_crashed" if "crash" in message.lower() else "render_failed", message)
        if state.failure is not None:
            reason, message = state.failure
            if reason != "render_too_large":
                self._recycle(reason)
            raise FetchError(f"{state.url}: {message}", reason=reason, url=state.url)
        return html

    async def _settle(self, page: Page, state: _PageState) -> None:
        """Wait until the network is quiet (no request in flight for ``settle_ms``) and no short
        timer is pending, at most ``settle_max_s``: data fetched after load lands in the DOM."""
        quiet = self.limits.settle_ms / 1000
        give_up = time.monotonic() + self.limits.settle_max_s
        while time.monotonic() < give_up:
            idle = state.in_flight == 0 and time.monotonic() - state.last_activity >= quiet
            if idle and not await _pending_timers(page):
                return
            await asyncio.sleep(0.05)

    async def _release_page(self, page: Page, clean: bool) -> None:
        """Back to the pool on about:blank (its timers and scripts gone), or closed."""
        if clean:
            try:
                await asyncio.wait_for(page.goto("about:blank"), self.limits.close_timeout_s)
                self._idle.append(page)
                return
            except (TimeoutError, PlaywrightError):
                self._recycle("page_stuck")
        try:
            await asyncio.wait_for(page.close(run_before_unload=False), self.limits.close_timeout_s)
        except (TimeoutError, PlaywrightError):
            self._recycle("page_stuck")

    # -- events ----------------------------------------------------------------------------

    async def _on_popup(self, opener: Page, popup: Page) -> None:
        """window.open / target=_blank from a page being rendered: closed at once."""
        if (state := self._states.get(opener)) is not None:
            state.block("popup_closed", popup.url or "about:blank")
        await self._close_popup(popup)

    async def _on_page(self, page: Page) -> None:
        """Any other page the crawler did not open (a popup without an opener): closed too."""
        await asyncio.sleep(0.05)  # our own pages are registered when new_page() returns
        if page not in self._own_pages:
            await self._close_popup(page)

    async def _close_popup(self, popup: Page) -> None:
        if popup in self._popups:
            return
        self._popups.add(popup)
        self.popups_blocked += 1
        log.info("render: closed a popup (%s)", popup.url or "about:blank")
        with contextlib.suppress(PlaywrightError):
            await popup.close(run_before_unload=False)

    async def _on_dialog(self, dialog: Any) -> None:
        state = self._states.get(dialog.page) if dialog.page is not None else None
        with contextlib.suppress(PlaywrightError):
            await dialog.dismiss()
        if state is not None:
            state.dialogs += 1
            if state.dialogs > self.limits.max_dialogs:
                state.fail("render_dialog_spam", f"more than {self.limits.max_dialogs} dialogs")

    def _on_request(self, request: Request) -> None:
        """Counted as the page issues them: a flood is stopped without waiting for the route
        handler to work through the queue."""
        state = self._owner(request)
        if state is not None and not state.closed and not state.budget.take_request():
            state.fail("render_too_many_requests", f"more than {state.budget.max_requests} requests")

    def _on_budget_spent(self, source: dict[str, Any], count: int = 0) -> None:
        if (state := self._states.get(source.get("page"))) is not None:  # type: ignore[arg-type]
            state.fail("render_too_many_requests", f"more than {self.limits.max_requests} fetch/XHR calls")

    def _on_window_open(self, source: dict[str, Any], url: str = "") -> None:
        self.popups_blocked += 1
        if (state := self._states.get(source.get("page"))) is not None:  # type: ignore[arg-type]
            state.block("popup_blocked", url or "about:blank")

    def _on_crash(self, page: Page) -> None:
        if (state := self._states.get(page)) is not None:
            state.fail("render_crashed", "the renderer crashed (out of memory, or killed)")

    def _on_navigated(self, frame: Any) -> None:
        if frame.parent_frame is not None:
            return
        state = self._states.get(frame.page)
        if state is None or not frame.url.startswith(("http://", "https://")):
            return
        if normalize_url(frame.url) != normalize_url(state.url):
            state.routes[frame.url] = None  # a client-side route (pushState / replaceState)

    async def _refuse_websocket(self, ws: Any) -> None:
        self.websockets_refused += 1
        log.warning("render: refused websocket to %s (websocket_blocked)", ws.url)
        with contextlib.suppress(PlaywrightError):
            await ws.close()

    # -- the network -----------------------------------------------------------------------

    async def _route(self, route: Route) -> None:
        request = route.request
        state = self._owner(request)
        try:
            if request.is_navigation_request() and await self._navigation(route, request, state):
                return
            url, kind, method = request.url, request.resource_type, request.method
            reason = self.network.block_reason(url, kind, method)
            if state is not None and state.failure is not None:
                reason = reason or "page_failed"
            if state is None or state.closed:
                reason = reason or "page_done"
            if reason is not None:
                await self._refuse(route, state, reason, url, kind)
                return
            assert state is not None
            state.in_flight += 1
            try:
                fetched = await self.network.fetch(method, url, request.headers, request.post_data_buffer,
                                                   kind, state.budget)
            except FetchError as exc:
                await self._refuse(route, state, exc.reason, exc.details.get("url") or url, kind)  # type: ignore[arg-type]
                return
            finally:
                state.in_flight -= 1
                state.last_activity = time.monotonic()
            await route.fulfill(status=fetched.status, headers=fetched.headers, body=fetched.body)
        except PlaywrightError:
            pass  # the page or the browser went away meanwhile: nothing to answer

    async def _navigation(self, route: Route, request: Request, state: _PageState | None) -> bool:
        """Answer a document request if it is one; True when handled."""
        frame = _frame(request)
        main = frame is not None and frame.parent_frame is None
        if state is not None and main and not state.document_served and not state.closed:
            state.document_served = True  # the crawler's own navigation: the bytes it fetched
            state.last_activity = time.monotonic()
            await route.fulfill(status=200, headers={"content-type": state.content_type}, body=state.document)
            return True
        if main or state is None or state.closed:
            # The page navigating itself away, a popup, a reload: stay put (204), keep the target.
            target = normalize_url(request.url)
            if state is not None and target and self.policy.on_site(target):
                state.routes[target] = None
            if state is not None:
                state.block("navigation_blocked", request.url)
                log.info("render: kept %s from navigating to %s", state.url, request.url)
            await route.fulfill(status=204, body=b"")
            return True
        if request.method != "GET":
            if state is not None:
                state.block("form_submit_blocked", request.url)
            await route.abort("blockedbyclient")
            return True
        return False  # an iframe: the network rules decide

    async def _refuse(self, route: Route, state: _PageState | None, reason: str, url: str, kind: str) -> None:
        if state is not None:
            state.block(reason, url)
        page_url = state.url if state is not None else "?"
        if reason in SECURITY_REASONS:
            log.warning("render: refused %s request to %s (%s) from %s", kind, url, reason, page_url)
        else:
            log.debug("render: refused %s request to %s (%s)", kind, url, reason)
        await route.abort("blockedbyclient")

    def _owner(self, request: Request) -> _PageState | None:
        frame = _frame(request)
        if frame is None:
            return None
        try:
            return self._states.get(frame.page)
        except PlaywrightError:
            return None


#: Runs before the page's own scripts in every frame: counts fetch() and XMLHttpRequest calls and
#: refuses them past LIMIT, telling the crawler once; window.open opens nothing and tells the
#: crawler. A page could get around either (a fresh iframe's fetch, a synthetic click on a
#: target=_blank link): the network-level count, the deadline and the popup handlers are still
#: there behind them.
_GUARD_SCRIPT = """(() => {
  let calls = 0, told = false;
  const spent = () => {
    if (++calls <= LIMIT) return false;
    if (!told && typeof window.__frontdeskBudgetSpent === 'function') {
      told = true;
      window.__frontdeskBudgetSpent(calls);
    }
    return true;
  };
  const fetch = window.fetch;
  if (fetch) window.fetch = function (...args) {
    return spent() ? Promise.reject(new TypeError('request budget spent')) : fetch.apply(this, args);
  };
  window.open = function (url) {
    if (typeof window.__frontdeskPopup === 'function') window.__frontdeskPopup(String(url || ''));
    return null;
  };
  // Short timers still pending (a price fetched 250 ms after load): the settle wait waits for them.
  // Timers a timer callback schedules two levels down are polling, and not waited for.
  const live = new Set(), setTimer = window.setTimeout, clearTimer = window.clearTimeout;
  let depth = 0;
  window.setTimeout = function (callback, delay, ...rest) {
    const wait = Number(delay) || 0, level = depth + 1;
    if (typeof callback !== 'function' || wait > 1000 || level > 2) {
      return setTimer.call(this, callback, delay, ...rest);
    }
    const id = setTimer.call(this, function (...args) {
      live.delete(id);
      const outer = depth;
      depth = level;
      try { return callback.apply(this, args); } finally { depth = outer; }
    }, delay, ...rest);
    live.add(id);
    return id;
  };
  window.clearTimeout = function (id) { live.delete(id); return clearTimer.call(this, id); };
  Object.defineProperty(window, '__frontdeskPendingTimers', {get: () => live.size});
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) {
    if (spent()) throw new DOMException('request budget spent', 'NetworkError');
    return send.apply(this, args);
  };
})();"""
_PENDING_TIMERS = "() => window.__frontdeskPendingTimers || 0"
_DOM_SIZE = "() => document.documentElement ? document.documentElement.outerHTML.length : 0"


class _PageFailed(Exception):
    """The page failed (its state says why) while a step was waiting: stop the render."""


async def _unless_failed(state: _PageState, awaitable: Any) -> Any:
    """Await ``awaitable`` unless the page fails first (a crash, a flood, dialog spam)."""
    task = asyncio.ensure_future(awaitable)
    failed = asyncio.ensure_future(state.failed.wait())
    try:
        await asyncio.wait({task, failed}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        failed.cancel()
        if not task.done():
            task.cancel()
            task.add_done_callback(_consume)
    if state.failure is not None:
        raise _PageFailed
    return task.result()


async def _pending_timers(page: Page) -> int:
    try:
        return int(await page.evaluate(_PENDING_TIMERS) or 0)
    except PlaywrightError as exc:
        if "crash" in (exc.message or "").lower():
            raise
        return 0  # a frame replaced meanwhile (its timers went with it), or a page that broke the counter
    except (TypeError, ValueError):
        return 0


def _consume(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: a cancelled step's error is the page's failure, told elsewhere


def _frame(request: Request) -> Any:
    try:
        return request.frame  # raises for service-worker requests and popups not yet attached
    except PlaywrightError:
        return None


def _loop_time(deadline: float) -> float:
    """A time.monotonic() deadline on the event loop's clock."""
    loop = asyncio.get_running_loop()
    return loop.time() + (deadline - time.monotonic())


# -- the browser's processes --------------------------------------------------------------------


def _find_browser_pid(marker: str) -> int | None:
    """The browser process launched with ``marker`` (its children carry --type= instead)."""
    if not marker:
        return None
    needle = f"{_MARKER}{marker}".encode()
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if needle in handle.read():
                    return pid
        except OSError:
            continue
    return None


def _pids() -> list[int]:
    with os.scandir("/proc") as entries:
        return [int(entry.name) for entry in entries if entry.name.isdigit()]


def _process_tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(pid)
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, ()))
    return tree


def process_tree_mb(root: int | None) -> float:
    """Proportional set size of the browser and its children in MB (shared pages counted once
    across the processes sharing them), or their resident size where PSS cannot be read."""
    if root is None:
        return 0.0
    total_kb = 0
    for pid in _process_tree(root):
        total_kb += _memory_kb(pid)
    return total_kb / 1024


def _memory_kb(pid: int) -> int:
    for path, key in ((f"/proc/{pid}/smaps_rollup", b"Pss:"), (f"/proc/{pid}/status", b"VmRSS:")):
        try:
            with open(path, "rb") as handle:
                for line in handle:
                    if line.startswith(key):
                        return int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return 0
