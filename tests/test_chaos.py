"""Faults, repeated (issue 13, item 3), in CI size: tests/chaos/faults.py on a generated 12-page
site — kill -9 mid-crawl and a corrupt WAL twice each (random moments), then a backup during a
crawl, a full disk, a read-only data dir and a tenant file deleted under a running server once
each. By hand, at scale: `python -m tests.chaos.faults --runs 20` (docs/hardening.md)."""

from __future__ import annotations

import json

import pytest

from tests.chaos import faults
from tests.chaos.common import RESULTS


def run_faults(names: list[str], runs: int, capsys) -> dict:
    code = faults.main(["--runs", str(runs), "--faults", ",".join(names), "--site", "small", "--pages", "12",
                        "--seed", "13"])
    table = capsys.readouterr().out
    report = json.loads(max(RESULTS.glob("faults-*.json"), key=lambda p: p.stat().st_mtime).read_text())
    failures = {fault: [run.get("failures") for run in done if run.get("failures")]
                for fault, done in report["faults"].items()}
    assert code == 0, f"{table}\n{json.dumps(failures, indent=1)}"
    assert sorted(report["faults"]) == sorted(names)
    assert all(len(done) == runs for done in report["faults"].values())
    return report


@pytest.mark.slow
def test_killed_crawls_and_corrupt_wals_leave_sound_files_and_lose_nothing(capsys):
    run_faults(["kill9", "corrupt_wal"], 2, capsys)


@pytest.mark.slow
def test_backup_full_disk_read_only_dir_and_deleted_file_fail_clearly(capsys):
    run_faults(["backup", "disk_full", "read_only", "deleted"], 1, capsys)
