# conductor-web: the two commands are `make run` and `make test`.
#
#   make run        install into .venv, migrate, load the examples, serve on HOST:PORT
#   make test       the whole suite on SQLite, then on a throwaway PostgreSQL cluster
#   make test-fast  SQLite only, without the end-to-end tests
#   make test-pg    PostgreSQL only
#   make test-scale-out  only the scale-out test (2 servers, 2 clusters, PostgreSQL, Redis,
#                   Python and TypeScript SDK workers, SIGKILL); part of make test's PostgreSQL pass
#   make bench      the benchmark beside the peers (DBOS, Procrastinate, Celery, Conductor OSS); not a test
#   make test-reference  the same scenarios against Conductor OSS and ours, one table of
#                   differences (docs/differences.md explains each; fails on an unexplained one)
#
# Extra pytest arguments: make test-fast PYTEST_ARGS="-k health -x"

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
HOST ?= 127.0.0.1
PORT ?= 8080
# Upper bound for one test (seconds; pytest-timeout), so a hung test fails instead of CI.
TEST_TIMEOUT ?= 300
PYTEST_ARGS ?=

PY := $(VENV)/bin/python
# Installing is redone only when pyproject.toml changes (or the venv is new).
INSTALLED := $(VENV)/.installed

# The official TypeScript SDK for the e2e suite (tests/e2e/test_typescript_sdk.py), from the
# lockfile; reinstalled only when package.json or package-lock.json changes. Its optional
# peer dependencies conflict with one another, hence --legacy-peer-deps.
TS_DIR := tests/ts
TS_INSTALLED := $(TS_DIR)/node_modules/.installed

# The official Go SDK for the e2e suite (tests/e2e/test_go_sdk.py): the modules that
# tests/go/go.sum pins, downloaded into Go's module cache (outside the repo; GOMODCACHE);
# redone only when go.mod or go.sum changes. The suite builds with -mod=readonly.
GO_DIR := tests/go
GO_DOWNLOADED := build/go-sdk-modules.stamp


# The official Java SDK for the e2e suite (tests/e2e/test_java_sdk.py): the pinned artifacts
# of tests/java/pom.xml (SDK, JUnit, Maven plugins and surefire's JUnit provider) into the
# local Maven repository (~/.m2, outside the repo), and the scenarios compiled; redone only
# when pom.xml changes. The SDK is Java 21 bytecode: tests/java/java_home.sh picks a JDK 21+.
JAVA_DIR := tests/java
JAVA_RESOLVED := $(JAVA_DIR)/target/.resolved

.PHONY: install run migrate test test-sqlite test-fast test-pg test-fuzz test-scale-out test-packages ts-sdk go-sdk java-sdk clean bench test-reference

install: $(INSTALLED)

# bin/pip is the last thing venv creates: a half-made venv (no ensurepip) is removed.
$(VENV)/bin/pip:
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); echo "could not create $(VENV) (on Debian: apt-get install python3-venv)" >&2; exit 1; }

$(INSTALLED): pyproject.toml | $(VENV)/bin/pip
	@echo "installing the project and its test tools into $(VENV) (once; a few minutes on a new machine)"
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

migrate: $(INSTALLED)
	$(PY) manage.py migrate --noinput

# API authentication is on unless CONDUCTOR_API_AUTH=off. The developer setup on a
# loopback address turns it off (unless the variable is set); scripts/run.sh says which.
LOOPBACK := $(filter 127.0.0.1 localhost ::1 [::1],$(HOST))

run: migrate
	$(PY) manage.py load_examples
	$(PY) manage.py install_schedules
	CONDUCTOR_API_AUTH=$${CONDUCTOR_API_AUTH:-$(if $(LOOPBACK),off,on)} scripts/run.sh $(HOST) $(PORT)

# pytest's exit status 5 (no test collected) counts as a failure.
define pytest
rc=0; $(1) $(PY) -m pytest --timeout=$(TEST_TIMEOUT) $(2) $(PYTEST_ARGS) || rc=$$?; \
if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; rc=1; fi; exit $$rc
endef

test: $(INSTALLED) test-packages ts-sdk go-sdk java-sdk
	@sqlite=passed; pg=passed; \
	$(MAKE) --no-print-directory test-sqlite || sqlite=FAILED; \
	$(MAKE) --no-print-directory test-pg || pg=FAILED; \
	fuzz=passed; $(MAKE) --no-print-directory test-fuzz || fuzz=FAILED; \
	echo "make test: SQLite $$sqlite, PostgreSQL $$pg, fuzzing $$fuzz"; \
	[ $$sqlite = passed ] && [ $$pg = passed ] && [ $$fuzz = passed ]

test-sqlite: $(INSTALLED) ts-sdk go-sdk java-sdk
	@echo "=== tests on SQLite"
	@$(call pytest,env -u DATABASE_URL,-m "not fuzz")

test-fast: $(INSTALLED)
	@$(call pytest,env -u DATABASE_URL,-m "not e2e and not fuzz")

# schemathesis over Conductor's OpenAPI description (FUZZ_EXAMPLES generated requests per
# operation, default 15) and over our own /api-docs (FUZZ_OWN_EXAMPLES, default 5): no
# request may get a 5xx, and no answer may break our document's schemas.
test-fuzz: $(INSTALLED)
	@$(call pytest,env -u DATABASE_URL,-m fuzz)

test-pg: $(INSTALLED) test-packages ts-sdk go-sdk java-sdk
	@echo "=== tests on PostgreSQL"
	@$(call pytest,scripts/with_postgres.sh,-m "not fuzz")

test-scale-out: $(INSTALLED) test-packages ts-sdk
	@$(call pytest,scripts/with_postgres.sh,-m scale_out -s)

# tests/reference/run.py: Conductor OSS (scripts/conductor_oss.sh: the pinned server jar from
# Maven Central, cached outside the repo; Java 21+ from /usr/lib/jvm) and ours side by side,
# the case fixtures and the ported specs against each, one difference table. Ours runs on
# SQLite; `scripts/with_postgres.sh make test-reference` runs ours on PostgreSQL.
REFERENCE_OUT ?= var/reference
test-reference: $(INSTALLED)
	$(PY) tests/reference/run.py --out $(REFERENCE_OUT)

# Debian packages the tests use, installed (as root, with apt-get) only when missing:
# PostgreSQL's server binaries (required by the PostgreSQL pass), chromium (the browser
# tests skip without it), redis-server (the channels-redis live-update test) and maven (the
# Java SDK suite; its JDK 21+ is not a Debian 12 package: see tests/java/java_home.sh).
test-packages:
	@pkgs=""; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || pkgs="$$pkgs postgresql"; \
	[ -x /usr/bin/chromium ] || pkgs="$$pkgs chromium"; \
	command -v redis-server >/dev/null 2>&1 || pkgs="$$pkgs redis-server"; \
	command -v mvn >/dev/null 2>&1 || pkgs="$$pkgs maven"; \
	[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || pkgs="$$pkgs rabbitmq-server"; \
	command -v nats-server >/dev/null 2>&1 || pkgs="$$pkgs nats-server"; \
	if [ -n "$$pkgs" ]; then \
	  if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian packages:$$pkgs"; \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$pkgs || exit 1; \
	  elif ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	    echo "PostgreSQL server binaries are missing: run as root, or apt-get install postgresql" >&2; exit 1; \
	  else \
	    echo "missing:$$pkgs (chromium, redis-server, rabbitmq-server, nats-server: their tests are skipped; maven: the Java SDK suite fails and the Kafka tests are skipped) - apt-get install$$pkgs"; \
	  fi; \
	fi

ts-sdk: $(TS_INSTALLED)

$(TS_INSTALLED): $(TS_DIR)/package.json $(TS_DIR)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm is missing: the TypeScript SDK tests need Node.js 18+ and npm (on Debian: apt-get install nodejs npm)" >&2; exit 1; }
	cd $(TS_DIR) && npm ci --legacy-peer-deps --no-audit --no-fund
	touch $@

go-sdk: $(GO_DOWNLOADED)

$(GO_DOWNLOADED): $(GO_DIR)/go.mod $(GO_DIR)/go.sum
	@command -v go >/dev/null 2>&1 || { echo "go is missing: the Go SDK tests need Go 1.23 or newer" >&2; exit 1; }
	cd $(GO_DIR) && go mod download && go mod verify
	@mkdir -p $(@D) && touch $@

java-sdk: $(JAVA_RESOLVED)

# -Dtest=SdkOnClasspath runs no scenario (no server) but makes surefire resolve its JUnit provider, so the
# e2e run (mvn -o, offline) finds everything in ~/.m2.
$(JAVA_RESOLVED): $(JAVA_DIR)/pom.xml
	@command -v mvn >/dev/null 2>&1 || { echo "mvn is missing: the Java SDK tests need Maven (on Debian: apt-get install maven)" >&2; exit 1; }
	@jh=$$($(JAVA_DIR)/java_home.sh) || exit 1; \
	cd $(JAVA_DIR) && JAVA_HOME=$$jh mvn -B -q dependency:go-offline test -Dtest=SdkOnClasspath
	touch $@

clean:
	rm -rf $(VENV) var/test_db.sqlite3* .pytest_cache *.egg-info $(TS_DIR)/node_modules build/go-sdk build/go-sdk-modules.stamp $(JAVA_DIR)/target

# make bench: bench/bench.py (ours, the QUICK set-ups of bench/run_all.sh on PostgreSQL and
# SQLite) and the peers of bench/peers/ (DBOS, Procrastinate, Celery+Redis; their packages
# go into a throwaway venv, BENCH_PEERS_VENV) and Conductor OSS (bench/run_oss.sh: its
# PostgreSQL store on the same cluster, then its SQLite; needs mvn and a JDK 21+ under
# /usr/lib/jvm; OSS=0 skips it) in one run beside one throwaway PostgreSQL,
# then bench/idle.py (server CPU with 20 idle long polls of 5 s and of 100 ms, and the
# cross-process wake, on another throwaway PostgreSQL), bench/growth.py (CPU ms per task
# update at 10 vs BENCH_GROWTH_N tasks), bench/overview.py (the Overview page's queries at
# BENCH_OVERVIEW_N executions, SQLite and PostgreSQL), bench/memory.py (the embedded server of `make run`
# at rest, and each process's RSS over BENCH_RSS_TRANSITIONS task transitions),
# bench/problems.py (the operator UI's problem-view queries at BENCH_PROBLEMS_N executions,
# on SQLite and on PostgreSQL), and the
# tables: ours, the peers, the ratios, and issue #9's targets met or not (bench/summarize.py).
# Needs PostgreSQL's server binaries and redis-server (Debian packages). Not part of
# `make test`. Figures taken on a loaded machine mean little: see bench/README.md.
BENCH_PEERS_VENV ?= /tmp/conductor-bench-peers-venv
BENCH_OUT ?= bench/results/make-bench
BENCH_N ?= 1000
BENCH_LONE ?= 50
BENCH_GROWTH_N ?= 2000
BENCH_IDLE_S ?= 10
BENCH_RSS_TRANSITIONS ?= 100000
BENCH_PROBLEMS_N ?= 1000000
BENCH_OVERVIEW_N ?= 1000000
bench: $(INSTALLED)
	@[ -x $(BENCH_PEERS_VENV)/bin/pip ] || $(PYTHON) -m venv $(BENCH_PEERS_VENV)
	@$(BENCH_PEERS_VENV)/bin/pip install -q dbos "psycopg[binary]" "celery[redis]" procrastinate
	@rm -rf $(BENCH_OUT)
	QUICK=1 N=$(BENCH_N) LONE=$(BENCH_LONE) PEERS_VENV=$(BENCH_PEERS_VENV) PY=$(PY) \
	  bench/with_pg.sh bench/run_all.sh $(BENCH_OUT)
	bench/with_pg.sh $(PY) bench/idle.py --db postgres --timeout-ms 5000 --timeout-ms 100 \
	  --seconds $(BENCH_IDLE_S) --json-out $(BENCH_OUT)/idle.jsonl
	env -u DATABASE_URL $(PY) bench/growth.py -n $(BENCH_GROWTH_N) --json-out $(BENCH_OUT)/growth.jsonl
	env -u DATABASE_URL $(PY) bench/memory.py --transitions $(BENCH_RSS_TRANSITIONS) \
	  --json-out $(BENCH_OUT)/memory.jsonl
	env -u DATABASE_URL $(PY) bench/problems.py -n $(BENCH_PROBLEMS_N) --json-out $(BENCH_OUT)/problems.jsonl
	bench/with_pg.sh $(PY) bench/problems.py --db postgres -n $(BENCH_PROBLEMS_N) --json-out $(BENCH_OUT)/problems.jsonl
	env -u DATABASE_URL $(PY) bench/overview.py --db sqlite -n $(BENCH_OVERVIEW_N) --json-out $(BENCH_OUT)/overview.jsonl
	bench/with_pg.sh $(PY) bench/overview.py --db postgres -n $(BENCH_OVERVIEW_N) --json-out $(BENCH_OUT)/overview.jsonl
	@$(PY) bench/summarize.py $(BENCH_OUT)
