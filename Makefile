# The README's two commands: `make run` (main job) and `make test` (tests).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DATA ?= data/raw/creditcard.csv
DEMO := data/demo/creditcard_demo.csv.gz
PROFILE ?= default
SCHEMA ?= kaggle
SEED ?= 0
PREFECT_PORT ?= 4200
CRON ?= 0 3 * * *

# Prefect offline and self-contained (see the README, "Prefect settings").
export DO_NOT_TRACK := 1
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS := 120
export PREFECT_HOME ?= $(CURDIR)/.prefect

MLFLOW_PORT ?= 5000

.PHONY: help install browser run server serve mlflow-ui bench docs test test-fast lint format clean

help:
	@echo "make run    set up .venv, obtain the real data, run the pipeline (PROFILE=$(PROFILE))"
	@echo "make test   set up .venv, run the whole test suite"
	@echo "make test-fast  everything but the tests marked slow (everyday work)"
	@echo "make server start a local Prefect server on 127.0.0.1:$(PREFECT_PORT)"
	@echo "make serve  serve the nightly and on-demand deployments (PROFILE=$(PROFILE))"
	@echo "make mlflow-ui  the MLflow UI of ./mlflow.db on 127.0.0.1:$(MLFLOW_PORT)"
	@echo "make bench  the benchmark suite on the real data (prints JSON)"
	@echo "make lint   ruff check + format check + the import floors"
	@echo "make docs   build the documentation site offline into docs/site (strict)"

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# This machine's pip config prints a warning per package for its local indexes.
	$(BIN)/python -m pip install -q -e '.[dev]' 2>&1 | { grep -v 'is ignored: it is neither' || true; }
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	@if [ "$(DATA)" = "data/raw/creditcard.csv" ] && [ ! -f "$(DATA)" ]; then \
	  $(BIN)/fraudaug fetch-data --dest "$(DATA)" || { \
	    echo "" >&2; \
	    echo "!!! Could not fetch the real data. Falling back to DEMO DATA (synthetic)." >&2; \
	    echo "!!! The report will say so. Put the Kaggle creditcard.csv at $(DATA) for real results." >&2; \
	    echo "" >&2; \
	    test -f "$(DEMO)" || $(BIN)/fraudaug demo-data --out "$(DEMO)"; }; \
	fi
	@data="$(DATA)"; \
	  if [ "$(DATA)" = "data/raw/creditcard.csv" ] && [ ! -f "$(DATA)" ]; then data="$(DEMO)"; fi; \
	  $(BIN)/fraudaug run --data "$$data" --schema "$(SCHEMA)" --profile "$(PROFILE)" --seed "$(SEED)"

# A local Prefect server for deployments (loopback only); leave it running.
server: $(STAMP)
	$(BIN)/prefect server start --host 127.0.0.1 --port $(PREFECT_PORT)

# Serve fraud-augmentation/nightly and fraud-augmentation/on-demand against the server
# at PREFECT_API_URL (default: the one `make server` starts).
serve: $(STAMP)
	PREFECT_API_URL=$${PREFECT_API_URL:-http://127.0.0.1:$(PREFECT_PORT)/api} \
	  $(BIN)/fraudaug serve --data "$(DATA)" --schema "$(SCHEMA)" --profile "$(PROFILE)" --cron "$(CRON)"

# The MLflow UI over the runs `make run` logged (./mlflow.db, ./mlartifacts), loopback only.
mlflow-ui: $(STAMP)
	$(BIN)/mlflow ui --backend-store-uri "$${MLFLOW_TRACKING_URI:-sqlite:///$(CURDIR)/mlflow.db}" \
	  --default-artifact-root "$(CURDIR)/mlartifacts" --host 127.0.0.1 --port $(MLFLOW_PORT)

# The benchmark suite on the real data (about 13 minutes on 2 cores).
bench: $(STAMP)
	@test -f "$(DATA)" || $(BIN)/fraudaug fetch-data --dest "$(DATA)"
	$(BIN)/python -m benchmarks --data "$(DATA)"

# The documentation site, offline, strict: a broken link or any warning fails it.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build -f docs/mkdocs.yml
	@echo "docs: docs/site/index.html"

# The browser test drives Debian's chromium through Playwright (no browser download).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser test (apt-get)"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	  || echo "!!! could not install chromium: the browser test will be skipped (fails under CI)" >&2; }

# Two test workers, a file each (a file's module fixtures are built once): about
# 26 instead of 40 minutes on 2 cores. TEST_WORKERS=1: one process.
TEST_WORKERS ?= 2
XDIST = $(if $(filter 1,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

test: $(STAMP) browser
	$(BIN)/python -m pytest $(XDIST)

# Everyday work: everything but the end-to-end runs, servers and benchmarks (CI runs `test`).
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" $(XDIST)

lint: $(STAMP)
	$(BIN)/ruff check pipeline flows tests benchmarks docs
	$(BIN)/ruff format --check pipeline flows tests benchmarks docs
	$(BIN)/lint-imports --no-cache

format: $(STAMP)
	$(BIN)/ruff format pipeline flows tests benchmarks docs
	$(BIN)/ruff check --fix pipeline flows tests benchmarks docs

clean:
	rm -rf .pytest_cache .ruff_cache .prefect
