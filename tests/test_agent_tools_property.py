"""Property: over random worlds, no tool result ever holds a place outside the allowed set.

The allowed set comes from the real place policy (``acl.decide_access``) for a DM or a
channel; the tools run over a real SQLite store of real git repositories with the real
embedder, and are called with arguments that name allowed and forbidden repositories,
paths and names alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acl.permissions import Place, decide_access
from bot.answer.sourcebook import SourceBook, render_places
from bot.answer.tools import TOOL_SPECS, CodeTools, ToolError
from indexer.embedding import SqliteEmbeddingCache
from indexer.jobs import index_repository
from indexer.search import Searcher
from indexer.stores import SqliteStore
from tests.conftest import git

VISIBILITY = {
    "org/public-api": "public",
    "org/internal-tools": "internal",
    "org/private-billing": "private",
    "org/private-auth": "private",
}
PATHS = ("src/retry.py", "src/tokens.py", "README.md")
NAMES = ("refresh_token", "retry_after", "parse_header", "RETRY_LIMIT", "Session")


def _files(repo: str) -> dict[str, str]:
    tag = repo.split("/")[1].replace("-", "_")
    return {
        "src/retry.py": (
            f"RETRY_LIMIT = 5  # {tag}\n\n\ndef retry_after(header: str) -> float:\n"
            f'    """Seconds to wait ({tag})."""\n    return float(parse_header(header))\n'
        ),
        "src/tokens.py": (
            f"class Session:\n    def refresh_token(self) -> str:\n"
            f'        return "{tag}-token"\n\n\ndef parse_header(value: str) -> str:\n'
            f"    return value.strip()  # {tag}\n"
        ),
        "README.md": f"# {tag}\n\nRetry-After handling and token refresh for {tag}.\n",
    }


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[Searcher]:  # type: ignore[no-untyped-def]
    base = tmp_path_factory.mktemp("world")
    store = SqliteStore(base / "codeask.db")
    cache = SqliteEmbeddingCache(base / "embeddings.db")
    for repo, visibility in VISIBILITY.items():
        root = base / repo.replace("/", "_")
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        for rel, text in _files(repo).items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "initial")
        index_repository(root, repo, store, embedder, cache, visibility=visibility)
    yield Searcher(store, embedder)
    store.close()


repos = st.sampled_from([*sorted(VISIBILITY), "org/missing", ""])
arguments = st.fixed_dictionaries(
    {},
    optional={
        "query": st.sampled_from(["retry after header", "refresh token", "Session", "zzz"]),
        "repo": repos,
        "path": st.sampled_from((*PATHS, "src/none.py", "../etc/passwd")),
        "start_line": st.integers(-5, 12),
        "end_line": st.integers(-5, 400),
        "pattern": st.sampled_from(["retry", "token", "def .*\\(", "RETRY_LIMIT", "(a+)+$"]),
        "regex": st.booleans(),
        "path_glob": st.sampled_from(["*.py", "src/*", "*.md"]),
        "path_prefix": st.sampled_from(["", "src", "src/retry"]),
        "name": st.sampled_from((*NAMES, "", "x" * 300)),
        "k": st.integers(-1, 30),
    },
)
TOOLS = [spec["function"]["name"] for spec in TOOL_SPECS]


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kind=st.sampled_from(["dm", "channel"]),
    readable=st.frozensets(st.sampled_from(sorted(VISIBILITY))),
    grants=st.frozensets(st.sampled_from(sorted(VISIBILITY))),
    calls=st.lists(st.tuples(st.sampled_from(TOOLS), arguments), min_size=1, max_size=4),
)
def test_no_tool_result_holds_a_place_outside_the_allowed_set(
    searcher: Searcher,
    kind: str,
    readable: frozenset[str],
    grants: frozenset[str],
    calls: list[tuple[str, dict[str, object]]],
) -> None:
    place = Place("dm") if kind == "dm" else Place("channel", "C1")
    allowed = decide_access(place, VISIBILITY, readable, grants).repos
    forbidden = set(VISIBILITY) - allowed
    tools = CodeTools(searcher, allowed)
    book = SourceBook(allowed)
    for name, args in calls:
        try:
            found = tools.run(name, json.loads(json.dumps(args)))
        except ToolError:
            continue
        assert all(p.chunk.repo in allowed for p in found.places)
        text, _ = render_places(book, found.header, found.places, 4000)
        named = {str(v) for v in args.values()}
        for repo in forbidden - named:  # a tool may echo what it was asked, nothing more
            assert repo not in text and repo.split("/")[1].replace("-", "_") not in text
    assert all(s.chunk.repo in allowed for s in book.sources)
