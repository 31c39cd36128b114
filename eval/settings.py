"""Settings of the evaluation (env prefix ``CODEASK_``)."""

from __future__ import annotations

from pydantic_settings import BaseSettings, SettingsConfigDict


class EvalSettings(BaseSettings):
    """Where the optional OpenSearch ablation runs; empty means it is skipped."""

    model_config = SettingsConfigDict(env_prefix="CODEASK_", extra="ignore")

    test_opensearch_url: str = ""
    eval_opensearch_index: str = "codeask-eval-chunks"
