"""Index a repository into a store: only what changed, atomically per run."""

from __future__ import annotations

import logging
import os
import queue
import stat
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import pathspec

from indexer.embedding import (
    Embedder,
    EmbeddingCache,
    cache_key,
    embed_with_cache,
    embedding_text,
    refuse_other_model,
)
from indexer.embedding.spaces import embedder_of
from indexer.errors import IndexingError
from indexer.models import VISIBILITIES, Chunk, RepoState
from indexer.source import (
    CHUNKER_VERSION,
    EMPTY_BLOB_SHA,
    NAMES_VERSION,
    Skipped,
    SourceFile,
    chunk_file,
    committed_blobs,
    content_skip_reason,
    git_blob_sha,
    head_commit,
    walk_repository,
)
from indexer.stores import SearchBackend, StreamingWrites

log = logging.getLogger(__name__)
ProgressFn = Callable[[str, int, int], None]  # (stage, done, total)
# Chunks handed from the chunking thread to the embedder at a time.
EMBED_GROUP = 256
# Groups the chunking thread may have ready before the embedder takes them.
CHUNKED_AHEAD = 2
# Appended to the stored blob sha of a file whose bytes are not those of the indexed
# commit (uncommitted edits, untracked files): its chunks carry no commit, so citations
# link to the path rather than to lines of a commit that does not have them, and the
# stored sha never matches, so the file is read again until it is committed.
UNCOMMITTED = "+uncommitted"


@dataclass
class IndexReport:
    repo: str
    commit: str
    files: int = 0
    changed_files: int = 0
    deleted_files: int = 0
    chunks: int = 0
    embedded: int = 0
    carried: int = 0  # chunks of renamed files whose vectors came from the old path
    skipped: list[Skipped] = field(default_factory=list)
    seconds: float = 0.0
    full: bool = False
    # Why every file was re-indexed ("" when only changes were, or the repo was new).
    full_reason: str = ""
    # Files indexed from the work tree that differ from ``commit`` (or are untracked).
    uncommitted: list[str] = field(default_factory=list)

    def skipped_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for s in self.skipped:
            counts[s.reason] = counts.get(s.reason, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def config_version(embedder: Embedder) -> str:
    """Changes when chunks or vectors would differ: then the whole repo is re-indexed."""
    return f"chunker-{CHUNKER_VERSION}/names-{NAMES_VERSION}/{embedder.name}"


def _why_reindexed(old_version: str, embedder: Embedder) -> str:
    """The notice for a repo whose chunks or vectors would differ now: re-embedded once."""
    before = embedder_of(old_version)
    if before and before != embedder.name:
        return (
            f"the embedder changed ({before} → {embedder.name}): every file is embedded again, once"
        )
    return "the chunker changed since the last run: every file is chunked again, once"


def index_repository(
    root: Path,
    repo: str,
    backend: SearchBackend,
    embedder: Embedder,
    cache: EmbeddingCache,
    *,
    visibility: str = "private",
    max_file_bytes: int = 1_000_000,
    progress: ProgressFn | None = None,
    force: bool = False,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> IndexReport:
    """Bring ``repo`` in ``backend`` up to the files under ``root``.

    Files whose git blob is unchanged are not touched; the store's state moves to the new
    commit only in the same atomic write that stores every new chunk, so a crash leaves
    the previous state searchable and the next run completes the work.
    """
    started = time.perf_counter()
    if visibility not in VISIBILITIES:
        raise IndexingError(f"visibility must be one of {', '.join(VISIBILITIES)}")
    if not root.is_dir():
        raise IndexingError(f"{root} is not a folder")
    commit = head_commit(root)
    report = IndexReport(repo=repo, commit=commit)
    at_commit = committed_blobs(root, commit) if commit else {}
    backend.ensure_schema(embedder.dimension)
    # Another model's vectors in the same store would be searched as if they were ours.
    refuse_other_model(backend.repo_states(), embedder, skip=repo)
    version = config_version(embedder)
    state = backend.repo_state(repo)
    indexed = backend.file_blobs(repo)
    if force:
        report.full, report.full_reason = True, "asked for a full re-index"
    elif state is not None and state.config_version != version:
        report.full, report.full_reason = True, _why_reindexed(state.config_version, embedder)
    elif state is not None and state.visibility != visibility:
        # every chunk carries the visibility it was indexed with
        report.full, report.full_reason = True, f"the visibility is now {visibility}"

    files: list[SourceFile] = []
    # include/exclude: gitignore-style patterns from the registry; a file that stops
    # matching is removed from the index like a deleted one.
    selected = _path_filter(include, exclude)
    for item in walk_repository(root, max_file_bytes):
        if isinstance(item, Skipped):
            report.skipped.append(item)
        elif selected(item.path):
            # The bytes are read again when the file is chunked: held from the walk until
            # then, every file of a full index would be in memory at once.
            files.append(SourceFile(item.path, item.language, b"", item.blob_sha))
    report.files = len(files)
    current = {f.path for f in files}
    # An empty file holds no chunks, so the store has no record of it: without this rule
    # every empty file (an `__init__.py`) would be read and counted as changed on every run.
    changed = [
        f
        for f in files
        if (report.full or indexed.get(f.path) != f.blob_sha)
        and not (f.blob_sha == EMPTY_BLOB_SHA and f.path not in indexed)
    ]
    deleted = [p for p in indexed if p not in current]
    report.changed_files, report.deleted_files = len(changed), len(deleted)
    # A renamed file (same blob at a path that disappeared) keeps the vectors computed for
    # its old path: the path is part of the embedded text, but re-embedding a moved file
    # would make every rename cost as much as a rewrite.
    gone = {indexed[p]: p for p in deleted}
    moved_from = (
        {} if report.full else {f.path: gone[f.blob_sha] for f in changed if f.blob_sha in gone}
    )

    # A store that takes chunks during the run gets each embedded group from a writer
    # thread while the next group is embedded; the others get everything at the end.
    streamer = backend if isinstance(backend, StreamingWrites) and changed else None
    run = streamer.begin_changes(repo) if streamer is not None else None
    writer = None if streamer is None else _GroupWriter(partial(streamer.write_chunks, run))
    try:
        done = _chunk_and_embed(
            root,
            changed,
            repo,
            visibility,
            commit,
            embedder,
            cache,
            progress,
            moved_from,
            writer,
            max_file_bytes,
            at_commit,
        )
    except BaseException:
        if writer is not None:
            writer.close(raise_error=False)
        raise
    if writer is not None:
        writer.close()  # raises the first write error, if any
    report.chunks, report.embedded, report.carried = done.count, done.embedded, done.carried
    report.skipped.extend(done.skipped)
    report.uncommitted = sorted(done.uncommitted)
    remove = deleted + [f.path for f in changed]
    if report.full:
        remove = sorted(set(remove) | set(indexed))
    state = RepoState(
        repo=repo,
        commit=commit,
        visibility=visibility,
        chunk_count=0,
        indexed_at=time.time(),
        config_version=version,
    )
    if progress:  # a caller can still stop the run here, before the store moves on
        progress("write", 0, 1)
    if streamer is not None:
        streamer.finish_changes(run, remove, sorted(done.paths), state)
    else:
        backend.apply_changes(repo, remove, done.chunks, done.vectors(embedder.dimension), state)
    if progress:
        progress("write", 1, 1)
    report.seconds = time.perf_counter() - started
    return report


@dataclass
class _Embedded:
    """What a run chunked and embedded. With a streaming store the chunks and vectors went
    to the store group by group and are not kept: only their count and paths are (holding
    them would cost the run memory in proportion to the repository, about 1.5 KB of
    vector alone per chunk)."""

    count: int = 0
    embedded: int = 0
    carried: int = 0
    paths: set[str] = field(default_factory=set)
    skipped: list[Skipped] = field(default_factory=list)  # changed or gone since the walk
    uncommitted: set[str] = field(default_factory=set)  # bytes not those of the commit
    chunks: list[Chunk] = field(default_factory=list)
    parts: list[np.ndarray] = field(default_factory=list)

    def vectors(self, dimension: int) -> np.ndarray:
        """Every vector in one array; the groups are joined in place, so they are not
        held twice."""
        if not self.parts:
            return np.zeros((0, dimension), dtype=np.float32)
        if len(self.parts) > 1:
            self.parts = [np.concatenate(self.parts)]
        self.parts[0] = self.parts[0].astype(np.float32, copy=False)
        return self.parts[0]


def _chunk_and_embed(
    root: Path,
    files: Sequence[SourceFile],
    repo: str,
    visibility: str,
    commit: str,
    embedder: Embedder,
    cache: EmbeddingCache,
    progress: ProgressFn | None,
    moved_from: Mapping[str, str] | None = None,
    writer: _GroupWriter | None = None,
    max_file_bytes: int = 1_000_000,
    at_commit: Mapping[str, str] | None = None,
) -> _Embedded:
    """Chunks of ``files`` and their vectors, chunking in a thread while embedding runs.
    Each embedded group is handed to ``writer``, when given, as soon as it is ready, and
    is then not kept; without a writer every chunk and vector is returned.

    Each file's bytes are read from ``root`` here, not kept from the walk; a file
    changed since the walk is chunked as it is now (with its new blob sha), unless it is
    now too large, binary or generated; those and files that can no longer be read are
    reported as skipped.

    Parsing is Python and tree-sitter work; embedding is model work that leaves the
    interpreter free (both embedders release the GIL), so the two overlap. Chunks arrive
    in groups of ``EMBED_GROUP``; each group is sorted by length inside the embedder.
    For a file in ``moved_from`` (new path -> old path) the cached vectors of its chunks
    at the old path are used when every chunk has one.
    """
    Group = tuple[list[Chunk], list[str], int, int]  # chunks, texts, carried, files done
    # Chunking is faster than embedding: unbounded, the queue would end up holding most of
    # the repository's chunks and texts at once. The chunker waits instead.
    groups: queue.Queue[Group | BaseException | None] = queue.Queue(CHUNKED_AHEAD)
    stop = threading.Event()
    moved = moved_from or {}

    def hand_over(item: Group | BaseException | None) -> bool:
        """Queue ``item`` for the embedder; False when the run stopped meanwhile."""
        while not stop.is_set():
            try:
                groups.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def chunks_of(f: SourceFile, path: str) -> list[Chunk]:
        pinned = not commit or (at_commit or {}).get(f.path) == f.blob_sha
        if not pinned:
            done.uncommitted.add(f.path)
        return chunk_file(
            path,
            f.language,
            f.data,
            repo=repo,
            visibility=visibility,
            commit=commit if pinned else "",
            blob_sha=f.blob_sha if pinned else f.blob_sha + UNCOMMITTED,
        )

    base = root.resolve()

    def load(f: SourceFile) -> SourceFile | None:
        full = base / f.path
        data = b""
        try:
            # Replaced by a symlink since the walk: never read through it (O_NOFOLLOW),
            # nor through a folder that now leads out of the repository.
            if not full.resolve().is_relative_to(base):
                raise OSError(f"{f.path} now leads out of the repository")
            # O_NONBLOCK: a named pipe put in the file's place must not hang the run.
            flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
            with os.fdopen(os.open(full, flags), "rb") as handle:
                # The walk's checks again: the file may have changed since.
                info = os.fstat(handle.fileno())
                if not stat.S_ISREG(info.st_mode):
                    reason: str | None = "not a regular file"
                elif info.st_size > max_file_bytes:
                    reason = f"larger than {max_file_bytes} bytes"
                else:
                    data = handle.read()
                    reason = content_skip_reason(data)
        except OSError as exc:
            reason = f"unreadable: {exc.strerror or exc}"
        if reason is not None:
            done.skipped.append(Skipped(f.path, reason))
            return None
        return SourceFile(f.path, f.language, data, git_blob_sha(data))

    def produce() -> None:
        group: list[Chunk] = []
        texts: list[str] = []
        kept = 0
        try:
            for i, listed in enumerate(files, start=1):
                if stop.is_set():
                    return
                f = load(listed)
                try:
                    new = chunks_of(f, f.path) if f is not None else []
                except Exception as exc:  # one file the chunker cannot handle loses only itself
                    log.warning("chunking %s failed", listed.path, exc_info=True)
                    done.skipped.append(Skipped(listed.path, f"chunking failed ({exc!r:.120})"))
                    f, new = None, []
                own = [embedding_text(c) for c in new]
                if f is not None and f.path in moved:
                    before = _texts_for(new, chunks_of(f, moved[f.path]), embedder, cache)
                    kept += len(new) if before is not None else 0
                    own = before or own
                group.extend(new)
                texts.extend(own)
                if len(group) >= EMBED_GROUP or i == len(files):
                    if not hand_over((group, texts, kept, i)):
                        return
                    group, texts, kept = [], [], 0
            hand_over(None)
        except BaseException as exc:  # handed to the caller's thread, raised there
            hand_over(exc)

    done = _Embedded()
    producer = threading.Thread(target=produce, name="chunker", daemon=True)
    producer.start()
    try:
        while (item := groups.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            group, texts, kept, files_done = item
            if progress:
                progress("chunk", files_done, len(files))
            vectors, computed = embed_with_cache(embedder, cache, texts)
            if writer is not None:
                writer.put(group, vectors)
            else:
                done.chunks.extend(group)
                done.parts.append(vectors)
            done.count += len(group)
            done.paths.update(c.path for c in group)
            done.embedded += computed
            done.carried += kept
            if progress:
                progress("embed", done.count, done.count)
    finally:
        stop.set()
        producer.join()
    return done


class _GroupWriter:
    """Writes embedded groups on its own thread, so a store's bulk requests overlap the
    embedding of the next group. At most two groups wait; a write error stops the run at
    the next ``put`` or at ``close``."""

    def __init__(self, write: Callable[[list[Chunk], np.ndarray], None]) -> None:
        self._write = write
        self._queue: queue.Queue[tuple[list[Chunk], np.ndarray] | None] = queue.Queue(2)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="store-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if self._error is None:  # after a failure, drain without writing
                try:
                    self._write(*item)
                except BaseException as exc:  # raised in the indexing thread
                    self._error = exc

    def put(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put((chunks, vectors))

    def close(self, raise_error: bool = True) -> None:
        self._queue.put(None)
        self._thread.join()
        if raise_error and self._error is not None:
            raise self._error


def _texts_for(
    new: list[Chunk], old: list[Chunk], embedder: Embedder, cache: EmbeddingCache
) -> list[str] | None:
    """The old path's cache texts for a renamed file's chunks when all of them are cached
    and the chunks line up (same line ranges); None when they must be embedded anew."""
    if [(c.start_line, c.end_line) for c in new] != [(c.start_line, c.end_line) for c in old]:
        return None
    before = [embedding_text(c) for c in old]
    keys = [cache_key(embedder.name, t) for t in before]
    return before if len(cache.get_many(keys)) == len(set(keys)) else None


def _path_filter(include: Sequence[str], exclude: Sequence[str]) -> Callable[[str], bool]:
    inc = pathspec.PathSpec.from_lines("gitignore", include) if include else None
    exc = pathspec.PathSpec.from_lines("gitignore", exclude) if exclude else None

    def selected(path: str) -> bool:
        if inc is not None and not inc.match_file(path):
            return False
        return exc is None or not exc.match_file(path)

    return selected
