# `make test` is what CI runs (.ci/run): first what the checks need (.ci/install: the system
# packages, installed when run as root, and the venv), then linters, pgTAP and pytest.
# Tools come from .venv when it exists, else from PATH.
VENV ?= .venv
BIN := $(if $(wildcard $(VENV)/bin/python),$(VENV)/bin/,)
SQL_DIRS := sql schema functions triggers tests_sql

.PHONY: test install check lint pgtap pytest db-start db-stop
.NOTPARALLEL:

# A make of its own for the checks: it looks for the venv again, after the install made it.
test: install
	$(MAKE) --no-print-directory check VENV="$(VENV)"

install:
	bash .ci/install "$(VENV)"

check: lint db-start pgtap pytest

lint:
	$(BIN)ruff check pyshell tests_py benchmarks
	$(BIN)sqlfluff lint --processes 0 $(SQL_DIRS)

db-start:
	$(BIN)nmc db start

db-stop:
	$(BIN)nmc db stop

pgtap:
	$(BIN)nmc dev pgtap

pytest:
	$(BIN)pytest -q tests_py
