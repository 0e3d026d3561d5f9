# frontdesk — the README's commands. `make run` and `make test` set everything up themselves.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?= --durations=25

.PHONY: setup system assets run test lint bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

# Debian packages the browser tests need (headless Chromium); skipped when already there.
system:
	bash scripts/install-system-deps.sh

# npm packages the browser tests inject into pages (axe-core), in tests/.assets; skipped when there.
assets:
	bash scripts/install-test-assets.sh

run: setup
	$(VENV)/bin/frontdesk quickstart

# pytest exits 5 when it collects nothing; that is not a failure of the suite itself.
test: setup system assets
	$(PY) -m pytest -q $(PYTEST_ARGS); rc=$$?; if [ $$rc -eq 5 ]; then rc=0; fi; exit $$rc

# mypy checks the packages named in pyproject.toml's [tool.mypy] (tests/test_typing.py runs it in CI).
lint: setup
	$(VENV)/bin/ruff check app ingest store tests
	$(VENV)/bin/mypy

bench: setup
	$(PY) -m tests.bench

clean:
	rm -rf $(VENV) .pytest_cache
