"""mypy type-checks app, ingest and store with the settings in pyproject.toml ([tool.mypy]); CI runs only
`make test`, so this is where the type check is pinned (DESIGN.md, house style 14)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_packages_type_check():
    # `files` in [tool.mypy] names the packages, so this is exactly what `make lint` runs.
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True,
                            timeout=540)
    assert result.returncode == 0, f"mypy found errors:\n{result.stdout}{result.stderr}"
