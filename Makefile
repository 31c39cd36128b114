# Two commands matter: `make demo` (set up, index a repository, ask it) and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
UV_VERSION := 0.13.9
REPO ?= .
QUESTION ?= where is the reciprocal rank fusion implemented?
export HF_HUB_OFFLINE := 1
export SSL_CERT_FILE ?= /etc/ssl/certs/ca-certificates.crt
BIN := $(VENV)/bin

.PHONY: setup demo test services services-stop lint typecheck db-check unit helm-check lock bench clean preview

# The demo and the tests get everything: the runtime set (requirements.lock: what serve,
# worker, index, search and ask load), codeask[train] (torch, to export and train models)
# and the dev tools, all pinned in requirements-dev.lock. Then the ONNX exports the
# default run path loads are made once (`codeask models export`; skipped when present).
$(BIN)/.installed: requirements.lock requirements-dev.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)
	$(BIN)/uv pip install --quiet --python $(BIN)/python -r requirements-dev.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	$(BIN)/codeask models export
	touch $@

setup: $(BIN)/.installed

demo: setup
	$(BIN)/codeask index $(REPO)
	$(BIN)/codeask ask "$(QUESTION)"

# The floors of the house (pyproject.toml [tool.importlinter]): an import only goes down.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: setup
	$(BIN)/mypy

# The tests that need them use a real OpenSearch node and a real PostgreSQL server.
services:
	bash scripts/opensearch.sh start
	bash scripts/postgres.sh start

services-stop:
	-bash scripts/opensearch.sh stop
	-bash scripts/postgres.sh stop

# `alembic check`: migrated to head, a database matches the table models, on SQLite and on
# the test PostgreSQL (autogenerate finds nothing to add; a model change needs a revision).
db-check: setup
	tmp=$$(mktemp -d) && url=sqlite:///$$tmp/meta.db && \
	CODEASK_DATABASE_URL=$$url $(BIN)/codeask db upgrade && CODEASK_DATABASE_URL=$$url $(BIN)/codeask db check; \
	rc=$$?; rm -rf $$tmp; exit $$rc
	url=$${CODEASK_TEST_DATABASE_URL:-$$(bash scripts/postgres.sh url)} && \
	CODEASK_DATABASE_URL=$$url $(BIN)/codeask db upgrade && CODEASK_DATABASE_URL=$$url $(BIN)/codeask db check

helm-check:
	bash scripts/helm.sh check

unit: setup
	CODEASK_TEST_OPENSEARCH_URL=$${CODEASK_TEST_OPENSEARCH_URL:-http://127.0.0.1:9200} \
	CODEASK_TEST_DATABASE_URL=$${CODEASK_TEST_DATABASE_URL:-$$(bash scripts/postgres.sh url)} \
	$(BIN)/pytest -q

test: setup lint typecheck services db-check helm-check unit

# PNGs of the Slack and Teams messages for review (docs/images/preview/, scripts/preview/).
# Headless Chromium is heavy, so this is not part of `make test`; tests/test_preview.py
# checks the pages it draws from without it.
PREVIEW := scripts/preview
CHROMIUM ?= chromium

$(PREVIEW)/node_modules/.package-lock.json: $(PREVIEW)/package.json $(PREVIEW)/package-lock.json
	cd $(PREVIEW) && npm ci --ignore-scripts --no-audit --no-fund

preview: setup
	@command -v $(CHROMIUM) >/dev/null || { echo "make preview needs Chromium ($(CHROMIUM)): \
	apt-get install chromium fonts-lato fonts-noto-color-emoji" >&2; exit 1; }
	@command -v npm >/dev/null || { echo "make preview needs Node.js: apt-get install nodejs npm" >&2; exit 1; }
	$(MAKE) $(PREVIEW)/node_modules/.package-lock.json
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m scripts.preview.preview

# Both locks from pyproject.toml; the runtime one is a subset of the full one, pin for pin.
lock: $(BIN)/python
	$(BIN)/uv pip compile pyproject.toml --extra train --extra dev --python-version 3.11 \
		--python-platform x86_64-manylinux_2_28 --generate-hashes -o requirements-dev.lock
	$(BIN)/uv pip compile pyproject.toml --python-version 3.11 -c requirements-dev.lock \
		--python-platform x86_64-manylinux_2_28 --generate-hashes -o requirements.lock

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
