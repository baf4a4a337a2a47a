# Every target creates .venv and installs what it needs: a fresh clone with only
# Python on it runs `make demo` and `make test` as they are.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum < pyproject.toml | cut -d' ' -f1)
EMBED  := $(VENV)/.embeddings

.PHONY: install embeddings demo test test-compat phoenix test-phoenix lint bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,openai,anthropic]'
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
	$(PY) -m pytest -n 2 -q -m "not phoenix"

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
	REWIND_PHOENIX_PYTHON=$(PHOENIX_VENV)/bin/python $(PY) -m pytest -q -m phoenix tests/test_phoenix.py

# The oldest SDK releases we support, each in a venv of its own. openai before 1.55.3
# passes proxies= to httpx, which httpx 0.28 removed.
OPENAI_FLOOR   ?= 1.40.0
COMPAT_OPENAI  := .venv-openai-floor
ANTHROPIC_FLOOR  ?= 0.43.0
COMPAT_ANTHROPIC := .venv-anthropic-floor

test-compat:
	@test -x $(COMPAT_OPENAI)/bin/python || $(PYTHON) -m venv $(COMPAT_OPENAI)
	$(COMPAT_OPENAI)/bin/python -m pip install --quiet --upgrade pip
	$(COMPAT_OPENAI)/bin/python -m pip install --quiet -e '.[dev]' 'openai==$(OPENAI_FLOOR)' 'httpx<0.28'
	$(COMPAT_OPENAI)/bin/python -m pytest -q -p no:cacheprovider tests/instrumentors/test_openai_*.py
	@test -x $(COMPAT_ANTHROPIC)/bin/python || $(PYTHON) -m venv $(COMPAT_ANTHROPIC)
	$(COMPAT_ANTHROPIC)/bin/python -m pip install --quiet --upgrade pip
	$(COMPAT_ANTHROPIC)/bin/python -m pip install --quiet -e '.[dev]' 'anthropic==$(ANTHROPIC_FLOOR)'
	$(COMPAT_ANTHROPIC)/bin/python -m pytest -q -p no:cacheprovider tests/instrumentors/test_anthropic_*.py

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy rewind exporters instrumentors

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) $(COMPAT_OPENAI) $(COMPAT_ANTHROPIC) $(PHOENIX_VENV) build dist *.egg-info .pytest_cache .ruff_cache
