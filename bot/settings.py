"""Settings of the answer pipeline (env prefix ``CODEASK_``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

# The least cosine similarity of the best source for an answer (bot.answer.evidence).
DEFAULT_COSINE_THRESHOLD = 0.25


class BotSettings(BaseSettings):
    """Settings of the bot: answering (generation, rerank), serving and chat adapters.

    ``llm_model`` empty means no language model: answers are extractive (the best chunks
    with citations). ``rerank_model`` empty means: the reranker trained into
    ``<data_dir>/models/reranker`` when one exists and its model card enables it (see
    docs/reranker.md), otherwise no rerank; ``none`` turns rerank off even when a trained
    model exists.
    """

    model_config = SettingsConfigDict(env_prefix="CODEASK_", extra="ignore")

    llm_model: str = ""
    llm_api_base: str = ""
    llm_api_key: str = Field(default="", repr=False)
    llm_timeout: float = 60.0
    llm_temperature: float = 0.1
    llm_max_tokens: int = 800
    llm_retries: int = 2
    # Ask a streamed answer's token counts (OpenAI's stream_options.include_usage) for the
    # codeask_llm_tokens metric; turn off for a server that refuses the option.
    llm_stream_usage: bool = True
    # A cross-encoder (a hub name or a folder), "none", or "llm": the configured language
    # model orders the top 20 candidates in one listwise call (bot.answer.llm_rerank).
    rerank_model: str = ""
    rerank_candidates: int = 50
    # How the cross-encoder runs: an ONNX Runtime export of the model, "onnx" (the default:
    # fp32, scores equal torch's to 1e-4) or "onnx-int8" (fused, int8 weights), exported once
    # into CODEASK_ONNX_DIR; or, with codeask[train], "torch" (sentence-transformers
    # CrossEncoder) or "torch-bf16" (bfloat16 weights, for CPUs with native bf16: AMX,
    # AVX512-BF16). See docs/reranker.md.
    rerank_backend: Literal["torch", "torch-bf16", "onnx", "onnx-int8"] = "onnx"
    # Tokens of question + candidate the cross-encoder reads (the longer side is cut first);
    # its cost grows with this, so it is the main latency lever after the backend.
    rerank_max_length: int = Field(default=512, ge=16)
    # ONNX rerank workers, each single-threaded on its own batch (0: one per CPU core).
    rerank_threads: int = Field(default=0, ge=0)
    answer_sources: int = 6
    # How answers are written when a model is configured: "agent" lets the model call the
    # search tools in rounds (bot.answer.agent), "single" is one generation over the first
    # search's sources, and "auto" is the agent for a model that can call tools (LiteLLM
    # says so, or the model is unknown to it and accepts them) and single otherwise.
    answer_mode: Literal["auto", "agent", "single"] = "auto"
    # Budgets of an agentic answer (its wall clock is CODEASK_LLM_TIMEOUT): tool rounds,
    # tool output per round and per question (tokens, counted as 4 characters each), and
    # lines per read_code call.
    agent_rounds: int = Field(default=8, ge=0, le=50)
    agent_round_tokens: int = Field(default=4000, ge=200)
    agent_total_tokens: int = Field(default=16000, ge=200)
    agent_read_lines: int = Field(default=200, ge=10, le=2000)
    context_chars: int = 12_000
    # Minimum cosine similarity between the question and its best source; see bot.answer.evidence.
    not_found_threshold: float = DEFAULT_COSINE_THRESHOLD
    # Minimum reranker score (after the model's activation) when a reranker ran; unset: the
    # cosine rule alone decides, because a reranker's score scale depends on its training.
    not_found_rerank_threshold: float | None = None

    # --- codeask serve, admin commands, freshness ---------------------------------
    host: str = "0.0.0.0"
    port: int = 8080
    # Who may run admin commands: comma-separated platform-qualified ids, e.g.
    # "slack:T1:U1,teams:<aad-object-id>,cli:*" ("platform:*" admits every user there).
    admins: str = ""
    # Seconds between reconciles of the registry with GitHub's branch heads (0: never).
    reconcile_seconds: float = 3600.0
    # How to clone a registered repo; "{full_name}" is replaced. Empty: the GitHub web URL.
    git_clone_url: str = ""

    # --- metrics: GET /metrics on serve and the worker (see docs/deploy.md) -------------
    # Empty: /metrics is open; otherwise a scrape must send "Authorization: Bearer <token>".
    metrics_token: str = Field(default="", repr=False)
    # Repository names as labels (index lag): "false" none, "public" public repositories
    # only, "true" every repository; the others are folded into repository="other".
    metrics_repo_labels: Literal["false", "public", "true"] = "false"
    # `codeask worker` serves /metrics on this port (0: no listener).
    worker_metrics_port: int = Field(default=0, ge=0, le=65535)

    # --- Slack (see docs/slack.md) ---------------------------------------------------
    slack_bot_token: str = Field(default="", repr=False)  # xoxb-…
    slack_signing_secret: str = Field(default="", repr=False)
    slack_app_token: str = Field(default="", repr=False)  # xapp-…, Socket Mode only
    slack_socket_mode: bool = False  # connect out over a websocket instead of /slack/events
    # Base URL of the Slack Web API (a local server in tests).
    slack_api_url: str = "https://slack.com/api/"
    # Slack user ids (U…) allowed to run admin commands, comma-separated.
    slack_admins: str = ""
    # Also treat Slack workspace admins and owners as codeask admins (needs users:read).
    slack_workspace_admins: bool = False
    # Seconds between edits of a streaming answer (Slack allows about one per second).
    slack_update_seconds: float = 1.0

    # --- Microsoft Teams (bot.teams.endpoint); see docs/teams.md ------------------------------
    # The Azure Bot registration. Without an app id and password /api/messages answers 503.
    teams_app_id: str = ""
    teams_app_password: str = Field(default="", repr=False)
    # Single-tenant bots: the tenant that issues the bot's outgoing tokens (empty: multi-tenant).
    teams_tenant_id: str = ""
    # Comma-separated AAD object ids allowed to run admin commands from Teams.
    teams_admins: str = ""
    # Seconds between updates of a streamed 1:1 answer (Teams throttles message edits).
    teams_update_seconds: float = 1.5
    # Bot Framework endpoints; change them only for a sovereign cloud or a local test server.
    teams_openid_metadata_url: str = (
        "https://login.botframework.com/v1/.well-known/openidconfiguration"
    )
    teams_emulator_openid_metadata_url: str = (
        "https://login.microsoftonline.com/common/v2.0/.well-known/openid-configuration"
    )
    teams_token_issuer: str = "https://api.botframework.com"
    # Where the bot gets tokens for its replies: "{login_url}/oauth2/v2.0/token". Empty:
    # https://login.microsoftonline.com/{teams_tenant_id or botframework.com}.
    teams_login_url: str = ""
    teams_oauth_scope: str = "https://api.botframework.com"
