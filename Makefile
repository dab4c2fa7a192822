# Two commands on a fresh machine (Python 3.11 + Java 17):
#   make demo   - create .venv, install what the demo needs (kclient and the tansu
#                 broker: a .venv of about 70 MB), run the embedded demo
#   make test   - create .venv (or add to the demo's), install everything, run lint,
#                 types, docs and every test
#   make test-fast - lint, types and every test but the PySpark and slow ones
#   make test-noextras - the tests but the slow ones, without the optional extras
# Development tools are pyproject.toml's dependency groups (test, docs), not
# published extras; pip installs them with --group (pip 25.1+, upgraded below).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# What is installed in .venv: everything (STAMP), or the demo's part (DEMO_STAMP).
# Installing everything installs the demo's part too and marks both, so a venv made by
# make demo is completed in place by make test, and make demo after make test installs
# nothing.  Each is redone when pyproject.toml is newer.
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: demo test test-fast test-noextras bench clean chromium

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[spark,metrics,pkcs12]' --group test --group docs
	touch $(STAMP) $(DEMO_STAMP)

# The demo runs on kclient and, to show a real broker too, the demo group's tansu.
$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e . --group demo
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/kclient demo
	@echo
	@echo "the kclient command is $(BIN)/kclient; put it on your PATH with: source $(BIN)/activate"

# The documentation's browser test (tests/docs/test_browser.py) drives Debian's
# chromium; installed once when missing (as root, or with sudo).  Without
# apt-get the test skips (and fails where CI is set).
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium (Debian package) for the documentation browser test"; \
	    SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	    log=$$(mktemp); \
	    if $$SUDO apt-get update -qq >"$$log" 2>&1 && \
	       $$SUDO env DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes \
	         apt-get install -y -qq chromium >>"$$log" 2>&1; then \
	      rm -f "$$log"; \
	    else \
	      cat "$$log"; rm -f "$$log"; echo "installing chromium failed (output above)"; exit 1; \
	    fi; \
	  else \
	    echo "no apt-get: install Chromium to run the documentation browser test"; \
	  fi; \
	fi

# The suite runs on two pytest-xdist workers, one per core of the 2-core machines it
# is measured on (three gained 3%: most tests compute).  The site is built, with
# --strict, by the documentation tests themselves (tests/docs/test_site.py).
# kclient's bytecode is written first: hundreds of tests start kclient in a child
# process, and where PYTHONDONTWRITEBYTECODE is set each child would compile its
# modules again (0.6 s a start instead of 0.4 s).  A stale file is recompiled, never
# used.
test: $(STAMP) chromium
	$(BIN)/ruff check kclient tests benchmarks tools
	$(BIN)/mypy --strict kclient
	$(BIN)/python -m compileall -q kclient
	$(BIN)/python -m pytest -q -ra -n 2

# The quick loop: no docs build, no PySpark (tests marked spark) or slow tests.
test-fast: $(STAMP)
	$(BIN)/ruff check kclient tests benchmarks tools
	$(BIN)/mypy --strict kclient
	$(BIN)/python -m pytest -q -ra -m "not spark and not slow"

# The suite where the optional extras (spark, metrics, pkcs12) are not installed: a
# second virtual environment with kclient and the test and docs tools alone.  trustme
# (a test tool) brings cryptography, which is the pkcs12 extra, so it is removed again.
# The tests of an extra skip there, naming it; the tests of the typed error a user
# without it gets (tests/test_extras.py) run.  Not part of make test.
NOEXTRAS := .venv-noextras

$(NOEXTRAS)/.installed: pyproject.toml
	$(PY) -m venv $(NOEXTRAS)
	$(NOEXTRAS)/bin/python -m pip install -q --upgrade pip
	$(NOEXTRAS)/bin/python -m pip install -q -e . --group test --group docs
	$(NOEXTRAS)/bin/python -m pip uninstall -q -y cryptography
	touch $(NOEXTRAS)/.installed

test-noextras: $(NOEXTRAS)/.installed
	$(NOEXTRAS)/bin/python -m pytest -q -ra -m "not slow"

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) $(NOEXTRAS) site .pytest_cache .mypy_cache .ruff_cache
