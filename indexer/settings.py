"""Settings of the indexer and the search stores (env prefix ``CODEASK_``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_EMBED_MODEL = "all-MiniLM-L6-v2"


class IndexerSettings(BaseSettings):
    """Where data lives, which store and embedding model to use."""

    model_config = SettingsConfigDict(env_prefix="CODEASK_", extra="ignore")

    data_dir: Path | None = None
    # The metadata database (registry, jobs, access control, answers; indexer.db):
    # empty is the SQLite file <data_dir>/codeask.meta.db; PostgreSQL in production.
    database_url: str = ""
    xdg_data_home: str = Field(default="", validation_alias=AliasChoices("XDG_DATA_HOME"))
    store: Literal["embedded", "opensearch"] = "embedded"
    embed_model: str = DEFAULT_EMBED_MODEL
    # torch: sentence-transformers; torch-bf16: the same with bfloat16 weights, for CPUs with
    # native bf16 (AMX, AVX512-BF16; refused elsewhere); onnx / onnx-int8 (the default):
    # the same model exported to ONNX Runtime (int8 quantized per channel) once, at set-up,
    # into CODEASK_ONNX_DIR. The torch backends need codeask[train].
    # api: an embeddings endpoint through LiteLLM (CODEASK_EMBED_MODEL as LiteLLM names it,
    # e.g. text-embedding-3-small, voyage/voyage-code-3, ollama/nomic-embed-text, or a bare
    # name served by the OpenAI-compatible server at CODEASK_EMBED_API_BASE).
    embed_backend: Literal["torch", "torch-bf16", "onnx", "onnx-int8", "api"] = "onnx-int8"
    # Where the ONNX exports of the embedding model and the reranker live (empty:
    # <data_dir>/models/onnx). `codeask models export` writes them at set-up; the image
    # carries them in /opt/codeask/models, so a pod never needs torch.
    onnx_dir: Path | None = None
    # Texts per model call; 0: the backend's own (32 for torch, 16 for ONNX, measured best;
    # 64 per request for api).
    embed_batch_size: int = Field(default=0, ge=0)
    # The api backend: where to send batches (empty: the provider's own URL), its key,
    # how many requests run at once, retries on 429/5xx/no connection (with backoff), the
    # seconds one request may take, and the vector size (0: learned from the first reply;
    # every reply is checked against it).
    embed_api_base: str = ""
    embed_api_key: str = Field(default="", repr=False)
    embed_concurrency: int = Field(default=4, ge=1)
    embed_retries: int = Field(default=3, ge=0)
    embed_timeout: float = Field(default=60.0, gt=0)
    embed_dimension: int = Field(default=0, ge=0)
    # The api backend: text put before each question and each chunk, for models trained
    # with them (e5: "query: " / "passage: "; nomic: "search_query: " / "search_document: ").
    embed_query_prefix: str = ""
    embed_document_prefix: str = ""
    embed_threads: int = 0  # 0: one per CPU core
    max_file_bytes: int = 1_000_000
    opensearch_url: str = "http://127.0.0.1:9200"
    opensearch_user: str = ""
    opensearch_password: str = ""
    opensearch_verify_certs: bool = True
    opensearch_ca_certs: str = ""
    opensearch_index: str = "codeask-chunks"
    opensearch_shards: int = 1
    opensearch_replicas: int = 0
    # Keep each repository's chunks on one shard and send a search only to the shards of
    # the allowed repositories. Fixed when the chunk index is created (changing it later
    # needs `codeask migrate-index`); it changes nothing with one shard.
    opensearch_routing: bool = False
    # float: vectors as given; sq: Lucene's scalar quantizer builds and searches the HNSW
    # graph on 1-byte vectors (a quarter of the vector memory; faster loads, see
    # docs/benchmarks.md). Fixed when the chunk index is created, like routing.
    opensearch_vector_encoding: Literal["float", "sq"] = "float"
    # How the chunk index searches its segments: "all" runs every query over the segments
    # in parallel (the k-NN half of a hybrid search took 40 ms p50 instead of 60 at 1M
    # chunks on 2 cores, docs/benchmarks.md), "none" one after another, "auto" as the node
    # decides; "cluster" leaves the index setting alone (for managed clusters that refuse
    # it per index). Applied when codeask starts; changing it needs no migration.
    opensearch_concurrent_segment_search: Literal["all", "auto", "none", "cluster"] = "all"
    opensearch_timeout: float = 30.0
    # codeask worker: how often an idle worker polls, how often a busy one renews its
    # lease, after how long a silent worker's job is taken over, and the retry backoff.
    worker_poll_seconds: float = 2.0
    worker_heartbeat_seconds: float = 10.0
    worker_stale_seconds: float = 60.0
    worker_max_attempts: int = 5
    worker_backoff_seconds: float = 5.0

    @model_validator(mode="after")
    def _resolve_data_dir(self) -> IndexerSettings:
        if self.data_dir is None:
            base = Path(self.xdg_data_home) if self.xdg_data_home else Path.home() / ".local/share"
            self.data_dir = base / "codeask"
        if not self.database_url:
            self.database_url = f"sqlite:///{self.data_dir / 'codeask.meta.db'}"
        return self

    @property
    def data_path(self) -> Path:
        assert self.data_dir is not None  # set by the validator
        return self.data_dir

    @property
    def onnx_path(self) -> Path:
        return self.onnx_dir or self.data_path / "models" / "onnx"

    @property
    def sqlite_path(self) -> Path:
        return self.data_path / "codeask.db"

    @property
    def repos_dir(self) -> Path:
        return self.data_path / "repos"
