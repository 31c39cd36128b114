"""Settings of the evaluation (env prefix ``CODEASK_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


class EvalSettings(BaseSettings):
    """The optional OpenSearch ablation (empty URL: skipped) and the gate's embedding cache."""

    model_config = SettingsConfigDict(env_prefix="CODEASK_", extra="ignore")

    test_opensearch_url: str = ""
    eval_opensearch_index: str = "codeask-eval-chunks"
    # The CI gate indexes into a fresh folder each session; pointing this at an existing
    # embeddings.db (e.g. <CODEASK_DATA_DIR>/embeddings.db) skips re-embedding locally.
    eval_embedding_cache: Path | None = None
