# `make run` serves the API and admin; `make test` runs the whole suite.
# Both build .venv on first use. DATABASE_URL unset = embedded PostgreSQL under var/.
PYTHON_BIN ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
STAMP := $(VENV)/.installed



.PHONY: mcp
.PHONY: install browser run test lint bench bench-quality bench-ingest bench-abuse bench-erasure bench-reflection bench-context bench-extraction bench-load bench-admin bench-ops db-stop worker

$(STAMP): requirements/base.txt requirements/dev.txt requirements/local-embed.txt
	test -x $(PY) || $(PYTHON_BIN) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements/dev.txt
	touch $(STAMP)

install: $(STAMP)

# Browser tests drive Debian's Chromium through Playwright (no browser download).
browser:
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)

run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py runserver 127.0.0.1:$(PORT) --insecure

# The MCP tools over streamable HTTP at http://127.0.0.1:$(MCP_PORT)/mcp (docs/mcp.md); stdio: manage.py mcp_server --key.
MCP_PORT ?= 8001
mcp: install
	$(PY) manage.py mcp_server --http --port $(MCP_PORT)

worker: install
	$(VENV)/bin/celery -A memory_project worker -l info

# The guard rails first (seconds), then the suite: ruff, mypy over the three apps, the import contract.
test: install browser
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

bench: install
	cd bench && ../$(PY) core.py $(BENCH_ARGS)

bench-quality: install
	cd bench && ../$(PY) locomo.py $(BENCH_ARGS)

bench-ingest: install
	cd bench && ../$(PY) ingest.py $(BENCH_ARGS)

bench-admin: install
	cd bench && ../$(PY) admin_list.py $(BENCH_ARGS)

bench-ops: install
	cd bench && ../$(PY) ops.py $(BENCH_ARGS)

bench-load: install
	cd bench && ../$(PY) load.py $(BENCH_ARGS)

bench-abuse: install
	cd bench && ../$(PY) abuse.py $(BENCH_ARGS)

bench-erasure: install
	cd bench && ../$(PY) erasure.py $(BENCH_ARGS)

bench-reflection: install
	cd bench && ../$(PY) reflection_cycle.py $(BENCH_ARGS)

bench-context: install
	cd bench && ../$(PY) context.py $(BENCH_ARGS)

bench-extraction: install
	cd bench && ../$(PY) extraction.py $(BENCH_ARGS)

db-stop: install
	$(PY) -c "from pathlib import Path; from memory_project.embedded_db import stop_embedded_server as s; print('stopped' if s(Path('var')) else 'not running')"
