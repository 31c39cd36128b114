"""The agent's tools: search, read, grep, list, definitions and references over the index.

Each tool is a function of (the allowed repositories, fixed once per question, and its
arguments) → the places it found and one progress line. Every place is re-checked against
the allowed set before it is returned, and a repository or file outside that set gets the
same answer as one that does not exist: a tool never confirms that something exists where
the asker may not look. Nothing here calls a model or knows a chat platform.
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import regex

from bot.answer.lookup import look_up
from bot.answer.sourcebook import Place, excerpt, numbered_lines, preview
from indexer.errors import InvalidInput
from indexer.models import Chunk, FileRequest, SearchRequest
from indexer.search import Searcher
from indexer.source import query_terms
from indexer.stores import assert_allowed
from indexer.stores.contract import assert_chunks_allowed

MAX_SEARCH_RESULTS = 15
MAX_PATTERN = 200
GREP_CANDIDATES = 200  # chunks the full-text index proposes to a grep, best first
GREP_MATCHES = 40
GREP_SECONDS = 1.0
MAX_LISTED = 200
NAME_PLACES = 20
DEFINITION_LINES = 12


@dataclass(frozen=True)
class Found:
    """What one tool call found: a header line, the places, and the step people see."""

    header: str
    places: list[Place] = field(default_factory=list)
    step: str = ""


class ToolError(Exception):
    """A call the tool cannot run (bad arguments); the message goes back to the model."""


def _text(args: dict[str, Any], name: str, required: bool = True, limit: int = 500) -> str:
    value = args.get(name)
    if value is None or value == "":
        if required:
            raise ToolError(f"`{name}` is required")
        return ""
    if not isinstance(value, str):
        raise ToolError(f"`{name}` must be a string")
    if len(value) > limit:
        raise ToolError(f"`{name}` is longer than {limit} characters")
    return value.strip()


def _number(args: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = args.get(name, default)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"`{name}` must be an integer")
    return min(max(value, low), high)


def _flag(args: dict[str, Any], name: str) -> bool:
    value = args.get(name, False)
    if not isinstance(value, bool):
        raise ToolError(f"`{name}` must be true or false")
    return value


class CodeTools:
    """The tools of one question, over ``repos`` only."""

    def __init__(self, searcher: Searcher, repos: frozenset[str], read_lines: int = 200) -> None:
        self.searcher = searcher
        self.store = searcher.backend
        self.repos = repos
        self.read_lines = read_lines
        self._tools: dict[str, Callable[[dict[str, Any]], Found]] = {
            "search_code": self.search_code,
            "read_code": self.read_code,
            "grep": self.grep,
            "list_files": self.list_files,
            "find_definitions": self.find_definitions,
            "find_references": self.find_references,
        }

    def run(self, name: str, args: dict[str, Any]) -> Found:
        """Run one tool; ToolError for an unknown tool or arguments it cannot use."""
        tool = self._tools.get(name)
        if tool is None:
            raise ToolError(f"there is no tool {name!r}; the tools are {', '.join(self._tools)}")
        try:
            found = tool(args)
        except InvalidInput as exc:
            raise ToolError(str(exc)) from None
        assert_chunks_allowed([p.chunk for p in found.places], self.repos)
        return found

    def _scope(self, repo: str) -> frozenset[str]:
        """The allowed set, or the one named repository when it is in it (else nothing)."""
        if not repo:
            return self.repos
        return frozenset({repo}) & self.repos

    # --- the tools ------------------------------------------------------------------------

    def search_code(self, args: dict[str, Any]) -> Found:
        query = _text(args, "query")
        repo = _text(args, "repo", required=False, limit=200)
        k = _number(args, "k", 8, 1, MAX_SEARCH_RESULTS)
        scope = self._scope(repo)
        hits = self.searcher.search(query, scope, k=k) if scope and query_terms(query) else []
        assert_allowed(hits, self.repos)
        where = f" in {repo}" if repo else ""
        header = f"search_code {query!r}{where}: {len(hits)} results, best first."
        places = [preview(h.chunk, score=h.score) for h in hits]
        return Found(header, places, f"Searching for `{query}`")

    def read_code(self, args: dict[str, Any]) -> Found:
        repo = _text(args, "repo", limit=200)
        path = _text(args, "path", limit=1000)
        start = _number(args, "start_line", 1, 1, 10**9)
        end = _number(args, "end_line", start + self.read_lines - 1, 1, 10**9)
        start, end = min(start, end), max(start, end)
        cut = end - start + 1 > self.read_lines
        end = min(end, start + self.read_lines - 1)
        chunks = self.store.file_chunks(FileRequest(repo, path, self.repos))
        if not chunks:
            return Found(f"Not found: there is no indexed file {path!r} in {repo!r}.")
        inside = [c for c in chunks if c.start_line <= end and c.end_line >= start]
        if not inside:
            last = max(c.end_line for c in chunks)
            return Found(
                f"{repo}/{path} has no indexed lines in {start}-{end} (its last indexed line "
                f"is {last}).",
                step=f"Reading `{path}`",
            )
        place = _lines_of(inside, start, end)
        note = f" (cut at {self.read_lines} lines)" if cut else ""
        header = (
            f"read_code {repo}/{path} lines {place.chunk.start_line}-{place.chunk.end_line}{note}:"
        )
        step = f"Reading `{path}` {place.chunk.start_line}–{place.chunk.end_line}"
        return Found(header, [place], step)

    def grep(self, args: dict[str, Any]) -> Found:
        pattern = _text(args, "pattern", limit=MAX_PATTERN)
        repo = _text(args, "repo", required=False, limit=200)
        glob = _text(args, "path_glob", required=False, limit=200)
        is_regex = _flag(args, "regex")
        flags = regex.IGNORECASE if _flag(args, "ignore_case") else 0
        try:
            matcher = regex.compile(pattern if is_regex else regex.escape(pattern), flags)
        except regex.error as exc:
            raise ToolError(f"the pattern is not a valid regular expression ({exc})") from None
        words = query_terms(" ".join(_literal_runs(pattern) if is_regex else [pattern]))
        if not words:
            raise ToolError(
                "the pattern needs a word (letters or digits) to look it up in the index"
            )
        scope = self._scope(repo)
        request = SearchRequest(
            text=" ".join(words),
            repos=scope,
            k=GREP_CANDIDATES,
            candidates=GREP_CANDIDATES,
            lists=("bm25",),
            question_weights=False,
        )
        hits = self.store.search(request) if scope else []
        assert_allowed(hits, self.repos)
        chunks = [h.chunk for h in hits if not glob or _glob_match(h.chunk.path, glob)]
        places, matches, complete = _grep_chunks(matcher, chunks)
        bound = "" if complete else " (stopped at the match or time limit)"
        header = (
            f"grep {pattern!r}: {matches} matching lines in {len(places)} places of the "
            f"{len(chunks)} indexed chunks that hold its words{bound}."
        )
        return Found(header, places, f"Searching the code for `{pattern}`")

    def list_files(self, args: dict[str, Any]) -> Found:
        repo = _text(args, "repo", required=False, limit=200)
        prefix = _text(args, "path_prefix", required=False, limit=1000).lstrip("/")
        if not repo:
            names = "\n".join(sorted(self.repos))
            return Found(f"The repositories you may search:\n{names}", step="Listing repositories")
        if repo not in self.repos:
            return Found(f"Not found: there is no indexed repository {repo!r}.")
        paths = sorted(p for p in self.store.file_blobs(repo) if p.startswith(prefix))
        shown = "\n".join(paths[:MAX_LISTED])
        more = f"\n… {len(paths) - MAX_LISTED} more" if len(paths) > MAX_LISTED else ""
        where = f"{repo}/{prefix}" if prefix else repo
        return Found(
            f"{len(paths)} indexed files in {where}:\n{shown}{more}",
            step=f"Listing files in `{where}`",
        )

    def find_definitions(self, args: dict[str, Any]) -> Found:
        name = _text(args, "name", limit=200)
        scope = self._scope(_text(args, "repo", required=False, limit=200))
        found = look_up(self.store, "defs", name, scope, NAME_PLACES) if scope else []
        places = [preview(p.chunk, DEFINITION_LINES) for p in found]
        header = f"find_definitions {name!r}: {len(places)} definitions."
        return Found(header, places, f"Looking up the definition of `{name}`")

    def find_references(self, args: dict[str, Any]) -> Found:
        name = _text(args, "name", limit=200)
        scope = self._scope(_text(args, "repo", required=False, limit=200))
        found = look_up(self.store, "refs", name, scope, NAME_PLACES) if scope else []
        places = []
        for p in found:
            lines = excerpt(p.chunk, p.line - 1, p.line + 1)
            places.append(Place(lines, numbered_lines(lines)))
        header = f"find_references {name!r}: {len(places)} places that use it."
        return Found(header, places, f"Looking up uses of `{name}`")


def _lines_of(chunks: list[Chunk], start: int, end: int) -> Place:
    """Lines ``start``..``end`` of one file from its chunks: the cited range is what the
    index holds of it, and a line no chunk holds (a blank between two) shows as a gap."""
    text: dict[int, str] = {}
    for c in chunks:
        for offset, line in enumerate(c.text.split("\n")):
            if start <= c.start_line + offset <= end:
                text.setdefault(c.start_line + offset, line)
    first, last = min(text), max(text)
    symbols = list(dict.fromkeys(c.symbol for c in chunks if c.symbol))[:3]
    chunk = replace(
        chunks[0],
        start_line=first,
        end_line=last,
        text="\n".join(text.get(n, "") for n in range(first, last + 1)),
        symbol=", ".join(symbols),
    )
    body = []
    for n in range(first, last + 1):
        body.append(f"{n:>5}  {text[n]}" if n in text else f"{n:>5}  ⋯ (not indexed)")
    return Place(chunk, "\n".join(body))


def _literal_runs(pattern: str) -> list[str]:
    """The literal words of a regular expression (for the index to find candidates)."""
    cleaned = re.sub(r"\\[a-zA-Z]", " ", pattern)  # \d, \w, \s, \b …
    return [run for run in re.split(r"[\\^$.|?*+()\[\]{}]", cleaned) if len(run) >= 3]


def _glob_match(path: str, glob: str) -> bool:
    """``*.py`` matches a file name anywhere; a glob with a slash matches the whole path."""
    if "/" in glob:
        return fnmatch.fnmatchcase(path, glob) or fnmatch.fnmatchcase(path, glob.rstrip("/") + "/*")
    return fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], glob)


def _grep_chunks(matcher: regex.Pattern[str], chunks: list[Chunk]) -> tuple[list[Place], int, bool]:
    """The matching lines of each chunk as one place per chunk, how many lines matched, and
    False when the match or time bound stopped the scan."""
    deadline = time.monotonic() + GREP_SECONDS
    places: list[Place] = []
    total = 0
    for chunk in chunks:
        hits: list[int] = []
        for offset, line in enumerate(chunk.text.split("\n")):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or total >= GREP_MATCHES:
                return places + _grep_place(chunk, hits), total, False
            try:
                if matcher.search(line[:2000], timeout=remaining):
                    hits.append(chunk.start_line + offset)
                    total += 1
            except TimeoutError:
                return places + _grep_place(chunk, hits), total, False
        places += _grep_place(chunk, hits)
    return places, total, True


def _grep_place(chunk: Chunk, lines: list[int]) -> list[Place]:
    if not lines:
        return []
    cited = excerpt(chunk, lines[0], lines[-1])
    text = chunk.text.split("\n")
    body: list[str] = []
    for i, n in enumerate(lines):
        if i and n != lines[i - 1] + 1:
            body.append("  ⋯")
        body.append(f"{n:>5}  {text[n - chunk.start_line][:240]}")
    return [Place(cited, "\n".join(body))]


def _function(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_REPO = {"type": "string", "description": "owner/name of one repository (optional)"}
TOOL_SPECS: tuple[dict[str, Any], ...] = (
    _function(
        "search_code",
        "Hybrid (full-text + semantic) search over the indexed code and docs. Returns the "
        "best places with their first lines.",
        {
            "query": {"type": "string", "description": "words, identifiers or a question"},
            "repo": _REPO,
            "k": {"type": "integer", "description": f"results, 1-{MAX_SEARCH_RESULTS}"},
        },
        ["query"],
    ),
    _function(
        "read_code",
        "Read exact lines of an indexed file (at most 200 lines per call), with line numbers.",
        {
            "repo": {"type": "string", "description": "owner/name"},
            "path": {"type": "string", "description": "file path inside the repository"},
            "start_line": {"type": "integer"},
            "end_line": {"type": "integer"},
        },
        ["repo", "path", "start_line", "end_line"],
    ),
    _function(
        "grep",
        "Find lines holding a literal string (or a regular expression with regex=true) "
        "among the indexed chunks that contain its words.",
        {
            "pattern": {"type": "string"},
            "repo": _REPO,
            "path_glob": {"type": "string", "description": "e.g. *.py or src/http/*"},
            "regex": {"type": "boolean"},
            "ignore_case": {"type": "boolean"},
        },
        ["pattern"],
    ),
    _function(
        "list_files",
        "List the indexed files of a repository (under a path prefix); without a repository, "
        "the repositories you may search.",
        {"repo": _REPO, "path_prefix": {"type": "string"}},
        [],
    ),
    _function(
        "find_definitions",
        "Where a function, class, method, constant or variable is defined, by name "
        "(e.g. parse_url, Session.send).",
        {"name": {"type": "string"}, "repo": _REPO},
        ["name"],
    ),
    _function(
        "find_references",
        "Where a name is used: calls, imports, type uses, and string literals that hold it.",
        {"name": {"type": "string"}, "repo": _REPO},
        ["name"],
    ),
)
