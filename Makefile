# Every target creates .venv and installs what it needs: a fresh clone with only
# Python on it runs `make demo` and `make test` as they are.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum < pyproject.toml | cut -d' ' -f1)
EMBED  := $(VENV)/.embeddings

.PHONY: install embeddings demo test test-compat lint bench clean

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
	$(PY) -m pytest -n 2 -q

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

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) $(COMPAT_OPENAI) $(COMPAT_ANTHROPIC) build dist *.egg-info .pytest_cache .ruff_cache
