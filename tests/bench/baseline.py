"""`--baseline REV`: run the same benchmark on another git revision, then print its figures beside
today's with the ratio, so a claim is a ratio measured in one run on one machine.

The revision is checked out into a temporary git worktree and run with this interpreter and its
installed packages (`python -m tests.bench …` from the worktree, whose `app`, `ingest`, `store`
and `tests` come first on the path): the code differs, the dependencies do not. A revision that
needs other packages than today's is out of reach this way; say so rather than compare.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_at_revision(rev: str, suite: str, args: Sequence[str], result_name: str) -> dict:
    """The JSON result of `python -m tests.bench SUITE ARGS` at `rev` (raises RuntimeError with
    what went wrong when the revision cannot be checked out or its benchmark fails)."""
    folder = Path(tempfile.mkdtemp(prefix="frontdesk-baseline-"))
    tree = folder / "tree"
    shared = ROOT.parent / "shared"
    if shared.exists():  # the fixtures are read as ../shared from the project root
        (folder / "shared").symlink_to(shared, target_is_directory=True)
    try:
        checkout = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev],
                                  capture_output=True, text=True)
        if checkout.returncode != 0:
            raise RuntimeError(f"cannot check out {rev!r}: {checkout.stderr.strip()}")
        bench = subprocess.run([sys.executable, "-m", "tests.bench", suite, *args], cwd=tree)
        if bench.returncode != 0:
            raise RuntimeError(f"the {suite} benchmark failed at {rev} (exit {bench.returncode})")
        result = tree / "tests" / "bench" / "results" / f"{result_name}.json"
        if not result.exists():
            raise RuntimeError(f"the {suite} benchmark at {rev} wrote no {result.name}")
        return json.loads(result.read_text())
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


#: Fields that say which case a list item measures (besides its text fields).
IDENTITY = ("size", "chunks", "streams", "threads", "workers", "nodes", "concurrency")


def _label(item: object, position: int) -> str:
    if not isinstance(item, dict):
        return str(position)
    parts = [f"{k}={v}" for k, v in item.items() if isinstance(v, str) and len(v) <= 40 or k in IDENTITY]
    return ",".join(parts) if parts else str(position)


def numbers(payload: object, path: str = "") -> Iterator[tuple[str, float]]:
    """Every numeric leaf of a result as (dotted path, value); list items by the fields that say
    which case they measure (their text fields, chunks, threads, streams…), else by position."""
    if isinstance(payload, bool):
        return
    if isinstance(payload, int | float):
        yield path, float(payload)
    elif isinstance(payload, dict):
        for key, value in payload.items():
            if not str(key).startswith("_") and key not in IDENTITY:
                yield from numbers(value, f"{path}.{key}" if path else str(key))
    elif isinstance(payload, list):
        labels = [_label(item, i) for i, item in enumerate(payload)]
        for i, (item, label) in enumerate(zip(payload, labels, strict=True)):
            unique = label if labels.count(label) == 1 else f"{label}#{i}"
            yield from numbers(item, f"{path}[{unique}]")


def comparison(baseline: dict, current: dict) -> list[dict]:
    """Rows of (figure, baseline, now, now ÷ baseline) for every figure both results have."""
    before = dict(numbers(baseline))
    rows = []
    for path, now in numbers(current):
        if path in before:
            then = before[path]
            rows.append({"figure": path, "baseline": then, "now": now,
                         "ratio": round(now / then, 3) if then else None})
    return rows
