# Two commands matter: `make demo` (set up, index a repository, ask it) and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
UV_VERSION := 0.13.9
REPO ?= .
QUESTION ?= where is the reciprocal rank fusion implemented?
export HF_HUB_OFFLINE := 1
export SSL_CERT_FILE ?= /etc/ssl/certs/ca-certificates.crt
BIN := $(VENV)/bin

.PHONY: setup demo test lint typecheck unit lock opensearch-start opensearch-stop bench clean

$(BIN)/.installed: requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)
	$(BIN)/uv pip install --quiet --python $(BIN)/python -r requirements.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	touch $@

setup: $(BIN)/.installed

demo: setup
	$(BIN)/codeask index $(REPO)
	$(BIN)/codeask ask "$(QUESTION)"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup
	$(BIN)/mypy

unit: setup
	$(BIN)/pytest -q

test: lint typecheck unit

lock: $(BIN)/python
	$(BIN)/uv pip compile pyproject.toml --extra dev --python-version 3.11 \
		--python-platform x86_64-manylinux_2_28 --generate-hashes -o requirements.lock

opensearch-start:
	bash scripts/opensearch.sh start

opensearch-stop:
	bash scripts/opensearch.sh stop

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
