"""The names of a chunk: what it defines, what it references, and its notable literals.

The stores index these beside the text (the names index behind ``codeask defs`` and
``codeask refs``). They come from the grammar's tag queries (:mod:`indexer.source.tags`)
run over the chunk's own lines, plus the chunk's symbol, which the chunker named with the
whole file in view (so a method's class is in it even when its lines are not).
"""

from __future__ import annotations

from dataclasses import dataclass

from indexer.models import Chunk
from indexer.source.tags import literals, tags

# Bump when what a chunk's names hold changes: every repository is then read again once
# (indexer.jobs.indexing.config_version), its vectors coming from the embedding cache.
NAMES_VERSION = "2"  # 2: Go interface methods, Rust use lists, Ruby require, Swift extensions and init, Dart constructors and accessors, JSX components
MAX_DEFINES = 32
MAX_REFERENCES = 200
MAX_LITERALS = 48
MAX_NAME = 200


@dataclass(frozen=True)
class ChunkNames:
    """Lower-cased keys, each at most once, in the order they appear."""

    defines: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    literals: tuple[str, ...] = ()


def name_key(name: str) -> str:
    """How a name is matched: case-insensitive, surrounding whitespace and quotes dropped."""
    return name.strip().strip("\"'`").strip().lower()[:MAX_NAME]


def chunk_names(chunk: Chunk) -> ChunkNames:
    """The names index entries of one chunk (none for docs and config text)."""
    defines: dict[str, None] = {}
    if chunk.symbol:
        _add(defines, chunk.symbol)
        _add(defines, chunk.symbol.rsplit(".", 1)[-1])
    if chunk.kind in ("docs", "config"):
        return ChunkNames(tuple(defines)[:MAX_DEFINES])
    source = chunk.text.encode("utf-8", "replace")
    references: dict[str, None] = {}
    for tag in tags(chunk.language, source):
        if tag.role == "definition":
            _add(defines, tag.qualified)
            _add(defines, tag.name)
        else:
            _add(references, tag.name)
    found: dict[str, None] = {}
    for literal in literals(chunk.language, source):
        _add(found, literal)
    return ChunkNames(
        tuple(defines)[:MAX_DEFINES],
        tuple(r for r in references if r not in defines)[:MAX_REFERENCES],
        tuple(found)[:MAX_LITERALS],
    )


def _add(keys: dict[str, None], name: str) -> None:
    key = name_key(name)
    if key:
        keys[key] = None
