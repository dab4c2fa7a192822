# Two commands on a fresh machine (Python 3.11 + Java 17):
#   make demo   - create .venv, install kclient, run the embedded demo
#   make test   - create .venv, install everything, run lint, types, docs and every test
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test,spark,docs,metrics]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/kclient demo

test: $(STAMP)
	$(BIN)/ruff check kclient tests benchmarks tools
	$(BIN)/mypy --strict kclient
	$(BIN)/mkdocs build --strict --site-dir $(VENV)/site
	$(BIN)/python -m pytest -q -ra

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache
