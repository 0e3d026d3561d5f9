"""Real headless Chromium for the widget tests: Debian's /usr/bin/chromium driven by Playwright for
Python (nothing downloaded), plus small helpers that read the widget's shadow DOM by its data-fd
hooks and keep screenshots in tests/artifacts/."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from playwright.sync_api import Browser, Page, Playwright

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = os.environ.get("FRONTDESK_TEST_CHROMIUM", "/usr/bin/chromium")
# The machine has no internet: without these Chromium keeps dialling Google's services.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-default-apps", "--disable-extensions"]


def chromium_path() -> str | None:
    path = Path(CHROMIUM)
    if path.exists():
        return str(path)
    found = shutil.which("chromium")
    return found


def launch(playwright: Playwright) -> Browser:
    return playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)


def fd(name: str) -> str:
    """A Playwright selector for a widget element; CSS selectors pierce open shadow roots."""
    return f'frontdesk-widget [data-fd="{name}"]'


def shot(page: Page, name: str, **options) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), animations="disabled", **options)
    return path


# JavaScript run in the page. Every function takes one argument (Playwright's evaluate rule).

WIDGET_READY = "() => !!(document.querySelector('frontdesk-widget') && window.frontdesk)"

ASK = "q => window.frontdesk.ask(q)"

STATE = """() => {
  const root = document.querySelector('frontdesk-widget').shadowRoot;
  const all = n => Array.from(root.querySelectorAll(`[data-fd="${n}"]`));
  const one = n => root.querySelector(`[data-fd="${n}"]`);
  const answers = all('answer');
  return {
    open: one('launcher').getAttribute('aria-expanded') === 'true',
    questions: all('question').map(e => e.textContent),
    answers: all('answer-text').map(e => e.textContent),
    citations: answers.map(a => Array.from(a.querySelectorAll('[data-fd="citation"]'))
                                      .map(l => ({href: l.href, text: l.textContent}))),
    status: one('status').hidden ? '' : one('status-text').textContent,
    retry: !one('retry').hidden,
    busy: !one('stop').hidden,
    sendDisabled: one('send').disabled,
    input: one('input').value,
    focused: root.activeElement ? root.activeElement.getAttribute('data-fd') : null,
  };
}"""

# Records every change of the newest answer's text while it streams: (ms since start, length,
# stop button visible, citations shown). Read back with RECORDED.
RECORD_STREAM = """() => {
  const root = document.querySelector('frontdesk-widget').shadowRoot;
  const box = root.querySelector('[data-fd="messages"]');
  const stop = root.querySelector('[data-fd="stop"]');
  const start = performance.now();
  const before = box.querySelectorAll('[data-fd="answer-text"]').length;
  const rec = window.__fdStream = [];
  const observer = new MutationObserver(() => {
    const texts = box.querySelectorAll('[data-fd="answer-text"]');
    if (texts.length <= before) return;
    const last = texts[texts.length - 1];
    const len = last.textContent.length;
    const dots = !!last.querySelector('[aria-hidden="true"]');
    const cites = !!last.parentNode.querySelector('[data-fd="citations"]');
    const prev = rec[rec.length - 1];
    if (!prev || prev.len !== len || prev.busy !== !stop.hidden || prev.cites !== cites || prev.dots !== dots)
      rec.push({t: performance.now() - start, len, busy: !stop.hidden, cites, dots});
  });
  observer.observe(box, {subtree: true, childList: true, characterData: true});
  observer.observe(stop, {attributes: true});
  window.__fdStreamStop = () => observer.disconnect();
}"""

RECORDED = "() => { window.__fdStreamStop(); return window.__fdStream; }"

# Click-to-first-token as the visitor sees it: the question typed, Send clicked, the first
# token's text in the DOM. Resolves with {first_token_ms, done_ms} (performance.now() deltas).
TIME_FIRST_TOKEN = """q => new Promise((resolve, reject) => {
  const root = document.querySelector('frontdesk-widget').shadowRoot;
  const box = root.querySelector('[data-fd="messages"]');
  const input = root.querySelector('[data-fd="input"]');
  const send = root.querySelector('[data-fd="send"]');
  const stop = root.querySelector('[data-fd="stop"]');
  const before = box.querySelectorAll('[data-fd="answer-text"]').length;
  let start = 0, first = null;
  const observer = new MutationObserver(() => {
    const texts = box.querySelectorAll('[data-fd="answer-text"]');
    if (first === null && texts.length > before && texts[texts.length - 1].textContent.length)
      first = performance.now() - start;
    if (first !== null && stop.hidden) {
      observer.disconnect();
      resolve({first_token_ms: first, done_ms: performance.now() - start});
    }
  });
  observer.observe(box, {subtree: true, childList: true, characterData: true});
  observer.observe(stop, {attributes: true});
  setTimeout(() => { observer.disconnect(); reject(new Error('no answer in 20 s')); }, 20000);
  input.value = q;
  input.dispatchEvent(new Event('input'));
  start = performance.now();
  send.click();
})"""

# Computed layout of the widget's parts: what hostile page CSS must not change.
LAYOUT = """names => {
  const root = document.querySelector('frontdesk-widget').shadowRoot;
  const props = ['display', 'position', 'visibility', 'opacity', 'transform', 'zoom', 'font-size',
                 'font-family', 'font-weight', 'line-height', 'letter-spacing', 'text-transform',
                 'color', 'background-color', 'border-top-width', 'border-top-style',
                 'border-top-left-radius', 'padding-top', 'padding-left', 'margin-top', 'margin-left',
                 'box-sizing', 'box-shadow', 'cursor', 'text-decoration-line', 'z-index'];
  const out = {};
  for (const name of names) {
    const el = root.querySelector(`[data-fd="${name}"]`);
    if (!el) { out[name] = null; continue; }
    const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    out[name] = {box: [r.x, r.y, r.width, r.height].map(v => Math.round(v * 10) / 10)};
    for (const p of props) out[name][p] = s.getPropertyValue(p);
  }
  const host = document.querySelector('frontdesk-widget'), hs = getComputedStyle(host);
  out.host = {display: hs.display, position: hs.position, visibility: hs.visibility, opacity: hs.opacity,
              transform: hs.transform, filter: hs.filter, zoom: hs.zoom};
  return out;
}"""
