"""The one-way flow (DESIGN.md): store imports neither ingest nor app; ingest never imports app; app
imports only the listed ingest modules; the route modules never import the app factory that imports them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {"store": ("ingest", "app"), "ingest": ("app",)}


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, dotted in full (`from app import asgi` counts as `app.asgi`)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def imported_packages(path: Path) -> set[str]:
    return {name.split(".")[0] for name in imported_modules(path)}


# The ingest modules app/ may import, each with why (issue 12): app serves answers and starts crawls, so
# it reaches into ingest only for the crawl entry points and for pieces both sides must share so a
# question is treated as the pages were. A new entry needs a reason; an unused one is taken off.
APP_MAY_IMPORT_FROM_INGEST = {
    "ingest.chunk": "sentence splitting and chunk embedding text: extractive answers, reindex, eval match indexing",
    "ingest.clean": "BEIR evaluation cleans corpus documents as a crawl would",
    "ingest.crawl.netguard": "outgoing webhooks use the crawler's SSRF guard",
    "ingest.crawl.urls": "the console says why a page was never reached with the crawler's own UrlPolicy",
    "ingest.crawl_report": "the CLI prints a crawl's progress and page-limit notice; jobs keep its progress",
    "ingest.document": "BEIR evaluation builds Documents; extractive answers know the alt-text prefix of its sections",
    "ingest.embed": "questions are embedded by the same embedder object as documents (DESIGN.md)",
    "ingest.embed_stage": "a server embeds what a killed crawl left pending; the answer measures pending passages",
    "ingest.facts": "the visitor's page JSON-LD is worded as facts the way indexed pages' are",
    "ingest.folder": "the CLI indexes a folder of HTML files",
    "ingest.indexer": "BEIR evaluation indexes through the real indexer",
    "ingest.injection": "sources are stripped of prompt-injection markers before the prompt",
    "ingest.lang": "a question's language is identified by the detector that tagged the pages",
    "ingest.pipeline": "the CLI, admin API and console start crawls",
    "ingest.scheduler": "the app's lifespan runs the crawl jobs",
}


def imported_ingest_modules(path: Path) -> set[str]:
    """The ingest modules a file imports: each imported name resolved to the module file or package that
    defines it (`from ingest.chunk import Chunk` is ingest.chunk), a package dropped when the file
    imports only submodules from it (`from ingest import clean`)."""
    found = set()
    for name in imported_modules(path):
        if name.split(".")[0] != "ingest":
            continue
        parts = name.split(".")
        while len(parts) > 1 and not (ROOT.joinpath(*parts).with_suffix(".py").is_file()
                                      or (ROOT.joinpath(*parts) / "__init__.py").is_file()):
            parts.pop()
        found.add(".".join(parts))
    return {module for module in found if not any(other.startswith(module + ".") for other in found)}


def test_app_imports_only_the_listed_ingest_modules():
    used: dict[str, list[str]] = {}
    for path in sorted((ROOT / "app").rglob("*.py")):
        for module in imported_ingest_modules(path):
            used.setdefault(module, []).append(str(path.relative_to(ROOT)))
    unlisted = {module: files for module, files in used.items() if module not in APP_MAY_IMPORT_FROM_INGEST}
    assert unlisted == {}, "app imports ingest modules not in APP_MAY_IMPORT_FROM_INGEST (add each with why)"
    unused = sorted(set(APP_MAY_IMPORT_FROM_INGEST) - set(used))
    assert unused == [], "listed in APP_MAY_IMPORT_FROM_INGEST but no longer imported by app: take them off"


def test_the_ingest_import_check_sees_imports(tmp_path):
    # The check above must resolve names to modules, or an empty "unlisted" proves nothing.
    source = tmp_path / "m.py"
    source.write_text("from ingest import clean\nfrom ingest.chunk import Chunk\nimport ingest.crawl.urls\n"
                      "def f():\n    from ingest.facts import facts_from_jsonld\n")
    assert imported_ingest_modules(source) == {"ingest.clean", "ingest.chunk", "ingest.crawl.urls", "ingest.facts"}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_flow_one_way(package):
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = imported_packages(path) & set(FORBIDDEN[package])
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert offenders == []


def test_routes_never_import_the_app_factory():
    # app.asgi imports every route module to build the app; a route importing it back is a cycle.
    offenders = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "app" / "routes").rglob("*.py"))
                 if "app.asgi" in imported_modules(path)]
    assert offenders == []


def test_library_code_never_prints():
    offenders = []
    for package in ("store", "ingest"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


# Every SQL statement lives in store/ (DESIGN.md; issue 17): store's functions are the seam a second
# backend implements, so app/ and ingest/ neither write SQL nor run it on a connection.
SQL_TEXT = re.compile(
    r"\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|PRAGMA|WITH|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|"
    r"RELEASE|VACUUM|ATTACH|DETACH|ANALYZE|REINDEX)\s")
CONNECTION_CALLS = {"execute", "executemany", "executescript", "cursor", "last_insert_rowid", "changes"}


def sql_offences(source: str, name: str) -> list[str]:
    """Lines of a module that hold SQL text (a string opening with an upper-case SQL keyword) or call a
    connection's statement methods."""
    found = []
    for node in ast.walk(ast.parse(source, filename=name)):
        # An f-string's literal parts are Constant nodes too, so this also reads f"SELECT … {marks}".
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_TEXT.match(node.value):
            found.append(f"{name}:{node.lineno} SQL text {node.value.strip()[:40]!r}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CONNECTION_CALLS:
            found.append(f"{name}:{node.lineno} calls .{node.func.attr}()")
    return found


@pytest.mark.parametrize("package", ["app", "ingest"])
def test_sql_lives_only_in_store(package):
    offenders = [line for path in sorted((ROOT / package).rglob("*.py"))
                 for line in sql_offences(path.read_text(), str(path.relative_to(ROOT)))]
    assert offenders == []


def test_the_sql_check_sees_sql():
    # The check above must catch what it is for, or its empty list proves nothing.
    source = ('rows = conn.execute("SELECT id FROM pages").fetchall()\n'
              'conn.executemany(f"INSERT INTO t VALUES ({marks})", rows)\n'
              'conn = tenant.reader(); conn.cursor()\n'
              'label = "Select a page"; method = "DELETE"; word = "update"\n')
    assert sorted(sql_offences(source, "m.py")) == [
        "m.py:1 SQL text 'SELECT id FROM pages'", "m.py:1 calls .execute()",
        "m.py:2 SQL text 'INSERT INTO t VALUES ('", "m.py:2 calls .executemany()", "m.py:3 calls .cursor()",
    ]
