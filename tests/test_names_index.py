"""The names index (definitions, references, literals) on both stores, and `codeask defs|refs`.

Each store indexes a chunk's names in the same write as its text, filters a lookup by the
allowed repositories inside the query, and forgets the names with the chunk.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.answer import look_up
from bot.cli.app import app
from indexer.errors import InvalidInput
from indexer.models import Chunk, NameRequest
from indexer.source import chunk_names
from indexer.stores import SearchBackend
from tests.conftest import git
from tests.store_backends import BACKENDS, open_backend, random_vectors, state

DIM = 8


def _chunk(repo: str, path: str, start: int, text: str, symbol: str) -> Chunk:
    return Chunk(
        repo,
        path,
        start,
        start + text.count("\n"),
        text,
        symbol,
        "python",
        "source",
        commit="c" * 40,
        blob_sha="b1",
    )


SESSION = _chunk(
    "acme/web",
    "src/web/sessions.py",
    10,
    "class Session:\n"
    "    def send(self, request):\n"
    '        verify = os.environ.get("REQUESTS_CA_BUNDLE")\n'
    "        return self.adapter.send(request, verify=verify)",
    "Session",
)
ADAPTER = _chunk(
    "acme/web",
    "src/web/adapters.py",
    1,
    "def build_adapter(retries):\n"
    "    if retries < 0:\n"
    '        raise InvalidURL("Perhaps you meant https://")\n'
    "    return HTTPAdapter(max_retries=retries)",
    "build_adapter",
)
PRIVATE = _chunk(
    "acme/vault",
    "vault/keys.py",
    1,
    "def build_adapter():\n    return Session()",
    "build_adapter",
)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SearchBackend]:
    for backend in open_backend(request.param, tmp_path):
        backend.ensure_schema(DIM)
        backend.apply_changes(
            "acme/web", [], [SESSION, ADAPTER], random_vectors(2, DIM), state("acme/web")
        )
        backend.apply_changes(
            "acme/vault", [], [PRIVATE], random_vectors(1, DIM), state("acme/vault")
        )
        yield backend


def _found(store: SearchBackend, key: str, role: str, repos: set[str]) -> list[tuple[str, str]]:
    found = store.find_names(NameRequest(key, frozenset(repos), role))  # type: ignore[arg-type]
    return [(c.repo, c.path) for c in found]


def test_a_chunk_names_what_it_defines_uses_and_quotes() -> None:
    names = chunk_names(SESSION)
    assert {"session", "session.send", "send"} <= set(names.defines)
    assert "get" in names.references
    assert "requests_ca_bundle" in names.literals
    assert "perhaps you meant https://" in chunk_names(ADAPTER).literals


def test_definitions_are_found_only_in_the_allowed_repositories(store: SearchBackend) -> None:
    both = {"acme/web", "acme/vault"}
    assert _found(store, "build_adapter", "defines", both) == [
        ("acme/vault", "vault/keys.py"),
        ("acme/web", "src/web/adapters.py"),
    ]
    assert _found(store, "build_adapter", "defines", {"acme/web"}) == [
        ("acme/web", "src/web/adapters.py")
    ]
    assert _found(store, "build_adapter", "defines", set()) == []  # fail closed
    assert _found(store, "session.send", "defines", both) == [("acme/web", "src/web/sessions.py")]


def test_references_and_literals(store: SearchBackend) -> None:
    web = {"acme/web"}
    assert _found(store, "httpadapter", "references", web) == [("acme/web", "src/web/adapters.py")]
    assert _found(store, "session", "references", {"acme/vault"}) == [
        ("acme/vault", "vault/keys.py")
    ]
    assert _found(store, "session", "references", web) == []  # the vault's use stays hidden
    assert _found(store, "requests_ca_bundle", "literals", web) == [
        ("acme/web", "src/web/sessions.py")
    ]


def test_names_go_with_their_chunks(store: SearchBackend) -> None:
    store.apply_changes(
        "acme/web", ["src/web/adapters.py"], [], random_vectors(0, DIM), state("acme/web")
    )
    assert _found(store, "build_adapter", "defines", {"acme/web"}) == []
    store.delete_repo("acme/vault")
    assert _found(store, "build_adapter", "defines", {"acme/vault"}) == []
    assert _found(store, "session", "defines", {"acme/web"}) == [
        ("acme/web", "src/web/sessions.py")
    ]


def test_look_up_pins_each_place_to_the_line_that_names_it(store: SearchBackend) -> None:
    [place] = look_up(store, "defs", "Session.send", frozenset({"acme/web"}))
    assert place.line == 11
    assert place.link("https://github.com") == (
        f"https://github.com/acme/web/blob/{'c' * 40}/src/web/sessions.py#L11"
    )
    refs = look_up(store, "refs", "REQUESTS_CA_BUNDLE", frozenset({"acme/web"}))
    assert [(p.chunk.path, p.line) for p in refs] == [("src/web/sessions.py", 12)]
    with pytest.raises(InvalidInput):
        look_up(store, "defs", "  ", frozenset({"acme/web"}))


def test_defs_and_refs_commands_on_an_indexed_repository(data_dir: Path, make_repo: object) -> None:
    repo = make_repo(  # type: ignore[operator]
        {
            "retry.py": (
                "import time\n\n\n"
                "def backoff_delay(attempt: int) -> float:\n"
                "    return min(30.0, 2 ** attempt)\n\n\n"
                "def call_with_retry(fn):\n"
                "    for attempt in range(5):\n"
                "        time.sleep(backoff_delay(attempt))\n"
            )
        }
    )
    git(repo, "remote", "add", "origin", "https://github.com/acme/retry.git")
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(repo)]).exit_code == 0
    result = runner.invoke(app, ["defs", "backoff_delay", "--json"])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    assert (row["repo"], row["path"], row["line"]) == ("acme/retry", "retry.py", 4)
    assert row["url"].endswith("/retry.py#L4") and "/blob/" in row["url"]
    result = runner.invoke(app, ["refs", "backoff_delay"])
    assert result.exit_code == 0
    assert "acme/retry/retry.py:10" in result.stdout
    result = runner.invoke(app, ["defs", "no_such_function_anywhere"])
    assert result.exit_code == 0 and "No definition of 'no_such_function_anywhere'" in result.stdout
