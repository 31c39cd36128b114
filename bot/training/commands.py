"""The ``codeask train`` commands: mine pairs, train the reranker, gate it on the golden sets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from indexer.errors import InvalidInput
from indexer.settings import IndexerSettings

train_app = typer.Typer(no_args_is_help=True, help="Learn a reranker from the indexed code.")
err = Console(stderr=True, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)
DEFAULT_GOLDEN = Path(__file__).resolve().parents[2] / "eval" / "golden"


def default_pairs_file(settings: IndexerSettings) -> Path:
    return settings.data_path / "training" / "pairs.jsonl"


def _sources(
    settings: IndexerSettings, repos: list[str], paths: list[Path], indexed: list[str]
) -> dict[str, Path]:
    """``--repo``/``--path`` given in pairs; none: every indexed repo cloned under the data dir."""
    if len(repos) != len(paths):
        raise InvalidInput("Give one --path for every --repo (in the same order)")
    if repos:
        return {r: p.expanduser().resolve() for r, p in zip(repos, paths, strict=True)}
    found = {r: settings.repos_dir / r for r in indexed if (settings.repos_dir / r).is_dir()}
    if not found:
        raise InvalidInput("No repository source found; pass --repo owner/name --path FOLDER")
    return found


@train_app.command("mine")
def mine(
    repo: Annotated[list[str] | None, typer.Option(help="Indexed repository owner/name")] = None,
    path: Annotated[list[Path] | None, typer.Option(help="Its git work tree or folder")] = None,
    out_file: Annotated[Path | None, typer.Option("--out", help="Pairs file (JSONL)")] = None,
    golden: Annotated[
        list[Path] | None, typer.Option(help="Golden sets to keep out of training")
    ] = None,
    max_functions: Annotated[
        int, typer.Option(help="Skip commits touching more definitions than this")
    ] = 8,
    max_pairs: Annotated[int, typer.Option(help="Most pairs per repository")] = 3000,
) -> None:
    """Mine (question, code) pairs from history up to the indexed commit, docstrings and docs."""
    from bot.training.leakage import load_golden
    from bot.training.mining import mine_repo
    from bot.training.pairs import write_pairs
    from indexer.embedding import open_embedder
    from indexer.search import Searcher
    from indexer.stores import open_store

    settings = IndexerSettings()
    store = open_store(settings)
    sources = _sources(settings, repo or [], path or [], [s.repo for s in store.repo_states()])
    golden_paths = golden if golden is not None else [DEFAULT_GOLDEN]
    gold = load_golden([p for p in golden_paths if p.exists()])
    embedder = open_embedder(settings)
    searcher = Searcher(store, embedder)
    pairs, reports = [], []
    for name, root in sources.items():
        mined, report = mine_repo(
            name,
            root,
            store,
            searcher,
            gold,
            max_functions=max_functions,
            max_pairs=max_pairs,
            say=err.print,
        )
        pairs.extend(mined)
        reports.append(report)
        err.print(
            f"[bold]{name}[/] {report.commit_range}: {len(mined)} pairs "
            f"{report.pairs_by_source}, {report.validation} held out, "
            f"{report.dropped_golden} dropped as golden-set material; commits read "
            f"{report.history.commits}, used {report.history.used}, skipped "
            f"{report.history.skipped}"
        )
    target = out_file or default_pairs_file(settings)
    n = write_pairs(target, pairs)
    summary = {"pairs_file": str(target), "pairs": n, "repos": [r.to_json() for r in reports]}
    target.with_suffix(".report.json").write_text(json.dumps(summary, indent=2) + "\n")
    out.print(f"{n} pairs written to {target}")


@train_app.command("reranker")
def reranker(
    pairs_file: Annotated[Path | None, typer.Option("--pairs", help="Mined pairs (JSONL)")] = None,
    budget_minutes: Annotated[float, typer.Option(help="Wall-clock budget, minutes")] = 30.0,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the checkpoint")] = False,
    epochs: Annotated[int, typer.Option(help="Passes over the training pairs")] = 1,
    negatives: Annotated[int, typer.Option(help="Hard negatives per query")] = 3,
    layers: Annotated[
        int, typer.Option(help="Keep the base model's first N layers (0: all); fewer rerank faster")
    ] = 0,
) -> None:
    """Fine-tune the packaged MiniLM as a cross-encoder; saved to <data dir>/models/reranker."""
    from bot.training.pairs import read_pairs
    from bot.training.train import TrainConfig, train_reranker

    settings = IndexerSettings()
    source = pairs_file or default_pairs_file(settings)
    report = source.with_suffix(".report.json")
    mining = json.loads(report.read_text()) if report.is_file() else {}
    config = TrainConfig(
        budget_minutes=budget_minutes, epochs=epochs, negatives=negatives, layers=layers
    )
    result = train_reranker(
        read_pairs(source),
        settings.data_path,
        config,
        resume=resume,
        mining=mining,
        say=err.print,
    )
    card = result.card
    from indexer.embedding.onnx import export_models

    export_models(str(result.model_dir), settings.onnx_path, task="cross-encoder")
    out.print(
        f"saved {result.model_dir} (and its ONNX export): {card['steps']} steps in {card['training_seconds']} s, "
        f"validation MRR {card['validation_mrr_before']} -> {card['validation_mrr_after']}; "
        "off by default until `codeask train gate` shows a gain on the golden sets"
    )


@train_app.command("gate")
def gate(
    golden: Annotated[list[Path] | None, typer.Argument(help="Golden sets or folders")] = None,
    k: Annotated[int, typer.Option("--k", help="Cut-off for MRR")] = 10,
) -> None:
    """Score the golden sets with and without the trained reranker; enable it only on a gain."""
    from eval.learned_rerank import gate_trained_reranker

    settings = IndexerSettings()
    card = gate_trained_reranker(golden or [DEFAULT_GOLDEN], settings, k, say=err.print)
    verdict = card["golden"]
    for name, row in sorted(verdict["sets"].items()):
        out.print(
            f"{name:<10} MRR@{k} {row['mrr_without']:.4f} -> {row['mrr_with']:.4f}   "
            f"recall@5 {row['recall5_without']:.4f} -> {row['recall5_with']:.4f}"
        )
    out.print(verdict["decision"])
