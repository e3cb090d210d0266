# The two commands: `make run` brings the whole system up, `make test` runs every check.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# uv installs the pinned packages in seconds where pip takes most of a minute. Compiled to
# bytecode at install: with PYTHONDONTWRITEBYTECODE set, as on CI, each process would otherwise
# compile what it imports (2.1 s instead of 1.3 s to import botedge).
UV_LOUD := $(BIN)/uv pip install --compile-bytecode --python $(BIN)/python
UV     := $(UV_LOUD) --quiet

.PHONY: run test test-fast test-deploy faults docs catalogs check lint typecheck page pytest migrate loadtest bench-webhooks bench-claim bench-login bench-gate bench-sweep bench-stats bench-precheckout clean

# The first time, it says what it does and how far it got (uv prints each stage's count).
$(STAMP): pyproject.toml services/simulators/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is required")'
	@echo "Installing Gatehouse and its packages into $(VENV) (10-60 s, once; later runs reuse it)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv
	$(UV_LOUD) -e '.[dev]' -e services/simulators
	touch $(STAMP)

# The bot's message catalogs, compiled from their .po sources (botedge/words.py reads the .mo).
LOCALES := services/botedge/botedge/locales
CATALOGS := $(patsubst %.po,%.mo,$(wildcard $(LOCALES)/*/LC_MESSAGES/bot.po))

$(LOCALES)/%/LC_MESSAGES/bot.mo: $(LOCALES)/%/LC_MESSAGES/bot.po $(STAMP)
	$(BIN)/pybabel --quiet compile --domain bot --input-file $< --output-file $@ --statistics

# The .pot and each .po brought up to the messages the code declares (then translate the new).
catalogs: $(STAMP)
	$(BIN)/python -m tests.catalogs --write

# The panel page is served as written; npm brings TypeScript, to type-check it, and axe-core,
# which the browser tests run on every page.
NODE_STAMP := node_modules/.installed

$(NODE_STAMP): package.json package-lock.json
	npm ci --silent --no-audit --no-fund
	touch $(NODE_STAMP)

# When `make run` started (before any install), for the launcher's "Up in" line.
RUN_STARTED := $(shell date +%s)

run: $(STAMP) $(CATALOGS)
	GATEHOUSE_RUN_STARTED=$(RUN_STARTED) $(BIN)/python -m simulators.launcher

# The checks run beside the tests: the suite leaves a core idle about a quarter of the time,
# and mypy's first run fits in it. Each one's output is printed whole when it ends.
test: $(STAMP)
	$(MAKE) --no-print-directory -j2 --output-sync=target check pytest

check: lint typecheck page

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# The page's modules type-checked from their JSDoc, and its pure functions under node's runner.
page: $(NODE_STAMP)
	node_modules/.bin/tsc -p tsconfig.json
	node --test --test-reporter=spec tests/panel_api/page/ tests/simulators_page/

# Tests run in parallel processes (pytest-xdist), each with its own PostgreSQL and its own
# ports; most of a test's time is spent waiting on servers, so more workers than cores pays.
# Six were tried: 428 s instead of 497 s in one run, 529 s instead of 447 s in a fresh clone,
# and the tests that hold a worker to a lease period failed under the load.
PYTEST_WORKERS ?= 4

# Bytecode written for the run even where PYTHONDONTWRITEBYTECODE is set (as on CI): without it
# each of the parallel processes compiles the services and rewrites every test module's asserts
# afresh (11 s of CPU to collect instead of 5).
pytest: $(STAMP) $(NODE_STAMP) $(CATALOGS)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --maxschedchunk 1 --durations=15 $(PYTEST_ARGS)

# Unit tests and the integration tests that start no process of their own.
test-fast: $(STAMP) $(NODE_STAMP) $(CATALOGS)
	node --test --test-reporter=spec tests/panel_api/page/ tests/simulators_page/
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n 2 -m "not process" $(wildcard tests/*/unit tests/*/integration) $(PYTEST_ARGS)

# compose.yaml brought up for real (tests/deploy/stack): a Docker engine (started here as root
# where dockerd is installed but not running) and Compose 2; the base images built from
# Debian's packages where no registry answers (tests/deploy/standins). Skipped, saying why,
# where no engine can be had. About 6 minutes once the base images exist.
test-deploy: $(STAMP) $(CATALOGS)
	@status=0; bash tests/deploy/engine || status=$$?; \
	if [ $$status = 3 ]; then echo "test-deploy: skipped (no Docker engine, see above)"; exit 0; fi; \
	[ $$status = 0 ] || exit $$status; \
	bash tests/deploy/standins/build && \
	GATEHOUSE_DEPLOY=1 $(BIN)/python -m pytest -s -v --durations=0 tests/deploy/stack $(PYTEST_ARGS)

# The runs that prove a behaviour at scale (tests marked `scaled`: races of thousands of
# deliveries, a worker killed among 2,000 updates, billing down 2 minutes, TronGrid down 5,
# Schemathesis with 100 examples an operation), at full size, then the faults done to the whole
# system under load (loadtest/faults.py); both write their figures into docs/reliability.md.
# About 25 minutes; `make test` runs the scaled tests smaller.
FAULT_RECORDS = $(VENV)/fault-records
faults: $(STAMP) $(NODE_STAMP) $(CATALOGS)
	rm -rf $(FAULT_RECORDS) && mkdir -p $(FAULT_RECORDS)
	GATEHOUSE_FULL_SCALE=1 GATEHOUSE_FAULT_RECORDS=$(abspath $(FAULT_RECORDS)) $(BIN)/python -m pytest -n 2 --maxschedchunk 1 --durations=15 -m scaled tests $(PYTEST_ARGS)
	$(BIN)/python -m loadtest.faults --records $(FAULT_RECORDS) --write docs/reliability.md --readme README.md $(FAULTS_ARGS)

# docs/api.md from the services' OpenAPI documents (a test fails while it is stale).
docs: $(STAMP)
	$(BIN)/python -m tests.apidoc --write docs/api.md

migrate: $(STAMP)
	$(BIN)/python -m shared.migrate

# Every load scenario, with a report and charts under loadtest/reports/ (about 30 minutes, the capacity scenario half of it);
# LOADTEST_ARGS picks scenarios and options, e.g. "reference-1 --seconds 20".
loadtest: $(VENV)/.loadtest $(CATALOGS)
	$(BIN)/python -m loadtest $(LOADTEST_ARGS)

$(VENV)/.loadtest: $(STAMP)
	$(UV) -e '.[dev,loadtest]' -e services/simulators
	touch $@

# Benchmarks print figures; they are not part of `make test`.
bench-webhooks: $(STAMP)
	$(BIN)/python loadtest/bench_webhooks.py $(BENCH_ARGS)

bench-claim: $(STAMP)
	$(BIN)/python loadtest/bench_claim.py $(BENCH_ARGS)

bench-stats: $(STAMP)
	$(BIN)/python loadtest/bench_stats.py $(BENCH_ARGS)

bench-login: $(STAMP)
	$(BIN)/python loadtest/bench_login.py $(BENCH_ARGS)

bench-gate: $(STAMP)
	$(BIN)/python loadtest/bench_gate.py $(BENCH_ARGS)

bench-sweep: $(STAMP)
	$(BIN)/python loadtest/bench_sweep.py $(BENCH_ARGS)

bench-precheckout: $(STAMP)
	$(BIN)/python loadtest/bench_precheckout.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .data .mypy_cache .pytest_cache .ruff_cache node_modules
