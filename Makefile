# Entry points: `make plan` (offline plan of dev), `make test` (lint + tests), `make bench`,
# `make selftest` (the bootstrap self-test on this CPU), `make bench-selftest`, `make
# recipes-smoke` (the training recipes at toy scale on this CPU), `make docs` (the config
# reference and the stack files' JSON Schema, from the config model).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STACK ?= dev

.PHONY: plan plan-all docs test lint check-promtool bench selftest bench-selftest recipes-smoke \
	bench-recipes clean

$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-selftest.txt requirements-recipes.txt
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

# docs/config.md and docs/stack-schema.json; a test fails while either is stale.
docs: $(VENV)/.installed
	$(PY) -m infra.config_docs

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

# The bootstrap self-test on this machine: two gloo ranks on the CPU, as the Job runs it with NCCL.
# Local folders stand in for the shared-data and nvme-cache volumes.
SELFTEST_OUT ?= out/selftest
SELFTEST_ARGS ?=
TORCHRUN := PYTHONPATH=bootstrap $(VENV)/bin/torchrun --standalone --nproc_per_node=2
SELFTEST := $(TORCHRUN) -m selftest --out $(SELFTEST_OUT) \
	--shared-data $(SELFTEST_OUT)/shared-data --nvme-cache $(SELFTEST_OUT)/nvme-cache

selftest: $(VENV)/.installed
	mkdir -p $(SELFTEST_OUT)/shared-data $(SELFTEST_OUT)/nvme-cache
	$(SELFTEST) $(SELFTEST_ARGS)

# The same run with a wider all-reduce sweep, printing busbw per size, storage and training figures.
bench-selftest: $(VENV)/.installed
	mkdir -p $(SELFTEST_OUT)/shared-data $(SELFTEST_OUT)/nvme-cache
	$(SELFTEST) --bench --sizes 1024,16384,262144,4194304,16777216,67108864 $(SELFTEST_ARGS)

# prepare, sd-finetune and esrgan at toy scale on this CPU, two gloo ranks each, the training
# recipes interrupted by SIGTERM and resumed; reports in out/recipes/<recipe>/report.json.
recipes-smoke: $(VENV)/.installed
	PYTHONPATH=bootstrap:. $(PY) -m recipes.smoke

# One training step after warm-up of sd-finetune (SD 1.5 shapes, 512², 4 per GPU) and esrgan
# (RRDB 23 blocks, 128² crops, 2 per GPU) on the GPU, random weights: step time, peak memory.
# On a CPU give smaller sizes, e.g. BENCH_RECIPES_ARGS="--sd-resolution 64 --sd-batch 1".
BENCH_RECIPES_ARGS ?=
bench-recipes: $(VENV)/.installed
	PYTHONPATH=bootstrap:. $(PY) -m recipes.bench $(BENCH_RECIPES_ARGS)

clean:
	rm -rf out .pytest_cache .ruff_cache
