"""The ablation baseline: fixed ~1000-character windows that know nothing of code structure.

Windows are cut at line boundaries (a citation is a line range), never overlap, carry
no symbol and only the file path as header. A single line longer than the budget is a
window of its own. Used by ``codeask eval --ablate`` only, never by the product.
"""

from __future__ import annotations

from indexer.models import Chunk
from indexer.source import kind_for, split_lines

WINDOW_CHARS = 1000


def window_ranges(lines: list[str], budget: int = WINDOW_CHARS) -> list[tuple[int, int]]:
    """0-based inclusive line ranges of consecutive windows of at most ``budget`` characters."""
    ranges: list[tuple[int, int]] = []
    start, size = 0, 0
    for row, line in enumerate(lines):
        cost = len(line) + 1
        if row > start and size + cost > budget:
            ranges.append((start, row - 1))
            start, size = row, 0
        size += cost
    if lines:
        ranges.append((start, len(lines) - 1))
    # Windows of blank lines only carry nothing to retrieve.
    return [(a, b) for a, b in ranges if any(ln.strip() for ln in lines[a : b + 1])]


def naive_chunks(
    path: str,
    language: str,
    data: bytes,
    *,
    repo: str,
    visibility: str = "public",
    commit: str = "",
    blob_sha: str = "",
) -> list[Chunk]:
    lines = split_lines(data.decode("utf-8", errors="replace"))
    kind = kind_for(path, language)
    return [
        Chunk(
            repo=repo,
            path=path,
            start_line=a + 1,
            end_line=b + 1,
            text="\n".join(lines[a : b + 1]),
            symbol="",
            language=language,
            kind=kind,
            header=f"# {path}",
            visibility=visibility,
            commit=commit,
            blob_sha=blob_sha,
        )
        for a, b in window_ranges(lines)
    ]
