# `make test` is what CI runs (.ci/run): linters, pgTAP, then pytest.
# Tools come from .venv when it exists, else from PATH.
VENV ?= .venv
BIN := $(if $(wildcard $(VENV)/bin/python),$(VENV)/bin/,)
SQL_DIRS := sql schema functions triggers tests_sql

.PHONY: test lint pgtap pytest db-start db-stop
.NOTPARALLEL:

test: lint db-start pgtap pytest

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
