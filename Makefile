PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test lint bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $(STAMP)

$(TEST_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP) $(TEST_STAMP)

demo: $(STAMP)
	$(VENV)/bin/contactlab warmup --only demo
	$(VENV)/bin/contactlab demo
	$(VENV)/bin/contactlab studies 1 4 --short --out results/demo/studies

test: $(TEST_STAMP)
	$(PY) -m pytest -n 2 -q

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check contactlab solvers scenarios tests benchmarks
	$(VENV)/bin/mypy

docs: $(TEST_STAMP)
	$(PY) -m pip install --quiet -e ".[docs]"
	$(PY) -m contactlab.cliref docs/commands.md
	$(VENV)/bin/mkdocs build --strict

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) results/scratch .pytest_cache site
