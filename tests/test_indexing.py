"""Indexing a real git repository into the embedded store, incrementally and atomically."""

from __future__ import annotations

import dataclasses
import gc
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from indexer.embedding import Embedder, SqliteEmbeddingCache, WrappedEmbedder
from indexer.jobs import index_repository
from indexer.models import Chunk, RepoState
from indexer.search import Searcher
from indexer.stores import SqliteStore, StreamingWrites
from tests.conftest import git

SHOP = {
    "shop/cart.py": (
        "class Cart:\n"
        '    """Items a customer is about to buy."""\n\n'
        "    def __init__(self):\n"
        "        self.items = []\n\n"
        "    def add_item(self, sku, qty=1):\n"
        "        self.items.append((sku, qty))\n\n"
        "    def total_price(self, prices):\n"
        "        return sum(prices[sku] * qty for sku, qty in self.items)\n"
    ),
    "shop/limits.py": (
        "import time\n\n\n"
        "class TokenBucket:\n"
        "    def __init__(self, rate, capacity):\n"
        "        self.rate = rate\n"
        "        self.capacity = capacity\n"
        "        self.tokens = capacity\n"
        "        self.stamp = time.monotonic()\n\n"
        "    def allow(self):\n"
        "        now = time.monotonic()\n"
        "        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)\n"
        "        self.stamp = now\n"
        "        if self.tokens >= 1:\n"
        "            self.tokens -= 1\n"
        "            return True\n"
        "        return False\n"
    ),
    "shop/mail.py": (
        "def send_receipt(smtp, customer, order):\n"
        '    body = f"Thanks {customer.name}, your order {order.id} ships soon."\n'
        "    smtp.sendmail('shop@example.com', customer.email, body)\n"
    ),
    "README.md": "# Shop\n\nA tiny shop.\n\n## Configuration\n\nSet STRIPE_WEBHOOK_SECRET to verify payment webhooks.\n",
}


def paths_in(store: SqliteStore, repo: str) -> dict[str, str]:
    return store.file_blobs(repo)


def test_search_finds_identifier_and_concept(
    make_repo: Callable[[dict[str, str]], Path],
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
) -> None:
    root = make_repo(SHOP)
    report = index_repository(root, "acme/shop", store, embedder, cache)
    assert report.files == 4 and report.chunks >= 4
    searcher = Searcher(store, embedder)
    repos = frozenset({"acme/shop"})
    top = searcher.search("TokenBucket", repos, k=3)[0].chunk
    assert top.path == "shop/limits.py"
    concept = searcher.search(
        "how do we throttle requests so clients can't go too fast?", repos, k=3
    )
    assert concept[0].chunk.path == "shop/limits.py"
    email = searcher.search("where is the confirmation email sent to the buyer", repos, k=3)
    assert email[0].chunk.symbol == "send_receipt"
    assert email[0].chunk.commit == git(root, "rev-parse", "HEAD")
    assert searcher.search("TokenBucket", frozenset(), k=3) == []
    assert searcher.search("TokenBucket", frozenset({"other/repo"}), k=3) == []


def test_empty_files_are_not_reread_as_changed_on_every_run(
    make_repo: Callable[[dict[str, str]], Path],
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
) -> None:
    files = {**SHOP, "shop/__init__.py": "", "tests/__init__.py": ""}
    root = make_repo(files)
    first = index_repository(root, "acme/shop", store, embedder, cache)
    assert first.files == len(files)
    assert first.changed_files == len(SHOP)  # the two empty files hold nothing to index

    again = index_repository(root, "acme/shop", store, embedder, cache)
    assert (again.changed_files, again.deleted_files, again.embedded) == (0, 0, 0)

    # A file that had chunks and is emptied is a change: its old chunks must go.
    (root / "shop/mail.py").write_text("")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "empty mail")
    emptied = index_repository(root, "acme/shop", store, embedder, cache)
    assert emptied.changed_files == 1
    assert "shop/mail.py" not in store.file_blobs("acme/shop")
    # ... and it stays quiet once empty.
    assert index_repository(root, "acme/shop", store, embedder, cache).changed_files == 0


def test_a_file_deleted_in_the_work_tree_is_reported_deleted_and_leaves_the_index(
    make_repo: Callable[[dict[str, str]], Path],
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
) -> None:
    root = make_repo(SHOP)
    index_repository(root, "acme/shop", store, embedder, cache)
    assert "shop/mail.py" in store.file_blobs("acme/shop")
    # Deleted, not committed: git still tracks it, the work tree no longer has it.
    (root / "shop/mail.py").unlink()
    assert "shop/mail.py" in git(root, "ls-files")
    report = index_repository(root, "acme/shop", store, embedder, cache)
    skipped = {s.path: s.reason for s in report.skipped}
    assert skipped == {"shop/mail.py": "deleted from the work tree"}
    assert report.deleted_files == 1 and report.files == len(SHOP) - 1
    # The index follows the work tree it read, not the commit that still has the file.
    assert "shop/mail.py" not in store.file_blobs("acme/shop")
    hits = Searcher(store, embedder).search("send_receipt", frozenset({"acme/shop"}))
    assert all(h.chunk.path != "shop/mail.py" for h in hits)


def test_uncommitted_files_are_not_cited_at_a_commit_that_lacks_their_lines(
    make_repo: Callable[[dict[str, str]], Path],
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
) -> None:
    root = make_repo(SHOP)
    head = git(root, "rev-parse", "HEAD")
    # Four new lines on top of a committed file, and a file git does not track yet.
    mail = "# a\n# b\n# c\n# d\n" + SHOP["shop/mail.py"]
    (root / "shop/mail.py").write_text(mail)
    (root / "shop/tax.py").write_text("def vat(amount):\n    return amount * 0.2\n")
    report = index_repository(root, "acme/shop", store, embedder, cache)
    assert report.commit == head and report.uncommitted == ["shop/mail.py", "shop/tax.py"]
    repos = frozenset({"acme/shop"})

    def commit_of(term: str, path: str) -> str:
        chunks = store.fetch(store.bm25(term, repos, 10))
        return next(c.commit for c in chunks if c.path == path)

    assert commit_of("send_receipt", "shop/mail.py") == ""  # a plain path link, not HEAD
    assert commit_of("vat", "shop/tax.py") == ""
    assert commit_of("TokenBucket", "shop/limits.py") == head

    # Committed as they are: the next run pins them, although their bytes did not change.
    git(root, "add", "-A")
    git(root, "commit", "-qm", "tax")
    again = index_repository(root, "acme/shop", store, embedder, cache)
    assert again.uncommitted == [] and again.changed_files == 2 and again.embedded == 0
    new_head = git(root, "rev-parse", "HEAD")
    assert commit_of("send_receipt", "shop/mail.py") == new_head
    assert commit_of("vat", "shop/tax.py") == new_head
    assert store.file_blobs("acme/shop")["shop/mail.py"] == git(
        root, "rev-parse", "HEAD:shop/mail.py"
    )
    assert index_repository(root, "acme/shop", store, embedder, cache).changed_files == 0


def test_incremental_reindex_add_modify_rename_delete(
    make_repo: Callable[[dict[str, str]], Path],
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
) -> None:
    root = make_repo(SHOP)
    first = index_repository(root, "acme/shop", store, embedder, cache)
    assert first.changed_files == 4

    again = index_repository(root, "acme/shop", store, embedder, cache)
    assert (again.changed_files, again.deleted_files, again.embedded) == (0, 0, 0)

    (root / "shop/mail.py").write_text(SHOP["shop/mail.py"].replace("ships soon", "is on its way"))
    git(root, "mv", "shop/cart.py", "shop/basket.py")
    git(root, "rm", "-q", "README.md")
    (root / "shop/tax.py").write_text("def vat(amount):\n    return amount * 0.2\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "change")
    report = index_repository(root, "acme/shop", store, embedder, cache)
    assert report.changed_files == 3  # mail modified, basket renamed, tax added
    assert report.deleted_files == 2  # cart.py (renamed away) and README.md
    # Only mail's changed chunk and the new tax.py are embedded: the renamed file's chunk
    # keeps the vector computed for it at its old path.
    assert (report.embedded, report.carried) == (2, 1)
    blobs = paths_in(store, "acme/shop")
    assert sorted(blobs) == ["shop/basket.py", "shop/limits.py", "shop/mail.py", "shop/tax.py"]
    state = store.repo_state("acme/shop")
    assert state is not None and state.commit == git(root, "rev-parse", "HEAD")
    searcher = Searcher(store, embedder)
    hits = searcher.search("send_receipt", frozenset({"acme/shop"}), k=1)
    assert "is on its way" in hits[0].chunk.text
    moved = searcher.search("shopping cart items total price", frozenset({"acme/shop"}), k=1)
    assert moved[0].chunk.path == "shop/basket.py"


def test_renamed_and_edited_file_is_embedded_at_its_new_path(
    make_repo: Callable[[dict[str, str]], Path],
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
) -> None:
    root = make_repo(SHOP)
    index_repository(root, "acme/shop", store, embedder, cache)
    git(root, "mv", "shop/limits.py", "shop/throttle.py")
    (root / "shop/throttle.py").write_text(SHOP["shop/limits.py"] + "\nLIMIT = 10\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "move and edit")
    report = index_repository(root, "acme/shop", store, embedder, cache)
    # Another blob: not a rename as git blobs go, so nothing is carried over.
    assert report.carried == 0 and report.embedded >= 1


def test_unchanged_function_is_not_embedded_twice(
    make_repo: Callable[[dict[str, str]], Path],
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
) -> None:
    root = make_repo(SHOP)
    index_repository(root, "acme/shop", store, embedder, cache)
    # Append a function: the file's other chunks keep their embedded text.
    (root / "shop/mail.py").write_text(
        SHOP["shop/mail.py"] + "\n\ndef unsubscribe(customer):\n    customer.opted_out = True\n"
    )
    report = index_repository(root, "acme/shop", store, embedder, cache)
    assert report.changed_files == 1
    assert report.embedded == 1


def index_then_rewrite_limits(
    root: Path, store: SqliteStore, embedder: Embedder, cache: SqliteEmbeddingCache
) -> RepoState | None:
    """Index the shop, then commit a rewrite of limits.py; returns the indexed state."""
    index_repository(root, "acme/shop", store, embedder, cache)
    before = store.repo_state("acme/shop")
    (root / "shop/limits.py").write_text("def throttle():\n    return 'new'\n")
    git(root, "commit", "-qam", "rewrite limits")
    return before


def test_crash_while_writing_keeps_previous_state(
    make_repo: Callable[[dict[str, str]], Path],
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = make_repo(SHOP)
    before = index_then_rewrite_limits(root, store, embedder, cache)

    real_fts = __import__("indexer.stores.sqlite", fromlist=["fts_document"]).fts_document
    calls = {"n": 0}

    def failing(chunk):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        raise OSError("disk full")

    monkeypatch.setattr("indexer.stores.sqlite.fts_document", failing)
    with pytest.raises(OSError):
        index_repository(root, "acme/shop", store, embedder, cache)
    assert calls["n"] == 1
    after = store.repo_state("acme/shop")
    assert after == before  # not marked at the new commit
    searcher = Searcher(store, embedder)
    assert (
        searcher.search("TokenBucket", frozenset({"acme/shop"}), k=1)[0].chunk.path
        == "shop/limits.py"
    )

    monkeypatch.setattr("indexer.stores.sqlite.fts_document", real_fts)
    report = index_repository(root, "acme/shop", store, embedder, cache)
    assert report.changed_files == 1
    assert report.embedded == 0  # the failed run's embeddings were cached
    assert store.repo_state("acme/shop").commit == git(root, "rev-parse", "HEAD")  # type: ignore[union-attr]


def test_empty_repo_and_plain_folder(
    tmp_path: Path, store: SqliteStore, cache: SqliteEmbeddingCache, embedder: Embedder
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    report = index_repository(empty, "acme/empty", store, embedder, cache)
    assert (report.files, report.chunks, report.commit) == (0, 0, "")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "x.py").write_text("def plain_thing():\n    return 1\n")
    report = index_repository(plain, "local/plain", store, embedder, cache)
    assert report.chunks == 1 and report.commit == ""


def test_vectors_are_normalised(embedder: Embedder) -> None:
    vectors = embedder.embed(["def a(): pass", "class B: pass"])
    assert vectors.shape == (2, embedder.dimension)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_vectors_stay_with_their_chunks_across_embedding_groups(
    make_repo: Callable[[dict[str, str]], Path],
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Tiny groups: chunking and embedding hand over many times, in whatever interleaving.
    monkeypatch.setattr("indexer.jobs.indexing.EMBED_GROUP", 2)
    seen: list[str] = []
    report = index_repository(
        make_repo(SHOP),
        "acme/shop",
        store,
        embedder,
        cache,
        progress=lambda s, d, t: seen.append(s),
    )
    assert report.chunks > 4 and "chunk" in seen and "embed" in seen
    chunks = store.fetch(
        store.knn(np.ones(embedder.dimension, np.float32), frozenset({"acme/shop"}), 1000)
    )
    assert len(chunks) == report.chunks
    from indexer.embedding import embedding_text

    for chunk in chunks:  # each chunk's own embedded text finds that chunk first
        vector = embedder.embed([embedding_text(chunk)])[0]
        assert store.knn(vector, frozenset({"acme/shop"}), 1) == [chunk.id]


def test_a_file_the_chunker_fails_on_is_skipped_with_its_reason_and_the_rest_is_indexed(
    make_repo: Callable[[dict[str, str]], Path],
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One file a parser cannot handle must not block every later update of the repository
    # (the worker would retry the same crash until it gave up).
    root = make_repo(SHOP)
    index_then_rewrite_limits(root, store, embedder, cache)
    (root / "shop/mail.py").write_text("def send_receipt(smtp):\n    return 'sent'\n")
    git(root, "commit", "-qam", "mail")
    from indexer.jobs import indexing

    real = indexing.chunk_file

    def broken(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if path == "shop/limits.py":
            raise RuntimeError("parser crashed")
        return real(path, *args, **kwargs)

    monkeypatch.setattr("indexer.jobs.indexing.chunk_file", broken)
    report = index_repository(root, "acme/shop", store, embedder, cache)
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("shop/limits.py", "chunking failed (RuntimeError('parser crashed'))")
    ]
    assert store.repo_state("acme/shop").commit == git(root, "rev-parse", "HEAD")  # type: ignore[union-attr]
    blobs = store.file_blobs("acme/shop")
    assert "shop/limits.py" not in blobs  # its old chunks would cite lines it no longer has
    assert blobs["shop/mail.py"] == git(root, "rev-parse", "HEAD:shop/mail.py")
    # Once the chunker copes again, the next run picks the file up.
    monkeypatch.setattr("indexer.jobs.indexing.chunk_file", real)
    again = index_repository(root, "acme/shop", store, embedder, cache)
    assert again.changed_files == 1 and "shop/limits.py" in store.file_blobs("acme/shop")


def test_symlink_loops_undecodable_names_and_deep_nesting_lose_only_themselves(
    make_repo: Callable[[dict[str, str]], Path],
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
) -> None:
    root = make_repo(SHOP)
    os.symlink("b.py", root / "a.py")
    os.symlink("a.py", root / "b.py")
    (root / os.fsdecode(b"bad\xffname.py")).write_text("def odd():\n    return 1\n")
    # Nesting deeper than Python's recursion limit in the syntax tree.
    (root / "deep.js").write_text("x = " + "[\n" * 3000 + "1\n" + "]\n" * 3000)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "odd files")
    report = index_repository(root, "acme/shop", store, embedder, cache)
    skipped = {s.path: s.reason for s in report.skipped}
    assert skipped["a.py"] == skipped["b.py"] == "symlink loop or unresolvable target"
    assert skipped["bad\ufffdname.py"] == "file name is not UTF-8"
    blobs = store.file_blobs("acme/shop")
    assert sorted(blobs) == ["README.md", "deep.js", *sorted(p for p in SHOP if p.endswith(".py"))]
    # deep.js is indexed in plain line windows rather than lost with the run.


class _StreamingSqlite(SqliteStore):
    """A store that takes a run's chunks group by group (as OpenSearch does) and only
    refers to the chunks it was handed weakly, so the test sees what the indexer keeps."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.handed: list[weakref.ref[Chunk]] = []

    def begin_changes(self, repo: str) -> list[tuple[list[Chunk], np.ndarray]]:
        return []

    def write_chunks(
        self,
        run: list[tuple[list[Chunk], np.ndarray]],
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
    ) -> None:
        self.handed.extend(weakref.ref(c) for c in chunks)
        run.append(([dataclasses.replace(c) for c in chunks], vectors.copy()))

    def finish_changes(
        self,
        run: list[tuple[list[Chunk], np.ndarray]],
        remove_paths: Sequence[str],
        written_paths: Sequence[str],
        state: RepoState,
    ) -> None:
        gc.collect()
        self.alive_at_finish = sum(ref() is not None for ref in self.handed)
        chunks = [c for group, _ in run for c in group]
        assert sorted(written_paths) == sorted({c.path for c in chunks})
        vectors = np.concatenate([v for _, v in run])
        self.apply_changes(state.repo, remove_paths, chunks, vectors, state)


def test_a_streaming_store_gets_every_group_and_the_run_keeps_none_of_them(
    make_repo: Callable[[dict[str, str]], Path],
    tmp_path: Path,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("indexer.jobs.indexing.EMBED_GROUP", 2)
    store = _StreamingSqlite(tmp_path / "streamed.db")
    assert isinstance(store, StreamingWrites)
    report = index_repository(make_repo(SHOP), "acme/shop", store, embedder, cache)
    assert report.chunks == len(store.handed) > 4
    # Chunks and vectors went to the store as they were embedded; a run over a large
    # repository must not also hold all of them until the end.
    assert store.alive_at_finish == 0
    assert sorted(store.file_blobs("acme/shop")) == sorted(SHOP)
    found = Searcher(store, embedder).search("token bucket refill rate", frozenset({"acme/shop"}))
    assert found and found[0].chunk.path == "shop/limits.py"


class _SlowEmbedder(WrappedEmbedder):
    """The real embedder, slowed down (as on a big repository, embedding is the slow
    stage), counting how far chunking has run ahead each time a group arrives."""

    def __init__(self, inner: Embedder, chunked: list[int], fail_at: int = 0) -> None:
        super().__init__(inner)
        self._chunked, self._fail_at = chunked, fail_at
        self.calls = 0
        self.ahead: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self._fail_at:
            raise RuntimeError("model server went away")
        time.sleep(0.05)
        self.ahead.append(self._chunked[0] - self.calls)
        return self._inner.embed(texts)


def _many_files(n: int) -> dict[str, str]:
    return {
        f"pkg/mod{i:02d}.py": f"def handler_{i}(event):\n    return event + {i}\n" for i in range(n)
    }


def test_chunking_waits_for_a_slow_embedder_instead_of_queueing_the_repository(
    make_repo: Callable[[dict[str, str]], Path],
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from indexer.jobs import indexing

    monkeypatch.setattr("indexer.jobs.indexing.EMBED_GROUP", 1)  # one file, one group
    chunked = [0]
    real = indexing.chunk_file

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        chunked[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr("indexer.jobs.indexing.chunk_file", counting)
    slow = _SlowEmbedder(embedder, chunked)
    report = index_repository(make_repo(_many_files(30)), "acme/many", store, slow, cache)
    assert report.chunks == 30 and slow.calls == 30
    # At most the queued groups plus the one waiting to be queued are ever ahead of the
    # embedder; unbounded, chunking would finish the repository while two were embedded.
    assert max(slow.ahead) <= indexing.CHUNKED_AHEAD + 1


def test_an_embedding_failure_stops_the_run_while_chunking_waits(
    make_repo: Callable[[dict[str, str]], Path],
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("indexer.jobs.indexing.EMBED_GROUP", 1)
    failing = _SlowEmbedder(embedder, [0], fail_at=3)
    with pytest.raises(RuntimeError, match="model server went away"):
        index_repository(make_repo(_many_files(30)), "acme/many", store, failing, cache)
    assert store.repo_state("acme/many") is None
    assert not [t for t in threading.enumerate() if t.name == "chunker"]


def test_files_that_change_after_the_walk_are_checked_again_when_read(
    make_repo: Callable[[dict[str, str]], Path],
    store: SqliteStore,
    cache: SqliteEmbeddingCache,
    embedder: Embedder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Bytes are read when a file is chunked, after the walk; a checkout that changes in
    # between must not lead the indexer out of the repository.
    root = make_repo({**SHOP, "shop/pipe.py": "x = 1\n", "shop/grown.py": "y = 2\n"})
    secret = tmp_path / "outside.py"
    secret.write_text("PRODUCTION_DATABASE_PASSWORD = 'hunter2'\n")
    from indexer.jobs import indexing

    real = indexing.walk_repository

    def racing(*args, **kwargs):  # type: ignore[no-untyped-def]
        yield from real(*args, **kwargs)
        (root / "shop" / "cart.py").unlink()
        os.symlink(secret, root / "shop" / "cart.py")
        (root / "shop" / "mail.py").unlink()
        (root / "shop" / "pipe.py").unlink()
        os.mkfifo(root / "shop" / "pipe.py")  # opening it for reading would block
        (root / "shop" / "grown.py").write_text("y = 2\n" * 5000)
        (root / "README.md").write_bytes(b"\x00\x01 now a binary blob")

    monkeypatch.setattr("indexer.jobs.indexing.walk_repository", racing)
    report = index_repository(root, "acme/shop", store, embedder, cache, max_file_bytes=10_000)
    skipped = {s.path: s.reason for s in report.skipped}
    assert skipped["shop/cart.py"].startswith("unreadable")
    assert skipped["shop/mail.py"].startswith("unreadable")
    assert skipped["shop/pipe.py"] == "not a regular file"
    assert skipped["shop/grown.py"] == "larger than 10000 bytes"
    assert skipped["README.md"] == "binary"
    assert sorted(store.file_blobs("acme/shop")) == ["shop/limits.py"]
    hits = Searcher(store, embedder).search("database password", frozenset({"acme/shop"}))
    assert all("hunter2" not in h.chunk.text for h in hits)
