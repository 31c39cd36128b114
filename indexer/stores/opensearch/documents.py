"""Chunks ↔ OpenSearch documents, and the query bodies of one hybrid search."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from indexer.models import Chunk, FileRequest, NameRequest, RepoState, SearchRequest
from indexer.source import chunk_names, query_terms
from indexer.stores.query import symbol_terms

# FTS5 scores a chunk as ONE document whose column term counts are weighted before BM25
# saturates them; Lucene's ``most_fields`` instead sums a separate BM25 per field, so a hit
# in the 1-3 token symbol field outweighed the body (golden sets, BM25 only: MRR@10 0.514
# against the embedded store's 0.634; concept questions 0.261 against 0.450).
# ``cross_fields`` blends the term statistics of the fields and scores the query terms
# across them as one field, which is the closest Lucene gets: hybrid MRR@10 0.708 against
# the embedded store's 0.710 (weights chosen on the golden sets, eval/README.md).
BM25_FIELDS = ("symbol^2", "path.words", "header^0.1", "text")
BM25_TYPE = "cross_fields"
_HIDDEN_SOURCE = ["embedding", "run", "retired", "defines", "references", "literals"]


def chunk_source(chunk: Chunk, vector: np.ndarray, run: str) -> dict[str, Any]:
    return {
        "repo": chunk.repo,
        "path": chunk.path,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "symbol": chunk.symbol,
        "language": chunk.language,
        "kind": chunk.kind,
        "visibility": chunk.visibility,
        "commit": chunk.commit,
        "blob_sha": chunk.blob_sha,
        "header": chunk.header,
        "text": chunk.text,
        **_names_fields(chunk),
        "run": run,
        # Eight decimals keep float32 precision for unit vectors at half the JSON size.
        "embedding": np.round(np.asarray(vector, dtype=np.float64), 8).tolist(),
    }


def _names_fields(chunk: Chunk) -> dict[str, list[str]]:
    names = chunk_names(chunk)
    return {
        "defines": list(names.defines),
        "references": list(names.references),
        "literals": list(names.literals),
    }


def names_body(request: NameRequest, hidden_runs: Iterable[str] = ()) -> dict[str, Any]:
    """The chunks holding ``request.key`` in ``request.role``, among the visible chunks of
    ``request.repos`` only, by repository, path and line (the order of the embedded store)."""
    return {
        "size": request.limit,
        "track_total_hits": False,
        "_source": {"excludes": _HIDDEN_SOURCE},
        "query": {
            "bool": {
                "filter": [
                    {"term": {request.role: request.key}},
                    visible_filter(request.repos, hidden_runs),
                ]
            }
        },
        "sort": [{"repo": "asc"}, {"path": "asc"}, {"start_line": "asc"}],
    }


def file_body(request: FileRequest, hidden_runs: Iterable[str] = ()) -> dict[str, Any]:
    """The visible chunks of one file of ``request.repo``, by first line."""
    return {
        "size": request.limit,
        "track_total_hits": False,
        "_source": {"excludes": _HIDDEN_SOURCE},
        "query": {
            "bool": {
                "filter": [
                    {"term": {"path": request.path}},
                    visible_filter([request.repo], hidden_runs),
                ]
            }
        },
        "sort": [{"start_line": "asc"}, {"end_line": "asc"}],
    }


def source_chunk(source: dict[str, Any]) -> Chunk:
    return Chunk(
        repo=source["repo"],
        path=source["path"],
        start_line=int(source["start_line"]),
        end_line=int(source["end_line"]),
        text=source["text"],
        symbol=source["symbol"],
        language=source["language"],
        kind=source["kind"],
        header=source.get("header", ""),
        visibility=source["visibility"],
        commit=source.get("commit", ""),
        blob_sha=source.get("blob_sha", ""),
    )


def repo_state_of(source: dict[str, Any]) -> RepoState | None:
    if "commit" not in source:
        return None  # only a pending marker: this repository never finished a run
    return RepoState(
        repo=source["repo"],
        commit=source["commit"],
        visibility=source["visibility"],
        chunk_count=int(source["chunk_count"]),
        indexed_at=float(source["indexed_at"]),
        config_version=source.get("config_version", ""),
    )


def visible_filter(repos: Iterable[str], hidden_runs: Iterable[str] = ()) -> dict[str, Any]:
    """The chunks a search may see: those of ``repos`` that a committed run wrote and no
    committed run replaced. ``hidden_runs`` are the runs still pending in those repos.

    A document without ``run`` or ``retired`` (an index from before them) is visible.
    """
    hidden = sorted(set(hidden_runs))
    must_not = [replaced_for_good(hidden)]
    if hidden:
        must_not.insert(0, {"terms": {"run": hidden}})
    return {"bool": {"filter": [{"terms": {"repo": sorted(repos)}}], "must_not": must_not}}


def replaced_for_good(pending_runs: Iterable[str]) -> dict[str, Any]:
    """Chunks replaced by a run that has committed (any run not in ``pending_runs``)."""
    replaced: dict[str, Any] = {"filter": [{"exists": {"field": "retired"}}]}
    pending = sorted(set(pending_runs))
    if pending:
        replaced["must_not"] = [{"terms": {"retired": pending}}]
    return {"bool": replaced}


def _filtered(must: dict[str, Any], allowed: dict[str, Any], n: int) -> dict[str, Any]:
    """A scored text query over the visible chunks of the allowed repositories only."""
    return {
        "size": n,
        "track_total_hits": False,
        "_source": {"excludes": _HIDDEN_SOURCE},
        "query": {"bool": {"must": must, "filter": [allowed]}},
    }


def search_bodies(
    request: SearchRequest, hidden_runs: Iterable[str] = ()
) -> dict[str, dict[str, Any]]:
    """The BM25, symbol and k-NN searches (by list name), each filtered to the chunks of
    ``request.repos`` that are visible (:func:`visible_filter`).

    The query text goes through ``query_terms`` (stop words out, identifiers whole and
    split), as in the embedded store, so both stores score the same terms.
    """
    allowed = visible_filter(request.repos, hidden_runs)
    n = request.candidates
    bodies: dict[str, dict[str, Any]] = {}
    terms = query_terms(request.text) if "bm25" in request.lists else []
    if terms:
        bodies["bm25"] = _filtered(
            {
                "multi_match": {
                    "query": " ".join(terms),
                    "fields": list(BM25_FIELDS),
                    "type": BM25_TYPE,
                    "operator": "or",
                }
            },
            allowed,
            n,
        )
    names = symbol_terms(request.text) if "symbol" in request.lists else []
    if names:
        # Whole identifiers against the symbol's tokens, stemmed like the index but not
        # split again (the embedded store matches the whole token too).
        symbol = {"match": {"symbol": {"query": " ".join(names), "analyzer": "english"}}}
        bodies["symbol"] = _filtered(symbol, allowed, n)
    if "knn" in request.lists and request.embedding is not None:
        bodies["knn"] = {
            "size": n,
            "track_total_hits": False,
            "_source": {"excludes": _HIDDEN_SOURCE},
            "query": {
                "knn": {
                    "embedding": {
                        "vector": [float(x) for x in request.embedding],
                        "k": n,
                        # Inside the k-NN clause: Lucene filters while walking the graph,
                        # so k hits come back from the visible chunks of the allowed repos,
                        # never a filtered top-k.
                        "filter": allowed,
                    }
                }
            },
        }
    return bodies
