"""The embedded store: one SQLite file with FTS5 (BM25) and exact k-NN over float32 vectors."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from indexer.errors import ConfigError, StoreUnavailable
from indexer.models import Chunk, FileRequest, Hit, NameRequest, RepoState, SearchRequest
from indexer.source import chunk_names, code_tokens, query_terms
from indexer.stores.contract import assert_chunks_allowed, fuse, top_k_indices
from indexer.stores.query import symbol_terms

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    repo TEXT NOT NULL,
    path TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    symbol TEXT NOT NULL,
    language TEXT NOT NULL,
    kind TEXT NOT NULL,
    visibility TEXT NOT NULL,
    commit_sha TEXT NOT NULL,
    blob_sha TEXT NOT NULL,
    header TEXT NOT NULL,
    text TEXT NOT NULL,
    embedding BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_repo_path ON chunks (repo, path);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5 (
    symbol, path, header, body, repo, tokenize = "porter unicode61 tokenchars '_'"
);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vocab USING fts5vocab (chunks_fts, 'row');
-- The names index: what each chunk defines, references and holds as a literal (lower-cased
-- keys, indexer.source.names), for codeask defs / refs.
CREATE TABLE IF NOT EXISTS chunk_names (
    chunk_id TEXT NOT NULL,
    role TEXT NOT NULL,
    key TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunk_names_key ON chunk_names (key, role);
CREATE INDEX IF NOT EXISTS chunk_names_chunk ON chunk_names (chunk_id);
CREATE TABLE IF NOT EXISTS repos (
    repo TEXT PRIMARY KEY,
    commit_sha TEXT NOT NULL,
    visibility TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    indexed_at REAL NOT NULL,
    config_version TEXT NOT NULL DEFAULT ''
);
"""
# BM25 column weights: symbol, path, header, body (repo is a filter, never scored). The
# header (path, enclosing signature, imports) repeats across a file: it helps the embedding
# but nearly only adds noise to BM25 (eval: MRR@10 0.701 at weight 1, 0.721 at 0.1).
_BM25_WEIGHTS = (4.0, 2.0, 0.1, 1.0, 0.0)
_SYMBOL_WEIGHTS = (1.0, 0.0, 0.0, 0.0, 0.0)  # the symbol list scores the symbol column only
# Query terms in more than this share of the chunks carry almost no BM25 weight but make
# the query score most of the index; they are dropped when rarer terms remain.
_COMMON_TERM_SHARE = 0.2
_PRUNE_FROM_CHUNKS = 20_000  # below this every term is cheap enough to keep
FTS_VERSION = "3"


def repo_token(repo: str) -> str:
    """The single FTS token that stands for a repository in the ``repo`` column."""
    return "r" + hashlib.sha1(repo.encode()).hexdigest()[:16]


_COLUMNS = "id, repo, path, start_line, end_line, symbol, language, kind, visibility, commit_sha, blob_sha, header, text"


def fts_document(chunk: Chunk) -> tuple[str, str, str, str, str]:
    """The FTS columns: code tokens (identifiers whole and split) of each field, and the
    repository token that the access filter matches inside the full-text query."""
    return (
        " ".join(code_tokens(chunk.symbol)),
        " ".join(code_tokens(chunk.path)),
        " ".join(code_tokens(chunk.header)),
        " ".join(code_tokens(chunk.text)),
        repo_token(chunk.repo),
    )


def _row_to_chunk(row: Sequence[object]) -> Chunk:
    (_id, repo, path, start, end, symbol, language, kind, vis, commit, blob, header, text) = row
    return Chunk(
        repo=str(repo),
        path=str(path),
        start_line=int(start),  # type: ignore[call-overload]
        end_line=int(end),  # type: ignore[call-overload]
        symbol=str(symbol),
        language=str(language),
        kind=str(kind),
        visibility=str(vis),
        commit=str(commit),
        blob_sha=str(blob),
        header=str(header),
        text=str(text),
    )


def _name_rows(chunk: Chunk) -> list[tuple[str, str]]:
    names = chunk_names(chunk)
    return [
        *(("defines", k) for k in names.defines),
        *(("references", k) for k in names.references),
        *(("literals", k) for k in names.literals),
    ]


class SqliteStore:
    """``SearchBackend`` over one SQLite file; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._local = threading.local()
        self._vectors_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sqlite-bm25")
        self._vectors: tuple[str, np.ndarray, np.ndarray, dict[str, tuple[int, int]]] | None = None
        self._conn().executescript(_SCHEMA)
        self._upgrade_fts()

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            except sqlite3.Error as exc:
                raise StoreUnavailable(f"Cannot open the index at {self.path}: {exc}") from exc
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _upgrade_fts(self) -> None:
        """Rebuild the full-text index from the stored chunks when its layout is older.

        The version is recorded last, so an interrupted rebuild is simply done again."""
        conn = self._conn()
        row = conn.execute("SELECT value FROM meta WHERE key = 'fts_version'").fetchone()
        if row is not None and row[0] == FTS_VERSION:
            return
        conn.execute("DROP TABLE IF EXISTS chunks_vocab")
        conn.execute("DROP TABLE IF EXISTS chunks_fts")
        conn.executescript(_SCHEMA)
        conn.execute("BEGIN IMMEDIATE")
        try:
            rows = conn.execute(f"SELECT rowid, {_COLUMNS} FROM chunks").fetchall()
            conn.executemany(
                "INSERT INTO chunks_fts (rowid, symbol, path, header, body, repo) "
                "VALUES (?,?,?,?,?,?)",
                [(r[0], *fts_document(_row_to_chunk(r[1:]))) for r in rows],
            )
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('fts_version', ?)", (FTS_VERSION,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    # --- schema ---------------------------------------------------------------------

    def ensure_schema(self, dimension: int) -> None:
        conn = self._conn()
        row = conn.execute("SELECT value FROM meta WHERE key = 'dimension'").fetchone()
        if row is None:
            conn.execute("INSERT INTO meta VALUES ('dimension', ?)", (str(dimension),))
        elif int(row[0]) != dimension:
            raise ConfigError(
                f"The index at {self.path} holds {row[0]}-dimensional vectors but the embedding "
                f"model gives {dimension}. Re-index into a new CODEASK_DATA_DIR, or delete it."
            )

    # --- writes ---------------------------------------------------------------------

    def apply_changes(
        self,
        repo: str,
        remove_paths: Sequence[str],
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        state: RepoState,
    ) -> None:
        if len(chunks) != len(vectors):
            raise ValueError("one vector per chunk")
        conn = self._conn()
        paths = sorted(set(remove_paths) | {c.path for c in chunks})
        conn.execute("BEGIN IMMEDIATE")
        try:
            for i in range(0, len(paths), 500):
                part = paths[i : i + 500]
                marks = ",".join("?" * len(part))
                where = f"repo = ? AND path IN ({marks})"
                conn.execute(
                    f"DELETE FROM chunks_fts WHERE rowid IN (SELECT rowid FROM chunks WHERE {where})",
                    (repo, *part),
                )
                conn.execute(
                    f"DELETE FROM chunk_names WHERE chunk_id IN (SELECT id FROM chunks WHERE {where})",
                    (repo, *part),
                )
                conn.execute(f"DELETE FROM chunks WHERE {where}", (repo, *part))
            for chunk, vector in zip(chunks, vectors, strict=True):
                cur = conn.execute(
                    f"INSERT OR REPLACE INTO chunks ({_COLUMNS}, embedding) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        chunk.id,
                        chunk.repo,
                        chunk.path,
                        chunk.start_line,
                        chunk.end_line,
                        chunk.symbol,
                        chunk.language,
                        chunk.kind,
                        chunk.visibility,
                        chunk.commit,
                        chunk.blob_sha,
                        chunk.header,
                        chunk.text,
                        np.asarray(vector, dtype=np.float32).tobytes(),
                    ),
                )
                conn.execute(
                    "INSERT INTO chunks_fts (rowid, symbol, path, header, body, repo) "
                    "VALUES (?,?,?,?,?,?)",
                    (cur.lastrowid, *fts_document(chunk)),
                )
                conn.execute("DELETE FROM chunk_names WHERE chunk_id = ?", (chunk.id,))
                conn.executemany(
                    "INSERT INTO chunk_names VALUES (?,?,?)",
                    [(chunk.id, role, key) for role, key in _name_rows(chunk)],
                )
            count = conn.execute("SELECT count(*) FROM chunks WHERE repo = ?", (repo,)).fetchone()[
                0
            ]
            conn.execute(
                "INSERT OR REPLACE INTO repos VALUES (?,?,?,?,?,?)",
                (
                    repo,
                    state.commit,
                    state.visibility,
                    count,
                    state.indexed_at,
                    state.config_version,
                ),
            )
            self._bump_generation(conn)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def delete_repo(self, repo: str) -> None:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "DELETE FROM chunks_fts WHERE rowid IN (SELECT rowid FROM chunks WHERE repo = ?)",
                (repo,),
            )
            conn.execute(
                "DELETE FROM chunk_names WHERE chunk_id IN (SELECT id FROM chunks WHERE repo = ?)",
                (repo,),
            )
            conn.execute("DELETE FROM chunks WHERE repo = ?", (repo,))
            conn.execute("DELETE FROM repos WHERE repo = ?", (repo,))
            self._bump_generation(conn)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _bump_generation(self, conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO meta VALUES ('generation', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (f"{time.time_ns()}",),
        )

    # --- reads ----------------------------------------------------------------------

    def file_blobs(self, repo: str) -> dict[str, str]:
        rows = self._conn().execute(
            "SELECT DISTINCT path, blob_sha FROM chunks WHERE repo = ?", (repo,)
        )
        return {str(p): str(b) for p, b in rows}

    def repo_state(self, repo: str) -> RepoState | None:
        row = self._conn().execute("SELECT * FROM repos WHERE repo = ?", (repo,)).fetchone()
        return None if row is None else RepoState(*row)

    def repo_states(self) -> list[RepoState]:
        return [RepoState(*r) for r in self._conn().execute("SELECT * FROM repos ORDER BY repo")]

    def chunk_count(self) -> int:
        return int(self._conn().execute("SELECT count(*) FROM chunks").fetchone()[0])

    def fetch(self, ids: Sequence[str]) -> list[Chunk]:
        out: list[Chunk] = []
        for i in range(0, len(ids), 500):
            part = list(ids[i : i + 500])
            marks = ",".join("?" * len(part))
            rows = self._conn().execute(
                f"SELECT {_COLUMNS} FROM chunks WHERE id IN ({marks})", part
            )
            out.extend(_row_to_chunk(r) for r in rows)
        return out

    def find_names(self, request: NameRequest) -> list[Chunk]:
        """Chunks of ``request.repos`` whose names index holds the name in ``request.role``."""
        if not request.repos or not request.key:
            return []
        repos = sorted(request.repos)
        marks = ",".join("?" * len(repos))
        rows = self._conn().execute(
            f"SELECT DISTINCT {', '.join('c.' + c for c in _COLUMNS.split(', '))} "
            "FROM chunk_names n JOIN chunks c ON c.id = n.chunk_id "
            f"WHERE n.key = ? AND n.role = ? AND c.repo IN ({marks}) "
            "ORDER BY c.repo, c.path, c.start_line LIMIT ?",
            (request.key, request.role, *repos, request.limit),
        )
        found = [_row_to_chunk(r) for r in rows]
        assert_chunks_allowed(found, request.repos)
        return found

    def file_chunks(self, request: FileRequest) -> list[Chunk]:
        """The chunks of one file of an allowed repository, by first line."""
        if request.repo not in request.repos:
            return []  # fail closed: the same answer as a file that is not indexed
        rows = self._conn().execute(
            f"SELECT {_COLUMNS} FROM chunks WHERE repo = ? AND path = ? "
            "ORDER BY start_line, end_line LIMIT ?",
            (request.repo, request.path, request.limit),
        )
        found = [_row_to_chunk(r) for r in rows]
        assert_chunks_allowed(found, request.repos)
        return found

    def bm25(self, text: str, repos: frozenset[str], n: int) -> list[str]:
        terms = self._informative_terms(query_terms(text))
        if not terms or not repos:
            return []
        return self._fts_ids("", terms, repos, _BM25_WEIGHTS, n)

    def symbols(self, text: str, repos: frozenset[str], n: int) -> list[str]:
        """Chunks whose symbol is an identifier the question names, by BM25 on the symbol."""
        names = symbol_terms(text)
        if not names or not repos:
            return []
        return self._fts_ids("symbol : ", names, repos, _SYMBOL_WEIGHTS, n)

    def _fts_ids(
        self,
        column: str,
        terms: list[str],
        repos: frozenset[str],
        weights: tuple[float, ...],
        n: int,
    ) -> list[str]:
        """Ids of the ``n`` best chunks matching any of ``terms`` (in ``column``, e.g.
        ``"symbol : "``, or every column), ranked by BM25 with column ``weights``."""
        # The repository filter is part of the full-text query itself, so BM25 ranks only
        # chunks the caller may read (no top-k is ever filtered afterwards).
        allowed = " OR ".join(repo_token(r) for r in sorted(repos))
        match = f"{column}(" + " OR ".join(f'"{t}"' for t in terms) + f") AND repo : ({allowed})"
        rows = self._conn().execute(
            "SELECT c.id FROM (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? "
            f"ORDER BY bm25(chunks_fts, {', '.join(map(str, weights))}) LIMIT ?) AS f "
            "JOIN chunks c ON c.rowid = f.rowid",
            (match, n),
        )
        return [str(r[0]) for r in rows]

    def _informative_terms(self, terms: list[str]) -> list[str]:
        if len(terms) < 2:
            return terms
        conn = self._conn()
        total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0] or 1
        if total < _PRUNE_FROM_CHUNKS:
            return terms
        marks = ",".join("?" * len(terms))
        df = dict(
            conn.execute(f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", terms)
        )
        kept = [t for t in terms if df.get(t, 0) <= _COMMON_TERM_SHARE * total]
        return kept or [min(terms, key=lambda t: df.get(t, 0))]

    def knn(self, vector: np.ndarray, repos: frozenset[str], n: int) -> list[str]:
        """Exact k-NN over the allowed repositories only (each is one contiguous block)."""
        if not repos:
            return []
        ids, matrix, blocks = self._vector_matrix()
        spans = [blocks[r] for r in sorted(repos) if r in blocks]
        if not spans or n <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        scores = np.concatenate([matrix[a:b] @ query for a, b in spans])
        offsets = np.concatenate([np.arange(a, b) for a, b in spans])
        best = top_k_indices(scores, n)
        return [str(ids[offsets[i]]) for i in best]

    def _vector_matrix(self) -> tuple[np.ndarray, np.ndarray, dict[str, tuple[int, int]]]:
        """All vectors in memory ordered by repository, reloaded after the index changed."""
        conn = self._conn()
        generation = self._generation()
        with self._vectors_lock:
            if self._vectors is None or self._vectors[0] != generation:
                rows = conn.execute(
                    "SELECT id, repo, embedding FROM chunks ORDER BY repo, rowid"
                ).fetchall()
                ids = np.array([r[0] for r in rows], dtype=object)
                matrix = (
                    np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(
                        len(rows), -1
                    )
                    if rows
                    else np.zeros((0, 1), dtype=np.float32)
                )
                blocks: dict[str, tuple[int, int]] = {}
                for i, r in enumerate(rows):
                    start, _ = blocks.get(r[1], (i, i))
                    blocks[r[1]] = (start, i + 1)
                self._vectors = (generation, ids, matrix, blocks)
            _, ids, matrix, blocks = self._vectors
        return ids, matrix, blocks

    # A search runs again when a write commits while it reads; past this many in a row,
    # the last answer stands.
    _SEARCH_ATTEMPTS = 5

    def search(self, request: SearchRequest) -> list[Hit]:
        """Fused hits from one committed state of the index.

        The lists and the chunks are read by separate statements (two connections): when a
        write commits in between, ``generation`` has moved and the search runs again, so it
        never mixes the chunks of two versions of a file, nor misses both.
        """
        for _ in range(self._SEARCH_ATTEMPTS):
            before = self._generation()
            hits = self._search_once(request)
            if self._generation() == before:
                return hits
        return hits

    def _generation(self) -> str:
        row = self._conn().execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return str(row[0]) if row else ""

    def _search_once(self, request: SearchRequest) -> list[Hit]:
        ranked: dict[str, list[str]] = {}
        # BM25 (SQLite) and k-NN (numpy) both release the GIL: run them side by side.
        pending = None
        if "bm25" in request.lists:
            pending = self._pool.submit(self.bm25, request.text, request.repos, request.candidates)
        if "knn" in request.lists and request.embedding is not None:
            vector = np.asarray(request.embedding, dtype=np.float32)
            ranked["knn"] = self.knn(vector, request.repos, request.candidates)
        if "symbol" in request.lists:
            found = self.symbols(request.text, request.repos, request.candidates)
            if found:
                ranked["symbol"] = found
        if pending is not None:
            ranked = {"bm25": pending.result(), **ranked}
        ids = list(dict.fromkeys(i for lst in ranked.values() for i in lst))
        return fuse(request, ranked, self.fetch(ids))
