"""Chaos harnesses for issue 13: faults injected into real crawls and servers (``faults``), the
extractors fuzzed (``fuzz``, targets in ``targets``), and the widget API under abuse (``soak``).
Each is a script (`python -m tests.chaos.<name> --help`) that prints a table and writes JSON to
tests/chaos/results/; tests/test_chaos.py and tests/test_fuzz.py run small versions in CI."""
