"""Rendering evaluation results: terminal tables and the ablation report (Markdown + SVG)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table

from eval.harness import RunResult, latency_summary
from eval.svgchart import recall_chart

if TYPE_CHECKING:  # eval.citations imports the answer pipeline and LiteLLM: only when used
    from eval.citations import CitationRun


def metric_columns(k: int) -> list[tuple[str, str]]:
    """(metric key, column title) in display order."""
    cols = [(f"recall@{c}", f"R@{c}") for c in sorted({1, 5, 10, k}) if c <= k]
    return [
        *cols,
        (f"mrr@{k}", f"MRR@{k}"),
        (f"ndcg@{k}", f"nDCG@{k}"),
        (f"file_recall@{k}", f"file R@{k}"),
        (f"all_gold@{k}", f"all gold@{k}"),
    ]


def _groups(result: RunResult, prefixed: bool = True) -> list[tuple[str, dict[str, float]]]:
    summary = result.summary
    overall, by_kind, by_repo = summary["overall"], summary["by_kind"], summary["by_repo"]
    assert isinstance(overall, dict) and isinstance(by_kind, dict) and isinstance(by_repo, dict)
    rows: list[tuple[str, dict[str, float]]] = [("all", overall)]
    # Repo names hold a "/" and kinds do not, so the bare names stay unambiguous.
    rows += [(f"kind: {name}" if prefixed else name, m) for name, m in by_kind.items()]
    rows += [(f"repo: {name}" if prefixed else name, m) for name, m in by_repo.items()]
    return rows


def terminal_table(result: RunResult) -> Table:
    """One row per group (all, each kind, each repo) for one configuration."""
    cols = metric_columns(result.k)
    # Compact titles and borders so the table fits an 80-column terminal.
    table = Table(
        title=f"{result.config}  (top {result.k})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("group", no_wrap=True)
    table.add_column("n", justify="right")
    for _, title in cols:
        short = title if title.startswith("R@") else title.split("@")[0].replace(" ", "")
        table.add_column(short, justify="right")
    for name, m in _groups(result, prefixed=False):
        table.add_row(
            name, f"{int(m['questions'])}", *(f"{m.get(key, 0.0):.3f}" for key, _ in cols)
        )
    return table


CITATION_COLUMNS = (
    ("answered", "answered"),
    ("citations_valid", "valid"),
    ("cites_gold", "gold"),
    ("valid_and_gold", "valid+gold"),
    ("cites_all_gold", "all gold"),
    ("regenerated", "regen"),
    ("gold_in_sources", "gold given"),
    ("rounds", "rounds"),
    ("tokens_in", "tok in"),
    ("tokens_out", "tok out"),
    ("seconds", "s"),
)


def _citation_groups(run: CitationRun) -> list[tuple[str, dict[str, float]]]:
    summary = run.summary
    overall, by_kind, by_repo = summary["overall"], summary["by_kind"], summary["by_repo"]
    assert isinstance(overall, dict) and isinstance(by_kind, dict) and isinstance(by_repo, dict)
    return [("all", overall), *by_kind.items(), *by_repo.items()]


def citation_table(run: CitationRun) -> Table:
    """Citation metrics of the answer pipeline: one row per group (all, kinds, repos)."""
    table = Table(
        title=f"answers with {run.model} ({run.mode} mode): citation metrics",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("group", no_wrap=True)
    table.add_column("n", justify="right")
    for _, title in CITATION_COLUMNS:
        table.add_column(title, justify="right")
    for name, m in _citation_groups(run):
        table.add_row(
            name,
            f"{int(m['questions'])}",
            *(f"{m.get(key, 0.0):.3f}" for key, _ in CITATION_COLUMNS),
        )
    return table


def citation_caption() -> str:
    return (
        "Shares of all questions: answered (not 'not found'), valid (every [n] names a given "
        "source, none stripped or marked), gold (a cited source overlaps a gold place), "
        "valid+gold (both), all gold (citations cover every gold place), regen (regenerated "
        "once), gold given (a source given to the model overlaps a gold place); rounds (mean "
        "tool rounds of an agentic answer), tok in / tok out (mean prompt and completion "
        "tokens per answer, as the provider reports them) and s (mean seconds per answer) "
        "are not shares."
    )


def citation_markdown(run: CitationRun) -> list[str]:
    """The report section for the answer pipeline's citations."""
    out = [
        "## Answers: citations",
        "",
        f"The answer pipeline (the product index, each question searched in its own "
        f"repository, {run.model} through LiteLLM, answer mode {run.mode}) on the same "
        "questions. " + citation_caption(),
        "",
    ]
    rows = [
        [name, f"{int(m['questions'])}", *(_num(m, key) for key, _ in CITATION_COLUMNS)]
        for name, m in _citation_groups(run)
    ]
    out += _md_table(["group", "n", *(t for _, t in CITATION_COLUMNS)], rows)
    out.append("")
    return out


def latency_line(result: RunResult) -> str:
    parts = [
        f"{stage} {v['mean']:.1f} ms mean / {v['p95']:.1f} ms p95"
        for stage, v in latency_summary(result.latency).items()
    ]
    return "latency per question: " + ("; ".join(parts) if parts else "n/a")


def table_caption(k: int) -> str:
    return f"MRR, nDCG, fileR (file recall) and allgold (every gold place found) at k={k}."


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def _num(m: dict[str, float], key: str) -> str:
    return f"{m.get(key, 0.0):.3f}"


def markdown_report(
    results: Sequence[RunResult],
    notes: Sequence[str],
    golden: Sequence[str],
    chart_name: str,
    context: str = "",
    citations: CitationRun | None = None,
) -> str:
    """The ablation report: headline table, breakdowns per kind and per repo, the chart."""
    if not results:
        return "# Retrieval evaluation\n\nNo configuration could run.\n"
    k = results[0].k
    cols = metric_columns(k)
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    n = int(results[0].overall("questions"))
    out = [
        "# Retrieval evaluation: ablations",
        "",
        f"Generated by `codeask eval --ablate` on {today}; {n} questions from "
        f"{', '.join(f'`{g}`' for g in golden)}; every question searched only in its own "
        f"repository; top {k}.",
        "",
        "Question vectors are computed once, by the first configuration that needs them, "
        "and shared; later rows' embed time is a cache lookup. Latency is wall time on the "
        "machine that ran the report.",
    ]
    if context:
        out += ["", context]
    out += ["", "## All questions", ""]
    header = ["configuration", *(t for _, t in cols), "embed ms", "search ms", "rerank ms"]
    rows = []
    for r in results:
        overall = r.summary["overall"]
        assert isinstance(overall, dict)
        lat = latency_summary(r.latency)
        rows.append(
            [
                r.config,
                *(_num(overall, key) for key, _ in cols),
                *(
                    f"{lat[stage]['mean']:.1f}" if stage in lat else "–"
                    for stage in ("embed", "search", "rerank")
                ),
            ]
        )
    out += _md_table(header, rows)
    out += ["", f"![recall@k per configuration]({chart_name})", ""]
    short = [(f"recall@{c}", f"R@{c}") for c in sorted({1, 5, 10, k}) if c <= k]
    short.append((f"mrr@{k}", f"MRR@{k}"))
    for section, key in (("By kind of question", "by_kind"), ("By repository", "by_repo")):
        out += [f"## {section}", ""]
        rows = []
        for r in results:
            groups = r.summary[key]
            assert isinstance(groups, dict)
            for name, m in groups.items():
                rows.append(
                    [r.config, name, f"{int(m['questions'])}", *(_num(m, k_) for k_, _ in short)]
                )
        out += _md_table(["configuration", key[3:], "n", *(t for _, t in short)], rows)
        out.append("")
    multihop = [(r.config, r.summary["by_kind"]) for r in results]
    mh_rows = [
        [name, _num(kinds["multihop"], f"all_gold@{k}")]
        for name, kinds in multihop
        if isinstance(kinds, dict) and "multihop" in kinds
    ]
    if mh_rows:
        out += ["## Multi-hop: all gold places in the top k", ""]
        out += _md_table(["configuration", f"all gold@{k}"], mh_rows)
        out.append("")
    if citations is not None:
        out += citation_markdown(citations)
    if notes:
        out += ["## Skipped", ""] + [f"- {note}" for note in notes] + [""]
    return "\n".join(out)


def write_report(
    results: Sequence[RunResult],
    notes: Sequence[str],
    golden: Sequence[str],
    out_dir: Path,
    context: str = "",
    citations: CitationRun | None = None,
) -> Path:
    """Write ``latest.md`` and ``recall_at_k.svg`` into ``out_dir``; returns the Markdown path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    chart = "recall_at_k.svg"
    (out_dir / chart).write_text(
        recall_chart([(r.config, r.curve) for r in results]), encoding="utf-8"
    )
    md = out_dir / "latest.md"
    md.write_text(
        markdown_report(results, notes, golden, chart, context, citations), encoding="utf-8"
    )
    return md
