"""The one-way flow (DESIGN.md): store imports neither ingest nor app; ingest never imports app; the
route modules never import the app factory that imports them."""

from __future__ import annotations

import ast
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
