"""A persistent cache of embeddings keyed by model and embedded text."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np


class SqliteEmbeddingCache:
    """Vectors by ``cache_key``; shared by every repository, branch and run."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._local = threading.local()
        self._conn().execute(
            "CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB NOT NULL)"
        )

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            self._local.conn = conn
        return conn

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            part = list(keys[i : i + 500])
            marks = ",".join("?" * len(part))
            for key, blob in self._conn().execute(
                f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", part
            ):
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        self._conn().executemany(
            "INSERT OR REPLACE INTO embeddings VALUES (?, ?)",
            [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
        )

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT count(*) FROM embeddings").fetchone()[0])
