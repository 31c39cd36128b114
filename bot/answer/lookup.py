"""Definitions and references by name (``codeask defs|refs``, ``/codeask defs|refs``).

The names index answers, restricted to the repositories the asker may read (the store
filters inside its query, as for a search); each place is pinned to the line that names
it, at the indexed commit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from bot.answer.result import GITHUB_WEB, Source
from indexer.errors import InvalidInput
from indexer.models import Chunk, NameRequest
from indexer.source import MAX_NAME, name_key
from indexer.stores import SearchBackend

Lookup = Literal["defs", "refs"]
ROLES = {"defs": "defines", "refs": "references"}
MAX_PLACES = 50


@dataclass(frozen=True)
class NamePlace:
    """One chunk that defines or uses the name, and the line in it that names it."""

    chunk: Chunk
    line: int

    def link(self, web_base: str = GITHUB_WEB) -> str:
        """Commit-pinned link to the line (a plain path when the commit is unknown)."""
        pinned = Source(0, self.chunk, 0.0).link(web_base)
        return re.sub(r"#L\d+-L\d+$", f"#L{self.line}", pinned)

    @property
    def label(self) -> str:
        return f"{self.chunk.repo}/{self.chunk.path}:{self.line}"


def check_name(name: str) -> str:
    """The name as given, or InvalidInput for one that cannot be looked up."""
    cleaned = name.strip()
    if not name_key(cleaned):
        raise InvalidInput("Give a name to look up, e.g. `defs parse_url`.")
    if len(cleaned) > MAX_NAME:
        raise InvalidInput(f"A name is at most {MAX_NAME} characters.")
    return cleaned


def look_up(
    store: SearchBackend,
    kind: Lookup,
    name: str,
    repos: frozenset[str],
    limit: int = MAX_PLACES,
) -> list[NamePlace]:
    """Where ``name`` is defined (``defs``) or used (``refs``) in ``repos``.

    References also include the chunks that hold the name as a literal (an env var read
    from a string, a config key), after those that use it as code.
    """
    key = name_key(check_name(name))
    found = store.find_names(NameRequest(key, repos, ROLES[kind], limit))  # type: ignore[arg-type]
    if kind == "refs" and len(found) < limit:
        seen = {c.id for c in found}
        literal = store.find_names(NameRequest(key, repos, "literals", limit))
        found += [c for c in literal if c.id not in seen][: limit - len(found)]
    return [NamePlace(c, _line_of(c, key)) for c in found]


def _line_of(chunk: Chunk, key: str) -> int:
    """The first line of the chunk that names ``key`` (the last part of a dotted name)."""
    word = re.compile(rf"(?<![\w$]){re.escape(key.rsplit('.', 1)[-1])}(?![\w$])", re.IGNORECASE)
    for offset, text in enumerate(chunk.text.split("\n")):
        if word.search(text):
            return chunk.start_line + offset
    return chunk.start_line
