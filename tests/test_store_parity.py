"""Both stores index the same repository and must retrieve the same places for questions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from indexer.embedding import SqliteEmbeddingCache
from indexer.jobs import index_repository
from indexer.models import Hit
from indexer.search import Searcher
from indexer.stores import SqliteStore
from tests.store_backends import open_opensearch, opensearch_test

FILES = {
    "billing/invoice.py": '''from decimal import Decimal


class InvoiceCalculator:
    """Totals an invoice: line items, discounts and VAT."""

    def subtotal(self, items: list[tuple[Decimal, int]]) -> Decimal:
        return sum((price * qty for price, qty in items), Decimal(0))

    def apply_vat(self, amount: Decimal, rate: Decimal) -> Decimal:
        return (amount * (1 + rate)).quantize(Decimal("0.01"))
''',
    "auth/tokens.py": '''import hmac
import time


def sign_session_token(user_id: str, secret: bytes) -> str:
    """An HMAC-signed session token that expires after one hour."""
    expires = int(time.time()) + 3600
    mac = hmac.new(secret, f"{user_id}:{expires}".encode(), "sha256").hexdigest()
    return f"{user_id}:{expires}:{mac}"


def verify_session_token(token: str, secret: bytes) -> str | None:
    user_id, expires, mac = token.split(":")
    if int(expires) < time.time():
        return None
    good = hmac.new(secret, f"{user_id}:{expires}".encode(), "sha256").hexdigest()
    return user_id if hmac.compare_digest(good, mac) else None
''',
    "net/http_client.py": '''import time


class HttpClient:
    def get_with_retries(self, url: str, attempts: int = 4) -> bytes:
        """GET, retrying failures with exponential backoff."""
        for attempt in range(attempts):
            try:
                return self._get(url)
            except OSError:
                time.sleep(0.2 * 2**attempt)
        raise TimeoutError(url)

    def _get(self, url: str) -> bytes:
        raise OSError(url)
''',
    "storage/cache.py": '''from collections import OrderedDict


class LruCache:
    """Keeps the most recently used entries, evicting the oldest when full."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.items: OrderedDict[str, bytes] = OrderedDict()

    def put(self, key: str, value: bytes) -> None:
        self.items[key] = value
        self.items.move_to_end(key)
        if len(self.items) > self.capacity:
            self.items.popitem(last=False)
''',
    "config/settings.yaml": "database:\n  host: db.internal\n  pool_size: 20\n"
    "logging:\n  level: info\n",
    "README.md": "# Shop\n\n## Running locally\n\nStart the database, then `make run`.\n\n"
    "## Deploying\n\nPush a tag; CI builds the image and rolls it out.\n",
}

# (question, gold path) — identifiers, concepts and a config lookup.
QUESTIONS = [
    ("InvoiceCalculator apply_vat", "billing/invoice.py"),
    ("how are session tokens signed and checked for expiry", "auth/tokens.py"),
    ("retry a failed request with backoff", "net/http_client.py"),
    ("evict least recently used entries", "storage/cache.py"),
    ("database pool size", "config/settings.yaml"),
    ("how do I deploy a release", "README.md"),
]


def _recall_at_10(hits_by_question: list[list[Hit]]) -> float:
    found = [
        any(h.chunk.path == gold for h in hits[:10])
        for hits, (_, gold) in zip(hits_by_question, QUESTIONS, strict=True)
    ]
    return sum(found) / len(found)


@opensearch_test
def test_both_stores_retrieve_the_same_places(
    embedder,  # type: ignore[no-untyped-def]
    make_repo: Callable[[dict[str, str]], Path],
    tmp_path: Path,
) -> None:
    root = make_repo(FILES)
    cache = SqliteEmbeddingCache(tmp_path / "embeddings.db")
    sqlite = SqliteStore(tmp_path / "codeask.db")
    opensearch = open_opensearch()
    try:
        results: dict[str, list[list[Hit]]] = {}
        for name, store in (("sqlite", sqlite), ("opensearch", opensearch)):
            index_repository(root, "acme/shop", store, embedder, cache, visibility="public")
            searcher = Searcher(store, embedder)
            results[name] = [
                searcher.search(q, frozenset({"acme/shop"}), k=10) for q, _ in QUESTIONS
            ]
        embedded, production = results["sqlite"], results["opensearch"]
        assert _recall_at_10(embedded) >= 5 / 6
        assert abs(_recall_at_10(embedded) - _recall_at_10(production)) <= 0.02
        for (question, _), a, b in zip(QUESTIONS, embedded, production, strict=True):
            assert a[0].chunk.id == b[0].chunk.id, question
            top = {h.chunk.id for h in a[:3]}
            assert len(top & {h.chunk.id for h in b[:3]}) >= 2, question
    finally:
        sqlite.close()
        opensearch.drop()
        opensearch.close()
