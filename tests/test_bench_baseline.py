"""`python -m tests.bench SUITE --baseline REV`: which options the baseline run gets, how results
are lined up, and a revision that does not exist."""

from __future__ import annotations

import pytest

from tests.bench.__main__ import _passed_on
from tests.bench.baseline import comparison, numbers, run_at_revision


def test_the_baseline_run_gets_the_options_but_not_the_suites_or_the_revision():
    assert _passed_on(["store", "--quick", "--baseline", "HEAD~3", "--backend", "postgres"]) == \
        ["--quick", "--backend", "postgres"]
    assert _passed_on(["llm", "--sets", "pypug", "demo", "--baseline=abc", "--limit", "3"]) == \
        ["--sets", "pypug", "demo", "--limit", "3"]
    assert _passed_on(["answer", "--workers", "2", "--baseline", "HEAD~1"]) == ["--workers", "2"]
    assert _passed_on(["answer", "--nodes", "3", "--quick", "--baseline", "HEAD~1"]) == ["--nodes", "3", "--quick"]


def test_figures_are_lined_up_by_path_and_list_items_by_their_name():
    before = {"search": [{"mode": "bm25", "chunks": 1000, "p95_ms": 10.0}, {"mode": "hybrid", "chunks": 1000,
                                                                           "p95_ms": 20.0}],
              "embedding": [{"model": "int8", "threads": 1, "per_s": 30.0}, {"model": "int8", "threads": 2,
                                                                              "per_s": 40.0}],
              "ok": True, "_meta": {"seconds": 3}}
    after = {"search": [{"mode": "hybrid", "chunks": 1000, "p95_ms": 15.0}], "new_figure": 1.0}
    assert dict(numbers(before)) == {"search[mode=bm25,chunks=1000].p95_ms": 10.0,
                                     "search[mode=hybrid,chunks=1000].p95_ms": 20.0,
                                     "embedding[model=int8,threads=1].per_s": 30.0,
                                     "embedding[model=int8,threads=2].per_s": 40.0}
    rows = {r["figure"]: r for r in comparison(before, after)}
    assert rows == {"search[mode=hybrid,chunks=1000].p95_ms": {"figure": "search[mode=hybrid,chunks=1000].p95_ms",
                                                               "baseline": 20.0, "now": 15.0, "ratio": 0.75}}
    # only what both runs measured is compared; cases are matched by what they are, not their place


def test_a_revision_that_does_not_exist_is_said_plainly():
    with pytest.raises(RuntimeError, match="cannot check out 'no-such-revision'"):
        run_at_revision("no-such-revision", "store", ["--quick"], "store")


def test_the_load_driver_reads_every_answer_and_its_server_timings_from_a_real_server(pypug_ctx):
    """tests/bench/loadgen.py against `frontdesk serve`: each request's stream is read to its end
    on a kept-alive connection (more requests than streams), with the client's TTFT and the
    server's from the `done` event; a refused request counts by its status."""
    import asyncio

    from tests.bench import loadgen
    from tests.conftest import PYPUG_ORIGIN
    from tests.server import run_server

    tenant = pypug_ctx.tenant("pypug")
    with run_server(pypug_ctx.data_dir, rate_per_ip=1000, rate_burst_ip=1000) as base:
        results = asyncio.run(loadgen.load([base], tenant.widget_key, PYPUG_ORIGIN, 2, 6,
                                           ["How do I upload a package to PyPI?"]))
        refused = asyncio.run(loadgen.load([base], "wk_no_such_key", PYPUG_ORIGIN, 1, 2, ["hello there"]))
    assert len(results) == 6
    for result in results:
        assert result["status"] == 200 and not result.get("error")
        assert 0 < result["client_ttft_ms"] <= result["client_total_ms"]
        assert result["server_ttft_ms"] > 0 and result["server_total_ms"] >= result["server_ttft_ms"]
    assert [r["status"] for r in refused] == [401, 401]
