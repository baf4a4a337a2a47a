# Every target creates .venv and installs what it needs: a fresh clone with only
# Python on it runs `make demo` and `make test` as they are.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: install demo test lint bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,openai,anthropic]'
	@rm -f $(VENV)/.installed-*
	@touch $@

install: $(STAMP)

demo: $(STAMP)
	$(PY) examples/time_travel_demo.py

test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest -n 2 -q

lint: $(STAMP)
	$(PY) -m ruff check .

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache
