"""Run the benchmarks: `python -m tests.bench [store crawl answer ...] [--quick]` (or `make bench`).

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
    "eval": "tests.bench.bench_eval",
}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__)
    parser.add_argument("suites", nargs="*", help=f"which benchmarks of {', '.join(SUITES)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    parser.add_argument("--render", action="store_true",
                        help="crawl: the JavaScript-pages benchmark (headless Chromium) instead")
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
        result = module.run(quick=args.quick, **({"render": True} if render else {}))
        result["_meta"] = {"suite": name, "quick": args.quick, "seconds": round(time.time() - started, 1),
                           "python": platform.python_version(), "machine": platform.machine(),
                           "cpus": __import__("os").cpu_count(), "at": time.strftime("%Y-%m-%dT%H:%M:%S")}
        path = save(f"{name}-render" if render else name, result)
        print(f"\n{name}: results in {path}")


if __name__ == "__main__":
    main()
