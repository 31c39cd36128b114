"""Chunking for Markdown (by heading) and config files (by top-level key)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from indexer.source.spans import MAX_LINES, Span, merge_tiny, window_spans

WHOLE_CONFIG_LINES = 60
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def markdown_spans(path: str, lines: list[str]) -> list[Span]:
    stem = PurePosixPath(path).stem
    headings: list[tuple[int, int, str]] = []  # row, level, title
    fenced = False
    for row, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if m:
            headings.append((row, len(m.group(1)), m.group(2)))
    if not headings:
        return window_spans(lines, 0, len(lines) - 1, stem)
    spans: list[Span] = []
    if headings[0][0] > 0:
        spans += window_spans(lines, 0, headings[0][0] - 1, stem)
    chain: list[tuple[int, str]] = []
    for i, (row, level, title) in enumerate(headings):
        chain = [c for c in chain if c[0] < level] + [(level, title)]
        titles = [t for lvl, t in chain if lvl > 1] or [title]
        symbol = " > ".join([stem, *titles])
        end = headings[i + 1][0] - 1 if i + 1 < len(headings) else len(lines) - 1
        while end > row and not lines[end].strip():
            end -= 1
        spans += window_spans(lines, row, end, symbol, size=MAX_LINES)
    return merge_tiny(spans, lines)


_YAML_KEY = re.compile(r"^([A-Za-z0-9_\"'][^:#]*?):(\s|$)")
_TOML_TABLE = re.compile(r"^\s*\[\[?([^\]]+)\]\]?")
_JSON_KEY = re.compile(r'^\s{0,4}"([^"]+)"\s*:')


def config_spans(path: str, lines: list[str], language: str) -> list[Span]:
    name = PurePosixPath(path).name
    if len(lines) <= WHOLE_CONFIG_LINES:
        return window_spans(lines, 0, len(lines) - 1, name, size=WHOLE_CONFIG_LINES)
    json_indent = _json_key_indent(lines) if language == "json" else None
    starts: list[tuple[int, str]] = []
    for row, line in enumerate(lines):
        if language == "yaml":
            m = _YAML_KEY.match(line)
        elif language == "toml":
            m = _TOML_TABLE.match(line)
        else:
            indent = len(line) - len(line.lstrip())
            m = _JSON_KEY.match(line) if indent == json_indent else None
        if m:
            starts.append((row, m.group(1).strip("\"' ")))
    if not starts:
        return window_spans(lines, 0, len(lines) - 1, name)
    spans: list[Span] = []
    if starts[0][0] > 0:
        spans += window_spans(lines, 0, starts[0][0] - 1, name)
    for i, (row, key) in enumerate(starts):
        end = starts[i + 1][0] - 1 if i + 1 < len(starts) else len(lines) - 1
        spans += window_spans(lines, row, end, f"{name} > {key}", size=MAX_LINES)
    return merge_tiny(spans, lines)


def _json_key_indent(lines: list[str]) -> int | None:
    """Indentation of the top-level object's keys: that of the first key line."""
    for line in lines:
        if _JSON_KEY.match(line):
            return len(line) - len(line.lstrip())
    return None
