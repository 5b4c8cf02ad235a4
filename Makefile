# conductor-web: the two commands are `make run` and `make test`.
#
#   make run        install into .venv, migrate, load the examples, serve on HOST:PORT
#   make test       the whole suite on SQLite, then on a throwaway PostgreSQL cluster
#   make test-fast  SQLite only, without the end-to-end tests
#   make test-pg    PostgreSQL only
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

.PHONY: install run migrate test test-sqlite test-fast test-pg postgres-server clean

install: $(INSTALLED)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(INSTALLED): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

migrate: $(INSTALLED)
	$(PY) manage.py migrate --noinput

run: migrate
	$(PY) manage.py load_examples
	$(PY) manage.py install_schedules
	scripts/run.sh $(HOST) $(PORT)

# pytest's exit status 5 (no test collected) counts as a failure.
define pytest
rc=0; $(1) $(PY) -m pytest --timeout=$(TEST_TIMEOUT) $(2) $(PYTEST_ARGS) || rc=$$?; \
if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; rc=1; fi; exit $$rc
endef

test: $(INSTALLED) postgres-server
	@sqlite=passed; pg=passed; \
	$(MAKE) --no-print-directory test-sqlite || sqlite=FAILED; \
	$(MAKE) --no-print-directory test-pg || pg=FAILED; \
	echo "make test: SQLite $$sqlite, PostgreSQL $$pg"; \
	[ $$sqlite = passed ] && [ $$pg = passed ]

test-sqlite: $(INSTALLED)
	@echo "=== tests on SQLite"
	@$(call pytest,env -u DATABASE_URL,)

test-fast: $(INSTALLED)
	@$(call pytest,env -u DATABASE_URL,-m "not e2e")

test-pg: $(INSTALLED) postgres-server
	@echo "=== tests on PostgreSQL"
	@$(call pytest,scripts/with_postgres.sh,)

# PostgreSQL server binaries from Debian's package, only when none are installed.
postgres-server:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  echo "installing PostgreSQL (Debian package postgresql)"; \
	  if [ "$$(id -u)" -ne 0 ]; then echo "PostgreSQL is missing: run as root or apt-get install postgresql" >&2; exit 1; fi; \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql; \
	fi

clean:
	rm -rf $(VENV) var/test_db.sqlite3* .pytest_cache *.egg-info
