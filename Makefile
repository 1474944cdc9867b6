# discospace: one entry point for setting up, running and testing everything on one machine.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PACKAGES := libs/core libs/events libs/runtime libs/store libs/traces libs/testing libs/cli \
            services/registry services/explorer services/sampler services/actuator services/projector \
            benchmarks/optimizers
PYPROJECTS := $(addsuffix /pyproject.toml,$(PACKAGES))
DEV_TOOLS := pytest pytest-asyncio pytest-timeout hypothesis ruff mypy types-PyYAML

.PHONY: help setup up down status logs demo test test-unit test-integration lint format \
        schemas check-schemas bench bench-optimizers clean test-setup

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

$(VENV)/.installed: $(PYPROJECTS)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "discospace needs Python >= 3.11 (found $$($(PYTHON) --version))"; exit 2; }
	@$(PYTHON) -c 'import ensurepip' 2>/dev/null || \
	  { echo "discospace needs Python's venv module with pip (Debian, Ubuntu: apt-get install python3-venv)"; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(addprefix -e ,$(PACKAGES)) $(DEV_TOOLS)
	@touch $@

# The test suite also runs what can run here without a GPU: Optuna's GPSampler (the explorer's
# 'gp' extra: torch and scipy, about 3 GB from PyPI), the torch model on the CPU, and the
# data_recipe actuator (the actuator's 'data' extra: py-data-juicer with Ray, about 0.5 GB).
$(VENV)/.installed-test: $(VENV)/.installed services/explorer/pyproject.toml services/actuator/pyproject.toml
	$(PY) -m pip install -q -e 'services/explorer[gp]' -e 'services/actuator[data]'
	@touch $@

test-setup: setup $(VENV)/.installed-test ## setup, plus what the tests need beyond it (torch and scipy for optuna_gp, Data-Juicer for data_recipe, the Kafka jars for the brokers tests start, a Prometheus server)
	@deploy/local/kafka.sh fetch
	@deploy/local/prometheus.sh fetch

setup: $(VENV)/.installed ## virtual environment, every package editable, dev tools, Kafka jars unless KAFKA_BOOTSTRAP_SERVERS names a cluster (idempotent)
	@if [ -n "$$KAFKA_BOOTSTRAP_SERVERS" ]; then \
		echo "setup: KAFKA_BOOTSTRAP_SERVERS is set: using the cluster at $$KAFKA_BOOTSTRAP_SERVERS, no local broker fetched"; \
	else deploy/local/kafka.sh fetch; fi

up: setup ## start the local broker and every service in the background (.run/)
	@deploy/local/services.sh start

down: ## stop every service and the broker started by `make up`
	@deploy/local/services.sh stop

status: ## what is running
	@deploy/local/services.sh status

logs: ## follow the logs of everything started by `make up`
	@deploy/local/services.sh logs

demo: up ## the main job: measure a CPU training workload over a space, print and plot the results
	@deploy/local/demo.sh

test: test-setup ## the whole suite, integration tests on the real broker included
	$(PY) -m pytest

test-unit: test-setup ## the fast tests that need no broker
	$(PY) -m pytest -m "not integration"

test-integration: test-setup ## only the tests that cross real infrastructure
	$(PY) -m pytest -m integration

lint: setup ## ruff (lint + format check) and mypy
	$(VENV)/bin/ruff check libs services tests benchmarks
	$(VENV)/bin/ruff format --check libs services tests benchmarks
	$(VENV)/bin/mypy $(addsuffix /src,$(PACKAGES))

format: setup ## apply ruff's formatting and safe fixes
	$(VENV)/bin/ruff check --fix libs services tests benchmarks
	$(VENV)/bin/ruff format libs services tests benchmarks

schemas: setup ## regenerate proto/ (JSON Schema per event, AsyncAPI per service)
	$(PY) -m discospace.runtime.contracts proto

check-schemas: setup ## fail when regenerating proto/ would change it
	$(PY) -m discospace.runtime.contracts proto --check

.PHONY: chaos
chaos: setup ## chaos suite, full form: overlapping walks while every service is SIGKILLed >= 20 times, the broker stopped and killed, and on a 3-broker cluster brokers lost (CHAOS_SEED, CHAOS_KILLS, CHAOS_BROKER_STOPS, CHAOS_BROKER_KILLS, CHAOS_BROKER_LOSSES, CHAOS_REPEAT, CHAOS_TIMEOUT_S)
	CHAOS_KILLS=$${CHAOS_KILLS:-20} CHAOS_BROKER_STOPS=$${CHAOS_BROKER_STOPS:-3} \
	  CHAOS_BROKER_KILLS=$${CHAOS_BROKER_KILLS:-2} CHAOS_BROKER_LOSSES=$${CHAOS_BROKER_LOSSES:-2} \
	  CHAOS_REPEAT=$${CHAOS_REPEAT:-1} CHAOS_TIMEOUT_S=$${CHAOS_TIMEOUT_S:-3600} \
	  $(PY) -m pytest tests/chaos -q -s

bench: setup ## benchmarks; each prints its figures
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

bench-optimizers: test-setup ## the four optimizer benchmarks on the published traces (zeus, zeus-robust, fms, fms-cross-space; about 10 min); tables in benchmarks/results/
	$(VENV)/bin/discospace bench optimizers

clean: down ## remove the virtual environment and local state
	rm -rf $(VENV) .run
