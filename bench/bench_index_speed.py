"""Indexing speed, torch vs the ONNX Runtime fast path, side by side in one run.

One git repository of ~113k lines (site-packages rich + pydantic + aiohttp) is indexed
from scratch by each embedder backend into its own store and embedding cache, then a
3-file push (one function appended to each) and a rename are re-indexed. Reports
end-to-end seconds, chunks embedded per second, and how many chunks each push embedded
versus served from the cache.

Run: .venv/bin/python bench/bench_index_speed.py [--backends torch,torch-bf16,onnx-int8]
Ratios are against torch (float32) when it is among the backends, else the first one.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.bench_index import git, site_package  # noqa: E402
from bot.services import Services  # noqa: E402
from indexer.embedding import SqliteEmbeddingCache  # noqa: E402
from indexer.jobs import IndexReport, index_repository  # noqa: E402
from indexer.settings import IndexerSettings  # noqa: E402
from indexer.stores import SqliteStore  # noqa: E402

SOURCES = ("rich", "pydantic", "aiohttp")


def build_repo(work: Path) -> tuple[Path, int]:
    repo = work / "repo"
    for name in SOURCES:
        source = site_package(name)
        shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    lines = sum(p.read_bytes().count(b"\n") for p in repo.rglob("*.py"))
    return repo, lines


def run_backend(backend: str, repo: Path, work: Path) -> dict[str, object]:
    (work / backend).mkdir()
    embedder = Services(indexer=IndexerSettings(embed_backend=backend)).embedder
    embedder.embed(["warm up the model"])
    store = SqliteStore(work / backend / "index.db")
    cache = SqliteEmbeddingCache(work / backend / "emb.db")
    full = index_repository(repo, "bench/repo", store, embedder, cache)
    work_repo = work / f"{backend}-push"
    shutil.copytree(repo, work_repo, symlinks=True)
    py_files = sorted(work_repo.rglob("*.py"))[:3]
    for i, p in enumerate(py_files):
        p.write_text(p.read_text() + f"\n\ndef bench_added_{i}(value):\n    return value * {i}\n")
    git(work_repo, "commit", "-qam", "three files")
    push = index_repository(work_repo, "bench/repo", store, embedder, cache)
    moved = sorted(work_repo.rglob("*.py"))[-1]
    git(work_repo, "mv", str(moved), str(moved.with_name("renamed_" + moved.name)))
    git(work_repo, "commit", "-qm", "rename")
    rename = index_repository(work_repo, "bench/repo", store, embedder, cache)
    return {"full": full, "push": push, "rename": rename}


def push_cell(report: IndexReport) -> str:
    cached = report.chunks - report.embedded - report.carried
    carried = f", {report.carried} kept from the old path" if report.carried else ""
    return (
        f"{report.seconds:.2f} s: {report.changed_files} files, {report.chunks} chunks, "
        f"{report.embedded} embedded, {cached} from cache{carried}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backends", default="torch,torch-bf16,onnx-int8")
    args = parser.parse_args()
    backends = args.backends.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo, lines = build_repo(work)
        results = {b: run_backend(b, repo, work) for b in backends}
    baseline = "torch" if "torch" in backends else backends[0]
    base = results[baseline]["full"]
    assert isinstance(base, IndexReport)
    base_rate = base.embedded / base.seconds
    print(f"{lines} lines of Python ({', '.join(SOURCES)}), {os.cpu_count()} cores\n")
    print("| backend | full index (s) | chunks | chunks/s end to end | vs " + baseline + " |")
    print("| --- | --- | --- | --- | --- |")
    for name, r in results.items():
        full = r["full"]
        assert isinstance(full, IndexReport)
        rate = full.embedded / full.seconds
        print(
            f"| {name} | {full.seconds:.1f} | {full.chunks} | {rate:.1f} | {rate / base_rate:.2f}x |"
        )
    print("\n| backend | 3-file push | rename of one file |\n| --- | --- | --- |")
    for name, r in results.items():
        push, rename = r["push"], r["rename"]
        assert isinstance(push, IndexReport) and isinstance(rename, IndexReport)
        print(f"| {name} | {push_cell(push)} | {push_cell(rename)} |")


if __name__ == "__main__":
    main()
