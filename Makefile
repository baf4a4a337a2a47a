# Every target creates .venv and installs what it needs: a fresh clone with only
# Python on it runs `make demo` and `make test` as they are.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# The tested set of SDK releases (and everything else .venv holds): `make pins` refreshes it.
CONSTRAINTS := constraints/tested.txt
HASH   := $(shell cat pyproject.toml $(CONSTRAINTS) | cksum | cut -d' ' -f1)
STAMP  := $(VENV)/.installed-$(HASH)
DEMO_STAMP := $(VENV)/.demo-$(HASH)
EMBED  := $(VENV)/.embeddings
# CI=1 (set by .ci/run): what is best effort on a laptop must install or fail the run.
BEST_EFFORT := $(if $(CI),,-)
# REPORTS=DIR: each pytest run also writes DIR/<suite>.xml, which .ci/skips.py reads.
JUNIT = $(if $(REPORTS),--junitxml=$(abspath $(REPORTS))/$(1).xml)

.PHONY: install embeddings demo test test-compat test-frameworks test-import phoenix test-phoenix lint bench clean browser
.PHONY: test-installed test-latest pins bench-smoke node-proxy test-proxy-node test-chaos

$(STAMP): pyproject.toml $(CONSTRAINTS)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,providers]' -c $(CONSTRAINTS)
	@rm -f $(VENV)/.installed-*
	@touch $@

install: $(STAMP)

# The embeddings extra for semantic fuzzy matching. torch's CPU build goes in first so
# pip never resolves a CUDA build. Best effort on a laptop (the embedding tests then skip);
# under CI=1 a failed install fails the run.
$(EMBED): $(STAMP)
	$(BEST_EFFORT)$(PY) -m pip install --quiet torch==2.13.0 && $(PY) -m pip install --quiet -e '.[embeddings]' && touch $@

embeddings: $(EMBED)

# The demo needs rewind's core only: no provider SDK, no test tools. A .venv that
# `make test` already filled has it.
$(DEMO_STAMP): pyproject.toml $(CONSTRAINTS)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@test -e $(STAMP) || $(PY) -m pip install --quiet -e . -c $(CONSTRAINTS)
	@touch $@

demo: $(DEMO_STAMP)
	$(PY) examples/time_travel_demo.py

test: $(STAMP) $(EMBED)
	$(PY) -m ruff check .
	$(PY) -m mypy rewind exporters instrumentors
	$(PY) -m pytest -n 2 -q -m "not phoenix and not frameworks and not importing and not node" $(call JUNIT,test)

# What users install: the sdist and the wheel, built from a clean copy of the checkout and
# checked (tests/dists.py), each installed into a clean venv and tested there by
# tests/installed/, run from an empty folder so that no source tree is on sys.path.
DIST := .dist
INSTALLED_DEPS := pytest pytest-xdist opentelemetry-distro opentelemetry-exporter-otlp-proto-http

test-installed: $(STAMP)
	rm -rf $(DIST)
	$(PY) tests/dists.py build $(DIST)
	@set -e; for kind in wheel sdist; do \
	    case $$kind in wheel) dist=$$(ls $(abspath $(DIST))/*.whl);; *) dist=$$(ls $(abspath $(DIST))/*.tar.gz);; esac; \
	    venv=$(abspath .venv-installed-$$kind); run=$$(mktemp -d); \
	    echo "== installed from the $$kind ($$dist)"; \
	    rm -rf $$venv && $(PYTHON) -m venv $$venv; \
	    $$venv/bin/python -m pip install --quiet --upgrade pip; \
	    $$venv/bin/python -m pip install --quiet "agent-rewind-otel[openai] @ file://$$dist" $(INSTALLED_DEPS) -c $(CONSTRAINTS); \
	    cp tests/installed/*.py tests/importing/otlp_files.py $$run/; \
	    (cd $$run && $$venv/bin/python -m pytest -q -p no:cacheprovider $(call JUNIT,installed-$$kind) .) || { rm -rf $$run; exit 1; }; \
	    rm -rf $$run; \
	done

# The newest release of every SDK, framework and instrumentation, not the tested set: the
# whole suite in .venv-latest (no constraints, --upgrade), then the framework battery and the
# importers with their pins dropped (LATEST=1). A failure here is upstream breaking us.
LATEST_VENV := .venv-latest

test-latest:
	@test -x $(LATEST_VENV)/bin/python || $(PYTHON) -m venv $(LATEST_VENV)
	$(LATEST_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LATEST_VENV)/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e '.[dev,providers]'
	$(LATEST_VENV)/bin/python -m pytest -n 2 -q -p no:cacheprovider -m "not phoenix and not frameworks and not importing and not node" $(call JUNIT,latest)
	$(MAKE) test-frameworks LATEST=1
	$(MAKE) test-import LATEST=1

# After `make test-latest` passed: the versions it ran become the tested set. The header
# comment is kept; re-add any release held back by hand (see CONTRIBUTING.md).
pins:
	@test -x $(LATEST_VENV)/bin/python || { echo "run make test-latest first" >&2; exit 2; }
	{ sed -n '/^#/!q;p' $(CONSTRAINTS); $(LATEST_VENV)/bin/python -m pip freeze --exclude-editable; } > $(CONSTRAINTS).new
	mv $(CONSTRAINTS).new $(CONSTRAINTS)

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
	REWIND_PHOENIX_PYTHON=$(PHOENIX_VENV)/bin/python $(PY) -m pytest -q -m phoenix $(call JUNIT,phoenix) tests/importing/test_phoenix.py tests/importing/test_import_phoenix.py

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
	    $$venv/bin/python -m pytest -q -p no:cacheprovider $(call JUNIT,compat-$$name) $$(sed -n 's/^# tests: //p' $$spec); \
	done

# Debian's chromium for the HTML report's browser tests (tests/report/test_report_browser.py
# skips without it, saying why). Uses apt-get as root; elsewhere install Chromium yourself
# or point REWIND_CHROMIUM at a Chromium/Chrome binary.
browser:
	@command -v chromium >/dev/null 2>&1 || \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)
	@chromium --version

# LATEST=1 (make test-latest): a spec's packages by name only, at their newest releases, in
# venvs of their own (…-latest). A line whose comment starts with "hold:" keeps its pin: an
# upstream incompatibility we cannot fix on our side, the reason on its line (CONTRIBUTING.md,
# "The newest releases"). A shell snippet for the loops below: sets $$reqs.
NEWEST = reqs=$$spec; if [ -n "$(LATEST)" ]; then venv=$$venv-latest; reqs=$$(mktemp); \
    sed -e '/\# *hold:/{s/ *\#.*//;b' -e '}' -e 's/\#.*//' -e 's/[=<>!~;].*//' -e 's/ *$$//' $$spec \
    | grep . > $$reqs; fi
# A group whose whole point is an older release (a "# hold: why" line of its own) has no newest
# release to try: LATEST=1 skips it, and says so (make test-import runs it at its pins).
HELD = if [ -n "$(LATEST)" ] && grep -q '^\# hold:' $$spec; then \
    echo "== $$name: held at its pins, not run by make test-latest: $$(sed -n 's/^\# hold: //p' $$spec)"; continue; fi
UPGRADE = $(if $(LATEST),--upgrade --upgrade-strategy eager)

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
	    name=$$(basename $$spec .txt); venv=.venv-fw-$$name; $(HELD); $(NEWEST); \
	    echo "== frameworks: $$name ($$reqs)"; \
	    test -x $$venv/bin/python || $(PYTHON) -m venv $$venv; \
	    $$venv/bin/python -m pip install --quiet --upgrade pip; \
	    $$venv/bin/python -m pip install --quiet $(UPGRADE) -e ".[$$(sed -n 's/^# extras: //p' $$spec)]" -r $$reqs; \
	    $$venv/bin/python -m pytest -q -p no:cacheprovider -m frameworks $(call JUNIT,frameworks-$$name$(if $(LATEST),-latest)) $$(sed -n 's/^# tests: //p' $$spec); \
	done

# `rewind import` against the spans of real third-party GenAI instrumentations (official
# OpenTelemetry GenAI, OpenInference, OpenLLMetry). They register `openai` entry points of
# their own, so they live in venvs of their own, never in .venv: one per resolver group
# (importers/<group>.txt pins it and names its tests). ONLY=group runs one.
test-import:
	@set -e; for spec in importers/$(ONLY).txt; do \
	    name=$$(basename $$spec .txt); venv=.venv-import-$$name; $(HELD); $(NEWEST); \
	    echo "== importers: $$name ($$reqs)"; \
	    test -x $$venv/bin/python || $(PYTHON) -m venv $$venv; \
	    $$venv/bin/python -m pip install --quiet --upgrade pip; \
	    $$venv/bin/python -m pip install --quiet $(UPGRADE) -e '.[dev,providers]' -r $$reqs; \
	    $$venv/bin/python -m pytest -q -p no:cacheprovider -m importing $(call JUNIT,import-$$name$(if $(LATEST),-latest)) $$(sed -n 's/^# tests: //p' $$spec); \
	done

# The official openai npm package under Node, talking through `rewind proxy`: installed from
# the npm registry into the test's own folder (tests/proxy/node/package.json pins it).
NODE_AGENT := tests/proxy/node

node-proxy:
	cd $(NODE_AGENT) && npm ci --no-audit --no-fund --loglevel=error

test-proxy-node: $(STAMP) node-proxy
	REWIND_REQUIRE_NODE=1 $(PY) -m pytest -q -p no:cacheprovider -m node $(call JUNIT,proxy-node) tests/proxy/test_proxy_node.py

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

# Every benchmark script at tiny sizes, no timing verdicts (a CI step): none can rot unnoticed.
bench-smoke: $(STAMP) $(BASELINE_VENV)/.installed
	$(PY) benchmarks/run.py --smoke

clean:
	rm -rf $(VENV) .venv-compat-* .venv-fw-* .venv-import-* $(PHOENIX_VENV) $(BASELINE_VENV) build dist *.egg-info .pytest_cache .ruff_cache
	rm -rf .venv-installed-* $(LATEST_VENV) $(DIST)
