# Every target creates .venv and installs what it needs: a fresh clone with only
# Python on it runs `make demo` and `make test` as they are.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum < pyproject.toml | cut -d' ' -f1)
EMBED  := $(VENV)/.embeddings

.PHONY: install embeddings demo test test-compat test-frameworks test-import phoenix test-phoenix lint bench clean browser test-chaos

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,providers]'
	@rm -f $(VENV)/.installed-*
	@touch $@

install: $(STAMP)

# The embeddings extra for semantic fuzzy matching. torch's CPU build goes in first so
# pip never resolves a CUDA build. Best effort: without it the embedding tests skip.
$(EMBED): $(STAMP)
	-$(PY) -m pip install --quiet torch==2.13.0 && $(PY) -m pip install --quiet -e '.[embeddings]' && touch $@

embeddings: $(EMBED)

demo: $(STAMP)
	$(PY) examples/time_travel_demo.py

test: $(STAMP) $(EMBED)
	$(PY) -m ruff check .
	$(PY) -m mypy rewind exporters instrumentors
	$(PY) -m pytest -n 2 -q -m "not phoenix and not frameworks and not importing"

# Dual export against a real Arize Phoenix on loopback. Phoenix is large, so it lives in
# a venv of its own and the test starts it as a separate process.
PHOENIX_VENV  := .venv-phoenix
PHOENIX_STAMP := $(PHOENIX_VENV)/.installed

$(PHOENIX_STAMP):
	@test -x $(PHOENIX_VENV)/bin/python || $(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PHOENIX_VENV)/bin/python -m pip install --quiet 'arize-phoenix>=20.26'
	@touch $@

phoenix: $(PHOENIX_STAMP)

test-phoenix: $(STAMP) $(PHOENIX_STAMP)
	REWIND_PHOENIX_PYTHON=$(PHOENIX_VENV)/bin/python $(PY) -m pytest -q -m phoenix tests/test_phoenix.py tests/test_import_phoenix.py

# The oldest SDK release of each provider, each in a venv of its own: compat/<name>.txt
# pins it and names its tests. ONLY=name runs one provider.
ONLY ?= *

test-compat:
	@set -e; for spec in compat/$(ONLY).txt; do \
	    name=$$(basename $$spec .txt); venv=.venv-compat-$$name; \
	    echo "== $$name floor ($$spec)"; \
	    test -x $$venv/bin/python || $(PYTHON) -m venv $$venv; \
	    $$venv/bin/python -m pip install --quiet --upgrade pip; \
	    $$venv/bin/python -m pip install --quiet -e '.[dev]' -r $$spec; \
	    $$venv/bin/python -m pytest -q -p no:cacheprovider $$(sed -n 's/^# tests: //p' $$spec); \
	done

# Debian's chromium for the HTML report's browser tests (tests/test_report_browser.py
# skips without it, saying why). Uses apt-get as root; elsewhere install Chromium yourself
# or point REWIND_CHROMIUM at a Chromium/Chrome binary.
browser:
	@command -v chromium >/dev/null 2>&1 || \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)
	@chromium --version

# The standing chaos suite (tests/chaos/run.py): SIGKILL during record, a full disk, 64 tasks
# and 8 threads, two processes on one trace, 1,000 fuzzed traces through every reader, hostile
# OTLP imports, hostile reports in Chromium, the network guard under attack. Loopback only;
# prints a table of figures and fails when one misses its bound (tests/chaos/thresholds.py).
test-chaos: $(STAMP) browser
	timeout 900 $(PY) tests/chaos/run.py

# The real-agent battery: unmodified agents of real frameworks, recorded against the stub
# server and replayed with it stopped. One venv per resolver group (frameworks/<group>.txt).
test-frameworks:
	@set -e; for spec in frameworks/$(ONLY).txt; do \
	    name=$$(basename $$spec .txt); venv=.venv-fw-$$name; \
	    echo "== frameworks: $$name ($$spec)"; \
	    test -x $$venv/bin/python || $(PYTHON) -m venv $$venv; \
	    $$venv/bin/python -m pip install --quiet --upgrade pip; \
	    $$venv/bin/python -m pip install --quiet -e ".[$$(sed -n 's/^# extras: //p' $$spec)]" -r $$spec; \
	    $$venv/bin/python -m pytest -q -p no:cacheprovider -m frameworks $$(sed -n 's/^# tests: //p' $$spec); \
	done

# `rewind import` against the spans of real third-party GenAI instrumentations (official
# OpenTelemetry GenAI, OpenInference, OpenLLMetry). They register `openai` entry points of
# their own, so they live in venvs of their own, never in .venv: one per resolver group
# (importers/<group>.txt pins it and names its tests). ONLY=group runs one.
test-import:
	@set -e; for spec in importers/$(ONLY).txt; do \
	    name=$$(basename $$spec .txt); venv=.venv-import-$$name; \
	    echo "== importers: $$name ($$spec)"; \
	    test -x $$venv/bin/python || $(PYTHON) -m venv $$venv; \
	    $$venv/bin/python -m pip install --quiet --upgrade pip; \
	    $$venv/bin/python -m pip install --quiet -e '.[dev,providers]' -r $$spec; \
	    $$venv/bin/python -m pytest -q -p no:cacheprovider -m importing $$(sed -n 's/^# tests: //p' $$spec); \
	done

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy rewind exporters instrumentors

# bench_baseline compares against the stdlib-only agent-rewind 0.8.0, which also imports
# as `rewind`: it gets a throwaway venv of its own.
BASELINE_VENV := .venv-bench-baseline

$(BASELINE_VENV)/.installed:
	@test -x $(BASELINE_VENV)/bin/python || $(PYTHON) -m venv $(BASELINE_VENV)
	$(BASELINE_VENV)/bin/python -m pip install --quiet 'agent-rewind==0.8.0'
	@touch $@

bench: $(STAMP) $(BASELINE_VENV)/.installed
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) .venv-compat-* .venv-fw-* .venv-import-* $(PHOENIX_VENV) $(BASELINE_VENV) build dist *.egg-info .pytest_cache .ruff_cache
