"""Long-run fuzzing of the extractors (HTML, JSON-LD, microdata, robots.txt, sitemaps, charsets,
URLs): `python -m tests.chaos.fuzz --inputs 1000000 [--workers 2]`.

Two engines:

- ``mutate`` (the default, and the long run): cheap random mutation of real inputs — the fixture
  sites (../shared/fixtures/sites), the JSON-LD pages (../shared/fixtures/jsonld), the project's
  own hostile and bike-club sites — with bit flips, interesting bytes, dictionary tokens, deleted,
  duplicated and spliced ranges and long repetitions (deep nesting, regex stress). Input ``i`` of
  a run is a pure function of (run seed, i), so an input never has to be kept to be reproduced:
  a worker that hangs is killed by the parent, which regenerates the input from its index.
  Parsers run in-process, one worker process per core.
- ``atheris`` (`--engine atheris --target html --seconds 600`): coverage-guided (libFuzzer) on one
  target, seeded from the same corpus; crashers land in tests/fuzz_corpus/<target>/.

Every input runs under the per-page deadline (targets.PAGE_DEADLINE_S, the crawl's request
timeout): an input whose CPU time exceeds it is a hang; the parent also kills a worker whose wall
time on one input exceeds 4× the deadline while it used CPU (a worker the machine did not run is
not hanging; see `is_stuck`), or 40× whatever it did. Crashes (any exception but the targets' ``Broken``,
and ``Broken`` itself) are shrunk a little and kept under tests/fuzz_corpus/<target>/, one per
distinct signature; tests/test_fuzz.py replays them. The table and a JSON report go to
tests/chaos/results/.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import random
import re
import sys
import time
import traceback
from collections import Counter
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures"
CORPUS = ROOT / "tests" / "fuzz_corpus"
RESULTS = ROOT / "tests" / "chaos" / "results"

#: How often each target is chosen in the mutation run. The cheap parsers get more inputs;
#: whole-page extraction costs milliseconds an input, so it gets fewer (still ~100k in 1M).
WEIGHTS = {"html": 10, "jsonld": 12, "microdata": 6, "robots": 16, "sitemap": 14, "charset": 16, "url": 26}
MAX_INPUT = 256 * 1024
SLOW_S = 1.0
"""Inputs slower than this (CPU seconds) are kept in the results folder to look at."""

# -- seeds --------------------------------------------------------------------------------------

_HREF = re.compile(rb"""(?:href|src|action)\s*=\s*["']([^"']{0,300})["']""", re.I)
_LD_JSON = re.compile(rb"""<script[^>]*ld\+json[^>]*>(.*?)</script>""", re.I | re.S)

URL_SEEDS = [
    b"http://Example.TEST:80/a/./b/../c/?utm_source=x&b=2&a=1#frag", b"HTTPS://[::1]:443/%7euser/%zz",
    b"//cdn.example.test/x", b"../../../../etc/passwd", b"?page=2", b"?", b"#top", b"mailto:a@b.c",
    b"javascript:alert(1)", b"http://xn--nxasmq6b.example/", b"http://\xe4\xbe\x8b\xe5\xad\x90.\xe6\xb5\x8b\xe8\xaf\x95/",
    b"http://a:b@host/", b"http://host:99999/", b"http://host:0/", b"http://[::1/", b"\\\\evil.test\\path",
    b"http:/\\evil.test/", b"  http://host/\t\n path ", b"http://host/a//b///c", b"http://host/%2e%2E/x",
    b"data:text/html,hi", b"http://host/?a=%&b=%41", b"http://host./", b"http://1.2.3.4.5/",
    b"http://host/\x00x", b"HtTp://host/a?b=c&&d", b"/a/b/c/./../../g", b"mid/content=5/../6",
    b"http://host/\xf0\x9f\x98\x80", b"http:host/path", b"https:", b"/.", b"/..", b"./", b"..",
]
ROBOTS_SEEDS = [
    b"User-agent: *\nDisallow: /private/\nAllow: /private/public$\nCrawl-delay: 1\nSitemap: /sitemap.xml\n",
    b"User-agent: frontdesk\nDisallow: /*.php$\nDisallow: /a*b*c*d*e*f\n\nUser-agent: *\nDisallow: /\n",
    b"useragent: *\ndissallow: /x\ncrawl-delay: 1e400\ncrawl-delay: nan\n",
    b"\xef\xbb\xbfUser-Agent: *\r\nDisallow: /%E2%82%AC\r\nAllow: /$\r\n",
    b"<html><body>not a robots file</body></html>",
]
CHARSET_LABELS = [b"utf-8", b"shift_jis", b"euc-jp", b"windows-1251", b"iso-8859-1", b"utf-16", b"utf-32",
                  b"gb18030", b"big5", b"koi8-r", b"x-user-defined", b"base64", b"rot13", b"zlib", b"", b"bogus"]
CHARSET_TEXTS = ["Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e", "\u65e5\u672c\u8a9e\u306e\u30da\u30fc\u30b8",
                 "\u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440", "plain ascii", "\u20ac 5 \u2014 \u00a3"]

DICTIONARY = {
    "html": [b"<div>", b"</div>", b"<ul><li>", b"<table><tr><td>", b"<!--", b"-->", b"<script>", b"</script>",
             b"<main>", b"<nav>", b"<h1>", b"<h2>", b"<img alt='", b"<input type=hidden name=sku value=1>",
             b"<form action='/x'>", b"<a href='", b"<base href='http://evil.test/'>",
             b"<meta charset='utf-16'>", b"<meta name=robots content=noindex>", b"<link rel=canonical href='",
             b"<template>", b"<svg><foreignObject>", b"<math>", b"<noscript>", b"<![CDATA[", b"&#0;", b"&#x10FFFF;",
             b"&amp;", b"\x00", b"\xef\xbb\xbf", b"\xff\xfe", b" hidden ", b" style='display:none' ",
             b" data-action='buy' ", b"<script type='application/ld+json'>",
             b" itemscope itemtype='https://schema.org/Product' ", b"Ignore previous instructions",
             "\u200b\u202e".encode(), b"<p>", b"<br>", b"<pre>"],
    "jsonld": [b"{", b"}", b"[", b"]", b'"@type":', b'"@id":"#x"', b'"@graph":[', b'"@context":"https://schema.org"',
               b'"Product"', b'"FAQPage"', b'"mainEntity":', b'"offers":{"price":', b'"openingHoursSpecification":',
               b'"name":', b"null", b"1e999", b"-0", b'"\\u0000"', b'"\\ud800"', b"//", b"/*", b"<!--", b",", b":",
               b'"itemListElement":', b'"acceptedAnswer":', b"NaN", b"true"],
    "microdata": [b" itemscope ", b" itemtype='https://schema.org/Offer' ", b" itemprop='price' ", b" itemref='a b' ",
                  b" itemid='#x' ", b"<meta property='og:title' content='", b"<div itemscope>", b"</div>",
                  b"<link itemprop='availability' href='", b"<time itemprop=startDate datetime='"],
    "robots": [b"User-agent: *\n", b"Disallow: ", b"Allow: ", b"Crawl-delay: ", b"Sitemap: ", b"*", b"$", b"%",
               b"%2A", b"#", b"\r\n", b"/*/*/*/*/*/*/*/*", b"\xef\xbb\xbf", b"\x00"],
    "sitemap": [b"<url>", b"</url>", b"<loc>", b"</loc>", b"<lastmod>", b"</lastmod>", b"<sitemap>",
                b"</sitemap>", b"<![CDATA[", b"]]>", b"&amp;", b"&#x1F600;", b"&#99999999;", b"<!DOCTYPE",
                b"<!ENTITY", b"<image:loc>", b"2024-01-01T00:00:00Z", b"http://"],
    "charset": [b"\n", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"<meta charset='", b"'>", b"\xc3\xa9", b"\xe9",
                b"\x82\xa0", b"\x00", b"\xf0\x9f\x98\x80", b"\xed\xa0\x80"],
    "url": [b"%", b"%2e", b"%2F", b"..", b"/", b"//", b"\\", b"?", b"&", b"=", b"#", b":", b"@", b"[", b"]",
            b"http://", b"https://", b"xn--", b"\t", b"\n", b" ", b"\x00", b"\xe2\x80\xae", b"utm_x=1", b":80"],
}


def _files(folder: Path, patterns: tuple[str, ...], limit: int | None = None) -> list[Path]:
    found = sorted(p for pattern in patterns for p in folder.rglob(pattern) if p.is_file()) if folder.exists() else []
    return found[:limit] if limit else found


@cache
def seeds() -> dict[str, list[bytes]]:
    """The starting inputs of each target (read once per process)."""
    sites = FIXTURES / "sites"
    own = ROOT / "tests" / "sites"
    pages = (_files(sites / "pypug", ("*.html",)) + _files(sites / "fastapi", ("*.html",), 40)
             + _files(own, ("*.html",)) + _files(FIXTURES / "jsonld", ("*.html",)))
    html = [p.read_bytes() for p in pages]
    structured = [page for page in html if b"itemscope" in page or b"og:" in page]
    ld_blocks = [m.group(1) for page in html for m in _LD_JSON.finditer(page)]
    ld_files = [p.read_bytes() for p in _files(FIXTURES / "jsonld" / "extruct", ("*.json", "*.jsonld"))]
    hrefs = list(dict.fromkeys(m.group(1) for page in html[:60] for m in _HREF.finditer(page)))[:3000]
    robots = ROBOTS_SEEDS + [p.read_bytes() for p in _files(sites, ("robots.txt",)) + _files(own, ("robots.txt",))]
    sitemaps = [p.read_bytes() for p in _files(sites, ("sitemap*.xml",)) + _files(own, ("sitemap*.xml",))]
    sitemaps += [b"http://example.test/a\nhttps://example.test/b\n",
                 b"<sitemapindex><sitemap><loc>http://example.test/s.xml</loc></sitemap></sitemapindex>"]
    charsets = []
    for label in CHARSET_LABELS:
        for text in CHARSET_TEXTS:
            codec = label.decode() if label.decode() in ("utf-8", "shift_jis", "euc-jp", "windows-1251", "gb18030",
                                                          "big5", "koi8-r", "utf-16", "utf-32") else "utf-8"
            body = f"<html><head><meta charset='{label.decode()}'></head><body><p>{text}</p></body></html>"
            charsets.append(label + b"\n" + body.encode(codec, "replace"))
    return {"html": html, "jsonld": ld_blocks + ld_files, "microdata": structured or html[:5], "robots": robots,
            "sitemap": sitemaps, "charset": charsets, "url": URL_SEEDS + hrefs}


# -- mutation -----------------------------------------------------------------------------------

_INTERESTING = b"\x00\xff\x7f\x80\xc0\xe2<>\"'&%/\n*$#\\"


def _window(rng: random.Random, data: bytes) -> bytes:
    """Large pages are cut to a window most of the time: extraction cost grows with size."""
    if len(data) <= 8192 or rng.random() < 0.03:
        return data
    size = rng.choice((512, 2048, 8192, 32768))
    start = rng.randrange(0, max(1, len(data) - size))
    return data[start : start + size]


def mutate(rng: random.Random, data: bytes, target: str, pool: list[bytes]) -> bytes:
    buf = bytearray(_window(rng, data))
    tokens = DICTIONARY[target]
    for _ in range(1 + min(int(rng.expovariate(0.5)), 12)):
        op = rng.randrange(9)
        n = len(buf)
        pos = rng.randrange(n + 1)
        if op == 0 and n:
            buf[pos % n] ^= 1 << rng.randrange(8)
        elif op == 1 and n:
            buf[pos % n] = rng.choice(_INTERESTING)
        elif op in (2, 3):
            buf[pos:pos] = rng.choice(tokens)
        elif op == 4 and n:
            del buf[pos : pos + rng.randrange(1, 65)]
        elif op == 5 and n:
            start = rng.randrange(n)
            buf[pos:pos] = buf[start : start + rng.randrange(1, 257)]
        elif op == 6:
            other = _window(rng, rng.choice(pool))
            start = rng.randrange(len(other) + 1)
            buf[pos : pos + rng.randrange(0, 129)] = other[start : start + rng.randrange(1, 513)]
        elif op == 7 and n:
            del buf[pos:]
        elif op == 8:  # a long repetition: deep nesting, many stars, huge attribute runs
            repeat = rng.choice(tokens) * rng.choice((10, 100, 1000, 5000))
            buf[pos:pos] = repeat
        if len(buf) > MAX_INPUT:
            del buf[MAX_INPUT:]
    return bytes(buf)


_TARGET_NAMES = list(WEIGHTS)
_TARGET_WEIGHTS = [WEIGHTS[name] for name in _TARGET_NAMES]


def generate(run_seed: int, index: int) -> tuple[str, bytes]:
    """Input `index` of a run: the target and the bytes (a pure function of its arguments)."""
    rng = random.Random(run_seed * 1_000_003 + index)
    target = rng.choices(_TARGET_NAMES, _TARGET_WEIGHTS)[0]
    pool = seeds()[target]
    data = rng.choice(pool)
    if rng.random() < 0.05:
        return target, _window(rng, data)  # a seed as it is, now and then
    return target, mutate(rng, data, target, pool)


# -- running one input --------------------------------------------------------------------------


def signature(exc: BaseException) -> str:
    """Type and the innermost frame in project code: one crasher kept per distinct bug."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/ingest/" in f.filename or "/store/" in f.filename] or frames
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
    return f"{type(exc).__name__}@{where}"


def run_one(target: str, data: bytes) -> tuple[float, BaseException | None]:
    from tests.chaos.targets import TARGETS

    started = time.process_time()
    try:
        TARGETS[target](data)
    except RecursionError as exc:  # a stack-depth crash is still a crash
        return time.process_time() - started, exc
    except Exception as exc:
        return time.process_time() - started, exc
    return time.process_time() - started, None


def shrink(target: str, data: bytes, sig: str, trials: int = 300) -> bytes:
    """Cut the input down while it still fails the same way (a few hundred tries, no more)."""
    best = data
    chunk = max(1, len(best) // 2)
    tried = 0
    while chunk >= 1 and tried < trials:
        start = 0
        progressed = False
        while start < len(best) and tried < trials:
            candidate = best[:start] + best[start + chunk :]
            tried += 1
            _, exc = run_one(target, candidate)
            if exc is not None and signature(exc) == sig:
                best = candidate
                progressed = True
            else:
                start += chunk
        if not progressed:
            chunk //= 2
    return best


def keep_crasher(target: str, data: bytes, kind: str) -> Path:
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{kind}-{hashlib.sha1(data).hexdigest()[:16]}"
    path.write_bytes(data)
    return path


# -- the mutation run ---------------------------------------------------------------------------


def _worker(worker: int, workers: int, run_seed: int, total: int, first: int, current, started_at, cpu_at,
            out: Path) -> None:
    os.nice(5)  # a background job on a shared machine
    import logging

    logging.disable(logging.CRITICAL)  # the parsers log skipped input; millions of lines say nothing
    for target, pool in seeds().items():  # one-time costs (langdetect's profiles) are not an input's
        run_one(target, pool[0][:4096])
    stats = {"inputs": 0, "by_target": Counter(), "crashes": Counter(), "crash_files": {}, "slowest": {},
             "cpu_s": Counter(), "hangs": []}
    deadline = _deadline()
    seen: set[str] = set()
    last_dump = time.monotonic()
    for index in range(first, total, workers):
        target, data = generate(run_seed, index)
        current.value = index
        cpu_at.value = time.process_time()
        started_at.value = time.monotonic()
        elapsed, exc = run_one(target, data)
        started_at.value = 0.0
        stats["inputs"] += 1
        stats["by_target"][target] += 1
        stats["cpu_s"][target] += elapsed
        slowest = stats["slowest"].get(target)
        if slowest is None or elapsed > slowest[0]:
            stats["slowest"][target] = (elapsed, index, len(data))
        if elapsed > SLOW_S:
            RESULTS.mkdir(parents=True, exist_ok=True)
            (RESULTS / f"slow-{target}-{index}.bin").write_bytes(data)
        if elapsed > deadline:  # finished, but past the per-page deadline: a hang all the same
            path = keep_crasher(target, data, "hang")
            stats["hangs"].append({"target": target, "index": index, "kind": "over_deadline",
                                   "cpu_s": round(elapsed, 2), "file": str(path.relative_to(ROOT))})
        if exc is not None:
            sig = f"{target}:{signature(exc)}"
            stats["crashes"][sig] += 1
            if sig not in seen:
                seen.add(sig)
                small = shrink(target, data, signature(exc))
                path = keep_crasher(target, small, "crash")
                stats["crash_files"][sig] = {"file": str(path.relative_to(ROOT)), "index": index,
                                             "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        if time.monotonic() - last_dump > 2:  # a worker killed as stuck loses at most 2 s of counts
            last_dump = time.monotonic()
            _dump(out, stats)
    _dump(out, stats)


def _dump(out: Path, stats: dict) -> None:
    data = {**stats, "by_target": dict(stats["by_target"]), "crashes": dict(stats["crashes"]),
            "cpu_s": {k: round(v, 1) for k, v in stats["cpu_s"].items()}}
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(out)


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used so far, from /proc; 0 when it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def is_stuck(pid: int, started_at: float, cpu_at_start: float, wall_limit: float, now: float) -> bool:
    """A worker is stuck on its input when it has spent over `wall_limit` on it *and* used a quarter of
    that in CPU time — or ten times the limit whatever the CPU. A worker the machine did not run
    (nice 19 next to busy processes) is waiting, not hanging: two sitemap inputs of a 1M run that
    parse in 6 ms were reported as hangs by wall time alone."""
    if not started_at or now - started_at <= wall_limit:
        return False
    return cpu_seconds(pid) - cpu_at_start > wall_limit / 4 or now - started_at > 10 * wall_limit


def run_mutation(total: int, workers: int, run_seed: int, wall_limit: float) -> dict:
    """Run `total` inputs over `workers` processes; a stuck worker is killed and its input kept."""
    seeds()  # loaded once before fork, shared copy-on-write
    RESULTS.mkdir(parents=True, exist_ok=True)
    ctx = mp.get_context("fork")
    started = time.monotonic()
    hangs: list[dict] = []
    parts: list[dict] = []
    slots = []
    for worker in range(workers):
        slots.append({"worker": worker, "first": worker, "segments": 0})
    pending = list(slots)
    running: list[tuple[dict, mp.Process, object, object, object, Path]] = []
    last_report = time.monotonic()
    while pending or running:
        while pending:
            slot = pending.pop()
            current, started_at, cpu_at = ctx.Value("q", -1), ctx.Value("d", 0.0), ctx.Value("d", 0.0)
            out = RESULTS / f".fuzz-{run_seed}-{slot['worker']}-{slot['segments']}.json"
            process = ctx.Process(target=_worker, args=(slot["worker"], workers, run_seed, total, slot["first"],
                                                        current, started_at, cpu_at, out), daemon=True)
            process.start()
            running.append((slot, process, current, started_at, cpu_at, out))
        time.sleep(0.5)
        for entry in list(running):
            slot, process, current, started_at, cpu_at, out = entry
            stuck = is_stuck(process.pid, started_at.value, cpu_at.value, wall_limit, time.monotonic())
            if process.is_alive() and not stuck:
                continue
            if stuck:
                process.kill()
            process.join()
            running.remove(entry)
            if out.exists():
                parts.append(json.loads(out.read_text()))
                out.unlink()
            if stuck or process.exitcode not in (0, None):
                index = current.value
                target, data = generate(run_seed, index)
                kind = "hang" if stuck else f"died-{process.exitcode}"
                path = keep_crasher(target, data, kind)
                hangs.append({"target": target, "index": index, "kind": kind, "file": str(path.relative_to(ROOT))})
                slot["first"] = index + workers  # carry on after the input that hung
                slot["segments"] += 1
                pending.append(slot)
        if time.monotonic() - last_report > 30:
            last_report = time.monotonic()
            done = sum(p["inputs"] for p in parts) + sum(
                json.loads(o.read_text())["inputs"] for *_, o in running if o.exists())
            rate = done / (time.monotonic() - started)
            sys.stderr.write(f"fuzz: {done:,} inputs, {rate:,.0f}/s, {len(hangs)} hangs\n")
    return _merge(parts, hangs, total, workers, run_seed, time.monotonic() - started)


def _merge(parts: list[dict], hangs: list[dict], total: int, workers: int, run_seed: int, seconds: float) -> dict:
    by_target: Counter[str] = Counter()
    crashes: Counter[str] = Counter()
    cpu: Counter[str] = Counter()
    files: dict[str, dict] = {}
    slowest: dict[str, list] = {}
    for part in parts:
        by_target.update(part["by_target"])
        crashes.update(part["crashes"])
        cpu.update(part["cpu_s"])
        files.update(part["crash_files"])
        hangs = hangs + part.get("hangs", [])
        for target, entry in part["slowest"].items():
            if target not in slowest or entry[0] > slowest[target][0]:
                slowest[target] = entry
    return {
        "engine": "mutate", "run_seed": run_seed, "workers": workers, "requested": total,
        "inputs": sum(by_target.values()), "seconds": round(seconds, 1), "by_target": dict(by_target),
        "cpu_s": {k: round(v, 1) for k, v in cpu.items()}, "crashes": dict(crashes), "crash_files": files,
        "hangs": hangs, "deadline_s": _deadline(),
        "slowest": {t: {"cpu_s": round(e[0], 4), "index": e[1], "bytes": e[2]} for t, e in slowest.items()},
    }


def _deadline() -> float:
    from tests.chaos.targets import PAGE_DEADLINE_S

    return PAGE_DEADLINE_S


def print_table(report: dict) -> None:
    rows = [("target", "inputs", "crashes", "hangs", "slowest (CPU s)", "mean (ms)")]
    hang_count = Counter(h["target"] for h in report["hangs"])
    crash_count = Counter(sig.split(":", 1)[0] for sig in report["crashes"] for _ in range(report["crashes"][sig]))
    for target in WEIGHTS:
        n = report["by_target"].get(target, 0)
        mean = 1000 * report["cpu_s"].get(target, 0) / n if n else 0
        slow = report["slowest"].get(target, {}).get("cpu_s", 0)
        rows.append((target, f"{n:,}", str(crash_count[target]), str(hang_count[target]), f"{slow:.3f}", f"{mean:.2f}"))
    rows.append(("total", f"{report['inputs']:,}", str(sum(crash_count.values())), str(len(report["hangs"])),
                 f"{max((e['cpu_s'] for e in report['slowest'].values()), default=0):.3f}", ""))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    print(f"engine {report['engine']}, {report['workers']} workers, {report['seconds']} s, "
          f"deadline {report['deadline_s']} s per input")
    for sig, info in report["crash_files"].items():
        print(f"crash {sig}: {info['error']} → {info['file']}")
    for hang in report["hangs"]:
        print(f"{hang['kind']} {hang['target']} input {hang['index']} → {hang['file']}")


# -- atheris (coverage-guided) ------------------------------------------------------------------


def run_atheris(target: str, seconds: int, extra: list[str]) -> int:
    """libFuzzer through atheris on one target, in this process, seeded from the corpus above."""
    import atheris

    from tests.chaos import targets

    check = targets.TARGETS[target]
    atheris.instrument_all()
    corpus = RESULTS / f"atheris-{target}"
    corpus.mkdir(parents=True, exist_ok=True)
    for seed in seeds()[target][:500]:
        (corpus / hashlib.sha1(seed).hexdigest()).write_bytes(seed[:MAX_INPUT])
    artifacts = CORPUS / target
    artifacts.mkdir(parents=True, exist_ok=True)

    def one_input(data: bytes) -> None:
        check(data)

    import logging

    logging.disable(logging.CRITICAL)
    argv = [sys.argv[0], str(corpus), f"-max_total_time={seconds}", f"-timeout={int(targets.PAGE_DEADLINE_S)}",
            f"-max_len={MAX_INPUT}", "-rss_limit_mb=3072", f"-artifact_prefix={artifacts}/atheris-",
            "-print_final_stats=1", *extra]
    atheris.Setup(argv, one_input)
    atheris.Fuzz()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=100_000, help="inputs to generate (mutate engine)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (one per core)")
    parser.add_argument("--seed", type=int, default=None, help="run seed (default: from the clock)")
    parser.add_argument("--engine", choices=["mutate", "atheris"], default="mutate")
    parser.add_argument("--target", choices=list(WEIGHTS), default="html", help="atheris: the target")
    parser.add_argument("--seconds", type=int, default=600, help="atheris: how long to run")
    parser.add_argument("--replay", type=int, metavar="INDEX", help="regenerate input INDEX of --seed and run it")
    args, extra = parser.parse_known_args(argv)
    if args.engine == "atheris":
        return run_atheris(args.target, args.seconds, extra)
    run_seed = args.seed if args.seed is not None else int(time.time())
    if args.replay is not None:
        target, data = generate(run_seed, args.replay)
        elapsed, exc = run_one(target, data)
        print(f"{target} input {args.replay} ({len(data)} bytes): {elapsed:.3f} s CPU, "
              f"{'ok' if exc is None else ''.join(traceback.format_exception(exc))}")
        return 0 if exc is None else 1
    from tests.chaos.targets import PAGE_DEADLINE_S

    report = run_mutation(args.inputs, args.workers, run_seed, wall_limit=4 * PAGE_DEADLINE_S)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"fuzz-{run_seed}.json"
    out.write_text(json.dumps(report, indent=2))
    print_table(report)
    print(f"report: {out.relative_to(ROOT)}")
    return 1 if report["crashes"] or report["hangs"] else 0


if __name__ == "__main__":
    sys.exit(main())
