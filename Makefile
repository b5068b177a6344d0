# DRA Portal: the two commands people and scripts rely on are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000
# The demo cluster (the API emulator) and var/demo-kubeconfig, which points kubectl at it.
EMULATOR_PORT ?= 8001

.PHONY: demo test lint check clean

$(VENV)/bin/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "DRA Portal needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Reinstall only when the dependency list changes.
$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e .
	@touch $@

$(VENV)/.installed-dev: pyproject.toml cli/pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e ".[dev]" -e ./cli
	@touch $(VENV)/.installed $@

## demo: install, migrate, create the demo users and serve the portal on http://127.0.0.1:8000
## (PORT= moves the portal, EMULATOR_PORT= its demo cluster on 127.0.0.1)
demo: $(VENV)/.installed
	$(PY) manage.py migrate --no-input
	$(PY) manage.py demo --host $(HOST) --port $(PORT) --emulator-port $(EMULATOR_PORT)

# The test OpenID provider (tests/oidc, Node): installed when npm is there; without it the
# single sign-on tests skip, saying so.
OIDC_PROVIDER := tests/oidc/node_modules/.installed
$(OIDC_PROVIDER): tests/oidc/package.json tests/oidc/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  cd tests/oidc && npm ci --omit=dev --no-audit --no-fund --loglevel=error && touch node_modules/.installed; \
	else echo "npm not found: the single sign-on tests will skip (install nodejs and npm)"; fi

## test: install what is missing and run the whole suite
test: $(VENV)/.installed-dev $(OIDC_PROVIDER)
	$(PY) -m pytest -n 2 $(PYTEST_ARGS)

## lint: ruff, formatting, types of the DRA core, the import contracts and Django's checks (CI too)
lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	$(PY) manage.py check
	$(PY) manage.py makemigrations --check --dry-run

clean:
	rm -rf $(VENV) var staticfiles test-artifacts .pytest_cache .ruff_cache .mypy_cache tests/oidc/node_modules
