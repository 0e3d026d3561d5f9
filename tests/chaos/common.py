"""What the chaos scripts share: running the `frontdesk` CLI as a subprocess, serving it, a small
generated site, reading a tenant file's state, and printing / saving result tables."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import apsw

from store.connect import open_connection
from tests.server import _stop, _wait_until_healthy, free_port

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "chaos" / "results"
FAKE_MODEL = "fake-hash-words"
#: The model cache the real embedder uses in every data dir (made once, shared with the tests).
MODEL_CACHE = Path.home() / ".cache" / "frontdesk-tests"


class Frontdesk:
    """The `frontdesk` command for one data dir: `python -m tests.chaos.cli` (the real CLI with the
    fake embedder registered) or `python -m app` for the real model."""

    def __init__(self, data_dir: Path, *, real_model: bool = False, env: dict[str, str] | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.real_model = real_model
        self.module = "app" if real_model else "tests.chaos.cli"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
        self.env.update({"FRONTDESK_DATA_DIR": str(self.data_dir), "FRONTDESK_MODEL_CACHE_DIR": str(MODEL_CACHE),
                         "FRONTDESK_LOG_LEVEL": "warning", "PYTHONUNBUFFERED": "1"})
        if not real_model:
            self.env["FRONTDESK_MODEL"] = FAKE_MODEL
        self.env.update(env or {})

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", self.module, *args]

    def run(self, *args: str, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(*args), cwd=ROOT, env={**self.env, **(env or {})}, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def start(self, *args: str, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
        """Run in the background, stdout and stderr into `log` (a pipe nobody reads would fill)."""
        with open(log, "wb") as output:
            return subprocess.Popen(self.argv(*args), cwd=ROOT, env={**self.env, **(env or {})},
                                    stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT)

    def create(self, tenant_id: str, site: str) -> dict:
        args = ["tenant", "create", tenant_id, "--site", site, "--allow-private-network", "--json"]
        if not self.real_model:
            args += ["--model", FAKE_MODEL]
        done = self.run(*args, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"tenant create failed: {done.stderr[-2000:]}")
        return json.loads(done.stdout)

    def db(self, tenant_id: str) -> Path:
        return self.data_dir / "tenants" / f"{tenant_id}.db"

    @contextlib.contextmanager
    def serve(self, **settings: object) -> Iterator[tuple[str, subprocess.Popen]]:
        """`frontdesk serve` (granian) on a free port; yields (base URL, process)."""
        port = free_port()
        env = {**self.env, "FRONTDESK_SCHEDULER": "false",
               **{f"FRONTDESK_{k.upper()}": str(v) for k, v in settings.items()}}
        with tempfile.TemporaryDirectory(prefix="frontdesk-chaos-") as logs:
            log = Path(logs) / "server.log"
            with open(log, "wb") as output:
                process = subprocess.Popen(
                    self.argv("serve", "--host", "127.0.0.1", "--port", str(port)), cwd=ROOT, env=env,
                    stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT)
                base = f"http://127.0.0.1:{port}"
                try:
                    _wait_until_healthy(base, process, log)
                    process.log_path = log  # type: ignore[attr-defined]
                    yield base, process
                finally:
                    _stop(process)


def clean_failure(done: subprocess.CompletedProcess | tuple[int, str]) -> str | None:
    """None when a failed command failed the documented way: exit 1 (or 2), no traceback, and
    stderr's last line a one-line reason `frontdesk: …`. Else what was wrong."""
    code, stderr = (done.returncode, done.stderr) if isinstance(done, subprocess.CompletedProcess) else done
    if "Traceback" in stderr:
        return "traceback on stderr: " + stderr[stderr.index("Traceback"):][:300].replace("\n", " | ")
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    if code not in (1, 2):
        return f"exit {code}: {last[:200]}"
    if not last.startswith("frontdesk: "):
        return f"exit {code} without a one-line reason: {last[:200]!r}"
    return None


def kill9(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGKILL)
    process.wait()


# -- a tenant file's state ------------------------------------------------------------------------

Snapshot = dict[str, tuple[tuple[int, str], ...]]
"""Active page URL → its chunks as (position, content hash), in order."""


def snapshot(db: Path) -> Snapshot:
    conn = open_connection(db, readonly=True)
    try:
        rows = conn.execute(
            "SELECT p.url, pc.position, c.hash FROM pages p LEFT JOIN page_chunks pc ON pc.page_id = p.id "
            "LEFT JOIN chunks c ON c.id = pc.chunk_id WHERE p.status = 'active' ORDER BY p.url, pc.position"
        ).fetchall()
    finally:
        conn.close()
    pages: dict[str, list[tuple[int, str]]] = {}
    for url, position, chunk_hash in rows:
        pages.setdefault(url, [])
        if position is not None:
            pages[url].append((position, chunk_hash))
    return {url: tuple(chunks) for url, chunks in pages.items()}


def soundness(db: Path, settled: bool = False) -> list[str]:
    """What is wrong with a tenant file, [] when nothing: SQLite's integrity check, FTS5's own
    check against the chunks table, every chunk with a vector or waiting for one (pending, the
    embedding stage runs behind fetching) and never both, no vector without a chunk, no link to a
    missing chunk, no chunk no page links to, no page link from a page that is gone. `settled`
    (a crawl that ran to the end): no chunk is left pending either."""
    problems: list[str] = []
    try:
        conn = open_connection(db)
    except Exception as exc:  # noqa: BLE001  (reported, not raised: this is the verdict)
        return [f"cannot open: {type(exc).__name__}: {exc}"]
    try:
        result = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        if result != ["ok"]:
            problems.append("integrity_check: " + "; ".join(result[:3]))
        try:
            conn.execute("INSERT INTO chunk_fts(chunk_fts, rank) VALUES ('integrity-check', 1)")
        except apsw.Error as exc:
            problems.append(f"fts out of step: {exc}")
        one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        checks = {
            "chunks without a vector": "SELECT count(*) FROM chunks WHERE id NOT IN (SELECT rowid FROM chunk_vec) "
                                       "AND id NOT IN (SELECT chunk_id FROM chunk_pending)",
            "chunks pending with a vector": "SELECT count(*) FROM chunk_pending WHERE chunk_id IN "
                                            "(SELECT rowid FROM chunk_vec)",
            "pending entries without a chunk": "SELECT count(*) FROM chunk_pending WHERE chunk_id NOT IN "
                                               "(SELECT id FROM chunks)",
            "vectors without a chunk": "SELECT count(*) FROM chunk_vec WHERE rowid NOT IN (SELECT id FROM chunks)",
            "links to a missing chunk":
                "SELECT count(*) FROM page_chunks WHERE chunk_id NOT IN (SELECT id FROM chunks)",
            "chunks no page links to": "SELECT count(*) FROM chunks WHERE id NOT IN (SELECT chunk_id FROM page_chunks)",
            "gone pages with chunks": "SELECT count(*) FROM page_chunks pc JOIN pages p ON p.id = pc.page_id "
                                      "WHERE p.status != 'active'",
        }
        if settled:
            checks["chunks left pending"] = "SELECT count(*) FROM chunk_pending"
        for name, sql in checks.items():
            if count := one(sql):
                problems.append(f"{count} {name}")
    except apsw.Error as exc:
        problems.append(f"check failed: {type(exc).__name__}: {exc}")
    finally:
        conn.close()
    return problems


def half_pages(current: Snapshot, reference: Snapshot) -> list[str]:
    """Active pages whose chunks differ from the same page in an uninterrupted crawl: a page is
    either all there or not there."""
    return [url for url, chunks in current.items() if url in reference and chunks != reference[url]]


def differences(current: Snapshot, reference: Snapshot) -> str | None:
    """None when two crawls indexed the same pages with the same chunks, else a summary."""
    if current == reference:
        return None
    missing = sorted(set(reference) - set(current))
    extra = sorted(set(current) - set(reference))
    changed = [u for u in current.keys() & reference.keys() if current[u] != reference[u]]
    return f"{len(missing)} pages missing {missing[:3]}, {len(extra)} extra {extra[:3]}, {len(changed)} changed"


# -- a small site ---------------------------------------------------------------------------------

SITE_ORIGIN = "http://chaos.invalid:1"
_WORDS = [
    "bread", "flour", "oven", "crust", "rye", "wheat", "starter", "dough", "loaf", "bake", "hydration", "proof",
    "knead", "salt", "yeast", "butter", "croissant", "pastry", "sugar", "almond", "honey", "seed", "spelt",
    "barley", "oats", "crumb", "steam", "stone", "tin", "basket", "cool", "slice", "toast", "morning",
    "evening", "order", "delivery", "shop", "opening", "hours", "weekend", "market",
]  # fmt: skip


def write_site(folder: Path, pages: int, seed: int = 7) -> Path:
    """A static site of `pages` pages (sitemap with lastmod, robots.txt, links between pages,
    headings, a table and JSON-LD on some): distinct text on every page, made the same every time."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"page-{n:03d}.html" for n in range(pages)]
    for n, name in enumerate(names):
        paragraphs = "".join(
            f"<p>{' '.join(rng.choice(_WORDS) for _ in range(rng.randint(25, 60)))}. Page {n}, part {k}.</p>"
            for k in range(rng.randint(3, 8)))
        table = (f"<table><tr><th>Loaf</th><th>Price</th></tr><tr><td>{rng.choice(_WORDS)}</td><td>"
                 f"{n + 2} EUR</td></tr></table>" if n % 3 == 0 else "")
        jsonld = ('<script type="application/ld+json">{"@context":"https://schema.org","@type":"Product",'
                  f'"name":"Loaf {n}","offers":{{"price":"{n + 2}","priceCurrency":"EUR"}}}}</script>'
                  if n % 4 == 0 else "")
        links = "".join(f'<a href="{names[(n + k) % pages]}">more {k}</a> ' for k in (1, 7, 13))
        (folder / name).write_text(
            f"<!doctype html><html lang=en><head><title>Page {n}</title>{jsonld}</head><body>"
            f"<nav><a href='index.html'>home</a></nav><main><h1>Page {n}</h1>{paragraphs}"
            f"<h2>Prices</h2>{table}<p>{links}</p></main></body></html>")
    (folder / "index.html").write_text(
        "<!doctype html><html lang=en><head><title>Chaos bakery</title></head><body><main><h1>Chaos bakery</h1>"
        + "".join(f'<p><a href="{name}">{name}</a></p>' for name in names) + "</main></body></html>")
    (folder / "robots.txt").write_text(f"User-agent: *\nDisallow: /private/\nSitemap: {SITE_ORIGIN}/sitemap.xml\n")
    entries = "".join(f"<url><loc>{SITE_ORIGIN}/{name}</loc><lastmod>2024-05-{1 + n % 28:02d}</lastmod></url>"
                      for n, name in enumerate(["index.html", *names]))
    (folder / "sitemap.xml").write_text(
        f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>')
    return folder


# -- tables and results ---------------------------------------------------------------------------


def print_table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> None:
    cells = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    print("| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells[1:]:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


def save_results(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}-{time.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps(payload, indent=2, default=str))
    return path
