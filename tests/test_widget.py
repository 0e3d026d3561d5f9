"""The widget in real headless Chromium against the real server and the real sample site.

The Harbor & Pine site is served by `app.demo.server.DemoSite` from this process for the whole
module and crawled into tenant `demo` for real; `frontdesk serve` runs under granian
(tests/server.py). The answers come from the extractive answerer, or, where tokens must arrive
slowly enough to watch or the model must say something hostile, from tests/llmsrv.py's
OpenAI-compatible server behind the real frontdesk server. Only the widget's handling of a 500
and of a stream cut short is tested with responses faked at the network layer (`page.route`).

Screenshots land in tests/artifacts/ (gitignored); `widget-metrics.json` there holds the widget's
size and the click-to-first-token times measured in the browser.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import msgspec
import pytest

from app.context import Context
from app.demo.server import DemoSite
from app.settings import Settings
from ingest.pipeline import CrawlOptions, crawl
from tests import llmsrv
from tests.browser import (
    ARTIFACTS,
    ASK,
    LAYOUT,
    RECORD_STREAM,
    RECORDED,
    STATE,
    TIME_FIRST_TOKEN,
    WIDGET_READY,
    chromium_path,
    fd,
    launch,
    shot,
)
from tests.server import run_server

pytestmark = [pytest.mark.slow, pytest.mark.browser]

MODEL_CACHE = Path.home() / ".cache" / "frontdesk-tests"
NA = "The assistant is unavailable right now. Check your connection and try again."
CUT = "The answer was interrupted."
RATE = re.compile(r"Too many questions right now — please wait (\d+) s")
ACCENT = "rgb(46, 94, 78)"  # the sample site's data-color="#2e5e4e"

# Everything a hostile stylesheet can throw at an element it can select, all !important.
HOSTILE_CSS = """
* { all: unset !important; }
head, script, style, title { display: none !important; }
html, body { display: block !important; background: #ff0 !important; color: red !important;
  font: italic 40px/3 "Comic Sans MS", cursive !important; letter-spacing: 6px !important;
  text-transform: uppercase !important; }
body * { display: block !important; padding: 12px !important; border: 4px dashed #f0f !important; }
frontdesk-widget, frontdesk-widget * { display: none !important; visibility: hidden !important;
  opacity: 0 !important; position: static !important; width: 10px !important; height: 10px !important;
  font-size: 60px !important; color: red !important; background: lime !important;
  transform: rotate(20deg) scale(2) !important; zoom: 3 !important; filter: blur(4px) !important;
  margin: 50px !important; padding: 50px !important; border: 9px solid red !important;
  box-sizing: content-box !important; z-index: -1 !important; }
button, textarea, form, div, a, span, h2, ol, li, p, svg, path, label {
  all: unset !important; font-size: 50px !important; color: red !important; cursor: crosshair !important;
  text-decoration: line-through !important; width: 900px !important; }
:focus, :focus-visible { outline: 12px solid red !important; }
:root { --a: red; --bg: red; --fg: red; --r: 0; --z: -1; }
"""


class PageSite(DemoSite):
    """The sample site with something added to every page's <head> (a CSP meta tag, a hostile
    stylesheet) and optionally a nonce on the widget's script tag. `{fd}` in `head` becomes the
    frontdesk origin."""

    head = ""
    nonce = ""

    def render(self, file: Path) -> bytes:
        body = super().render(file)
        if file.suffix != ".html":
            return body
        if self.head:
            extra = self.head.replace("{fd}", self.frontdesk_origin).encode()
            body = body.replace(b"<head>", b"<head>\n" + extra, 1)
        if self.nonce:
            tag = f'<script src="{self.frontdesk_origin}/widget.js"'.encode()
            body = body.replace(tag, f'<script nonce="{self.nonce}" src="{self.frontdesk_origin}/widget.js"'.encode())
        return body


@dataclass
class Demo:
    data_dir: Path
    key: str
    sites: dict[str, PageSite]

    def site(self, name: str) -> PageSite:
        return self.sites[name]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Tenant `demo`, crawled for real from the sample site. The same pages are also served from
    other origins (all allowed for the tenant), one per frontdesk server the tests run."""
    data = tmp_path_factory.mktemp("widget") / "data"
    data.mkdir()
    MODEL_CACHE.mkdir(parents=True, exist_ok=True)
    (data / "models").symlink_to(MODEL_CACHE, target_is_directory=True)
    sites = {name: PageSite().start() for name in ("main", "slow", "limited", "down", "page")}
    try:
        ctx = Context(Settings(data_dir=str(data)))
        try:
            tenant, _ = ctx.create_tenant("demo", sites["main"].url + "/", allow_private_network=True,
                                          name="Harbor & Pine")
            others = [site.url for name, site in sites.items() if name != "main"]
            tenant.set_config(msgspec.structs.replace(tenant.config(), allowed_origins=others))
            summary = asyncio.run(crawl(tenant, ctx.tenant_embedder(tenant), CrawlOptions(rate=0)))
            assert summary.fetched == 20 and summary.failed == 0, summary
            key = tenant.widget_key
        finally:
            ctx.close()
        for site in sites.values():
            site.widget_key = key
        yield Demo(data, key, sites)
    finally:
        for site in sites.values():
            site.close()


@pytest.fixture(scope="module")
def fast(demo):
    """The server with its default extractive answerer (first token in milliseconds)."""
    with run_server(demo.data_dir, rate_per_ip=100, rate_burst_ip=1000) as base:
        demo.site("main").frontdesk_origin = base
        demo.site("page").frontdesk_origin = base
        yield base


@dataclass
class Slow:
    base: str
    llm: llmsrv.LLMServer
    site: PageSite


@pytest.fixture(scope="module")
def slow(demo):
    """The server answering through the fake OpenAI-compatible model: a token every 0.15 s."""
    with llmsrv.serve_llm() as llm, run_server(demo.data_dir, llm_base_url=llm.url, llm_model="fake",
                                                 llm_timeout=10, rate_per_ip=100, rate_burst_ip=1000) as base:
        demo.site("slow").frontdesk_origin = base
        yield Slow(base, llm, demo.site("slow"))


@pytest.fixture
def llm(slow, monkeypatch):
    """The fake model, reset after the test (its TOKENS are read on every request)."""
    yield slow.llm
    slow.llm.mode = "ok"
    slow.llm.delay = 0.15


@pytest.fixture(scope="module")
def browser(demo):
    if chromium_path() is None:
        pytest.fail("Chromium is missing: run scripts/install-system-deps.sh (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def pages(browser):
    """`pages(url, **context_options)` → a page in a fresh browser context (its own
    sessionStorage) with the widget loaded. Uncaught page errors fail the test."""
    contexts, errors = [], []

    def open_page(url: str, *, width: int = 1280, height: int = 800, wait_widget: bool = True, **options):
        context = browser.new_context(viewport={"width": width, "height": height}, **options)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.on("pageerror", lambda error: errors.append(f"{url}: {error}"))
        page.goto(url)
        if wait_widget:
            page.wait_for_function(WIDGET_READY)
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert not errors, errors


def state(page) -> dict:
    return page.evaluate(STATE)


def wait_idle(page, answers: int) -> dict:
    """Wait until `answers` answers are shown and nothing is streaming."""
    page.wait_for_function(
        """n => { const r = document.querySelector('frontdesk-widget').shadowRoot;
                  return r.querySelectorAll('[data-fd="answer-text"]').length >= n
                         && r.querySelector('[data-fd="stop"]').hidden; }""", arg=answers)
    return state(page)


def wait_open(page) -> None:
    """The panel has finished its open transition."""
    page.wait_for_function(
        """() => { const p = document.querySelector('frontdesk-widget').shadowRoot.querySelector('[data-fd="panel"]');
                   const s = getComputedStyle(p); return s.visibility === 'visible' && s.opacity === '1'
                   && s.transform === 'none'; }""")


AT_BOTTOM = """() => { const m = document.querySelector('frontdesk-widget').shadowRoot.querySelector('[data-fd="messages"]');
                        return m.scrollTop + m.clientHeight >= m.scrollHeight - 2; }"""


def chat_requests(page) -> list:
    seen: list = []
    page.on("request", lambda r: seen.append(r) if r.method == "POST" and r.url.endswith("/v1/chat") else None)
    return seen


# -- the happy path ---------------------------------------------------------------------------


def test_widget_opens_answers_and_cites_the_right_pages(fast, demo, pages):
    site = demo.site("main")
    page = pages(site.url + "/")
    launcher = page.locator(fd("launcher"))
    assert launcher.is_visible()
    assert launcher.get_attribute("aria-label") == "Ask Harbor & Pine"
    assert not page.locator(fd("panel")).is_visible()
    box = launcher.bounding_box()
    assert (box["width"], box["height"]) == (56, 56)
    assert (1280 - box["x"] - box["width"], 800 - box["y"] - box["height"]) == (20, 20)
    shot(page, "01-launcher")

    launcher.click()
    wait_open(page)
    assert state(page)["focused"] == "input"
    assert page.locator(fd("greeting")).inner_text() == "Hi! Ask me anything about this site."
    page.locator(fd("input")).fill("Do you open on Sundays?")
    page.locator(fd("send")).click()
    now = wait_idle(page, 1)
    assert now["questions"] == ["Do you open on Sundays?"]
    assert "Sunday" in now["answers"][0] and "3:00 pm" in now["answers"][0], now["answers"][0]
    hrefs = [c["href"] for c in now["citations"][0]]
    assert hrefs and hrefs[0] in (site.url + "/contact.html", site.url + "/faq.html"), hrefs
    assert now["status"] == "" and not now["busy"]
    shot(page, "02-answer-with-citations")

    # A citation is a real link to the page, opened in a new tab without an opener.
    link = page.locator(fd("citation")).first
    assert link.get_attribute("target") == "_blank" and link.get_attribute("rel") == "noopener"
    with page.expect_popup() as popup_info:
        link.click()
    popup = popup_info.value
    popup.wait_for_load_state()
    assert popup.url == hrefs[0]
    assert "Harbor & Pine" in popup.title()
    popup.close()

    # Thumbs up reaches the server and is remembered.
    with page.expect_response(lambda r: r.url.endswith("/v1/feedback")) as feedback:
        page.locator(fd("feedback-up")).click()
    assert feedback.value.status == 200
    assert page.locator(fd("feedback-up")).get_attribute("aria-pressed") == "true"

    # A Spanish question is answered in Spanish from a Spanish page.
    page.locator(fd("input")).fill("¿Cuánto cuesta el envío?")
    page.keyboard.press("Enter")
    now = wait_idle(page, 2)
    assert "$7.50" in now["answers"][1], now["answers"][1]
    assert any("/es/" in c["href"] for c in now["citations"][1]), now["citations"][1]
    assert "Envíos y devoluciones" in now["citations"][1][0]["text"]
    shot(page, "03-spanish-answer")


def test_tokens_stream_into_the_dom(slow, llm, pages):
    page = pages(slow.site.url + "/")
    page.evaluate(RECORD_STREAM)
    page.evaluate("q => { window.__fdAsk = window.frontdesk.ask(q); }", "Do you open on Sundays?")
    # Mid-stream: some tokens shown, more to come; Stop replaces nothing, Send is disabled.
    page.wait_for_function(
        """() => { const r = document.querySelector('frontdesk-widget').shadowRoot;
                   const t = r.querySelectorAll('[data-fd="answer-text"]');
                   return t.length && t[t.length - 1].textContent.length >= 12; }""")
    middle = state(page)
    assert middle["busy"] and middle["sendDisabled"]
    assert 0 < len(middle["answers"][0]) < len("".join(llmsrv.TOKENS))
    assert middle["citations"] == [[]]
    shot(page, "04-streaming")
    assert page.evaluate("() => window.__fdAsk") == "done"
    steps = page.evaluate(RECORDED)
    final = "".join(llmsrv.TOKENS)
    done = state(page)
    assert done["answers"] == [final] and not done["busy"] and not done["sendDisabled"]
    assert done["citations"][0], "the answer cites [1]"

    # The typing dots come first, then the text grows while the stop button shows (sentence by
    # sentence: the grounding guard releases each one once checked); citations arrive with the
    # end of the answer, and the busy state ends last.
    assert steps[0]["dots"] and steps[0]["len"] == 0 and steps[0]["busy"]
    lengths = [s["len"] for s in steps]
    assert lengths == sorted(lengths)
    growing = sorted({s["len"] for s in steps if s["busy"] and 0 < s["len"] < len(final)})
    assert len(growing) >= 4, steps
    assert not any(s["cites"] for s in steps if s["len"] < len(final))
    first = next(s["t"] for s in steps if s["len"])
    last = next(s["t"] for s in steps if s["len"] == len(final))
    assert last - first >= 0.15 * 1000 * 5, steps  # sentences arrived over time, not in one chunk
    assert not steps[-1]["busy"]

    # Stop during a stream: the partial answer stays, marked as stopped; focus back in the box.
    page.evaluate("q => { window.__fdAsk = window.frontdesk.ask(q); }", "How much is a latte?")
    page.wait_for_function(
        """() => { const t = document.querySelector('frontdesk-widget').shadowRoot
                   .querySelectorAll('[data-fd="answer-text"]'); return t.length === 2 && t[1].textContent; }""")
    page.locator(fd("stop")).click()
    assert page.evaluate("() => window.__fdAsk") == "stopped"
    stopped = state(page)
    assert 0 < len(stopped["answers"][1]) < len(final)
    assert not stopped["busy"] and stopped["focused"] == "input"
    assert page.locator('frontdesk-widget [data-fd="answer"] >> nth=1').inner_text().endswith("(stopped)")


def streamed_answer(page, site_url: str, tokens: list[str]) -> None:
    """Answer the page's next questions with `tokens`, as the server's SSE stream would carry
    them: what the widget does with text that no server check stopped."""
    events = [("meta", {"conversation_id": "abcdefgh1234", "confidence": 0.9, "lang": "en"}),
              *(("token", {"text": token}) for token in tokens),
              ("citations", {"citations": [{"title": "Gift cards", "url": site_url + "/gift-cards.html",
                                            "snippet": ""}]}),
              ("done", {"message_id": "m1", "latency_ms": 5.0})]
    body = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    headers = {"Access-Control-Allow-Origin": site_url, "Access-Control-Allow-Methods": "POST",
               "Access-Control-Allow-Headers": "Content-Type"}

    def answer(route):
        if route.request.method == "OPTIONS":
            route.fulfill(status=204, headers=headers)
        else:
            route.fulfill(status=200, headers=headers, content_type="text/event-stream", body=body)

    page.route("**/v1/chat", answer)


HOSTILE = ["Here you go: ", "<script>alert(1); window.__pwned = 'script'</script>", " and ",
           '<img src=x onerror="alert(2); window.__pwned = \'img\'">', " <b>bold</b> ",
           '<a href="javascript:alert(3)">link</a>', " [1]."]


def test_ungrounded_model_output_never_reaches_the_visitor(slow, llm, pages, monkeypatch):
    """A model that answers with markup and names its sources never gave: the grounding guard
    (app/grounding.py) shows the extractive answer instead, and none of the model's text."""
    monkeypatch.setattr(llmsrv, "TOKENS", HOSTILE)
    llm.delay = 0.01
    page = pages(slow.site.url + "/")
    assert page.evaluate(ASK, "Do your gift cards expire?") == "done"
    answer = state(page)["answers"][0]
    assert "never expire" in answer
    assert not any(piece.strip() in answer for piece in HOSTILE if len(piece.strip()) > 4)
    assert page.evaluate("() => window.__pwned") is None


def test_model_output_is_rendered_as_text(slow, pages):
    page = pages(slow.site.url + "/")
    streamed_answer(page, slow.site.url, HOSTILE)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    assert page.evaluate(ASK, "Do your gift cards expire?") == "done"
    text = "".join(HOSTILE)
    assert state(page)["answers"] == [text]
    markup = """() => Array.from(document.querySelector('frontdesk-widget').shadowRoot
                 .querySelectorAll('[data-fd="answer-text"] *')).map(e => e.tagName)"""
    assert page.evaluate(markup) == []
    shot(page, "05-injected-markup-as-text")
    # The same after the conversation is restored from sessionStorage on the next page.
    page.reload()
    page.wait_for_function(WIDGET_READY)
    assert state(page)["answers"] == [text]
    assert page.evaluate(markup) == []
    page.wait_for_timeout(200)
    assert dialogs == [] and page.evaluate("() => window.__pwned") is None


def test_a_4000_character_answer_scrolls_inside_the_panel(slow, pages):
    words = [f"word{n:03d} " for n in range(300)]  # 8 characters each
    unbroken = "https://example.test/" + "x" * 279  # one 300-character "word": must wrap, not overflow
    tokens = [*words[: (4000 - 300 - 5) // 8], unbroken, " [1]."]
    text = "".join(tokens)
    tokens.insert(0, "-" * (4000 - len(text)))
    text = "".join(tokens)
    assert len(text) == 4000
    page = pages(slow.site.url + "/")
    streamed_answer(page, slow.site.url, tokens)
    page.locator(fd("launcher")).click()
    wait_open(page)
    panel_before = page.locator(fd("panel")).bounding_box()
    assert page.evaluate(ASK, "When was your building built?") == "done"
    assert state(page)["answers"] == [text]
    assert page.locator(fd("panel")).bounding_box() == panel_before
    scroll = page.evaluate("""() => { const m = document.querySelector('frontdesk-widget').shadowRoot
        .querySelector('[data-fd="messages"]'); const a = m.querySelector('[data-fd="answer"]');
        return {top: m.scrollTop, height: m.scrollHeight, client: m.clientHeight, width: m.scrollWidth,
                clientWidth: m.clientWidth, bubble: a.getBoundingClientRect().width,
                box: m.getBoundingClientRect().width}; }""")
    assert scroll["height"] > 3 * scroll["client"]
    assert scroll["top"] + scroll["client"] >= scroll["height"] - 2, "kept scrolled to the newest text"
    assert scroll["width"] <= scroll["clientWidth"], "no horizontal overflow"
    assert scroll["bubble"] < scroll["box"]
    shot(page, "06-long-answer")


def test_rapid_double_submit_sends_one_request(slow, llm, pages):
    page = pages(slow.site.url + "/")
    sent = chat_requests(page)
    page.locator(fd("launcher")).click()
    page.locator(fd("input")).fill("Can I bring my dog?")
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")
    page.locator(fd("send")).click(force=True)  # disabled while answering: a no-op
    wait_idle(page, 1)
    assert len(sent) == 1 and state(page)["questions"] == ["Can I bring my dog?"]

    page.locator(fd("input")).fill("Which of your breads contain sesame?")
    page.locator(fd("send")).dblclick()
    wait_idle(page, 2)
    assert len(sent) == 2

    results = page.evaluate("""() => Promise.all([window.frontdesk.ask('How many seats does the café have?'),
                                                  window.frontdesk.ask('How many seats, again?')])""")
    assert results == ["done", "busy"]
    assert len(sent) == 3
    assert state(page)["questions"] == ["Can I bring my dog?", "Which of your breads contain sesame?",
                                        "How many seats does the café have?"]
    assert [json.loads(r.post_data)["question"] for r in sent] == state(page)["questions"]


# -- hostile pages ----------------------------------------------------------------------------


def widget_layout(page) -> dict:
    """Launcher closed, then the open panel with an answer: computed styles and boxes."""
    closed = page.evaluate(LAYOUT, ["launcher"])
    page.locator(fd("launcher")).click()
    wait_open(page)
    assert page.evaluate(ASK, "How much is a latte?") == "done"
    page.locator(fd("input")).fill("x")  # the counter/caret state must match too
    names = ["launcher", "panel", "title", "new", "close", "messages", "greeting", "question", "answer",
             "answer-text", "citations", "citation", "feedback-up", "form", "input", "send", "status"]
    return {"closed": closed, "open": page.evaluate(LAYOUT, names)}


def test_hostile_page_css_does_not_change_the_widget(fast, demo, pages):
    site = demo.site("page")
    site.head = ""
    reference = widget_layout(page := pages(site.url + "/faq.html"))
    assert reference["closed"]["launcher"]["background-color"] == ACCENT
    assert reference["open"]["panel"]["opacity"] == "1"
    shot(page, "07-reference-page")
    site.head = f"<style>{HOSTILE_CSS}</style>"
    try:
        hostile_page = pages(site.url + "/faq.html")
        # The hostile sheet is really in force on the page itself.
        assert hostile_page.evaluate("() => getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 0)"
        hostile = widget_layout(hostile_page)
    finally:
        site.head = ""
    for phase in ("closed", "open"):
        for part, styles in reference[phase].items():
            assert hostile[phase][part] == styles, (phase, part)
    shot(hostile_page, "07-hostile-css-page")


def test_strict_content_security_policy(fast, demo, pages):
    """What docs/widget.md tells a site to allow is enough, and nothing more is needed."""
    site = demo.site("page")
    strict = ("default-src 'none'; script-src 'self' {fd}; connect-src {fd}; style-src 'self'; "
              "img-src 'self'; base-uri 'none'; form-action 'self'; "
              "require-trusted-types-for 'script'; trusted-types 'none'")
    record = """document.addEventListener('securitypolicyviolation', e =>
        (window.__csp = window.__csp || []).push(e.violatedDirective + ' ' + e.blockedURI));"""
    violations = "() => window.__csp || []"
    try:
        site.head = f'<meta http-equiv="Content-Security-Policy" content="{strict}">'
        page = pages(site.url + "/contact.html", wait_widget=False)
        page.add_init_script(record)
        page.reload()
        page.wait_for_function(WIDGET_READY)
        launcher = page.evaluate(LAYOUT, ["launcher"])["launcher"]
        assert (launcher["position"], launcher["background-color"]) == ("fixed", ACCENT)
        assert page.evaluate(ASK, "Do you open on Sundays?") == "done"
        assert state(page)["citations"][0]
        page.locator(fd("feedback-up")).click()
        page.wait_for_timeout(300)
        assert page.evaluate(violations) == []
        shot(page, "08-strict-csp")

        # Browsers without constructable stylesheets get a <style> carrying the script's nonce.
        site.nonce = "c3BlY2lhbC1ub25jZQ"
        with_nonce = strict.replace("style-src 'self'", f"style-src 'self' 'nonce-{site.nonce}'")
        site.head = f'<meta http-equiv="Content-Security-Policy" content="{with_nonce}">'
        old = pages(site.url + "/contact.html", wait_widget=False)
        old.add_init_script(record + "delete window.CSSStyleSheet;")
        old.reload()
        old.wait_for_function(WIDGET_READY)
        assert old.evaluate("() => document.querySelector('frontdesk-widget').shadowRoot.querySelector('style').nonce") == site.nonce
        launcher = old.evaluate(LAYOUT, ["launcher"])["launcher"]
        assert (launcher["position"], launcher["background-color"]) == ("fixed", ACCENT)
        assert old.evaluate(violations) == []

        # ...and without that nonce in style-src such a browser shows an unstyled widget.
        site.head = f'<meta http-equiv="Content-Security-Policy" content="{strict}">'
        bare = pages(site.url + "/contact.html", wait_widget=False)
        bare.add_init_script(record + "delete window.CSSStyleSheet;")
        bare.reload()
        bare.wait_for_function(WIDGET_READY)
        assert bare.evaluate(LAYOUT, ["launcher"])["launcher"]["position"] == "static"
        assert any(v.startswith("style-src") for v in bare.evaluate(violations))
    finally:
        site.head, site.nonce = "", ""


# -- keyboard, navigation, phones -------------------------------------------------------------


def test_keyboard_only(fast, demo, pages):
    page = pages(demo.site("main").url + "/")
    for _ in range(80):  # through the page's own links to the launcher, the last stop
        page.keyboard.press("Tab")
        if state(page)["focused"] == "launcher":
            break
    else:
        pytest.fail("Tab never reached the launcher")
    outline = page.evaluate(LAYOUT, ["launcher"])  # the focus ring is visible
    ring = page.evaluate("""() => { const s = getComputedStyle(document.querySelector('frontdesk-widget')
                            .shadowRoot.querySelector('[data-fd="launcher"]')); return [s.outlineStyle, s.outlineWidth]; }""")
    assert ring == ["solid", "3px"], (ring, outline)
    shot(page, "09-keyboard-focus-on-launcher")
    page.keyboard.press("Enter")
    wait_open(page)
    assert state(page)["open"] and state(page)["focused"] == "input"
    page.keyboard.type("How much does shipping cost?")
    page.keyboard.press("Enter")
    now = wait_idle(page, 1)
    assert "$7.50" in now["answers"][0]
    assert now["focused"] == "input"
    page.keyboard.press("Tab")
    assert state(page)["focused"] == "send"
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    assert state(page)["focused"] == "feedback-down"  # the answer's controls are reachable
    page.keyboard.press("Shift+Tab")
    assert state(page)["focused"] == "feedback-up"
    page.keyboard.press("Space")
    assert page.locator(fd("feedback-up")).get_attribute("aria-pressed") == "true"
    page.keyboard.press("Escape")
    closed = state(page)
    assert not closed["open"] and closed["focused"] == "launcher"
    page.locator(fd("panel")).wait_for(state="hidden")  # after its closing transition
    page.keyboard.press("Enter")
    wait_open(page)
    reopened = state(page)
    assert reopened["focused"] == "input" and reopened["questions"] == ["How much does shipping cost?"]


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "Pacific/Pago_Pago"])
def test_today_is_the_visitor_s_day(fast, demo, pages, zone):
    """The widget sends the visitor's clock: "Are you open today?" is answered with the hours row
    of the day it is where the visitor is (UTC+14 and UTC-11 are on different days)."""
    site = demo.site("main")
    page = pages(site.url + "/", timezone_id=zone)
    sent = chat_requests(page)
    page.locator(fd("launcher")).click()
    page.locator(fd("input")).fill("Are you open today?")
    page.keyboard.press("Enter")
    answered = wait_idle(page, 1)
    local_time = json.loads(sent[0].post_data)["page"]["local_time"]
    visitor = datetime.datetime.fromisoformat(local_time)
    expected = datetime.datetime.now(ZoneInfo(zone))
    assert visitor.utcoffset() == expected.utcoffset() and abs(visitor - expected).total_seconds() < 120, local_time
    row = {0: "Monday: Closed", 5: "Saturday: 8:00 am", 6: "Sunday: 8:00 am"}.get(visitor.weekday(), "Tuesday to Friday")
    assert answered["answers"][0].startswith(row), (local_time, answered["answers"][0])


def test_conversation_survives_navigation(fast, demo, pages):
    site = demo.site("main")
    page = pages(site.url + "/")
    sent = chat_requests(page)
    page.locator(fd("launcher")).click()
    page.locator(fd("input")).fill("Do your gift cards expire?")
    page.keyboard.press("Enter")
    before = wait_idle(page, 1)
    assert "never expire" in before["answers"][0] and before["citations"][0], before
    conversation = page.evaluate("k => JSON.parse(sessionStorage.getItem('frontdesk:' + k)).c", demo.key)
    assert conversation

    page.locator('nav a[href="/faq.html"]').click()
    page.wait_for_url(site.url + "/faq.html")
    page.wait_for_function(WIDGET_READY)
    after = state(page)
    for field in ("open", "questions", "answers", "citations"):
        assert after[field] == before[field], field
    assert page.locator(fd("feedback-up")).is_visible()

    page.locator(fd("input")).fill("Can I bring my dog?")
    page.keyboard.press("Enter")
    follow_up = wait_idle(page, 2)
    assert follow_up["answers"][1] and site.url + "/faq.html" in [c["href"] for c in follow_up["citations"][1]]
    assert [json.loads(r.post_data)["conversation_id"] for r in sent] == [None, conversation]
    assert json.loads(sent[1].post_data)["page"]["url"] == site.url + "/faq.html"

    page.go_back()
    page.wait_for_function(WIDGET_READY)
    assert state(page)["questions"] == follow_up["questions"]
    page.locator(fd("new")).click()
    cleared = state(page)
    assert cleared["questions"] == [] and cleared["answers"] == [] and cleared["focused"] == "input"
    page.goto(site.url + "/menu.html")
    page.wait_for_function(WIDGET_READY)
    assert state(page)["questions"] == []


def test_phone_viewport(fast, demo, pages):
    page = pages(demo.site("main").url + "/", width=375, height=667, is_mobile=True, has_touch=True)
    launcher = page.locator(fd("launcher")).bounding_box()
    assert launcher["x"] + launcher["width"] == 375 - 20 and launcher["y"] + launcher["height"] == 667 - 20
    page.locator(fd("launcher")).tap()
    wait_open(page)
    assert page.locator(fd("panel")).bounding_box() == {"x": 0, "y": 0, "width": 375, "height": 667}
    assert not page.locator(fd("launcher")).is_visible()
    # 16px text in the box: phones do not zoom the page when it gets focus.
    assert page.evaluate(LAYOUT, ["input"])["input"]["font-size"] == "16px"
    assert page.evaluate(ASK, "What time do you open on Sunday?") == "done"
    shot(page, "10-phone-375px")
    # Full screen covers the page: Tab cycles inside the panel.
    for _ in range(20):
        page.keyboard.press("Tab")
        assert state(page)["focused"], "focus left the full-screen panel"
    page.locator(fd("close")).tap()
    assert page.locator(fd("launcher")).is_visible()


def test_reduced_motion_and_print(fast, demo, pages):
    page = pages(demo.site("main").url + "/")
    panel = """() => getComputedStyle(document.querySelector('frontdesk-widget').shadowRoot
               .querySelector('[data-fd="panel"]')).transitionDuration"""
    assert "0.16s" in page.evaluate(panel)
    page.emulate_media(reduced_motion="reduce")
    assert set(page.evaluate(panel).split(", ")) == {"0s"}
    page.emulate_media(media="print")
    assert not page.locator(fd("launcher")).is_visible()


# -- failures ---------------------------------------------------------------------------------


def test_rate_limited_visitor_sees_the_wait(demo, pages):
    site = demo.site("limited")
    with run_server(demo.data_dir, rate_per_ip=0.001, rate_burst_ip=1) as base:
        site.frontdesk_origin = base
        page = pages(site.url + "/")
        sent = chat_requests(page)
        assert page.evaluate(ASK, "How much is a latte?") == "done"
        page.locator(fd("input")).fill("Do you open on Sundays?")
        page.keyboard.press("Enter")
        page.wait_for_function("""() => !document.querySelector('frontdesk-widget').shadowRoot
                                  .querySelector('[data-fd="status"]').hidden""")
        now = state(page)
        wait = RATE.fullmatch(now["status"])
        assert wait and 60 <= int(wait.group(1)) <= 1000, now["status"]
        # The question is handed back for later, and sending is blocked until the wait is over.
        assert now["input"] == "Do you open on Sundays?" and now["questions"] == ["How much is a latte?"]
        assert now["sendDisabled"] and not now["retry"]
        assert page.locator(fd("input")).bounding_box()["height"] == 42  # one line, not re-fitted too tall
        shot(page, "11-rate-limited")
        assert page.evaluate(ASK, "Another?") == "rate_limited"
        assert len(sent) == 2
        page.wait_for_function("""n => { const m = /wait (\\d+) s/.exec(document.querySelector('frontdesk-widget')
                                  .shadowRoot.querySelector('[data-fd="status-text"]').textContent);
                                  return m && +m[1] < n; }""", arg=int(wait.group(1)))  # it counts down


def test_dead_server_and_offline_show_their_messages(demo, pages):
    site = demo.site("down")
    with run_server(demo.data_dir) as base:
        site.frontdesk_origin = base
        page = pages(site.url + "/")
        sent = chat_requests(page)
        assert page.evaluate(ASK, "How much is a latte?") == "done"
    # The server is gone now (stopped, port closed).
    page.evaluate("q => { window.__fdAsk = window.frontdesk.ask(q); }", "Do you open on Sundays?")
    assert page.evaluate("() => window.__fdAsk") == "unavailable"
    assert state(page)["status"] == "Connection problem — trying again…"  # one quiet retry first
    page.wait_for_function("""t => document.querySelector('frontdesk-widget').shadowRoot
                              .querySelector('[data-fd="status-text"]').textContent === t""", arg=NA)
    now = state(page)
    assert now["retry"] and len(sent) == 3
    assert now["questions"] == ["How much is a latte?", "Do you open on Sundays?"]
    shot(page, "12-server-unavailable")
    # Retry is held back briefly, then tries again (and fails again: still down).
    page.locator(fd("retry")).click(timeout=5_000)
    page.wait_for_function("""t => { const r = document.querySelector('frontdesk-widget').shadowRoot;
        return r.querySelector('[data-fd="stop"]').hidden && r.querySelector('[data-fd="status-text"]').textContent === t; }""", arg=NA)
    assert len(sent) == 4

    page.context.set_offline(True)
    assert page.evaluate(ASK, "Is the granola in stock?") == "offline"
    assert state(page)["status"] == "You are offline. Check your connection and try again."
    assert len(sent) == 4


def test_server_error_and_cut_stream(fast, demo, pages):
    site = demo.site("main")
    page = pages(site.url + "/")
    calls: list[str] = []

    def cors(route) -> dict[str, str]:
        return {"Access-Control-Allow-Origin": site.url, "Access-Control-Allow-Methods": "POST",
                "Access-Control-Allow-Headers": "Content-Type"}

    def fail(route):
        calls.append(route.request.method)
        if route.request.method == "OPTIONS":
            route.fulfill(status=204, headers=cors(route))
        else:
            route.fulfill(status=500, headers=cors(route), content_type="application/json",
                          body='{"code": "internal_error", "message": "boom"}')

    page.route("**/v1/chat", fail)
    assert page.evaluate(ASK, "How much is a latte?") == "unavailable"
    page.wait_for_function("""t => document.querySelector('frontdesk-widget').shadowRoot
                              .querySelector('[data-fd="status-text"]').textContent === t""", arg=NA)
    assert calls.count("POST") == 2  # the first failure retried once by itself
    page.unroute("**/v1/chat")
    page.locator(fd("retry")).click(timeout=5_000)  # the real server is fine: the answer comes
    recovered = wait_idle(page, 1)
    assert "$4.75" in recovered["answers"][0] and recovered["status"] == ""

    events = [("meta", {"conversation_id": "abcdefgh1234", "confidence": 0.9, "lang": "en"}),
              ("token", {"text": "Partial "}), ("token", {"text": "answer <img src=x onerror=alert(1)>"}),
              ("citations", {"citations": [{"title": "<b>Evil</b>", "url": "javascript:alert(1)"},
                                           {"title": "Menu", "url": site.url + "/menu.html"}]})]
    cut = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    cut += 'event: token\ndata: {"text": " and the rest'  # the connection drops mid-event

    def truncated(route):
        if route.request.method == "OPTIONS":
            route.fulfill(status=204, headers=cors(route))
        else:
            route.fulfill(status=200, headers=cors(route), content_type="text/event-stream", body=cut)

    page.route("**/v1/chat", truncated)
    assert page.evaluate(ASK, "Tell me everything about the menu") == "interrupted"
    now = state(page)
    assert now["answers"][1] == "Partial answer <img src=x onerror=alert(1)>"
    assert now["citations"][1] == [{"href": site.url + "/menu.html", "text": "Menu"}]
    assert now["status"] == CUT and now["retry"]
    assert page.evaluate(AT_BOTTOM), "the status bar must not hide the end of the answer"
    shot(page, "13-interrupted-stream")
    page.unroute("**/v1/chat")
    page.locator(fd("retry")).click()
    final = wait_idle(page, 2)
    assert final["status"] == "" and len(final["answers"]) == 2  # the cut answer replaced


# -- numbers for the report ---------------------------------------------------------------------


QUESTIONS = ["What time do you open on Sunday?", "How much is a latte?", "Is the pine honey granola in stock?",
             "How much does a bag of Harbor Blend coffee cost?", "Can I bring my dog?",
             "Which of your breads contain sesame?", "Do your gift cards expire?",
             "When was your building built?", "How many seats does the café have?",
             "¿A qué hora abrís el domingo?", "¿Cuánto cuesta un capuchino?"]


def test_widget_size_and_click_to_first_token(fast, demo, pages):
    raw = httpx.get(f"{fast}/widget.js", headers={"Accept-Encoding": "identity"})
    with httpx.Client() as client:
        packed = client.send(client.build_request("GET", f"{fast}/widget.js",
                                                  headers={"Accept-Encoding": "gzip"}), stream=True)
        gz_bytes = sum(len(chunk) for chunk in packed.iter_raw())
        packed.close()
    assert raw.status_code == 200 and packed.headers["content-encoding"] == "gzip"
    assert gz_bytes < 12 * 1024, f"widget.js is {gz_bytes} bytes gzipped; the goal is under 12 KB"

    page = pages(demo.site("main").url + "/")
    page.locator(fd("launcher")).click()
    wait_open(page)
    timings = []
    for question in QUESTIONS:
        timings.append(page.evaluate(TIME_FIRST_TOKEN, question))
        time.sleep(0.05)
    first = [t["first_token_ms"] for t in timings]
    report = {"widget_js_bytes": len(raw.content), "widget_js_gzip_bytes": gz_bytes,
              "click_to_first_token_ms": {"median": statistics.median(first), "min": min(first),
                                          "max": max(first), "all": [round(v, 1) for v in first]},
              "click_to_done_ms_median": statistics.median(t["done_ms"] for t in timings)}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "widget-metrics.json").write_text(json.dumps(report, indent=2) + "\n")
    assert len(state(page)["answers"]) == len(QUESTIONS)
    assert statistics.median(first) < 1000, report
