# Entry points: `make plan` (offline plan of dev), `make offers REGION=<region>` (the catalog's
# types a region offers, with zones and prices), `make test` (lint + tests), `make bench`,
# `make selftest` (the bootstrap self-test on this CPU), `make bench-selftest`, `make
# recipes-smoke` (the training recipes at toy scale on this CPU), `make docs` (the config
# reference and the stack files' JSON Schema, from the config model), `make gpu-check` (the
# self-test and both benchmarks with a GPU machine's own Python, offline), `make
# selftest-bootstrap STACK=<stack> PYTORCH_DIGEST=sha256:<digest>` (up, build and push the
# self-test's image, pin its digest, up again), `make trainkit-wheel` (trainkit as a wheel a team
# installs into its own image, in dist/).
#
# Three virtual environments, each with what its targets run:
#   .venv        the program alone (pulumi and providers, pydantic, jinja2, PyYAML): `make plan`,
#                and `pulumi up` through Pulumi.yaml. No torch: `make plan-venv-size` checks it.
#   .venv-image  the image side (self-test, recipes) on this machine's CPU: torch, diffusers.
#   .venv-test   everything `make test` runs: both sides, schema validation, lint, pytest-xdist,
#                MkDocs (`make docs-site`).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
IMAGE_VENV := .venv-image
IMAGE_PY := $(IMAGE_VENV)/bin/python
TEST_VENV := .venv-test
TEST_PY := $(TEST_VENV)/bin/python
STACK ?= dev
# Where there is no NVIDIA driver, torch comes from PyTorch's CPU wheel index: PyPI's torch
# wheels pull the CUDA libraries (GBs) that such a machine cannot use. `TORCH_INDEX=` turns it off.
TORCH_INDEX ?= $(if $(shell command -v nvidia-smi 2>/dev/null),,https://download.pytorch.org/whl/cpu)
# The plan's venv must stay small enough for a platform engineer's laptop and CI cache.
PLAN_VENV_LIMIT_MB := 500
# pytest workers: one per core (`make test PYTEST_WORKERS=0` runs in one process).
PYTEST_WORKERS ?= auto

.PHONY: plan offers plan-all plan-venv-size charts charts-lock docs docs-site test test-image lint check-promtool bench bench-rules selftest bench-selftest \
	selftest-bootstrap recipes-smoke bench-recipes gpu-check gpu-wheels trainkit-wheel clean

# $(call venv,<folder>,<requirement file>): a fresh venv with torch alone first where the file
# needs it (from TORCH_INDEX), then the file. The plan's venv skips pip's bytecode for every
# module installed: pip would compile all of pulumi-aws (150 MB of .pyc, most for services the
# program never imports); Python writes the bytecode of what the program imports on its first run.
define venv
	$(PYTHON) -m venv $(1)
	$(1)/bin/python -m pip install --quiet --upgrade pip
	$(if $(filter-out requirements.txt,$(2)),$(1)/bin/python -m pip install --quiet --no-deps \
		$(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) -r requirements-torch.txt)
	$(1)/bin/python -m pip install --quiet $(if $(filter requirements.txt,$(2)),--no-compile) -r $(2)
	$(call dedupe_helm_lib,$(1))
	touch $(1)/.installed
endef

# helm-python-sdk's wheel holds libhelm_c.so three times (85 MB each: wheels cannot hold the
# SONAME symlinks). It loads libhelm_c.so.<version> by absolute path; the other two names become
# the symlinks they are in the library's own release.
define dedupe_helm_lib
	for lib in $(1)/lib/python3*/site-packages/helm_python/lib; do \
		[ -d $$lib ] || continue; full=$$(cd $$lib && ls libhelm_c.so.*.*.* | head -1); \
		ln -sf $$full $$lib/libhelm_c.so; ln -sf $$full $$lib/libhelm_c.so.0; done
endef

$(VENV)/.installed: requirements.txt
	$(call venv,$(VENV),requirements.txt)

$(IMAGE_VENV)/.installed: requirements-recipes.txt requirements-selftest.txt requirements-torch.txt
	$(call venv,$(IMAGE_VENV),requirements-recipes.txt)

$(TEST_VENV)/.installed: requirements-dev.txt requirements.txt requirements-recipes.txt \
		requirements-selftest.txt requirements-torch.txt requirements-docs.txt
	$(call venv,$(TEST_VENV),requirements-dev.txt)

plan: $(VENV)/.installed
	$(PY) -m plan $(STACK)

# The catalog's instance types a region offers, with their zones and prices: `make offers
# REGION=eu-west-1` before moving a stack there.
REGION ?= us-east-1
offers: $(VENV)/.installed
	$(PY) -m tools.offers $(REGION)

# Every stack file found, so a stack a user adds is planned too. `make plan-all STRICT=1`: the
# CI gate, failing on a warning or advisory a stack did not waive (docs/review.md, "Strict mode").
STRICT ?=
plan-all: $(VENV)/.installed
	for f in stacks/Pulumi.*.yaml; do \
		s=$${f#stacks/Pulumi.}; s=$${s%.yaml}; $(PY) -m plan $$s --quiet $(if $(STRICT),--strict) || exit 1; \
	done

# The plan's venv: its size once every stack has been planned (the bytecode of what the program
# imports written), and that it holds no training stack.
plan-venv-size: $(VENV)/.installed
	@$(MAKE) --no-print-directory plan-all PYTHONDONTWRITEBYTECODE= >/dev/null
	@size=$$(du -sm $(VENV) | cut -f1); echo "$(VENV): $$size MB (limit $(PLAN_VENV_LIMIT_MB) MB)"; \
	if $(PY) -c "import torch" 2>/dev/null; then echo "error: $(VENV) holds torch" >&2; exit 1; fi; \
	[ $$size -le $(PLAN_VENV_LIMIT_MB) ] || { echo "error: $(VENV) is over the limit" >&2; exit 1; }

# .charts/: every pinned chart, and every version a stack file overrides one to (charts), from
# its repository, kept only when its sha256 matches the digest the repository publishes and the
# one in model/charts.lock.json (docs/review.md). The lock
# is committed EMPTY (no chart repository was reachable where it was made), so this refuses every
# chart until `make charts-lock charts` runs where the repositories are reachable; meanwhile the
# plan renders from ../shared/helm and `--against` shows an uncached chart bump as unknown.
charts: $(VENV)/.installed
	$(PY) -m plan.charts pull

# Records the published digest of every pin and every stack's override in the lock (needs the
# repositories); review, commit.
charts-lock: $(VENV)/.installed
	$(PY) -m plan.charts record

# docs/config.md and docs/stack-schema.json; a test fails while either is stale.
docs: $(VENV)/.installed
	$(PY) -m tools.config_docs

# The topic pages in docs/ as a site (mkdocs.yml), strict: a broken link or anchor fails.
docs-site: $(TEST_VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(TEST_VENV)/bin/mkdocs build --strict

lint: $(TEST_VENV)/.installed
	$(TEST_VENV)/bin/ruff check .
	$(TEST_VENV)/bin/ruff format --check .

# The alert tests run Prometheus's own promtool; without it they fail, so say how to get it first.
check-promtool:
	@command -v promtool >/dev/null && command -v prometheus >/dev/null || { \
		echo "error: promtool or prometheus not found; the alert tests and the team cost" \
			"benchmark need them: apt-get install prometheus (Debian/Ubuntu), or a Prometheus" \
			"release's promtool and prometheus on PATH" >&2; \
		exit 1; }

# STYLE.md §8's tiers in two targets, split by folder: `make test` runs the unit, program and
# policy tiers (every folder but tests/image, tests/cluster and tests/suite) in under two
# minutes on 2 cores;
# `make test-image` runs the selftest tier, real processes on the CPU: the image side
# (tests/image: the self-test, trainkit's kill and hang runs, the recipes, gpu-check) and the
# rendered plan run whole (tests/cluster: the cluster in a box), 3–5½ minutes and 2–3 more,
# and the suite itself run on a copy of the project with a user's stacks added (tests/suite:
# a pytest of its own that plans two more stacks, which kept `make test` past two minutes).
# CI (.ci/run) runs both; tests/repo/test_test_targets.py holds the two to partition the tests.
IMAGE_TESTS := tests/image tests/cluster tests/suite
# $(call timed_pytest,<target>,<pytest arguments>): the tests on every core (pytest-xdist), the
# slowest 15 listed at the end. Each module's tests run in one worker (loadscope), so a module
# fixture that starts real processes or plans a changed stack runs once, not once per worker.
# Python writes bytecode for the run (git ignores __pycache__): where the environment turns it
# off (PYTHONDONTWRITEBYTECODE), every xdist worker compiles and rewrites every module again,
# and collection takes 19 s a process instead of 13.
define timed_pytest
	@start=$$(date +%s); \
	env -u PYTHONDONTWRITEBYTECODE $(TEST_PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadscope \
		--durations=15 $(2); status=$$?; \
	echo "make $(1): pytest took $$(( $$(date +%s) - start )) s"; exit $$status
endef

test: lint check-promtool
	$(call timed_pytest,test,$(addprefix --ignore=,$(IMAGE_TESTS)))

test-image: $(TEST_VENV)/.installed check-promtool
	$(call timed_pytest,test-image,$(IMAGE_TESTS))

bench: $(TEST_VENV)/.installed
	$(TEST_PY) -m tests.bench

# What the team cost figures cost Prometheus 2.42 (the prometheus package's server) as a month
# fills with jobs: about 6 minutes on 2 cores.
bench-rules: $(TEST_VENV)/.installed check-promtool
	$(TEST_PY) -m tests.bench_rules

# The bootstrap self-test on this machine: two gloo ranks on the CPU, as the Job runs it with NCCL.
# Local folders stand in for the shared-data and nvme-cache volumes.
SELFTEST_OUT ?= out/selftest
SELFTEST_ARGS ?=
TORCHRUN := PYTHONPATH=bootstrap:. $(IMAGE_VENV)/bin/torchrun --standalone --nproc_per_node=2
SELFTEST := $(TORCHRUN) -m selftest --out $(SELFTEST_OUT) \
	--shared-data $(SELFTEST_OUT)/shared-data --nvme-cache $(SELFTEST_OUT)/nvme-cache

selftest: $(IMAGE_VENV)/.installed
	mkdir -p $(SELFTEST_OUT)/shared-data $(SELFTEST_OUT)/nvme-cache
	$(SELFTEST) $(SELFTEST_ARGS)

# The self-test's bootstrap on an AWS stack, each step printed as it runs: `pulumi up` (the ECR
# repository), build bootstrap/Dockerfile and push it there, pin the pushed digest as
# selftest.image, `pulumi up` again (docs/selftest.md, "The image"). DRY_RUN=1 prints the steps.
PYTORCH_DIGEST ?=
BOOTSTRAP_ARGS ?=
selftest-bootstrap: $(VENV)/.installed
	$(PY) -m tools.selftest_bootstrap $(STACK) --pytorch-digest "$(PYTORCH_DIGEST)" \
		$(if $(DRY_RUN),--dry-run) $(BOOTSTRAP_ARGS)

# The same run with a wider all-reduce sweep, printing busbw per size, storage and training figures.
bench-selftest: $(IMAGE_VENV)/.installed
	mkdir -p $(SELFTEST_OUT)/shared-data $(SELFTEST_OUT)/nvme-cache
	$(SELFTEST) --bench --sizes 1024,16384,262144,4194304,16777216,67108864 $(SELFTEST_ARGS)

# prepare, sd-finetune and esrgan at toy scale on this CPU, two gloo ranks each, the training
# recipes interrupted by SIGTERM and resumed; reports in out/recipes/<recipe>/report.json.
# The config model (the program's venv) gives each recipe its settings, as it gives a job's.
recipes-smoke: $(IMAGE_VENV)/.installed $(VENV)/.installed
	PYTHONPATH=bootstrap:. PROGRAM_PYTHON=$(PY) $(IMAGE_PY) -m recipes.smoke

# One step of training after warm-up of sd-finetune (SD 1.5 shapes, 512², 4 per GPU) and esrgan
# (RRDB 23 blocks, 128² crops, 8 per GPU) on the GPU, random weights: step time, peak memory,
# goodput (trainkit's ledger arithmetic: step time over wall time from the model's set-up);
# and the overlap benchmark (the real data path against the GPU step, X ms: on a GPU
# sd-finetune's real step, else a stand-in sleep of 45 ms; serial step time, step time with the
# loader's workers, each against max(X, Y)). On a CPU give smaller sizes, e.g.
# BENCH_RECIPES_ARGS="--sd-resolution 64 --sd-batch 1", or "--only overlap".
BENCH_RECIPES_ARGS ?=
bench-recipes: $(IMAGE_VENV)/.installed
	PYTHONPATH=bootstrap:. $(IMAGE_PY) -m recipes.bench $(BENCH_RECIPES_ARGS)

# On a GPU machine whose Python already holds a CUDA torch and that reaches no package index
# (docs/selftest.md, "On a GPU machine: make gpu-check"): the self-test with its benchmark
# figures (one rank per GPU) and bench-recipes, run with GPU_PYTHON, each step time-boxed within
# GPU_CHECK_BUDGET_S; what that Python lacks comes from the wheels in WHEELS (make gpu-wheels),
# installed offline beside the output. At most 8 files in GPU_CHECK_OUT, summary.md the page
# of figures. On a CPU the same run with the CPU fallbacks (`make selftest`'s two gloo ranks).
GPU_PYTHON ?= python3
WHEELS ?=
GPU_CHECK_OUT ?= out/gpu-check
GPU_CHECK_BUDGET_S ?= 480
GPU_CHECK_ARGS ?=
gpu-check:
	PYTHONPATH=bootstrap:. $(GPU_PYTHON) -m gpu_check --out $(GPU_CHECK_OUT) \
		--budget-s $(GPU_CHECK_BUDGET_S) $(if $(WHEELS),--wheels $(WHEELS)) $(GPU_CHECK_ARGS)

# The wheels gpu-check installs where the GPU machine's Python lacks them: diffusers and
# matplotlib at their pins with their dependencies, less torch, transformers, numpy and Pillow
# (that Python has them), for CPython GPU_WHEELS_PYTHON on x86-64 Linux; refused over 48 MiB,
# so that they travel with the working tree (64 MiB).
GPU_WHEELS_DIR ?= .gpu-wheels
GPU_WHEELS_PYTHON ?= 3.12
gpu-wheels:
	PYTHONPATH=bootstrap $(PYTHON) -m gpu_check.wheels $(GPU_WHEELS_DIR) \
		--python-version $(GPU_WHEELS_PYTHON)

# trainkit and the contract/ it reads as one wheel, gpu_platform_trainkit-<platform version>-
# py3-none-any.whl in TRAINKIT_DIST (bootstrap/pyproject.toml; docs/trainkit.md installs it into
# a team's image). Built offline: hatchling comes from the test venv, not from an index
# (--no-build-isolation), and torch is no requirement of the wheel (the image has its own).
# The test venv is made when missing, never remade for a wheel (an order-only prerequisite
# would still remake it when a requirements file is newer).
TRAINKIT_DIST ?= dist
trainkit-wheel: $(if $(wildcard $(TEST_VENV)/.installed),,$(TEST_VENV)/.installed)
	$(TEST_PY) -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir $(TRAINKIT_DIST) \
		./bootstrap

clean:
	rm -rf out .pytest_cache .ruff_cache
