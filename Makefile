# Entry points: `make plan` (offline plan of dev), `make test` (lint + tests), `make bench`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STACK ?= dev

.PHONY: plan plan-all test lint check-promtool bench clean

$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-selftest.txt
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

# The alert tests run Prometheus's own promtool; without it they fail, so say how to get it first.
check-promtool:
	@command -v promtool >/dev/null || { \
		echo "error: promtool not found; the alert tests need it:" \
			"apt-get install prometheus (Debian/Ubuntu), or a Prometheus release's promtool on PATH" >&2; \
		exit 1; }

test: lint check-promtool
	$(PY) -m pytest -q

bench: $(VENV)/.installed
	$(PY) -m tests.bench

clean:
	rm -rf out .pytest_cache .ruff_cache
