"""What is indexed and how it is cut: git, walking, languages, chunking, code tokens."""

from __future__ import annotations

from indexer.source.chunking import CHUNKER_VERSION, chunk_file, split_lines
from indexer.source.gitrepo import (
    clone_or_update,
    committed_blobs,
    head_commit,
    is_remote_url,
    name_from_url,
    remote_head,
    repo_name_for,
    run_git,
)
from indexer.source.languages import IMPORT_LINE, kind_for, language_for
from indexer.source.names import MAX_NAME, NAMES_VERSION, ChunkNames, chunk_names, name_key
from indexer.source.tokens import code_tokens, identifiers_in, query_terms
from indexer.source.walking import (
    EMPTY_BLOB_SHA,
    LOCK_FILES,
    SKIP_DIRS,
    Skipped,
    SourceFile,
    content_skip_reason,
    git_blob_sha,
    is_git_repo,
    walk_repository,
)

__all__ = [
    "CHUNKER_VERSION",
    "EMPTY_BLOB_SHA",
    "IMPORT_LINE",
    "LOCK_FILES",
    "MAX_NAME",
    "NAMES_VERSION",
    "SKIP_DIRS",
    "ChunkNames",
    "Skipped",
    "SourceFile",
    "chunk_file",
    "chunk_names",
    "clone_or_update",
    "code_tokens",
    "committed_blobs",
    "content_skip_reason",
    "git_blob_sha",
    "head_commit",
    "identifiers_in",
    "is_git_repo",
    "is_remote_url",
    "kind_for",
    "language_for",
    "name_from_url",
    "name_key",
    "query_terms",
    "remote_head",
    "repo_name_for",
    "run_git",
    "split_lines",
    "walk_repository",
]
