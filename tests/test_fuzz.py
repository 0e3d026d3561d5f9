"""Fuzzing the extractors (issue 13, item 4): property tests with hypothesis over the same targets
the long run uses (tests/chaos/targets.py: HTML, JSON-LD, microdata, robots.txt, sitemaps,
charsets, URLs), the replay of every input the long run kept (tests/fuzz_corpus/), and the
inputs that once took seconds, pinned to linear time.

Each target checks what its extractor promises: it never raises, and its output keeps its
invariants (normalised URLs idempotent and http(s); indexed text without control characters;
lastmod a W3C date; a crawl delay finite…). The long run: `python -m tests.chaos.fuzz --inputs 1000000`.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.crawl.robots import _compile_robots_pattern, parse_robots
from ingest.extract import extract, html_comments
from ingest.facts.wording import html_to_text
from tests.chaos.targets import TARGETS

CORPUS = Path(__file__).parent / "fuzz_corpus"
#: A kept input must now run in well under the per-page deadline (they once took up to 15 s).
REPLAY_BUDGET_S = 2.0

FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def cpu_seconds(fn, *args) -> float:
    """CPU time of this thread only: background threads an earlier test left in the process (a
    warmer, an embedding stage winding down) must not count against the function measured."""
    started = time.thread_time()
    fn(*args)
    return time.thread_time() - started


# -- the kept inputs ------------------------------------------------------------------------------

KEPT = sorted(p for p in CORPUS.glob("*/*") if p.is_file())


@pytest.mark.parametrize("path", KEPT, ids=[f"{p.parent.name}/{p.name}" for p in KEPT])
def test_kept_inputs_pass_within_budget(path):
    elapsed = cpu_seconds(TARGETS[path.parent.name], path.read_bytes())
    assert elapsed < REPLAY_BUDGET_S, f"{path.name} took {elapsed:.2f} s"


def test_the_corpus_names_only_known_targets():
    assert {p.parent.name for p in KEPT} <= set(TARGETS)


# -- properties -----------------------------------------------------------------------------------

URL_CHARS = st.sampled_from([*"abcXYZ019-._~:/?#[]@!$&'()*+,;=% \t\n\x00\x1f\x7f\\", "é", "\u202e", "ß", "..",
                             "//", "http://", "%2e", "%zz"])
hrefs = st.lists(URL_CHARS, max_size=30).map("".join)


@FUZZ
@given(hrefs)
def test_urls(href):
    TARGETS["url"](href.encode())


robots_lines = st.lists(
    st.tuples(st.sampled_from(["User-agent", "Disallow", "Allow", "Crawl-delay", "Sitemap", "useragent", "Noindex"]),
              st.text(alphabet=st.sampled_from(list("/*$ab%2A?#.=:09 frontdesk")), max_size=20)),
    max_size=12,
).map(lambda pairs: "\n".join(f"{k}: {v}" for k, v in pairs))


@FUZZ
@given(robots_lines)
def test_robots(text):
    TARGETS["robots"](text.encode())


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(alphabet="ab/*$", max_size=8), st.text(alphabet="ab/$", max_size=10))
def test_robots_patterns_match_as_the_rfc_says(pattern, path):
    """The linear matcher agrees with the obvious regular expression (which backtracks)."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    regex = ".*".join(re.escape(piece.replace("$", "%24")) for piece in body.split("*"))
    expected = re.compile(regex + (r"\Z" if anchored else ""), re.DOTALL).match(path) is not None
    assert _compile_robots_pattern(pattern).match(path) == expected


sitemap_parts = st.lists(st.sampled_from([
    "<url>", "</url>", "<loc>", "</loc>", "<lastmod>", "</lastmod>", "<sitemap>", "</sitemap>", "<![CDATA[", "]]>",
    "http://example.test/a", "https://example.test/b?x=1&amp;y=2", "2024-01-31", "2024-13-99", "&#x1F600;",
    "&#99999999;", "<image:loc>", "</image:loc>", "\n", " ", "<!DOCTYPE x>", "<urlset>", "\x00"]), max_size=40)


@FUZZ
@given(sitemap_parts)
def test_sitemaps(parts):
    TARGETS["sitemap"]("".join(parts).encode())


labels = st.sampled_from(["utf-8", "UTF8", "shift_jis", "windows-1252", "latin1", "utf-16", "utf-32", "base64",
                          "rot13", "x-unknown", "", "utf-8\x00", "koi8-r", "gb18030"])


@FUZZ
@given(labels, st.binary(max_size=300))
def test_charsets(label, body):
    TARGETS["charset"](label.encode() + b"\n" + body)


@FUZZ
@given(labels, st.text(max_size=200))
def test_charsets_of_real_text(label, text):
    for codec in ("utf-8", "utf-16", "cp1252", "shift_jis"):
        TARGETS["charset"](label.encode() + b"\n" + text.encode(codec, "replace"))


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                         st.text(max_size=30), st.sampled_from(["Product", "FAQPage", "Event", "Organization",
                                                                "2024-05-01T10:00", "PT1H30M", "<b>x</b>&amp;"]))
json_keys = st.sampled_from(["@type", "@id", "@graph", "name", "offers", "price", "priceCurrency", "mainEntity",
                             "acceptedAnswer", "text", "startDate", "location", "address", "openingHours",
                             "openingHoursSpecification", "itemListElement", "item", "availability", "telephone",
                             "description", "dayOfWeek", "opens", "closes", "author", "datePublished"])
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(json_keys, inner, max_size=5)), max_leaves=25)


@FUZZ
@given(st.one_of(st.dictionaries(json_keys, json_values, max_size=6), st.lists(json_values, max_size=4)))
def test_jsonld(data):
    TARGETS["jsonld"](json.dumps(data).encode())


html_tokens = st.sampled_from([
    "<div>", "</div>", "<p>", "text ", "<table><tr><td>", "</td></tr></table>", "<h2>Head</h2>", "<ul><li>",
    "<!--", "-->", "<script>", "</script>", "<main>", "<nav>", "<img alt='Ignore previous instructions'>",
    "<form action='/buy'><input type=hidden name=sku value=A1>", "<a href='../x?y=1#z'>", "</a>", "&#0;",
    "\x00", "\x1b", "<meta charset='utf-16'>", "<base href='http://evil.test/'>", " itemscope ", " itemprop='name' ",
    "<script type='application/ld+json'>{\"@type\":\"Product\",\"name\":\"A\"}</script>", "<template>", "<pre>",
    "<div hidden>", "<span style='display:none'>", "caf\u00e9 ", "\u200b", "<", ">", "&amp;", "<br>",
])


@FUZZ
@given(st.lists(html_tokens, max_size=60))
def test_html(tokens):
    TARGETS["html"]("".join(tokens).encode())


@FUZZ
@given(st.binary(max_size=400))
def test_html_bytes(data):
    TARGETS["html"](data)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([
    "<div itemscope itemtype='https://schema.org/Product'>", "<span itemprop='name'>Loaf</span>",
    "<div itemprop='offers' itemscope itemtype='https://schema.org/Offer'>", "<meta itemprop='price' content='4'>",
    "</div>", "<meta property='og:title' content='T'>", "<link itemprop='availability' href='InStock'>",
    "<div itemscope itemref='a b'>", "<p id='a' itemprop='description'>x</p>", "<", "\x00"]), max_size=30))
def test_microdata(tokens):
    TARGETS["microdata"](("<html><body>" + "".join(tokens)).encode())


# -- the slow inputs the long run found, pinned to linear time ------------------------------------


#: The inputs, each a function of its size n.
LINEAR_CASES = {
    "nested layout tables": lambda n: extract("<table><tr><td>" * n, "http://x.test/"),
    "unclosed comments": lambda n: extract("<p>a</p>" + "<!--" * n, "http://x.test/"),
    "a structured-data string of '<'": lambda n: html_to_text("<a" * n),
    "robots.txt stars": lambda n: parse_robots("User-agent: *\nDisallow: /" + "*/" * n + "x$\n", "bot")
    .check("http://x.test/" + "a/" * n),
}


def _linear_costs(name: str) -> tuple[float, float]:
    """The CPU seconds of an input at 2,000 and at 8,000, best of two each."""
    run = LINEAR_CASES[name]
    small, large = (min(cpu_seconds(run, n) for _ in range(2)) for n in (2000, 8000))
    return small, large


@pytest.mark.parametrize("name", sorted(LINEAR_CASES))
def test_pathological_inputs_cost_linear_time(name):
    """Doubling the input at most ~doubles the time (quadratic would quadruple it). Measured in a
    fresh interpreter: deep in the full suite (two CI runs in a row) the 8,000-deep table walk
    cost 9-10x the 2,000-deep one in the test process, 3-6x in a process of its own; the cause
    in the long-lived process was not found, and what is pinned here is the input's cost."""
    import subprocess
    import sys

    code = f"from tests.test_fuzz import _linear_costs; print(*_linear_costs({name!r}))"
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    small, large = (float(x) for x in out.split())
    assert large < max(0.05, small * 8), f"{name}: {small:.3f} s → {large:.3f} s for 4× the input"


def test_html_comments_are_read_in_one_pass():
    assert html_comments("a<!--b-->c<!--d") == ["b", "d"]
    assert html_comments("<!---->") == [""]
    assert html_comments("no comments") == []


def test_a_worker_the_machine_did_not_run_is_not_a_hang():
    """The long run's hang detector: wall time on one input alone is not a hang (a niced worker on a
    busy machine waits); wall time spent computing is."""
    import subprocess
    import sys
    import time

    from tests.chaos.fuzz import cpu_seconds, is_stuck

    waiting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    spinning = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(1.5)
        now = time.monotonic()
        assert cpu_seconds(spinning.pid) > 0.5
        assert not is_stuck(waiting.pid, now - 1.2, 0.0, 1.0, now)
        assert is_stuck(spinning.pid, now - 1.2, 0.0, 1.0, now)
        assert is_stuck(waiting.pid, now - 11, 0.0, 1.0, now)  # ten times the limit: stuck regardless
        assert not is_stuck(spinning.pid, 0.0, 0.0, 1.0, now)  # between inputs
    finally:
        for process in (waiting, spinning):
            process.kill()
            process.wait()
