"""``codeask models export``: the ONNX exports the default run path loads (set-up time).

Exporting needs torch, which only ``codeask[train]`` installs: ``make setup`` and the
image's build stage run this, and everything else (serve, worker, index, search, ask)
loads the exports with ONNX Runtime alone.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import typer
from rich.console import Console

models_app = typer.Typer(no_args_is_help=True, help="The models codeask runs: ONNX exports.")
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def export_configured(say: Callable[[str], object] = out.print) -> list[Path]:
    """Export the configured embedding model and cross-encoder (if any) in fp32 and int8."""
    from bot.answer.rerank import RERANK_LLM, RERANK_OFF, trained_reranker_path
    from bot.settings import BotSettings
    from indexer.embedding.onnx import export_models
    from indexer.errors import ConfigError
    from indexer.settings import IndexerSettings

    settings, bot = IndexerSettings(), BotSettings()
    if importlib.util.find_spec("torch") is None:
        raise ConfigError(
            "Exporting models needs torch: install codeask[train] (make setup does), or copy "
            "an export made elsewhere into CODEASK_ONNX_DIR."
        )
    folders = []
    if settings.embed_backend == "api":
        say("embedding: the api backend embeds remotely; nothing to export")
    else:
        folders.append(export_models(settings.embed_model, settings.onnx_path))
        say(f"embedding: {settings.embed_model} -> {folders[-1]}")
    name = bot.rerank_model.strip()
    if not name:
        trained = trained_reranker_path(settings.data_path)
        name = str(trained) if trained else ""
    if name and name.lower() not in (RERANK_OFF, RERANK_LLM):
        folders.append(export_models(name, settings.onnx_path, task="cross-encoder"))
        say(f"reranker: {name} -> {folders[-1]}")
    return folders


@models_app.command("export")
def export() -> None:
    """Export the configured embedding model and reranker to ONNX (fp32 and int8)."""
    export_configured()
