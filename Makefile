# Entry points: `make plan` (offline plan of dev), `make test` (lint + tests), `make bench`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STACK ?= dev

.PHONY: plan plan-all test lint bench clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

plan: $(VENV)/.installed
	$(PY) -m infra.plan $(STACK)

# Every stack file found, so a stack a user adds is planned too.
plan-all: $(VENV)/.installed
	for f in stacks/Pulumi.*.yaml; do \
		s=$${f#stacks/Pulumi.}; s=$${s%.yaml}; $(PY) -m infra.plan $$s --quiet || exit 1; \
	done

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: lint
	$(PY) -m pytest -q

bench: $(VENV)/.installed
	$(PY) -m tests.bench

clean:
	rm -rf out .pytest_cache .ruff_cache
